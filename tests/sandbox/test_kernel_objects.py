"""Nothing a submission leaves in the kernel or in its own folders reaches a later question or
submission (issue 43): System V shared memory, semaphores and queues, POSIX shared memory, files
in the folders any user may write (/run/lock, /var/lock: found by a fresh attacker), and
files a question wrote beside the submission's own (a `__pycache__`, a new file or folder).

Each case is graded at every isolation level this machine has (bwrap where it runs, fork always).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.sandbox import jail

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
STASH_KEY = 0x5EC43  # a System V key no other program uses
POSIX_NAME = "checks-kernel-stash"

STASH = f'''
import ctypes, errno, os

KEY = {STASH_KEY}
NAME = "{POSIX_NAME}"
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


class Buffer(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]


def put():
    """Leave a value in every kind of kernel object, each readable by anyone, for whoever comes later."""
    made = []
    segment = libc.shmget(KEY, 4096, 0o1666)  # IPC_CREAT
    if segment >= 0:
        ctypes.memmove(libc.shmat(segment, None, 0), b"shm-secret", 10)
        made.append("shm")
    semaphores = libc.semget(KEY, 1, 0o1666)
    if semaphores >= 0 and libc.semctl(semaphores, 0, 16, ctypes.c_int(42)) == 0:  # SETVAL
        made.append("sem")
    queue = libc.msgget(KEY, 0o1666)
    message = Buffer(1, b"msg-secret")
    if queue >= 0 and libc.msgsnd(queue, ctypes.byref(message), 10, 0) == 0:
        made.append("msg")
    fd = libc.shm_open(NAME.encode(), os.O_CREAT | os.O_RDWR, 0o666)
    if fd >= 0:
        os.write(fd, b"posix-secret")
        os.fchmod(fd, 0o666)
        made.append("posix")
    for folder in LOCKS:  # folders any user may write, outside the temp folders
        try:
            with open(os.path.join(folder, NAME), "w") as out:
                out.write("lock-secret")
            os.chmod(os.path.join(folder, NAME), 0o666)
            made.append(folder)
        except OSError:
            pass
    return made


LOCKS = [folder for folder in ("/run/lock", "/var/lock") if os.path.isdir(folder)]


def find():
    """Whatever of put's a later question or submission can still find."""
    found = []
    segment = libc.shmget(KEY, 0, 0)
    if segment >= 0:
        found.append("shm:" + ctypes.string_at(libc.shmat(segment, None, 0)).decode(errors="replace"))
    semaphores = libc.semget(KEY, 0, 0)
    if semaphores >= 0:
        found.append(f"sem:{{libc.semctl(semaphores, 0, 12)}}")  # GETVAL
    queue = libc.msgget(KEY, 0)
    if queue >= 0:
        message = Buffer()
        if libc.msgrcv(queue, ctypes.byref(message), 64, 0, 0o4000) > 0:  # IPC_NOWAIT
            found.append("msg:" + message.mtext.decode(errors="replace"))
        else:
            found.append("msg")
    fd = libc.shm_open(NAME.encode(), os.O_RDONLY, 0)
    if fd >= 0:
        found.append("posix:" + os.read(fd, 100).decode(errors="replace"))
    found += [folder for folder in LOCKS if os.path.exists(os.path.join(folder, NAME))]
    return found


def hoard(mib):
    """Whether the kernel lets us make System V shared memory of `mib` MiB: memory no budget sees."""
    return libc.shmget(0, mib * 2**20, 0o1600) >= 0  # IPC_PRIVATE
'''

KERNEL_SUITE = {
    "autograder/kernel/assignment.toml": 'files = ["stash.py"]\n',
    "autograder/kernel/test_kernel.py": """
        from checks.suite import question, expect_equal

        @question("stash.put", points=10)
        def test_put(student):
            student.stash.put()

        @question("stash.find", points=10)
        def test_find(student):
            expect_equal(student.stash.find(), [])

        @question("stash.hoard", points=10)
        def test_hoard(student):
            expect_equal(student.stash.hoard(512), False)
    """,
    "assignments/kernel/.keep": "",
    "solutions/kernel/stash.py": "",
}


def _host_objects() -> list[str]:
    """The stash's objects the grader's own namespace still holds, after the batch."""
    left = []
    for kind in ("shm", "msg", "sem"):
        rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        left += [kind for row in rows if int(row.split()[0]) == STASH_KEY]
    left += [folder for folder in ("/run/lock", "/var/lock") if Path(folder, POSIX_NAME).exists()]
    return left + (["posix"] if Path("/dev/shm", POSIX_NAME).exists() else [])


def _remove_host_objects() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmctl(libc.shmget(STASH_KEY, 0, 0), 0, None)
    libc.semctl(libc.semget(STASH_KEY, 0, 0), 0, 0)
    libc.msgctl(libc.msgget(STASH_KEY, 0, 0), 0, None)
    Path("/dev/shm", POSIX_NAME).unlink(missing_ok=True)
    for folder in ("/run/lock", "/var/lock"):
        Path(folder, POSIX_NAME).unlink(missing_ok=True)


@pytest.fixture
def clean_host():
    _remove_host_objects()
    yield
    _remove_host_objects()


@pytest.mark.parametrize("level", LEVELS)
def test_no_kernel_object_outlives_its_question(make_course, clean_host, level):
    """The first submission leaves a value in System V shared memory, a semaphore and a queue, and
    in POSIX shared memory: neither its own next question nor the next submission finds any of
    them, none is left after the batch, and System V shared memory is capped like temp space."""
    root = make_course({**KERNEL_SUITE, "subs/a_first/stash.py": STASH, "subs/b_second/stash.py": STASH})
    sources = [Source.from_path(root / "subs" / name) for name in ("a_first", "b_second")]
    results = {result.name: result for result in grade_sources(load_assignment(root, "kernel"), sources, jobs=1,
                                                                 isolation=jail.choose(level))}
    first, second = results["a_first"], results["b_second"]
    assert first.question("stash.put").passed, first.question("stash.put").feedback
    for result in (first, second):
        assert result.question("stash.find").passed, (result.name, result.question("stash.find").feedback)
        assert result.question("stash.hoard").passed, (result.name, result.question("stash.hoard").feedback)
    assert _host_objects() == []


STATE_SUITE = {
    "autograder/state/assignment.toml": 'files = ["state.py", "pkg/__init__.py"]\n',
    "autograder/state/test_state.py": """
        from checks.suite import question, expect_equal

        SEEN = {}

        @question("state.listing", points=10)
        def test_listing(student):
            SEEN["before"] = student.state.listing()

        @question("state.litter", points=10)
        def test_litter(student):
            student.state.litter()

        @question("state.again", points=10)
        def test_again(student):
            expect_equal(student.state.listing(), SEEN["before"])
    """,
    "assignments/state/.keep": "",
    "solutions/state/state.py": "",
    "solutions/state/pkg/__init__.py": "",
}

STATE = '''
import os


def listing():
    """Every path under the home, with what each file holds."""
    home = os.environ["HOME"]
    found = []
    for folder, names, files in os.walk(home):
        for name in sorted(names) + sorted(files):
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, home)
            if relative == ".output":
                continue
            found.append(relative if os.path.isdir(path) else f"{relative}={os.path.getsize(path)}")
    return sorted(found)


def litter():
    """Leave something for the next question in every folder of the submission."""
    home = os.environ["HOME"]
    for folder in ("", "__pycache__", "pkg", "pkg/__pycache__", "new/deeper"):
        os.makedirs(os.path.join(home, folder), exist_ok=True)
        with open(os.path.join(home, folder, "planted.py"), "w") as handle:
            handle.write("PLANTED = True\\n")
    with open(os.path.join(home, "__pycache__", "state.cpython-311.pyc"), "ab") as handle:
        handle.write(b"junk")
    locked = os.path.join(home, "pkg", "locked")
    os.makedirs(os.path.join(locked, "inner"))
    os.chmod(locked, 0)
    os.symlink("/etc", os.path.join(home, "pkg", "link"))
'''


@pytest.mark.parametrize("level", LEVELS)
def test_a_question_finds_the_submission_folders_as_laid_out(make_course, level):
    """Files and folders a question adds anywhere under the submission's folders (its __pycache__,
    a package's folder, a new folder) are gone for the next question, however they were locked."""
    root = make_course({**STATE_SUITE, "subs/tidy/state.py": STATE, "subs/tidy/pkg/__init__.py": "X = 1\n"})
    [result] = grade_sources(load_assignment(root, "state"), [Source.from_path(root / "subs/tidy")], jobs=1,
                             isolation=jail.choose(level))
    for name in ("state.listing", "state.litter", "state.again"):
        assert result.question(name).passed, (name, result.question(name).feedback)


def test_kill_uid_finds_every_process_of_the_uid_and_spares_a_spawn_where_there_is_none(monkeypatch):
    """kill_uid asks /proc first: a uid with a process (a dying one included) is killed as before;
    one with none spawns nothing (it cost two setpriv processes a submission)."""
    import subprocess

    from checks.sandbox import supervisor

    assert supervisor.runs_as(os.getuid())
    if os.geteuid() != 0:
        pytest.skip("starting a process as another uid needs root")
    uid = 64000 + os.getpid() % 1000
    assert not supervisor.runs_as(uid)
    spawned = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: spawned.append(args))
    supervisor.kill_uid(uid)
    assert spawned == []
    monkeypatch.undo()
    sleeper = subprocess.Popen(["sleep", "60"], user=uid, group=uid, extra_groups=[], cwd="/")
    try:
        assert supervisor.runs_as(uid)
        supervisor.kill_uid(uid)
        assert sleeper.wait(timeout=10) == -9
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not supervisor.runs_as(uid)


def test_a_process_already_dying_needs_no_kill():
    """runs_as leaves out a process with SIGKILL pending or a zombie (what the workers just
    killed leave for a moment), and counts one alive."""
    import signal
    import subprocess

    from checks.sandbox import supervisor

    if os.geteuid() != 0:
        pytest.skip("starting a process as another uid needs root")
    uid = 65000 + os.getpid() % 500
    stopped = subprocess.Popen(["sleep", "60"], user=uid, group=uid, extra_groups=[], cwd="/")
    try:
        assert supervisor.runs_as(uid)
        os.kill(stopped.pid, signal.SIGSTOP)  # stopped is not dying: still one to kill
        assert supervisor.runs_as(uid)
        os.kill(stopped.pid, signal.SIGKILL)
        # a zombie now (not yet waited for): dying, not alive
        assert supervisor._dying(supervisor.read_status(stopped.pid)) or not supervisor.read_status(stopped.pid)
        assert not supervisor.runs_as(uid)
    finally:
        stopped.kill()
        stopped.wait()
    pending = (b"Name:\tx\nState:\tS (sleeping)\nUid:\t1\t1\t1\t1\n"
               b"SigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n")
    assert supervisor._dying(pending)
    assert not supervisor._dying(pending.replace(b"0000000000000100", b"0000000000000000"))
    assert supervisor._dying(b"Name:\tx\nState:\tZ (zombie)\n")
