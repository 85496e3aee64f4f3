"""`checks verify` on an assignment that does not hang together: a hidden question with no public
check, public points that differ from the hidden ones, points that do not add up to 100, a question
the lesson notebook leaves out, a reference that loses points (which question, and why); and the same
assignment put right, with a question declared hidden-only."""

from __future__ import annotations

import json

import pytest

from checks.authoring.verify import verify
from checks.course.assignment import CourseError, load_assignment

SOLUTION = """\
def add(a, b):
    # BEGIN SOLUTION hint: add them
    return a + b
    # END SOLUTION


def sub(a, b):
    # BEGIN SOLUTION hint: subtract
    return a - b
    # END SOLUTION


def mul(a, b):
    # BEGIN SOLUTION hint: multiply
    return a * b + (a == 3)
    # END SOLUTION
"""
HIDDEN = """\
from checks.suite import cases, expect_equal, question

@question("good.add", points=50)
@cases("a", [1, 2, 3])
def test_add(student, a):
    expect_equal(student.good.add(a, 2), a + 2)

@question("good.sub", points=30)
@cases("a", [1, 2, 3])
def test_sub(student, a):
    expect_equal(student.good.sub(a, 2), a - 2)

@question("good.mul", points=10)
@cases("a", [1, 2, 3])
def test_mul(student, a):
    expect_equal(student.good.mul(a, 2), a * 2)
"""
PUBLIC = """\
from checks.suite import expect_equal, question

@question("good.add", points=40)
def test_add(student):
    expect_equal(student.good.add(1, 2), 3)

@question("good.mul", points=10)
def test_mul(student):
    expect_equal(student.good.mul(3, 2), 6)
"""
MUTANTS = """\
[[mutant]]
name = "add_minus"
question = "good.add"
file = "good.py"
find = "a + b"
replace = "a - b"

[[mutant]]
name = "sub_plus"
question = "good.sub"
file = "good.py"
find = "a - b"
replace = "a + b"

[[mutant]]
name = "mul_plus"
question = "good.mul"
file = "good.py"
find = "a * b"
replace = "a + b"
"""


def notebook(*lines: str) -> str:
    return json.dumps({"cells": [{"cell_type": "markdown", "source": [line + "\n" for line in lines]}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def toy(make_course, *, assignment: str, public: str, lesson: str, solution: str = SOLUTION):
    root = make_course({"solutions/toy/good.py": solution, "solutions/toy/quiz.toml": "answer = 6\n",
                        "autograder/toy/assignment.toml": assignment, "autograder/toy/test_toy.py": HIDDEN,
                        "autograder/toy/mutants.toml": MUTANTS, "assignments/toy/tests/test_public.py": public,
                        "assignments/toy/toy.ipynb": lesson})
    return {v.expectation: v for v in verify(load_assignment(root, "toy"), jobs=1)}


def test_verify_names_what_does_not_hang_together_and_why_the_reference_loses_points(make_course):
    verdicts = toy(make_course, assignment='files = ["good.py"]\n[quiz.answer]\nanswer = 6\npoints = 5\n',
                   public=PUBLIC, lesson=notebook("## good.add: adding", "Try `%checks test good.sub`."))
    reference = verdicts["scores 100/100"]
    assert not reference.ok
    assert reference.detail == "91.67/95; lost: good.mul 6.67/10: mul(3, 2) returned 7; expected 6."
    assert not verdicts["points add up to 100"].ok
    assert verdicts["points add up to 100"].detail.startswith("code 90 + quiz 5 = 95, not 100")
    public = verdicts["every hidden question has a public check"]
    assert not public.ok and public.detail.startswith("no public check for good.sub (add one, or declare it")
    points = verdicts["public and hidden points agree"]
    assert not points.ok and points.detail == "good.add public 40, hidden 50"
    passes = verdicts["passes the public checks"]
    assert not passes.ok and passes.detail == "good.mul 0/10: mul(3, 2) returned 7; expected 6."
    lesson = verdicts["every question is in the lesson notebook"]
    assert not lesson.ok and lesson.detail == "toy.ipynb has no section or `%checks test` for good.mul, quiz.answer"


def test_a_question_declared_hidden_only_needs_no_public_check_and_the_rest_holds(make_course):
    fixed = SOLUTION.replace("a * b + (a == 3)", "a * b")
    verdicts = toy(make_course, solution=fixed, public=PUBLIC.replace("points=40", "points=50"),
                   assignment='files = ["good.py"]\nhidden_only = ["good.sub"]\n[quiz.answer]\nanswer = 6\npoints = 10\n',
                   lesson=notebook("## good.add", "## good.sub", "## good.mul", "- **answer**: how much?"))
    assert all(v.ok for v in verdicts.values()), [(v.expectation, v.detail) for v in verdicts.values() if not v.ok]
    assert verdicts["every hidden question has a public check"].detail == "2 of 3 have one; hidden-only: good.sub"


def test_hidden_only_is_checked_as_any_other_key(make_course):
    with pytest.raises(CourseError, match="`hidden_only` must be a list of question ids"):
        toy(make_course, assignment='files = ["good.py"]\nhidden_only = "good.sub"\n', public=PUBLIC,
            lesson=notebook("## good.add"))
    verdicts = toy(make_course, assignment='files = ["good.py"]\nhidden_only = ["good.sbu", "good.add"]\n'
                                           '[quiz.answer]\nanswer = 6\npoints = 10\n',
                   public=PUBLIC, lesson=notebook("## good.add"))
    detail = verdicts["every hidden question has a public check"].detail
    assert "good.add is declared hidden_only but has a public check" in detail
    assert "hidden_only names 'good.sbu', which the suite does not have (did you mean 'good.sub'?)" in detail


def test_a_quiz_mutant_inside_the_keys_tolerance_keeps_its_points_and_one_outside_does_not(make_course):
    fixed = SOLUTION.replace("a * b + (a == 3)", "a * b")
    quiz_mutants = MUTANTS + "".join(
        f'\n[[mutant]]\nname = "{name}"\nquestion = "quiz.answer"\nfile = "quiz.toml"\nfind = "answer = 6"\n'
        f'replace = "answer = {value}"\n{extra}\n'
        for name, value, extra in [("rounded", 6.4, "keeps_points = true"), ("too_far", 6.6, "keeps_points = true"),
                                   ("wrong", 7, "")])
    root = make_course({"solutions/toy/good.py": fixed, "solutions/toy/quiz.toml": "answer = 6\n",
                        "autograder/toy/assignment.toml": 'files = ["good.py"]\n[quiz.answer]\nanswer = 6\n'
                                                          'points = 10\ndigits = 1\n',
                        "autograder/toy/test_toy.py": HIDDEN, "autograder/toy/mutants.toml": quiz_mutants,
                        "assignments/toy/tests/test_public.py": PUBLIC.replace("points=40", "points=50"),
                        "autograder/toy/README.md": ""})
    verdicts = {v.submission: v for v in verify(load_assignment(root, "toy"), jobs=1)}
    assert verdicts["mutant:rounded"].ok and verdicts["mutant:rounded"].expectation == "keeps full marks (quiz.answer)"
    assert not verdicts["mutant:too_far"].ok and "quiz.answer 0/10" in verdicts["mutant:too_far"].detail
    assert verdicts["mutant:wrong"].ok and verdicts["mutant:wrong"].expectation == "loses points on quiz.answer only"
