"""A Dask cluster that loses every worker (each worker and nanny SIGKILLed mid-batch, or none
there from the start) ends `checks grade --scheduler` within its --worker-wait, instead of a wait
with no end: what was graded is kept and written, every submission not graded yet is a grader
failure naming the cause, and the exit status says so. `checks serve --scheduler` gives such a
submission back to its queue, then records a grader failure for staff, never a score."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.long  # a real cluster: `make test-long`, which CI runs

from checks.course.assignment import load_assignment  # noqa: E402
from checks.executors.dask_grader import DaskGrader, connect  # noqa: E402
from checks.grading.session import Source, named_files  # noqa: E402
from checks.reports.gradebook import Gradebook  # noqa: E402
from checks.sandbox import jail  # noqa: E402

from cluster import local_dask  # noqa: E402
from serving import SRC  # noqa: E402
from test_inert_outputs import COURSE  # noqa: E402

WAIT = 3  # --worker-wait: seconds without a worker before the rest fails
ENDS_WITHIN = WAIT + 90  # after the last worker died, whatever the load: past it, the command hangs
SLOW = "import time\ntime.sleep(120)  # still being graded when the workers are killed\n"
needs_bwrap = pytest.mark.skipif(jail.bwrap_problem() is not None,
                                 reason=f"grading on a plain Dask cluster needs bubblewrap: {jail.bwrap_problem()}")


def class_folder(make_course, slow: int) -> tuple[Path, list[Path]]:
    """The toy course; its honest submission first, then `slow` that take minutes to import."""
    root = make_course(COURSE)
    paths = [root / "subs/honest"]
    for n in range(slow):
        path = root / "subs" / f"slow_{n}"
        shutil.copytree(root / "subs/honest", path)
        (path / "mod.py").write_text(SLOW + (path / "mod.py").read_text())
        paths.append(path)
    return root, paths


def grade_command(root: Path, out: Path, scheduler: str, *paths: Path) -> list[str]:
    return [sys.executable, "-m", "checks", "--course", str(root), "grade", "toy", *map(str, paths),
            "--out", str(out), "--scheduler", scheduler, "--worker-wait", str(WAIT)]


def no_worker_error(scheduler: str) -> str:
    return f"no Dask worker for {WAIT} s; the scheduler at {scheduler} has 0 workers"


@needs_bwrap
def test_grading_ends_within_the_wait_when_every_worker_dies_mid_batch(make_course, tmp_path):
    root, paths = class_folder(make_course, slow=3)
    out = root / "out"
    with local_dask(tmp_path / "dask", workers=2, nanny=True) as cluster:
        environment = {**os.environ, "PYTHONPATH": str(SRC)}
        with open(tmp_path / "grade.log", "w") as log:
            grading = subprocess.Popen(grade_command(root, out, cluster.scheduler, *paths), stdout=log,
                                       stderr=subprocess.STDOUT, env=environment)
        try:
            deadline = time.monotonic() + 300
            while not (out / "honest" / "results.json").exists():  # graded and written: now kill them all
                assert grading.poll() is None and time.monotonic() < deadline, (tmp_path / "grade.log").read_text()
                time.sleep(0.1)
            cluster.kill_every_worker()
            try:
                code = grading.wait(timeout=ENDS_WITHIN)
            except subprocess.TimeoutExpired:
                pytest.fail(f"`checks grade` still waits {ENDS_WITHIN} s after the last worker died")
        finally:
            if grading.poll() is None:
                grading.kill()
                grading.wait()
    shown = " ".join((tmp_path / "grade.log").read_text().split())
    assert code == 1, shown
    assert no_worker_error(cluster.scheduler) in shown, shown
    graded = {r.result.name: r.result for r in Gradebook(out / "gradebook.sqlite", "toy").load()}
    assert sorted(graded) == ["honest", "slow_0", "slow_1", "slow_2"]
    assert not graded["honest"].error and graded["honest"].questions  # graded before: kept
    for name in ("slow_0", "slow_1", "slow_2"):  # out, or never sent: grader failures, never a score
        assert graded[name].error.startswith("not graded: " + no_worker_error(cluster.scheduler))
        assert not graded[name].questions
    assert (out / "honest" / "results.json").exists() and (out / "gradebook.csv").exists()


def test_a_cluster_with_no_worker_from_the_start_is_refused_within_the_wait(make_course, tmp_path):
    root, paths = class_folder(make_course, slow=0)
    with local_dask(tmp_path / "dask", workers=0) as cluster:
        done = subprocess.run(grade_command(root, root / "out", cluster.scheduler, *paths), capture_output=True,
                              text=True, timeout=ENDS_WITHIN + 30, env={**os.environ, "PYTHONPATH": str(SRC)})
    shown = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, shown
    assert f"{cluster.scheduler} has no workers after {WAIT} s" in shown and "dask worker" in shown, shown
    assert not (root / "out").exists()


@needs_bwrap
def test_a_grader_whose_cluster_lost_its_workers_before_it_starts_fails_every_submission(make_course, tmp_path):
    """The library's DaskGrader, on a client connected while a worker was there."""
    root, paths = class_folder(make_course, slow=1)
    toy = load_assignment(root, "toy")
    sources = [Source.from_path(path, named_files(toy)) for path in paths]
    results: list = []
    with local_dask(tmp_path / "dask", workers=1, nanny=True) as cluster, connect(cluster.scheduler) as client:
        cluster.kill_every_worker()
        grading = threading.Thread(target=lambda: results.extend(DaskGrader(client, worker_wait=WAIT)(toy, sources)),
                                   daemon=True)
        grading.start()
        grading.join(timeout=ENDS_WITHIN)
        assert not grading.is_alive(), f"DaskGrader still waits {ENDS_WITHIN} s on a cluster with no worker"
    assert sorted(r.name for r in results) == ["honest", "slow_0"]
    for result in results:
        assert result.error.startswith("not graded: " + no_worker_error(cluster.scheduler)), result.error
        assert not result.questions and result.score == 0


@needs_bwrap
def test_the_server_gives_a_submission_back_then_records_a_grader_failure_never_a_score(tmp_path):
    """`checks serve --scheduler`: a submission claimed while the cluster has no worker goes back to
    the queue after --worker-wait, as one whose pool died does, and after MAX_ATTEMPTS tries is a
    grader failure for staff naming the cause; the student gets no score from it."""
    pytest.importorskip("starlette")
    from serving import REFERENCE, course_folder, folder_zip, import_roster, start_server, submit, wait_graded

    from checks.server.config import load_config
    from checks.server.queue import MAX_ATTEMPTS
    from checks.server.storage import FAILED, Storage

    folder = course_folder(tmp_path)
    tokens = import_roster(folder)
    with local_dask(tmp_path / "dask", workers=1, nanny=True) as cluster:
        server = start_server(folder, args=("--scheduler", cluster.scheduler, "--worker-wait", str(WAIT)))
        try:
            cluster.kill_every_worker()
            with server.client(tokens["s001"]) as http:
                reply = submit(http, folder_zip(REFERENCE))
                assert reply.status_code == 202, reply.text
                submission_id = reply.json()["id"]
                shown = wait_graded(http, submission_id, timeout=(MAX_ATTEMPTS + 1) * ENDS_WITHIN)
        finally:
            server.kill(15)
    assert shown["status"] == "grader_problem" and not shown.get("result"), shown
    storage = Storage(load_config(folder).storage_url)
    try:
        row = storage.submission(submission_id)
    finally:
        storage.close()
    assert row.status == FAILED and row.result is None and row.attempts == MAX_ATTEMPTS, row
    assert no_worker_error(cluster.scheduler) in row.error, row.error
