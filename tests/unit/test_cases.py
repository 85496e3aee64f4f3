"""@cases: many cases in one pytest test, each still scored and reported on its own."""

from __future__ import annotations

import inspect

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.suite import CheckFailed, cases

REFERENCE = {"good.py": "def add(a, b):\n    return a + b\n"}

SUITE = {
    "autograder/toy/assignment.toml": """
        files = ["good.py"]
    """,
    "autograder/toy/test_toy.py": """
        import pytest
        from checks.suite import cases, expect_equal, question

        @question("good.add", points=30)
        @cases("a, b", [(1, 2), (2, 2), pytest.param(3, 4, id="three-four")])
        def test_add(student, a, b):
            expect_equal(student.good.add(a, b), a + b)

        @question("good.add", points=20)
        @pytest.mark.parametrize("a", [1, 5])
        def test_add_zero(student, a):
            expect_equal(student.good.add(a, 0), a)

        @question("skipping", points=10)
        @cases("x", [1, 2, 3])
        def test_skipped_midway(student, x):
            if x == 3:
                pytest.skip("not on this machine")
            expect_equal(student.good.add(x, 0), x)

        @question("skipping", points=10)
        def test_not_skipped(student):
            expect_equal(student.good.add(1, 1), 2)

        @question("broken.suite", points=10)
        @cases("x", [1, 0, 2])
        def test_suite_bug(student, x):
            expect_equal(student.good.add(x, 0), x // x * x)
    """,
}


@pytest.fixture
def grade(make_course):
    def run(submissions: dict[str, str]):
        files = {**SUITE, "solutions/toy/good.py": REFERENCE["good.py"], "assignments/toy/.keep": ""}
        files.update({f"subs/{name}/good.py": source for name, source in submissions.items()})
        root = make_course(files)
        sources = [Source.from_path(root / "subs" / name) for name in submissions]
        results = grade_sources(load_assignment(root, "toy"), sources, jobs=2)
        return {r.name: {q.qid: q for q in r.questions} for r in results}
    return run


def test_each_case_is_scored_and_reported_on_its_own(grade):
    results = grade({
        "right": REFERENCE["good.py"],
        "equal_args": "def add(a, b):\n    return a + b + (a == b)\n",
    })
    assert results["right"]["good.add"].score == 50 and results["right"]["good.add"].total_cases == 5
    wrong = results["equal_args"]["good.add"]
    assert (wrong.passed_cases, wrong.total_cases) == (4, 5)
    assert wrong.score == pytest.approx(30 * 2 / 3 + 20, abs=0.01)  # points are shared by a test's cases
    assert "add(2, 2) returned 5; expected 4." in wrong.feedback  # the failing case's own call


def test_a_skip_skips_the_whole_test_and_its_earlier_cases(grade):
    skipping = grade({"right": REFERENCE["good.py"]})["right"]["skipping"]
    assert (skipping.passed_cases, skipping.total_cases, skipping.score, skipping.max_score) == (1, 1, 10, 10)


def test_a_suite_bug_costs_its_case_only_and_is_called_a_grader_error(grade):
    broken = grade({"right": REFERENCE["good.py"]})["right"]["broken.suite"]
    assert (broken.passed_cases, broken.total_cases) == (2, 3)
    assert "problem in the grader itself" in broken.feedback and "ZeroDivisionError" in broken.feedback


def test_the_case_arguments_are_hidden_from_pytest():
    @cases("a, b", [(1, 2)])
    def test_it(student, a, b):
        pass

    assert list(inspect.signature(test_it).parameters) == ["student"]
    assert test_it.__name__ == "test_it"


def test_without_the_plugin_the_test_fails_with_the_first_failure_and_a_count():
    @cases("x", [1, 2, 3], ids=["one", "two", "three"])
    def test_it(x):
        if x > 1:
            raise CheckFailed(f"{x} is too big")

    with pytest.raises(CheckFailed, match=r"2 of 3 cases failed; the first, \[two\]: 2 is too big"):
        test_it()


@pytest.mark.parametrize("make, message", [
    (lambda: cases("x", [1, 2], ids=["one"]), "2 cases but 1 ids"),
    (lambda: cases("x, y", [(1, 2), (3,)]), "case 1 has 1 values for the 2 names x, y"),
    (lambda: cases("x", [pytest.param(1, marks=pytest.mark.slow)]), "no marks"),
], ids=["ids", "row length", "marks"])
def test_malformed_cases_are_refused_where_they_are_written(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_case_name_that_is_no_parameter_is_refused():
    with pytest.raises(TypeError, match="no parameter y"):
        cases("y", [1])(lambda x: None)


def test_a_reference_is_computed_once_per_case_when_the_suite_is_collected(make_course):
    """Before the batch forks a grading process per submission: three submissions, one count."""
    suite = """
        import os
        from checks.suite import cases, expect_equal, question

        COMPUTED = []

        def expected_sum(a, b):
            COMPUTED.append((a, b))
            with open(os.environ["CHECKS_TEST_LOG"], "a") as log:
                log.write(f"{a},{b}\\n")
            return a + b

        @question("good.add", points=10)
        @cases("a, b", [(1, 2), (5, 5)], reference=expected_sum)
        def test_add(student, a, b, reference):
            expect_equal(student.good.add(a, b), reference)
    """
    files = {"autograder/toy/assignment.toml": 'files = ["good.py"]\n', "autograder/toy/test_toy.py": suite,
             "solutions/toy/good.py": REFERENCE["good.py"], "assignments/toy/.keep": ""}
    wrong = "def add(a, b):\n    return a * b\n"
    files.update({f"subs/{name}/good.py": source for name, source in
                  {"a": REFERENCE["good.py"], "b": REFERENCE["good.py"], "c": wrong}.items()})
    root = make_course(files)
    log = root / "computed.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHECKS_TEST_LOG", str(log))
        sources = [Source.from_path(root / "subs" / name) for name in "abc"]
        results = {r.name: r.questions[0] for r in grade_sources(load_assignment(root, "toy"), sources, jobs=2)}
    assert log.read_text().splitlines() == ["1,2", "5,5"]
    assert results["a"].score == results["b"].score == 10
    assert (results["c"].passed_cases, results["c"].total_cases) == (0, 2)
    assert "add(1, 2) returned 2; expected 3." in results["c"].feedback


def test_the_reference_argument_is_hidden_from_pytest_too():
    @cases("a", [1, 2], reference=lambda a: a * 2)
    def test_it(student, a, reference):
        assert reference == 2 * a

    assert list(inspect.signature(test_it).parameters) == ["student"]
    test_it(student=None)


AHEAD_SUITE = """
    from checks.suite import cases, expect_equal, question

    ROWS = [(1, 2), (2, 2), (3, 4), (5, 1), (0, 0)]

    @question("one_by_one", points=10, timeout=1.0)
    @cases("a, b", ROWS, reference=lambda a, b: a + b)
    def test_one_by_one(student, a, b, reference):
        expect_equal(student.good.add(a, b), reference)

    @question("sent_ahead", points=10, timeout=1.0)
    @cases("a, b", ROWS, reference=lambda a, b: a + b, send_ahead=True)
    def test_sent_ahead(student, a, b, reference):
        expect_equal(student.good.add(a, b), reference)
"""

AHEAD_SUBMISSIONS = {
    "right": REFERENCE["good.py"],
    "wrong": "def add(a, b):\n    return a + b + (a == b)\n",
    "raises": "def add(a, b):\n    if a == 3:\n        raise KeyError('three')\n    return a + b\n",
    "hangs": "def add(a, b):\n    while a == 2:\n        pass\n    return a + b\n",
    "crashes": "import os\n\ndef add(a, b):\n    if a == 5:\n        os._exit(3)\n    return a + b\n",
}


def test_cases_sent_ahead_are_scored_and_explained_as_those_sent_one_by_one(make_course):
    files = {"autograder/toy/assignment.toml": 'files = ["good.py"]\n', "autograder/toy/test_toy.py": AHEAD_SUITE,
             "solutions/toy/good.py": REFERENCE["good.py"], "assignments/toy/.keep": ""}
    files.update({f"subs/{name}/good.py": source for name, source in AHEAD_SUBMISSIONS.items()})
    root = make_course(files)
    sources = [Source.from_path(root / "subs" / name) for name in AHEAD_SUBMISSIONS]
    for result in grade_sources(load_assignment(root, "toy"), sources, jobs=2):
        one_by_one, sent_ahead = sorted(result.questions, key=lambda q: q.qid)
        assert (sent_ahead.score, sent_ahead.passed_cases, sent_ahead.feedback) == \
            (one_by_one.score, one_by_one.passed_cases, one_by_one.feedback), result.name
        assert one_by_one.passed_cases == {"right": 5, "wrong": 3, "raises": 4, "hangs": 4, "crashes": 4}[result.name]
