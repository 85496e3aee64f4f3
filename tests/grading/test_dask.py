"""`checks grade --scheduler`: a real Dask cluster (a LocalCluster of two worker processes on
127.0.0.1) grades real submissions of 01_tensors and 02_autograd, hostile ones included, into
the same gradebook as the local pool; a worker killed with SIGKILL mid-batch loses nothing, and a
submission whose every try (the last alone) loses its worker becomes a grader failure while the
batch goes on."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")
pytestmark = pytest.mark.long  # a real cluster: `make test-long`, which CI runs

from checks.authoring.verify import load_mutants  # noqa: E402
from checks.cli import main  # noqa: E402
from checks.course.assignment import Assignment, load_assignment  # noqa: E402
from checks.executors.dask_grader import ClusterUnreachable, DaskGrader, connect  # noqa: E402
from checks.grading.batch import BatchListener, expand_submission_paths, grade_to_folder  # noqa: E402
from checks.grading.session import Source, grade_sources, named_files  # noqa: E402
from checks.reports.gradebook import Gradebook  # noqa: E402
from checks.sandbox import jail  # noqa: E402

from conftest import REPO  # noqa: E402
from test_batch_tensors import gradebook_contents  # noqa: E402
from test_fuzz_grading import assert_batch_inert, run_grade  # noqa: E402
from test_hardening import ATTACKS, SECRET  # noqa: E402
from test_inert_outputs import COURSE, FORGED, hostile_name  # noqa: E402

TENSORS, AUTOGRAD = load_assignment(REPO, "01_tensors"), load_assignment(REPO, "02_autograd")
HOSTILE = ("segfaults", "exits", "kills_parent", "pickle_payload")  # (patches_libraries takes 100 s)
POISON = "zz_poison"  # the submission the test's killer loses a worker with, every time it runs


def hostile_version(source: bytes, attack: str) -> bytes:
    """The reference file with its first public function replaced by one of the hardening attacks."""
    target = next(node.name for node in ast.parse(source).body
                  if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"))
    attack_code = textwrap.dedent(ATTACKS[attack]).replace("{secret}", SECRET)
    return source + (f"\n\n{attack_code}\n\ndef {target}(*args, **kwargs):\n"
                     "    return run({'root': '/', 'port': 9})\n").encode()


def make_class(assignment: Assignment, folder: Path, *, mutants: int, attacks: tuple[str, ...]) -> list[Path]:
    """The reference, the stubs, the first mutant of `mutants` questions, and one submission per attack."""
    reference = {name: (assignment.solution_dir / name).read_bytes() for name in (*assignment.files, "quiz.toml")}
    submissions = {"reference": reference}
    seen: set[str] = set()
    for mutant in [m for m in load_mutants(assignment) if not (m.question in seen or seen.add(m.question))][:mutants]:
        submissions[mutant.name] = mutant.apply(reference)
    for attack in attacks:
        submissions[attack] = {**reference, assignment.files[0]: hostile_version(reference[assignment.files[0]], attack)}
    for name, files in submissions.items():
        for filename, data in files.items():
            (folder / name).mkdir(parents=True, exist_ok=True)
            (folder / name / filename).write_bytes(data)
    shutil.copytree(assignment.release_dir, folder / "stubs")
    return expand_submission_paths([folder])


def serving_processes() -> list[psutil.Process]:
    """The warm grading pools (checks.executors.serve) still running under this test process."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if "checks.executors.serve" in process.cmdline():
                found.append(process)
        except psutil.Error:
            pass
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two single-threaded worker processes; a task that loses its worker is given up at once
    (then graded again alone by the driver): few kills, so that no nanny gives up restarting hers.
    Their sandbox must have no network (bwrap): a plain cluster at the fork level is refused (issue 49).
    Once it is closed, no course it unpacked is left, the killed workers' included."""
    if jail.bwrap_problem() is not None:
        pytest.skip(f"grading on a plain Dask cluster needs the bwrap sandbox, which cannot run here: "
                    f"{jail.bwrap_problem()} (tests/grading/test_dask_boundary.py shows the refusal)")
    scratch = tmp_path_factory.mktemp("dask-scratch")
    temp_before = set(Path(tempfile.gettempdir()).glob("checks-*"))
    # a killed worker's address answers no connection: the Killer's `client.run` (a broadcast from
    # the scheduler, made here) gives it up in 2 s, not the default 30 s in which a retry would
    # run unwatched (it did in CI, and the poison was graded): the poison runs 10 s, to be seen
    with dask.config.set({"distributed.scheduler.allowed-failures": 0, "distributed.comm.timeouts.connect": "2s"}):
        local = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                         dashboard_address=None, silence_logs=50, local_directory=str(scratch))
    try:
        with connect(local.scheduler_address) as client:
            yield local, client
    finally:
        local.close(timeout=30)
        deadline = time.monotonic() + 15
        while serving_processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = serving_processes()
        for process in left:
            process.kill()
        assert not left, f"warm pools outlived the cluster: {left}"
        courses = [path for path in scratch.rglob("checks-courses-*") if path.is_dir()]
        assert not courses, f"courses the workers unpacked outlived the cluster: {courses}"
        new_in_temp = sorted(set(Path(tempfile.gettempdir()).glob("checks-dask-*")) - temp_before)
        assert not new_in_temp, f"the workers left folders in the system temp folder: {new_in_temp}"


@pytest.fixture(scope="module")
def tensors_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tensors")
    paths = make_class(TENSORS, folder / "subs", mutants=2, attacks=HOSTILE)
    local = folder / "local"
    grade_to_folder(TENSORS, paths, local, jobs=2)
    return paths, gradebook_contents(local)


def test_a_class_graded_on_the_cluster_has_the_local_gradebook(cluster, tensors_class, tmp_path):
    _, client = cluster
    paths, expected = tensors_class
    summary = grade_to_folder(TENSORS, paths, tmp_path / "dask", grader=DaskGrader(client))
    assert not summary.failed, [r.error for r in summary.failed]
    assert gradebook_contents(tmp_path / "dask") == expected
    scores = {r.name: r.score for r in summary.results}
    assert scores["reference"] == 100 and scores["stubs"] == 0
    assert all(scores[attack] < 100 for attack in HOSTILE)
    assert len({r.sandbox for r in summary.results}) == 1


def test_the_public_checks_on_the_cluster_are_the_local_ones(cluster):
    """The course server's public checks on the Dask path: the workers' public-suite pools give the
    results the local public run gives, beside their hidden-suite pools."""
    _, client = cluster
    sources = [Source.from_path(REPO / "examples" / "01_tensors" / name, named_files(TENSORS))
               for name in ("ben_bitdiddle", "stubs")]

    def scores(results) -> dict:
        return {r.name: {q.qid: q.score for q in r.questions} for r in results}

    local = scores(grade_sources(TENSORS, sources, public=True))
    on_cluster = scores(DaskGrader(client)(TENSORS, sources, public=True))
    assert on_cluster == local and set(local["stubs"].values()) == {0}
    hidden = scores(DaskGrader(client)(TENSORS, sources[:1]))
    assert set(hidden["ben_bitdiddle"]) > set(local["ben_bitdiddle"])  # the hidden suite: more questions


def test_the_grade_command_sends_the_grading_to_the_scheduler(cluster, tensors_class, tmp_path, capsys):
    local, client = cluster
    paths, expected = tensors_class
    chosen = [p for p in paths if p.name in ("reference", "stubs", "segfaults")]
    with distributed.get_task_stream(client) as tasks:
        code = main(["--course", str(REPO), "grade", "01_tensors", *map(str, chosen), "--out", str(tmp_path / "out"),
                     "--scheduler", local.scheduler_address])
    assert len([task for task in tasks.data if str(task["key"]).startswith("checks-grade-")]) == 3
    assert not any(name in str(task["key"]) for task in tasks.data for name in ("reference", "stubs", "segfaults"))
    printed = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert code == 0, printed
    assert f"on the Dask cluster at {local.scheduler_address}" in printed
    assert "grade 01_tensors: 3 graded now" in printed
    got = gradebook_contents(tmp_path / "out")
    assert got["results"] == {name: expected["results"][name] for name in ("reference", "stubs", "segfaults")}


@pytest.mark.slow  # two minutes on a loaded 2-core machine: `make test-all`
def test_02_autograd_on_the_cluster_has_the_local_gradebook(cluster, tmp_path):
    _, client = cluster
    paths = make_class(AUTOGRAD, tmp_path / "subs", mutants=1, attacks=("segfaults",))
    grade_to_folder(AUTOGRAD, paths, tmp_path / "local", jobs=2)
    summary = grade_to_folder(AUTOGRAD, paths, tmp_path / "dask", grader=DaskGrader(client))
    assert not summary.failed, [r.error for r in summary.failed]
    assert gradebook_contents(tmp_path / "dask") == gradebook_contents(tmp_path / "local")
    assert {r.name: r.score for r in summary.results}["reference"] == 100


class Killer(BatchListener):
    """SIGKILLs Dask workers from beside the batch: once, a worker grading an ordinary submission
    (after the first result, so mid-batch); and every worker the poison submission runs on."""

    def __init__(self, client: distributed.Client) -> None:
        self.client = client
        self.kills: list[str] = []  # the task each killed worker was running
        self.first_result = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def graded(self, result, done, total) -> None:
        self.first_result.set()

    def stopped(self) -> None:
        self.stop.set()
        self.thread.join()

    def _watch(self) -> None:
        def executing(dask_worker) -> tuple[int, list[str]]:  # nested: pickled by value, workers cannot import tests
            """On a worker: its pid, and the tasks it is running now (not those merely sent to it),
            each named by its key and, where it grades the poison, POISON (a key names no submission)."""
            import pickle
            return os.getpid(), [str(key) + (f" {POISON}" if POISON.encode() in pickle.dumps(task.run_spec) else "")
                                 for key, task in dask_worker.state.tasks.items() if task.state == "executing"]

        while not self.stop.wait(0.05):
            for pid, keys in self.client.run(executing, on_error="ignore").values():
                grading = [key for key in keys if key.startswith("checks-grade-")]
                ordinary_killed = any(POISON not in key for key in self.kills)
                if grading and (POISON in grading[0] or (self.first_result.is_set() and not ordinary_killed)):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        self.kills.append(grading[0])


def test_killed_workers_lose_nothing_and_a_submission_that_kills_every_worker_fails_alone(cluster, tensors_class,
                                                                                          tmp_path):
    _, client = cluster
    paths, expected = tensors_class
    poison = tmp_path / POISON
    shutil.copytree(TENSORS.solution_dir, poison)
    with (poison / "strides.py").open("a") as slow:  # long enough to be seen running, under any load
        slow.write("\nimport time\ntime.sleep(10)\n")
    killer = Killer(client)
    summary = grade_to_folder(TENSORS, [*paths, poison], tmp_path / "dask", grader=DaskGrader(client),
                              listener=killer)
    assert any(POISON not in k for k in killer.kills), f"no ordinary submission lost its worker: {killer.kills}"
    # allowed-failures = 0: a lost worker beside others, then one alone (none of its own beside others
    # when it waited on a worker killed for another)
    assert 1 <= sum(POISON in k for k in killer.kills) <= 2, killer.kills
    (failed,) = summary.failed
    assert failed.name == POISON and "Dask worker that graded it died" in failed.error, failed.error
    assert "graded alone" in failed.error
    got = gradebook_contents(tmp_path / "dask")
    for part in ("submissions", "questions"):
        got[part] = [row for row in got[part] if POISON not in row[:2]]
    got["csv"] = "".join(line for line in got["csv"].splitlines(keepends=True) if not line.startswith(POISON))
    for part in ("results", "feedback"):
        got[part].pop(POISON, None)
    assert got == expected


def test_a_hostile_submission_graded_on_the_cluster_is_inert_and_costs_its_neighbour_nothing(cluster, make_course,
                                                                                             monkeypatch):
    """The trust boundary holds through --scheduler as locally: a name with a newline, ESC and a
    byte that is not UTF-8, a message forging a Markdown heading and a =HYPERLINK cell, and an
    os._exit, graded on a worker beside an honest submission. The batch finishes, every output is
    inert, the honest score is the local one, and only this process (the one that ran `checks
    grade`) writes the gradebook: the workers send plain results back."""
    local, _ = cluster
    root = make_course(COURSE)
    hostile = root / "subs" / hostile_name()
    hostile.mkdir()
    (hostile / "mod.py").write_text(f"def add(a, b):\n    raise ValueError({FORGED!r})\n\n\n"
                                    "def shout(s):\n    import os\n    os._exit(0)\n")
    code, shown = run_grade(root, root / "local", root / "subs/honest")
    assert code == 0, shown
    alone = json.loads((root / "local/honest/results.json").read_text(encoding="utf-8"))

    writers: list[int] = []
    record = Gradebook.record
    monkeypatch.setattr(Gradebook, "record", lambda self, graded: writers.append(os.getpid()) or record(self, graded))
    out = root / "dask"
    code, shown = run_grade(root, out, root / "subs/honest", hostile, options=("--scheduler", local.scheduler_address))
    assert f"on the Dask cluster at {local.scheduler_address}" in " ".join(shown.split())
    assert_batch_inert(out, code, shown, root / "subs/honest", alone)
    assert writers == [os.getpid()] * 2  # each result recorded here, once
    graded = {r.result.name: r for r in Gradebook(out / "gradebook.sqlite", "toy").load()}
    assert len(graded) == 2 and len({r.run_id for r in graded.values()}) == 1
    evil = next(r.result for name, r in graded.items() if name != "honest")
    assert evil.score == 0 and {q.qid: q.score for q in evil.questions}["mod.shout"] == 0


def test_a_scheduler_that_cannot_be_reached_is_a_clear_error_at_start(tmp_path):
    started = time.monotonic()
    with pytest.raises(ClusterUnreachable, match="cannot reach tcp://127.0.0.1:9"):
        connect("tcp://127.0.0.1:9", timeout=2)
    assert time.monotonic() - started < 30
    command = [sys.executable, "-m", "checks", "--course", str(REPO), "grade", "01_tensors",
               str(REPO / "examples/01_tensors"), "--out", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:9"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot reach tcp://127.0.0.1:9" in done.stdout and "dask scheduler" in done.stdout
    assert not (tmp_path / "out").exists()
    missing = subprocess.run([*command[:-2], "--scheduler-file", str(tmp_path / "nope.json")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no scheduler file" in missing.stdout
