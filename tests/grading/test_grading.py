"""The grading processes: one pytest session per batch, one child per submission, and what
happens when the grader itself breaks (a suite that does not collect, a child that dies)."""

from __future__ import annotations

import os

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.grading.pool import ChildFailed, stream_forked

GOOD = "def add(a, b):\n    return a + b\n"

SUITE = """
    import os
    from checks.suite import cases, expect_equal, question

    @question("good.add", points=90)
    @cases("a", [1, 2, 3])
    def test_add(student, a):
        got = student.good.add(a, 1)
        if got == "crash the grader":
            os._exit(7)  # stands for a bug that kills the grading process
        expect_equal(got, a + 1)
"""


def grade(make_course, suite_files: dict[str, str], submissions: dict[str, str]):
    files = {"autograder/toy/assignment.toml": 'files = ["good.py"]\n[quiz.answer]\nanswer = 6\npoints = 10\n',
             "solutions/toy/good.py": GOOD, "assignments/toy/.keep": ""}
    files.update({f"autograder/toy/{name}": text for name, text in suite_files.items()})
    files.update({f"subs/{name}/good.py": text for name, text in submissions.items()})
    root = make_course(files)
    sources = [Source.from_path(root / "subs" / name) for name in submissions]
    return {r.name: r for r in grade_sources(load_assignment(root, "toy"), sources, jobs=2)}


def test_one_session_grades_every_submission_on_its_own(make_course):
    results = grade(make_course, {"test_toy.py": SUITE},
                    {"right": GOOD, "wrong": "def add(a, b):\n    return a - b\n", "stub": "def add(a, b):\n    ...\n"})
    assert {name: r.score for name, r in results.items()} == {"right": 90, "wrong": 0, "stub": 0}
    assert all(not r.error for r in results.values())


def test_a_suite_that_does_not_collect_is_a_grader_error_for_every_submission(make_course):
    results = grade(make_course, {"test_toy.py": SUITE, "test_broken.py": "def test_(:\n"}, {"a": GOOD, "b": GOOD})
    for result in results.values():
        assert "could not be collected at test_broken.py" in result.error and "ran no checks" in result.error
        assert result.score == 0


def test_a_grading_process_that_dies_costs_its_submission_only(make_course):
    crashing = "def add(a, b):\n    return 'crash the grader'\n"
    results = grade(make_course, {"test_toy.py": SUITE}, {"crashing": crashing, "right": GOOD, "also_right": GOOD})
    assert "the grading process exited with status 7 before reporting" in results["crashing"].error
    assert results["right"].score == results["also_right"].score == 90 and not results["right"].error


def test_a_stream_yields_each_value_as_it_comes():
    def job(emit):
        for value in ({"a": 1}, [2, 3], "four"):
            emit(value)

    assert list(stream_forked(job)) == [{"a": 1}, [2, 3], "four"]


def test_a_stream_whose_child_raises_or_dies_says_so_after_what_it_sent():
    def raises(emit):
        emit(1)
        raise RuntimeError("the session broke")

    def dies(emit):
        emit(1)
        os._exit(3)

    for job, reason in ((raises, "RuntimeError: the session broke"), (dies, "exited with status 3")):
        received = []
        with pytest.raises(ChildFailed, match=reason):
            for value in stream_forked(job):
                received.append(value)
        assert received == [1]
