"""What a submission consumes is bounded and its own (DESIGN.md, "The trust boundary"; issue 29,
section 2): wall time per question and per submission, the memory of all its processes, its temp
space, what comes back to the grader, and the grader's own scratch space, which no student process
can pre-plant. Each budget is set small in a throwaway course's assignment.toml; where the level
matters, each test runs at every isolation level this machine has."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from pathlib import Path
from typing import Iterator

import pytest

from checks.course import caps
from checks.course.answer_cells import NotANotebook, read_answers
from checks.course.assignment import CourseError, load_assignment
from checks.grading.session import Source, grade_sources
from checks.executors import serve
from checks.sandbox import jail, supervisor
from checks.suites import scoring
from checks.suites.budgets import TimeBudget
from checks.suites.scoring import CaseResult, score_cases

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
ROOT = os.geteuid() == 0


def grade(root: Path, level: str, submissions: dict[str, dict[str, str]], name: str = "toy") -> dict:
    """{submission name: SubmissionResult}, graded side by side (two jobs) at `level`."""
    sources = [Source.from_files(sub, {path: textwrap.dedent(text).encode() for path, text in files.items()})
               for sub, files in submissions.items()]
    results = grade_sources(load_assignment(root, name), sources, jobs=2, isolation=jail.choose(level))
    return {result.name: result for result in results}


# ---------------------------------------------------------------- wall time, per question and per submission

TIMED = {
    "autograder/toy/assignment.toml": """
        files = ["m.py"]
        question_seconds = 1.5
        submission_seconds = 3.5
    """,
    "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("a.slow", points=1, timeout=10)
        def test_slow(student):
            for _ in range(3):
                expect_equal(student.m.nap(0.9), 1)

        @question("b.quick", points=1)
        def test_quick(student):
            expect_equal(student.m.nap(0), 1)

        @question("c.slow", points=1, timeout=10)
        def test_slow_again(student):
            expect_equal(student.m.nap(1.2), 1)

        @question("d.slow", points=1, timeout=10)
        def test_slow_once_more(student):
            expect_equal(student.m.nap(1.2), 1)

        @question("e.last", points=1)
        def test_last(student):
            expect_equal(student.m.nap(0), 1)
    """,
}
NAPPER = {"m.py": "import time\ndef nap(seconds):\n    time.sleep(seconds)\n    return 1\n"}


@pytest.mark.parametrize("level", LEVELS)
def test_a_question_and_a_submission_stop_at_their_time_budgets(level, make_course):
    result = grade(make_course(TIMED), level, {"napper": NAPPER})["napper"]
    assert not result.error
    slow = result.question("a.slow")  # 0.9 + 0.9 > 1.5: the second call is stopped, the third not run
    assert slow.score == 0 and "time limit: this question used up its time budget of 1.5 s" in slow.feedback
    assert result.question("b.quick").passed
    # a: 1.5, c: 1.2, d: runs out at 3.5 s in all; e is never started
    assert result.question("c.slow").passed
    assert "time limit: the submission used up its time budget of 3.5 s" in result.question("d.slow").feedback
    last = result.question("e.last")
    assert last.score == 0 and "not run: the submission's time budget of 3.5 s ran out" in last.feedback
    assert any("time budget of 3.5 s (time limit)" in warning for warning in result.warnings)


def test_the_budgets_are_checked_with_clear_errors(make_course):
    root = make_course({"autograder/toy/assignment.toml": """
        question_seconds = 0
        submission_seconds = "long"
        temp_mib = 1.5
        submission_memory_mib = -1
    """})
    with pytest.raises(CourseError) as error:
        load_assignment(root, "toy")
    message = str(error.value)
    assert "`question_seconds` must be a number of seconds greater than 0, not the number 0" in message
    assert "`submission_seconds` must be a number of seconds greater than 0, not the string 'long'" in message
    assert "`temp_mib` must be a whole number of MiB, 0 for none" in message
    assert "`submission_memory_mib` must be a whole number of MiB" in message
    defaults = load_assignment(make_course({"autograder/toy/assignment.toml": "files = []\n"}), "toy")
    assert defaults.question_seconds > 0 and defaults.submission_seconds >= defaults.question_seconds


# ---------------------------------------------------------------- temp space of its own

ADD = """
        @question("add.sum", points=1)
        def test_add(student):
            expect_equal(student.m.add(2, 3), 5)
"""  # an honest question after a hostile one: it runs in a fresh worker, unharmed

SPACE = {
    "autograder/toy/assignment.toml": """
        files = ["m.py"]
        temp_mib = 8
    """,
    "autograder/toy/test_toy.py": """
        import pytest
        from checks.suite import question, expect_equal

        @question("space.use", points=2)
        @pytest.mark.parametrize("round", [1, 2])
        def test_use(student, round):
            expect_equal(student.m.use(), 4)
    """ + ADD,
}
HONEST_SPACE = {"m.py": """
    import os, tempfile
    def use():
        # 1 MiB in each place a program writes scratch files; read back
        count = 0
        for folder in (tempfile.gettempdir(), "/tmp", os.environ["HOME"], os.getcwd()):
            with tempfile.NamedTemporaryFile(dir=folder) as handle:
                handle.write(b"x" * 2**20)
                handle.flush()
                count += os.path.getsize(handle.name) == 2**20
        return count
    def add(a, b):
        return a + b
"""}
FILLER = {"m.py": """
    import os
    def fill(folder, prefix):
        written = 0
        try:
            for k in range(10_000):
                with open(os.path.join(folder, f"{prefix}{k}"), "wb") as handle:
                    handle.write(b"x" * 2**20)
                written += 2**20
        except OSError:
            pass
        return written
    def use():
        for folder in ("/tmp", "/var/tmp", "/dev/shm", os.environ["HOME"]):
            if os.path.isdir(folder):
                assert fill(folder, "big") <= 8 * 2**20, folder  # capped
        return 0
    def add(a, b):
        fill(os.environ["HOME"], "more")
        return a + b
"""}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.skipif(not ROOT, reason="a temp space of its own needs root (a mount namespace per worker)")
def test_a_submission_that_fills_its_temp_space_costs_only_itself(level, make_course):
    root = make_course(SPACE)
    together = grade(root, level, {"honest": HONEST_SPACE, "filler": FILLER})
    alone = grade(root, level, {"honest": HONEST_SPACE})
    honest = together["honest"]
    assert not honest.error and honest.score == honest.max_score == 3, [q.feedback for q in honest.questions]
    assert [q.to_dict() if hasattr(q, "to_dict") else q for q in honest.questions] == alone["honest"].questions
    filler = together["filler"]
    assert not filler.error and filler.question("add.sum").passed  # ENOSPC in its own space only
    assert filler.question("space.use").score == 0


@pytest.mark.skipif(not ROOT, reason="a temp space of its own needs root (a mount namespace per worker)")
def test_a_temp_space_of_its_own_keeps_an_installation_under_tmp_importable_and_read_only(tmp_path):
    """A virtualenv or source tree under /tmp (a CI clone there, say) stays visible, read-only, in
    the worker's fresh /tmp: a module not imported yet still imports, and nothing else of the old
    /tmp shows through. Clearing the temp space up between questions removes what a question left,
    also beside the installation, and never walks the installation (it once took seconds a question)."""
    script = textwrap.dedent("""
        import os, sys, tempfile
        from checks.sandbox import worker
        lib = tempfile.mkdtemp(dir=tempfile.mkdtemp(dir="/tmp", prefix="checks-test-clone-"), prefix="lib-")
        with open(os.path.join(lib, "lazy_module.py"), "w") as module:
            module.write("VALUE = 42\\n")
        beside = tempfile.mkdtemp(dir="/tmp", prefix="checks-test-beside-")
        sys.path.insert(0, lib)
        home = tempfile.mkdtemp(dir="/tmp", prefix="checks-test-home-")
        kept = worker._private_temp(home, 16 * 2**20)
        print("mounted", kept is not None and os.path.realpath(lib) in kept)
        import lazy_module
        print("imported", lazy_module.VALUE)
        print("old /tmp shows", os.path.exists(beside))
        try:
            open(os.path.join(lib, "planted.py"), "w").close()
            print("writable")
        except OSError:
            print("read-only")
        print("home", os.path.isdir(home))
        left = [os.path.join("/tmp", "left-behind"), os.path.join(os.path.dirname(lib), "left-beside")]
        for path in left:
            open(path, "w").close()
        walked = []
        real_rmtree = worker.shutil.rmtree
        worker.shutil.rmtree = lambda path, **options: walked.append(path) or real_rmtree(path, **options)
        open(os.path.join(home, ".output"), "w").close()
        worker._Home(home, {"a.py": b"x = 1"}, kept).clear_up()
        print("cleared", [os.path.exists(path) for path in left], os.path.exists(os.path.join(lib, "lazy_module.py")),
              [path for path in walked if path.startswith(lib)])
    """)
    # the namespace is the child's own: the folders it made are still there, out here
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    for folder in Path("/tmp").glob("checks-test-*"):
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:6] == ["mounted True", "imported 42", "old /tmp shows False", "read-only",
                                            "home True", "cleared [False, False] True []"], done.stdout


# ---------------------------------------------------------------- memory of all its processes together

MEMORY = {
    "autograder/toy/assignment.toml": """
        files = ["m.py"]
        submission_memory_mib = 300
    """,
    "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("memory.hog", points=1, timeout=30)
        def test_hog(student):
            expect_equal(student.m.hog(), 1)
    """ + ADD,
}
HOG = {"m.py": """
    import os, time
    def hog():
        # each process well under its own limit (RLIMIT_DATA), together over the submission's
        for _ in range(4):
            if os.fork() == 0:
                block = b"x" * (150 * 2**20)
                time.sleep(60)
                os._exit(0)
        time.sleep(60)
        return 1
    def add(a, b):
        return a + b
"""}
MODEST = {"m.py": "def hog():\n    block = b'x' * (100 * 2**20)\n    return 1\ndef add(a, b):\n    return a + b\n"}


@pytest.mark.parametrize("level", LEVELS)
def test_the_memory_of_all_a_submissions_processes_is_capped_together(level, make_course):
    results = grade(make_course(MEMORY), level, {"hog": HOG, "modest": MODEST})
    hog = results["hog"]
    assert not hog.error
    assert "memory limit: the submission's processes together used" in hog.question("memory.hog").feedback
    assert hog.question("add.sum").passed  # the next question runs in a fresh worker
    assert results["modest"].score == results["modest"].max_score == 2


# ---------------------------------------------------------------- the grader's scratch space

@contextlib.contextmanager
def at_most(seconds: int) -> Iterator[None]:
    """Turn a hang into a failure (not a timing assertion: a hang never ends by itself)."""
    def hung(*_: object) -> None:
        raise TimeoutError(f"hung for {seconds} s")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def plant(temp: Path, outside: Path) -> list[Path]:
    """What a student process (another uid, at the fork level, which shares /tmp) could leave
    under the names the grader uses: a FIFO, links to files and folders outside, /dev/zero, and
    a folder that claims to be a dead run's."""
    dead = f"{2**22 - 7} 0\n"  # a pid no process has: a dead run, if the folder were believed
    planted = []
    for name in ("fifo", "zero", "link", "claims", "foreign"):
        planted.append(temp / f"{supervisor.RUN_PREFIX}planted-{name}-{os.getpid()}")
    fifo, zero, link, claims, foreign = planted
    fifo.mkdir()
    os.mkfifo(fifo / supervisor.OWNER_FILE)
    zero.mkdir()
    os.symlink("/dev/zero", zero / supervisor.OWNER_FILE)
    (outside / supervisor.OWNER_FILE).write_text(dead)
    os.symlink(outside, link)
    claims.mkdir()
    (claims / supervisor.OWNER_FILE).write_text(dead)
    os.symlink(outside / "keep", claims / "keep")
    foreign.mkdir()
    (foreign / supervisor.OWNER_FILE).write_text(dead)
    os.chown(foreign, 1_000_000 + 7, 1_000_000 + 7)  # a sandbox uid's
    os.chown(foreign / supervisor.OWNER_FILE, 1_000_000 + 7, 1_000_000 + 7)
    os.chmod(fifo, 0o777)  # writable by all: not one the grader made
    os.chmod(zero, 0o777)
    os.chmod(claims, 0o777)
    return planted


@pytest.mark.skipif(not ROOT, reason="the fork level shares /tmp between uids only as root")
def test_nothing_planted_under_the_graders_names_hangs_bloats_or_redirects_a_run(make_course, tmp_path, monkeypatch):
    root = make_course(TIMED)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("the grader must not remove this")
    # a temp dir like /tmp (sticky, writable by all), but ours: other runs on this machine never look in it
    shared = Path(tempfile.mkdtemp(prefix="budgets-shared-", dir="/tmp"))
    shared.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    planted = plant(shared, outside)
    try:
        with at_most(60):
            assert supervisor.remove_dead_runs() == []
            result = grade(root, jail.FORK, {"napper": NAPPER})["napper"]
        assert not result.error and result.question("b.quick").passed
        assert (outside / "keep").read_text() == "the grader must not remove this"
        assert all(os.path.lexists(path) for path in planted)
        assert stat.S_ISFIFO(os.lstat(planted[0] / supervisor.OWNER_FILE).st_mode)
    finally:
        (shared / planted[2].name).unlink()
        shutil.rmtree(shared)


def test_the_cpu_locks_of_pools_cannot_be_planted(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    os.mkfifo(tmp_path / "checks-cpu-0.lock")  # where the locks were once: a FIFO held its open forever
    target = tmp_path / "outside"
    os.symlink(target, tmp_path / f"checks-cpu-locks-{os.geteuid()}")  # a link in place of the folder
    with at_most(30):
        assert serve.claim_cpu() is None  # not ours: the CPUs are shared rather than the link trusted
    assert not target.exists()
    (tmp_path / f"checks-cpu-locks-{os.geteuid()}").unlink()
    affinity = os.sched_getaffinity(0)
    with at_most(30):
        handle = serve.claim_cpu()
    try:
        assert handle is not None
        assert stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    finally:
        os.sched_setaffinity(0, affinity)
        if handle is not None:
            handle.close()


def test_each_grading_slot_of_a_server_holds_a_cpu_its_pools_take_turns_on(tmp_path, monkeypatch):
    """A server's slot claims a CPU without pinning the server to it; both its pools (hidden and
    public) are started on it, and no two slots share one while CPUs are free."""
    pytest.importorskip("sqlalchemy")
    from checks.server import queue

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    started = []
    monkeypatch.setattr(queue, "WarmPool", lambda *args, **options: started.append(options) or object())
    affinity = os.sched_getaffinity(0)
    slots = [queue.LocalPools("cpu") for _ in range(len(affinity))]
    try:
        assert os.sched_getaffinity(0) == affinity  # the server itself runs anywhere
        assert sorted(slot.cpu for slot in slots) == sorted(affinity)
        extra = queue.LocalPools("cpu")
        assert extra.cpu is None  # more slots than CPUs: that one shares them
        extra.close()
        for slot in slots:
            for public in (False, True):
                slot._pool(types.SimpleNamespace(name="a", root=tmp_path), public)
        assert [options["cpu"] for options in started] == [slot.cpu for slot in slots for _ in (False, True)]
    finally:
        for slot in slots:
            slot._launcher.shutdown()
            slot._cpu_lock.close()


# ---------------------------------------------------------------- what comes back

def test_feedback_is_capped_per_message_per_question_and_per_submission():
    huge = "x" * 2**20
    cases = [CaseResult(f"q{k}", f"t{k}::test{n}", 1, False, False, f"{huge}{k}-{n}", False, f"q{k}-{n}", k * 10 + n)
             for k in range(40) for n in range(3)]
    questions = score_cases(cases)
    assert len(questions) == 40 and all(q.score == 0 and q.total_cases == 3 for q in questions)
    assert all(len(q.feedback) <= scoring.MAX_QUESTION_FEEDBACK_CHARS for q in questions)
    assert "more characters cut: one message is capped at" in questions[0].feedback
    assert sum(len(q.feedback) for q in questions) <= scoring.MAX_SUBMISSION_FEEDBACK_CHARS
    assert "feedback cut: the submission's feedback is capped" in questions[-1].feedback


LOUD = {
    "autograder/toy/assignment.toml": 'files = ["m.py"]\n',
    "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("loud.text", points=1)
        def test_text(student):
            expect_equal(student.m.text(), "short")

        @question("loud.raise", points=1)
        def test_raise(student):
            expect_equal(student.m.shout(), 1)

        @question("loud.many", points=1)
        def test_many(student):
            expect_equal(student.m.many(), [0])

        @question("loud.big", points=1)
        def test_big(student):
            expect_equal(student.m.big(), 0)
    """,
}
LOUD_CODE = {"m.py": """
    def text():
        return "y" * (4 * 2**20)
    def shout():
        print("z" * (4 * 2**20))
        raise ValueError("w" * (4 * 2**20))
    def many():
        return [0] * 2_000_000
    def big():
        import numpy
        return numpy.ones(5 * 2**20, dtype=numpy.float32)  # 20 MiB, over the codec's payload limit
"""}


@pytest.mark.parametrize("level", LEVELS)
def test_what_a_submission_sends_back_is_capped_with_a_short_message(level, make_course):
    result = grade(make_course(LOUD), level, {"loud": LOUD_CODE})["loud"]
    assert not result.error and result.score == 0
    for question in result.questions:
        assert len(question.feedback) <= scoring.MAX_QUESTION_FEEDBACK_CHARS, question.qid
    assert sum(len(question.feedback) for question in result.questions) < 20_000


def test_a_notebook_of_too_many_cells_is_refused_before_it_is_parsed():
    cells = [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [], "execution_count": None}]
    notebook = {"cells": cells * (caps.MAX_NOTEBOOK_CELLS + 1), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    with pytest.raises(NotANotebook, match="cells, and the grader reads notebooks of at most"):
        read_answers(json.dumps(notebook).encode())


def test_the_graders_own_waits_are_not_charged_to_the_student():
    budget = TimeBudget(question_seconds=10, submission_seconds=10)
    with budget.spending("q"):
        with budget.not_counting():
            time.sleep(0.3)  # a worker forked, the zygote importing torch: the grader's time
    assert budget.spent["q"] < 0.3 and budget.total < 0.3
