"""A grader killed with kill -9 leaves nothing behind: its zygote, once it sees its parent gone,
kills the workers and removes the run's folder (/tmp/checks-zygote-*, the workers' homes in
it); and what a run killed outright leaves, the next run removes, never a live run's folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from checks.sandbox import jail
from checks.sandbox.supervisor import RUN_PREFIX, Zygote

DEADLINE = 60.0  # seconds; a fresh grading process imports torch first

SLOW = """
import os, time


def wait():
    with open(os.path.join(os.environ["HOME"], "pid"), "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(300)
    return 1
"""


def wait_for(condition, deadline: float = DEADLINE):
    """Poll `condition` until it is true or `deadline` seconds have passed; its last value."""
    give_up = time.monotonic() + deadline
    while not (value := condition()) and time.monotonic() < give_up:
        time.sleep(0.05)
    return value


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def run_folders_of(pid: int) -> list[Path]:
    """The run folders whose owner file names `pid`."""
    found = []
    for owner in Path(tempfile.gettempdir()).glob(f"{RUN_PREFIX}*/owner"):
        try:
            if owner.read_text().split()[0] == str(pid):
                found.append(owner.parent)
        except (OSError, IndexError):
            continue
    return found


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def start_grading(make_course) -> subprocess.Popen:
    """`checks grade` at the fork level on a submission whose question sleeps for minutes."""
    root = make_course({
        "autograder/slow/assignment.toml": 'files = ["slow.py"]\n',
        "autograder/slow/test_slow.py": """
            from checks.suite import question, expect_equal

            @question("slow.wait", points=100, timeout=600)
            def test_wait(student):
                expect_equal(student.slow.wait(), 1)
        """,
        "assignments/slow/.keep": "",
        "subs/sleeper/slow.py": SLOW,
    })
    return subprocess.Popen([sys.executable, "-m", "checks", "--course", str(root), "grade", "slow",
                             str(root / "subs/sleeper"), "--out", str(root / "grades"), "--isolation", "fork"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def worker_of(folder: Path) -> int:
    """The pid of the worker that wrote its pid into its home in `folder`. As root the home is in
    the worker's own /tmp (a mount namespace of its own): seen through /proc/PID/root."""
    def found() -> Path | None:
        views = [folder] + [Path(f"/proc/{pid}/root{folder}") for pid in _all_pids()] * (os.geteuid() == 0)
        for view in views:
            try:
                written = [f for f in view.glob("checks-sandbox-*/pid") if f.read_text()]
            except OSError:  # the process is gone, or its view is not ours to read
                continue
            if written:
                return written[0]
        return None
    pid_file = wait_for(found)
    assert pid_file, f"no worker started in {folder}"
    return int(pid_file.read_text())


def test_a_grader_killed_with_kill_9_leaves_no_folder_and_no_worker(make_course):
    grader = start_grading(make_course)
    try:
        [folder] = wait_for(lambda: run_folders_of(grader.pid)) or [None]
        assert folder is not None, "the grader made no run folder"
        worker = worker_of(folder)
    finally:
        grader.kill()  # kill -9, mid-question
        grader.wait()
    assert wait_for(lambda: not folder.exists(), 10.0), f"{folder} is still there: {sorted(folder.rglob('*'))}"
    assert wait_for(lambda: not alive(worker), 10.0), f"the worker {worker} outlived its grader"


@pytest.fixture
def private_temp(monkeypatch):
    """A temp folder of this test's own, for its runs and the grader it starts: another checks run on
    the machine (a second test session) would otherwise remove the dead run's folder first."""
    folder = tempfile.mkdtemp(prefix="checks-dead-")  # short: the zygote's socket lives below it
    monkeypatch.setenv("TMPDIR", folder)
    monkeypatch.setattr(tempfile, "tempdir", folder)
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def test_the_next_run_removes_what_a_dead_run_left_and_never_a_live_runs_folder(make_course, private_temp):
    grader = start_grading(make_course)
    try:
        [folder] = wait_for(lambda: run_folders_of(grader.pid)) or [None]
        assert folder is not None, "the grader made no run folder"
        worker = worker_of(folder)
        # kill -9 everything of the run before its zygote can clean up (as a jailed zygote cannot)
        # (two supervisors: the zygote with torch, and the one that never imports it)
        supervisors = [pid for pid in _all_pids() if _parent(pid) == grader.pid and _session(pid) == pid]
        assert supervisors, "the grader started no zygote supervisor"
        for supervisor in supervisors:
            os.kill(supervisor, signal.SIGSTOP)
        for supervisor in supervisors:
            for zygote in children(supervisor):
                os.kill(zygote, signal.SIGKILL)
            os.kill(supervisor, signal.SIGKILL)
        os.kill(worker, signal.SIGKILL)
    finally:
        grader.kill()
        grader.wait()
    time.sleep(0.5)  # a zygote that survived would have removed it by now
    assert folder.exists()
    with Zygote(jail.choose(jail.FORK)) as live:
        assert not folder.exists(), f"the dead run's {folder} was left"
        assert run_folders_of(os.getpid()) == [Path(live.run_dir)]
        with Zygote(jail.choose(jail.FORK)):  # a second run beside it: the live run's folder stays
            assert Path(live.run_dir).exists()


def _all_pids() -> list[int]:
    return [int(path.name) for path in Path("/proc").glob("[0-9]*")]


def _stat(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except OSError:
        return [b"?", b"0", b"0", b"0"]


def _parent(pid: int) -> int:
    return int(_stat(pid)[1])


def _session(pid: int) -> int:
    return int(_stat(pid)[3])
