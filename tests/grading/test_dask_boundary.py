"""Student code never reaches the grading cluster (issue 49): a real scheduler and workers on
127.0.0.1, grading a submission that knows the scheduler's address and tries to take it over (a
raw connection, then distributed's own client, its import blocker removed, publishing a dataset).

At the fork level (bwrap hidden from the workers' PATH), on a cluster without TLS, `checks grade
--scheduler` and `checks serve --scheduler` refuse to start and say why, and a driver that skips
its own check still gets nothing graded: each worker refuses too. With bubblewrap the same
submission is graded and finds no route to the scheduler. Either way nothing reaches the cluster.
And should a worker be taken over all the same, the driver believes only what it asked for: a
reply rewritten as another student's is a grader error of the submission that was sent; and a
worker killed beside a submission costs its neighbour a retry (alone), never its grade.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.long  # a real cluster: `make test-long`, which CI runs

from checks import cli  # noqa: E402
from checks.executors.dask_grader import DaskGrader, connect  # noqa: E402
from checks.executors.worker import PLUGIN_NAME, GradingPlugin  # noqa: E402
from checks.grading.batch import BatchListener, grade_to_folder  # noqa: E402
from checks.course.assignment import load_assignment  # noqa: E402
from checks.grading.session import Source, named_files  # noqa: E402
from checks.reports.gradebook import Gradebook  # noqa: E402
from checks.sandbox import jail  # noqa: E402

from cluster import local_dask  # noqa: E402
from serving import course_folder, free_port  # noqa: E402
from test_inert_outputs import COURSE  # noqa: E402

ATTACK = '''
def add(a, b):
    import socket, sys
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    except OSError:
        return a + b  # the scheduler is out of reach: the honest answer, and full marks
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_BlockedImports"]
    try:
        from distributed import Client
        with Client("{address}", timeout=10) as client:
            client.publish_dataset(pwned=True)
    except BaseException:
        pass
    return -1  # reached it


def shout(s):
    return s + "!"
'''


def attack_course(make_course, address: str) -> tuple[Path, Path]:
    root = make_course(COURSE)
    attacker = root / "subs" / "attacker"
    attacker.mkdir()
    port = address.rsplit(":", 1)[1]
    (attacker / "mod.py").write_text(ATTACK.format(port=port, address=address))
    shutil.copy(root / "subs/honest/quiz.toml", attacker / "quiz.toml")
    return root, attacker


def path_without_bwrap(folder: Path) -> str:
    """A PATH with every program of /usr/bin but bubblewrap, as in a Docker container."""
    folder.mkdir()
    for program in Path("/usr/bin").iterdir():
        if program.name != "bwrap":
            (folder / program.name).symlink_to(program)
    return str(folder)


def run_cli(*args: str) -> tuple[int, str]:
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(shown):
        code = cli.main(list(args))
    return code, " ".join(shown.getvalue().split())


def test_fork_level_workers_without_tls_are_refused_by_the_driver_and_by_each_worker(make_course, tmp_path):
    folder = tmp_path / "dask"
    with local_dask(folder, workers=1, worker_environment={"PATH": path_without_bwrap(tmp_path / "bin")}) as cluster:
        root, attacker = attack_course(make_course, cluster.scheduler)
        code, shown = run_cli("--course", str(root), "grade", "toy", str(attacker), "--out", str(root / "out"),
                              "--scheduler", cluster.scheduler)
        assert code == 2, shown
        assert "may not grade submissions" in shown and "fork level" in shown and "TLS" in shown, shown
        assert "bubblewrap" in shown and not (root / "out").exists()

        (tmp_path / "served").mkdir()
        served = course_folder(tmp_path / "served")
        code, shown = run_cli("serve", str(served), "--port", str(free_port()), "--scheduler", cluster.scheduler)
        assert code != 0 and "may not grade submissions" in shown and "fork level" in shown, shown

        # a driver that skips its check (an older checks, say): the worker grades nothing
        with connect(cluster.scheduler, check=False) as client:
            summary = grade_to_folder(load_assignment(root, "toy"), [attacker, root / "subs/honest"],
                                      root / "unchecked", grader=DaskGrader(client))
            assert len(summary.failed) == 2 and all(r.error for r in summary.results), summary.results
            assert all("grades nothing" in r.error and "fork level" in r.error for r in summary.failed)
            assert "pwned" not in client.list_datasets()


@pytest.mark.skipif(jail.bwrap_problem() is not None, reason=f"bubblewrap cannot run here: {jail.bwrap_problem()}")
def test_bwrap_workers_grade_and_the_submission_finds_no_route_to_the_scheduler(make_course, tmp_path):
    with local_dask(tmp_path / "dask", workers=1) as cluster:
        root, attacker = attack_course(make_course, cluster.scheduler)
        out = root / "out"
        code, shown = run_cli("--course", str(root), "grade", "toy", str(attacker), "--out", str(out),
                              "--scheduler", cluster.scheduler)
        assert code in (0, 1) and "grade toy: 1 graded now" in shown, shown
        results = (out / "attacker" / "results.json").read_text()
        assert '"mod.add"' in results and "bwrap" in results
        (graded,) = Gradebook(out / "gradebook.sqlite", "toy").load()
        assert {q.qid: q.score for q in graded.result.questions}["mod.add"] == 10  # a + b: no route out
        with connect(cluster.scheduler) as client:
            assert "pwned" not in client.list_datasets()


class ForgingPlugin(GradingPlugin):
    """A worker taken over, as the issue's attacker took them: the attacker's reply is rewritten as
    the honest student's, at full marks."""

    def grade(self, bundle, request):
        reply = super().grade(bundle, request)
        if reply.get("value") and request["name"] == "attacker":
            reply["value"]["name"] = "honest"
            for question in reply["value"]["questions"]:
                question["score"] = question["max_score"]
        return reply


@pytest.mark.skipif(jail.bwrap_problem() is not None, reason=f"bubblewrap cannot run here: {jail.bwrap_problem()}")
def test_a_forged_reply_is_a_grader_error_of_its_own_submission_never_another_s_grade(make_course, tmp_path):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import the tests
    root = make_course(COURSE)
    attacker = root / "subs" / "attacker"
    shutil.copytree(root / "subs/honest", attacker)
    toy = load_assignment(root, "toy")
    with local_dask(tmp_path / "dask", workers=1) as cluster, connect(cluster.scheduler) as client:
        alone = {r.name: r for r in DaskGrader(client)(toy, [Source.from_path(root / "subs/honest", named_files(toy))])}
        client.register_plugin(ForgingPlugin(), name=PLUGIN_NAME)
        summary = grade_to_folder(toy, [attacker, root / "subs/honest"], root / "out", grader=DaskGrader(client))
    results = {r.name: r for r in summary.results}
    assert sorted(results) == ["attacker", "honest"], summary.results
    assert "filed as 'honest'" in results["attacker"].error and not results["attacker"].questions
    assert not results["honest"].error and results["honest"].score == alone["honest"].score < 100


ATTACKER = "zz_attacker"


class NeighbourKiller(BatchListener):
    """While the attacker's task runs, SIGKILLs the worker grading anyone else, as a submission that
    could signal the other workers would; never the attacker's own."""

    def __init__(self, client: distributed.Client) -> None:
        self.client = client
        self.kills: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def stopped(self) -> None:
        self.stop.set()
        self.thread.join()

    def _watch(self) -> None:
        def executing(dask_worker) -> tuple[int, list[tuple[str, bool]]]:  # nested: pickled by value
            # a task's key names no submission (the cluster's pages show keys): its arguments do
            import pickle
            return os.getpid(), [(str(key), ATTACKER.encode() in pickle.dumps(task.run_spec))
                                 for key, task in dask_worker.state.tasks.items() if task.state == "executing"]

        while not self.stop.wait(0.05):
            running = list(self.client.run(executing, on_error="ignore").values())
            if not any(attacker for _, keys in running for _, attacker in keys):
                continue
            for pid, keys in running:
                grading = [key for key, attacker in keys if key.startswith("checks-grade-") and not attacker]
                if grading:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        self.kills.append(grading[0])


@pytest.mark.skipif(jail.bwrap_problem() is not None, reason=f"bubblewrap cannot run here: {jail.bwrap_problem()}")
def test_a_worker_lost_beside_a_submission_that_kills_it_costs_the_neighbour_a_retry_never_its_grade(
        make_course, tmp_path):
    """The neighbour whose worker dies while the attacker runs (Dask allows no second try here: it
    would be KilledWorker at once) is graded again alone, and gets the grade it gets alone."""
    root = make_course(COURSE)
    shutil.copytree(root / "subs/honest", root / "subs" / ATTACKER)
    toy = load_assignment(root, "toy")
    no_retry = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    with local_dask(tmp_path / "dask", workers=2, environment=no_retry) as cluster, \
            connect(cluster.scheduler) as client:
        killer = NeighbourKiller(client)
        summary = grade_to_folder(toy, [root / "subs" / ATTACKER, root / "subs/honest"], root / "out",
                                  grader=DaskGrader(client), listener=killer)
    assert killer.kills, "the neighbour's worker was never killed"  # it kills only tasks not the attacker's
    assert not summary.failed, [(r.name, r.error) for r in summary.failed]
    scores = {r.name: r.score for r in summary.results}
    assert scores["honest"] == scores[ATTACKER] > 0 and len(scores) == 2
