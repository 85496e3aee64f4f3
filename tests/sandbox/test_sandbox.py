"""The trust boundary on a tiny course: every misbehaviour costs only the question it touches."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import checks
from checks.course.assignment import load_assignment
from checks.grading.session import Source, WarmGrader, grade_sources
from checks.sandbox import jail
from checks.sandbox.supervisor import NotCompiled, with_bytecode

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]

REFERENCE = {
    "good.py": "def add(a, b):\n    return a + b\n\n\ndef label():\n    return 'reference'\n",
    "other.py": "def twice(x):\n    return 2 * x\n",
}

SUITE = {
    "autograder/toy/assignment.toml": """
        files = ["good.py", "other.py"]
        [quiz.answer]
        answer = 6
        points = 10
    """,
    "autograder/toy/drivers.py": """
        def add_in_sandbox(a, b):
            import good
            return {"sum": good.add(a, b)}
    """,
    "autograder/toy/test_toy.py": """
        import pytest
        import drivers
        from checks.suite import question, expect_equal, expect_raises

        @question("good.add", points=30, timeout=3)
        @pytest.mark.parametrize("a", [1, 2, 3])
        def test_add(student, a):
            expect_equal(student.good.add(a, 10), a + 10)

        @question("other.twice", points=30)
        @pytest.mark.parametrize("x", [1, 4])
        def test_twice(student, x):
            expect_equal(student.other.twice(x), 2 * x)

        @question("driver.add", points=10)
        def test_driver(student):
            assert student.run(drivers.add_in_sandbox, 2, 3) == {"sum": 5}

        @question("reference.label", points=10, use_reference=("good.py",))
        def test_reference_label(student):
            expect_equal(student.good.label(), "reference")

        @question("blocked.torch", points=10, block_imports=("torch",))
        def test_blocked(student):
            with expect_raises(ImportError):
                student.other.uses_torch()
    """,
}


@pytest.fixture
def grade(make_course):
    def run(submissions: dict[str, dict[str, str]]):
        files = dict(SUITE)
        files.update({f"solutions/toy/{name}": text for name, text in REFERENCE.items()})
        for sub, sources in submissions.items():
            files.update({f"subs/{sub}/{name}": text for name, text in sources.items()})
        files["subs/.keep"] = ""
        root = make_course({**files, "assignments/toy/.keep": ""})
        assignment = load_assignment(root, "toy")
        sources = [Source.from_path(root / "subs" / sub) for sub in submissions]
        return {r.name: {q.qid: q for q in r.questions} | {"_result": r} for r in grade_sources(assignment, sources, jobs=2)}
    return run


WITH_TORCH_USE = REFERENCE["other.py"] + """
def uses_torch():
    import torch
    return 1
"""


def base(**overrides: str) -> dict[str, str]:
    return {**REFERENCE, "other.py": WITH_TORCH_USE, "quiz.toml": "answer = 6\n", **overrides}


def test_reference_gets_everything_and_references_stay_per_question(grade):
    results = grade({"honest": base(**{"good.py": REFERENCE["good.py"].replace("'reference'", "'mine'")})})["honest"]
    # reference.label sees the reference good.py; every other question sees the student's own
    assert results["reference.label"].passed
    assert results["good.add"].passed and results["other.twice"].passed and results["driver.add"].passed
    assert results["blocked.torch"].passed, results["blocked.torch"].feedback
    assert results["quiz.answer"].passed
    assert results["_result"].score == 100


def test_exit_at_import_costs_only_that_modules_questions(grade):
    results = grade({"quitter": base(**{"other.py": "import sys\nsys.exit(3)\n"})})["quitter"]
    assert results["other.twice"].score == 0
    assert "called sys.exit(3)" in results["other.twice"].feedback
    assert "while importing other.py" in results["other.twice"].feedback
    assert results["good.add"].passed and results["quiz.answer"].passed


def test_a_hang_is_stopped_and_costs_only_its_cases(grade):
    hanging = REFERENCE["good.py"].replace("return a + b", "if a == 2:\n        while True: pass\n    return a + b")
    results = grade({"hangs": base(**{"good.py": hanging})})["hangs"]
    assert results["good.add"].score == 20.0
    assert "did not finish within 3 s" in results["good.add"].feedback
    assert results["other.twice"].passed


def test_crashes_liars_and_patched_libraries_earn_nothing(grade):
    hostile = """
        import os, numpy
        numpy.array_equal = lambda *a, **k: True
        numpy.allclose = lambda *a, **k: True

        class Liar(tuple):
            def __eq__(self, other):
                return True

        def add(a, b):
            if a == 1:
                os._exit(0)
            return Liar((a,))
    """
    results = grade({"hostile": base(**{"good.py": hostile})})["hostile"]
    assert results["good.add"].score == 0
    feedback = results["good.add"].feedback
    assert "crashed the sandbox" in feedback and "unsupported type" in feedback
    assert results["other.twice"].passed and results["quiz.answer"].passed


def test_a_missing_file_or_function_is_named(grade):
    results = grade({"partial": {"good.py": "def label():\n    return 1\n", "quiz.toml": "answer = 6\n"}})["partial"]
    assert "defines no add" in results["good.add"].feedback
    assert "other.py" in results["other.twice"].feedback
    assert "other.py is missing from the submission" in results["_result"].warnings


def test_a_broken_hidden_test_is_a_grader_error_not_the_students(make_course):
    root = make_course({
        "autograder/toy/assignment.toml": 'files = ["good.py"]\n',
        "autograder/toy/test_broken.py": """
            from checks.suite import question
            @question("good.add", points=100)
            def test_add(student):
                {}["missing"]
        """,
        "subs/s/good.py": REFERENCE["good.py"],
        "assignments/toy/.keep": "",
    })
    (result,) = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs/s")])
    assert "grader error" in result.questions[0].feedback and "not your mistake" in result.questions[0].feedback


def test_a_librarys_own_assertion_in_a_check_is_a_grader_error_and_the_suites_asserts_are_verdicts(make_course):
    """An AssertionError is a failed check only where the check asserted: an `assert` in the suite's
    files, or numpy's and torch's testing helpers. One raised inside a library the check called
    (seen on a GPU machine: torch's "already registered in mega-cache artifact factory", after an
    import that had failed on the grader's uid) is the grader's failure: it scored a reference 76."""
    root = make_course({
        "autograder/toy/assignment.toml": 'files = ["good.py"]\n',
        "autograder/toy/test_asserts.py": """
            import numpy
            import torch
            from torch.compiler._cache import CacheArtifact, CacheArtifactFactory
            from checks.suite import question

            class Twice(CacheArtifact):
                @staticmethod
                def type():
                    return "checks_registered_twice"

            @question("good.library", points=25)
            def test_library(student):
                student.good.add(1, 2)
                CacheArtifactFactory.register(Twice)
                CacheArtifactFactory.register(Twice)

            @question("good.suite_assert", points=25)
            def test_suite_assert(student):
                assert student.good.add(1, 2) == 4, "add(1, 2) should be 4 here"

            @question("good.numpy_helper", points=25)
            def test_numpy_helper(student):
                numpy.testing.assert_allclose(student.good.add(1, 2), 4)

            @question("good.torch_helper", points=25)
            def test_torch_helper(student):
                torch.testing.assert_close(torch.tensor(float(student.good.add(1, 2))), torch.tensor(4.0))
        """,
        "subs/s/good.py": REFERENCE["good.py"],
        "assignments/toy/.keep": "",
    })
    (result,) = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs/s")])
    library = result.question("good.library")
    assert "grader error" in library.feedback and "not your mistake" in library.feedback, library.feedback
    assert "already registered" in library.feedback
    assert "good.library" in result.error and "broke in the grader" in result.error, result.error
    assert "good.suite_assert" not in result.error
    for qid in ("good.suite_assert", "good.numpy_helper", "good.torch_helper"):
        question = result.question(qid)
        assert question.score == 0 and "grader error" not in question.feedback, (qid, question.feedback)
    assert "should be 4 here" in result.question("good.suite_assert").feedback


@pytest.mark.parametrize("level", LEVELS)
def test_one_worker_serves_every_question_and_each_sees_only_its_own_files(make_course, level):
    """A worker is handed on to every question of a submission, with reference files given or not:
    a reference stays in the grader, and before a question given other files its keeper lays the
    home out anew (the student's file of a reference's name gone, a stand-in in its place, and
    back again). The questions given no reference run first, then each set of reference files in
    turn, so that the home is laid out as few times as may be; the results are listed in suite
    order all the same."""
    root = make_course({
        "autograder/toy/assignment.toml": 'files = ["good.py", "other.py", "where.py"]\n',
        "autograder/toy/test_order.py": """
            from checks.suite import question, expect_equal

            SEEN = {}

            @question("first.with_reference", points=20, use_reference=("good.py",))
            def test_first(student):
                SEEN["first"] = student.where.am_i()
                assert list(SEEN) == ["fourth", "fifth", "first"]
                expect_equal(SEEN["first"]["worker"], SEEN["fourth"]["worker"])
                expect_equal(SEEN["first"]["files"], ["other.py", "where.py"])
                expect_equal(student.good.label(), "reference")
                expect_equal(student.where.label_of_good(), "reference")  # its stand-in, answered here

            @question("second.same_reference", points=20, use_reference=("good.py",))
            def test_second(student):
                SEEN["second"] = student.where.am_i()
                expect_equal(SEEN["second"]["worker"], SEEN["first"]["worker"])
                assert SEEN["second"]["pid"] != SEEN["first"]["pid"]  # a process of its own, as ever

            @question("third.other_reference", points=20, use_reference=("good.py", "other.py"))
            def test_third(student):
                SEEN["third"] = student.where.am_i()
                expect_equal(SEEN["third"]["worker"], SEEN["first"]["worker"])
                expect_equal(SEEN["third"]["files"], ["where.py"])
                expect_equal(student.other.twice(4), 8)

            @question("fourth.without", points=20)
            def test_fourth(student):
                SEEN["fourth"] = student.where.am_i()
                expect_equal(SEEN["fourth"]["files"], ["good.py", "other.py", "where.py"])
                expect_equal(student.good.label(), "mine")

            @question("fifth.without", points=20)
            def test_fifth(student):
                SEEN["fifth"] = student.where.am_i()
                expect_equal(SEEN["fifth"]["worker"], SEEN["fourth"]["worker"])
                expect_equal(student.where.label_of_good(), "mine")
        """,
        "solutions/toy/good.py": REFERENCE["good.py"],
        "solutions/toy/other.py": REFERENCE["other.py"],
        "solutions/toy/where.py": "",
        "subs/s/good.py": REFERENCE["good.py"].replace("'reference'", "'mine'"),
        "subs/s/other.py": REFERENCE["other.py"].replace("2 * x", "3 * x"),
        "subs/s/where.py": """
            import os


            def am_i():
                \"\"\"The keeper that forked this question's process, the process, and the home's .py files.\"\"\"
                return {"worker": os.getppid(), "pid": os.getpid(),
                        "files": sorted(name for name in os.listdir(".") if name.endswith(".py"))}


            def label_of_good():
                import good
                return good.label()
        """,
        "assignments/toy/.keep": "",
    })
    (result,) = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs/s")], jobs=1,
                              isolation=jail.choose(level))
    assert result.score == 100, [(q.qid, q.feedback) for q in result.questions]
    assert [q.qid for q in result.questions] == ["first.with_reference", "second.same_reference",
                                                 "third.other_reference", "fourth.without", "fifth.without"]


def test_only_the_named_modules_are_compiled_ahead():
    """A student's other files (a copy of the public tests, say) compile in the worker, if imported."""
    files = {"strides.py": b"X = 1\n", "tests/test_public.py": b"Y = 2\n", "helper.py": b"Z = 3\n"}
    compiled = with_bytecode(files, {}, modules={"strides"})
    assert set(compiled) - set(files) == {importlib.util.cache_from_source("strides.py")}
    assert len(set(with_bytecode(files, {})) - set(files)) == 3


def test_each_question_draws_the_same_numbers_each_time_it_is_graded(make_course):
    """Student code that draws from Python's, NumPy's or torch's generator without seeding them gets
    the same numbers in each question (a fresh worker's first, a handed-on worker's next, one
    after a question that blocked torch) and in each grading of the same submission."""
    draw = "def draw():\n    import random, numpy, torch\n" \
           "    return [random.random(), float(numpy.random.rand()), float(torch.rand(()))]\n"
    root = make_course({
        "autograder/toy/assignment.toml": 'files = ["good.py", "spare.py"]\n',
        "autograder/toy/test_draws.py": """
            from checks.suite import question, fail

            @question("first", points=25)
            def test_first(student):
                drawn = student.good.draw()
                student.good.draw()  # what a question draws does not reach the next
                fail(f"drew {drawn}")

            @question("second", points=25)
            def test_second(student):
                fail(f"drew {student.good.draw()}")

            @question("blocked", points=25, block_imports=("torch",))
            def test_blocked(student):
                fail(f"drew {student.good.without_torch()}")

            @question("with_reference", points=25, use_reference=("spare.py",))
            def test_with_reference(student):
                fail(f"drew {student.good.draw()}")
        """,
        "solutions/toy/good.py": draw,
        "solutions/toy/spare.py": "def unused():\n    return None\n",
        "subs/s/good.py": draw + "\n\ndef without_torch():\n    import random, numpy\n"
                                  "    return [random.random(), float(numpy.random.rand())]\n",
        "assignments/toy/.keep": "",
    })
    assignment = load_assignment(root, "toy")
    gradings = []
    for _ in range(2):
        (result,) = grade_sources(assignment, [Source.from_path(root / "subs/s")], jobs=1)
        gradings.append({q.qid: q.feedback for q in result.questions})
    assert gradings[0] == gradings[1]
    drawn = {qid: feedback.split("drew ", 1)[1].split("]")[0] + "]" for qid, feedback in gradings[0].items()}
    assert drawn["first"] == drawn["second"] == drawn["with_reference"], gradings[0]
    assert drawn["first"].startswith(drawn["blocked"].removesuffix("]")), gradings[0]


def test_bytecode_a_student_sends_is_dropped_for_the_graders_own():
    """A worker imports the submission's modules from the bytecode beside them without reading
    their source again (worker._SubmissionModules): only the grader's may be there."""
    forged = importlib.util.cache_from_source("strides.py")
    files = {"strides.py": b"X = 1\n", "broken.py": b"def (\n", forged: b"forged",
             importlib.util.cache_from_source("broken.py"): b"forged too"}
    compiled = with_bytecode(files, {})
    assert set(compiled) == {"strides.py", "broken.py", forged, importlib.util.cache_from_source("broken.py")}
    assert compiled[forged] != b"forged"
    assert compiled[importlib.util.cache_from_source("broken.py")] != b"forged too"  # the grader's: it raises


def test_a_file_that_does_not_compile_is_compiled_once_by_the_grader(monkeypatch):
    """Found by a fresh attacker: a file made to be slow to compile (a 300,000-term sum takes
    seconds, then fails) was compiled by the grader for the workers and again to say why it does
    not compile: grader time no budget counts. The first compile's verdict is kept and reused."""
    import builtins

    from checks.grading.session import _does_not_compile

    files = {"slow.py": b"X = 1\ndef (\n", "fine.py": b"Y = 2\n"}
    compiles = []
    real = builtins.compile
    sources = {source: name for name, source in files.items()}
    monkeypatch.setattr(builtins, "compile",
                        lambda *args, **kwargs: compiles.append(sources.get(args[0])) or real(*args, **kwargs))
    cache: dict = {}
    with_bytecode(files, cache)
    with_bytecode(files, cache)  # the next question's worker: nothing compiled again
    assert sorted(filter(None, compiles)) == ["fine.py", "slow.py"]
    verdict = cache["slow.py", files["slow.py"]]
    assert isinstance(verdict, NotCompiled) and verdict.reason.startswith("invalid syntax at line 2")

    def known(name, source):
        found = cache.get((name, source))
        return found.reason if isinstance(found, NotCompiled) else found and True

    assert _does_not_compile(files, ["slow.py", "fine.py"], known) == {"slow.py": verdict.reason}
    assert sorted(filter(None, compiles)) == ["fine.py", "slow.py"]  # the verdict came from the cache


@pytest.mark.parametrize("source, line", [(b"X = 1\ndef (\n", 2), (b"x = 1\x00\n", 1), (b"y = (" * 200 + b"\n", 1),
                                          (b"A = 1\n" * 5000 + b"  indented = 2\n", 5001)])
def test_a_question_imports_a_file_that_does_not_compile_without_compiling_it(tmp_path, source, line):
    """The bytecode a worker is given for a file that does not compile raises SyntaxError, saying
    why, from the line where compiling failed: each question imports that instead of compiling
    the file again (found by a fresh attacker: a file made slow to compile cost seconds in every
    question that imported it)."""
    folder = tmp_path / "home"
    for name, data in with_bytecode({"broken.py": source}, {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    code = textwrap.dedent("""
        import builtins, sys, traceback
        compiled = []
        real = builtins.compile
        builtins.compile = lambda *args, **kwargs: compiled.append(args[1]) or real(*args, **kwargs)
        sys.path.insert(0, sys.argv[1])
        try:
            import broken
        except SyntaxError as error:
            frame = traceback.extract_tb(error.__traceback__)[-1]
            print(repr(str(error)), frame.lineno, frame.filename.endswith("broken.py"), compiled)
    """)
    done = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=60)
    message, got_line, in_file, compiled = done.stdout.rsplit(" ", 3)
    assert message[1:].startswith("broken.py does not compile: "), done.stdout + done.stderr
    assert (int(got_line), in_file, compiled.strip()) == (line, "True", "[]")


MODULE_FACTS = """
import importlib, importlib.util, sys


def facts():
    module = sys.modules[__name__]
    return [module.__name__, module.__package__, module.__spec__.name, module.__spec__.origin == module.__file__,
            module.__cached__ == importlib.util.cache_from_source(module.__file__), module.__file__.endswith("/good.py"),
            facts.__code__.co_filename == module.__file__, type(module.__loader__).__name__]


def rewrite_and_reload():
    with open(__file__, "a") as source:
        source.write("\\n\\ndef added():\\n    return 'rewritten'\\n")
    return importlib.reload(sys.modules[__name__]).added()


def rewritten_still():
    return hasattr(sys.modules[__name__], "added")
"""


def test_a_submissions_module_imports_as_from_its_file_and_a_file_rewritten_anew(make_course):
    """The module a question imports is the one its file gives (name, spec, file, bytecode path, the
    file its code names), loaded from the grader's bytecode (worker._SubmissionModules); a question
    that rewrites the file and reloads it runs what it wrote; the next question imports the file
    as the student sent it."""
    result = grade_one_module(make_course, MODULE_FACTS, """
            from checks.suite import question, expect_equal

            @question("facts", points=40)
            def test_facts(student):
                expect_equal(student.good.facts(), ["good", "", "good", True, True, True, True, "_SubmissionModules"])

            @question("rewritten", points=30)
            def test_rewritten(student):
                expect_equal(student.good.rewrite_and_reload(), "rewritten")

            @question("restored", points=30)
            def test_restored(student):
                expect_equal(student.good.rewritten_still(), False)
        """)
    assert result.score == 100, [(q.qid, q.feedback) for q in result.questions]


def test_a_question_and_its_grader_take_turns_on_one_core_as_batch_tasks(make_course):
    """A grading child and its sandbox processes run on one core, and as batch tasks (sandbox/cores.py):
    neither preempts the other when woken by its write."""
    where = "import os\n\n\ndef where():\n    return [sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0)]\n"
    result = grade_one_module(make_course, where, """
            import os
            from checks.suite import question, expect_equal

            @question("where", points=100)
            def test_where(student):
                graders = [sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0)]
                expect_equal(len(graders[0]), 1)
                expect_equal(graders[1], os.SCHED_BATCH)
                expect_equal(student.good.where(), graders)
        """)
    assert result.score == 100, [(q.qid, q.feedback) for q in result.questions]


def grade_one_module(make_course, module: str, suite: str):
    """The result of grading `module` as the student's good.py with `suite`, against itself as the reference."""
    root = make_course({"autograder/toy/assignment.toml": 'files = ["good.py"]\n', "autograder/toy/test_one.py": suite,
                        "solutions/toy/good.py": module, "subs/s/good.py": module, "assignments/toy/.keep": ""})
    (result,) = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs/s")], jobs=1)
    return result


@pytest.mark.parametrize("level", [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK])
def test_student_code_can_ask_its_user_name_under_any_uid(make_course, level):
    """A worker runs under a uid of its own (as root) with no passwd entry: getpass.getuser() there
    names the sandbox's user rather than raising: torch 2.11 asks for it on torch.optim's first step
    (to name its compile cache's folder), and an import that failed once fails ever after."""
    root = make_course({
        "autograder/toy/assignment.toml": 'files = ["good.py"]\n',
        "autograder/toy/test_user.py": """
            from checks.suite import question, expect_equal
            @question("good.user", points=100)
            def test_user(student):
                expect_equal(student.good.user(), "student")
        """,
        "subs/s/good.py": "import getpass\n\ndef user():\n    return getpass.getuser()\n",
        "assignments/toy/.keep": "",
    })
    (result,) = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs/s")],
                              isolation=jail.choose(level))
    assert result.score == 100, result.questions[0].feedback


def test_a_zygote_that_cannot_warm_up_exits_1_saying_why(tmp_path):
    """The grader shows the end of a dead zygote's stderr as the reason the sandbox is unavailable:
    an error while it warms up must be printed there, and its status must not say success."""
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text("raise RuntimeError('this numpy is broken')\n")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "zygote"))
    listener.listen(1)
    package_parent = Path(checks.__file__).resolve().parent.parent
    with listener:
        done = subprocess.run([sys.executable, "-m", "checks.sandbox.zygote", str(listener.fileno())],
                              pass_fds=[listener.fileno()], capture_output=True, text=True, timeout=120,
                              env={"PATH": os.environ["PATH"], "PYTHONPATH": f"{tmp_path}{os.pathsep}{package_parent}"})
    assert done.returncode == 1 and "this numpy is broken" in done.stderr, (done.returncode, done.stderr[-2000:])


TORCH_HERE = """
def torch_here():
    try:
        import torch  # noqa: F401
    except ImportError as error:
        return "refused" if "not available to this part of the assignment" in str(error) else repr(error)
    return "imported"
"""


@pytest.mark.parametrize("level", LEVELS)
def test_what_the_assignment_withholds_no_question_gets_and_no_zygote_imports(make_course, level):
    """assignment.toml's block_imports: a question that names no block of its own cannot import
    torch either, and a batch starts only the zygote that never imported it."""
    root = make_course({
        "autograder/toy/assignment.toml": 'files = ["good.py"]\nblock_imports = ["torch"]\n',
        "autograder/toy/test_withheld.py": """
            from checks.suite import expect_equal, question

            @question("good.torch", points=100)
            def test_torch(student):
                expect_equal(student.good.torch_here(), "refused")
        """,
        "subs/s/good.py": TORCH_HERE,
        "assignments/toy/.keep": "",
    })
    assignment = load_assignment(root, "toy")
    (result,) = grade_sources(assignment, [Source.from_path(root / "subs/s")], isolation=jail.choose(level))
    assert result.score == 100 and not result.error, (result.error, result.questions[0].feedback)
    with WarmGrader(assignment, jail.choose(level), submissions=10) as warm:
        assert warm.zygote.started == {frozenset({"torch"})}
    (root / "autograder/toy/assignment.toml").write_text('files = ["good.py"]\n')
    (result,) = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs/s")],
                              isolation=jail.choose(level))
    assert result.score == 0 and "imported" in result.questions[0].feedback  # the test can fail
