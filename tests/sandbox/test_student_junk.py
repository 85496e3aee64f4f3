"""Failures on the student's side stay there (issue 43): junk a student's code puts into what a
suite driver returns makes the hidden check meet values it cannot read, and a notebook cell holds
characters no file can hold. Both are the student's, graded, with a clear message, never "grader
error" with the suite's internal text. Graded at every isolation level this machine has."""

from __future__ import annotations

import json

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.sandbox import jail

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]

SUITE = {
    "autograder/junk/assignment.toml": 'files = ["engine.py"]\n',
    "autograder/junk/drivers.py": """
        def report(n):
            import engine
            t = engine.make(n)
            return {"values": t.values, "shape": t.shape, "name": t.name}
    """,
    "autograder/junk/test_junk.py": """
        from checks.suite import question, expect_equal
        import drivers

        @question("engine.report", points=10)
        def test_report(student):
            got = student.run(drivers.report, 3)
            expect_equal(tuple(size * 2 for size in got["shape"]), (6,))
            expect_equal(got["name"].upper(), "T")
            expect_equal(sum(got["values"]), 3)

        @question("engine.honest", points=10)
        def test_honest(student):
            expect_equal(student.engine.add(1, 2), 3)

        @question("engine.suite_bug", points=10)
        def test_suite_bug(student):
            expect_equal(student.engine.add(1, 2), 3)
            undefined_name_in_the_suite
    """,
    "assignments/junk/.keep": "",
}

ENGINE = '''
class T:
    def __init__(self, n, shape, name):
        self.values, self.shape, self.name = [1] * n, shape, name

def add(a, b):
    return a + b
'''

HONEST = ENGINE + "\ndef make(n):\n    return T(n, (n,), 't')\n"
JUNK = {  # each puts another kind of junk where the check expects a tuple of ints and a str
    "shape_nones": ENGINE + "\ndef make(n):\n    return T(n, [None, '<script>'], 't')\n",
    "shape_an_int": ENGINE + "\ndef make(n):\n    return T(n, 3, 't')\n",
    "name_a_dict": ENGINE + "\ndef make(n):\n    return T(n, (n,), {'upper': 1})\n",
    "values_strs": ENGINE + "\ndef make(n):\n    t = T(n, (n,), 't')\n    t.values = ['a', None]\n    return t\n",
}


@pytest.mark.parametrize("level", LEVELS)
def test_junk_in_what_a_driver_returns_is_the_students_failure(make_course, level):
    files = {**SUITE, "subs/honest/engine.py": HONEST}
    files.update({f"subs/{name}/engine.py": source for name, source in JUNK.items()})
    root = make_course(files)
    sources = [Source.from_path(root / "subs" / name) for name in ["honest", *JUNK]]
    results = {r.name: r for r in grade_sources(load_assignment(root, "junk"), sources, jobs=1,
                                                isolation=jail.choose(level))}
    assert results["honest"].question("engine.report").passed, results["honest"].question("engine.report").feedback
    for name in JUNK:
        result = results[name]
        report = result.question("engine.report")
        # the suite's own bug (engine.suite_bug) keeps every submission unscored; the junk is no part of that
        assert "engine.suite_bug" in result.error and "engine.report" not in result.error, (name, result.error)
        assert report.score == 0 and not report.passed, (name, report)
        assert "grader" not in report.feedback.lower() and "test_junk" not in report.feedback, (name, report.feedback)
        assert "could not be checked" in report.feedback, (name, report.feedback)
        assert result.question("engine.honest").passed
    # a bug of the suite's own stays the grader's, whatever the student returned: no score is given
    bug = results["honest"].question("engine.suite_bug")
    assert "grader error" in bug.feedback.lower() and "broke in the grader" in results["honest"].error, bug
    assert results["honest"].status == "not graded"


NOTEBOOK_SUITE = {
    "autograder/nb/assignment.toml": 'files = ["first.py", "second.py"]\n',
    "autograder/nb/test_nb.py": """
        from checks.suite import question, expect_equal

        @question("first.one", points=10)
        def test_first(student):
            expect_equal(student.first.one(), 1)

        @question("second.two", points=10)
        def test_second(student):
            expect_equal(student.second.two(), 2)
    """,
    "assignments/nb/.keep": "",
}


def _notebook(cells: list[str]) -> str:
    """A notebook's JSON, written by hand: `cells` may hold what no file can (lone surrogates)."""
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{index}", "metadata": {},
                                  "outputs": [], "source": source} for index, source in enumerate(cells)],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("level", LEVELS)
def test_a_notebook_cell_that_is_not_text_is_graded_as_the_students(make_course, level):
    root = make_course(NOTEBOOK_SUITE)
    notebook = root / "subs" / "odd.ipynb"
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_text(_notebook(["%%checks file first.py\ndef one():\n    return 1  # \ud800 odd\n",
                                   "%%checks file second.py\ndef two():\n    return 2\n"]), encoding="ascii")
    [result] = grade_sources(load_assignment(root, "nb"), [Source.from_path(notebook, ("first.py", "second.py"))],
                             jobs=1, isolation=jail.choose(level))
    assert not result.error, result.error
    first = result.question("first.one")
    assert first.score == 0 and "not text" in first.feedback and "line 2" in first.feedback, first.feedback
    assert "grader" not in first.feedback.lower()
    assert result.question("second.two").passed, result.question("second.two").feedback
