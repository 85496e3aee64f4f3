"""Boundaries are drawn, as a property of the suite API: a case generator declares the boundary
values its cases are at (`@cases(boundaries=...)`, each a predicate asked of every case), a question
the kinks it must cover (`@question(kinks=...)`), and `checks verify` prints the coverage per
question and fails a question with a kink no case is at. Then the three assignments: each kink of
theirs has cases, and a mistake only a kink shows (03's ReLU mask at exactly 0) loses points."""

from __future__ import annotations

import pytest

from checks.authoring.verify import suite_coverage, verify
from checks.course.assignment import load_assignment
from checks.suites.api import cases
from checks.suites.coverage import Coverage
from conftest import ASSIGNMENTS, REPO

SOLUTION = """\
def relu(x):
    # BEGIN SOLUTION hint: max(x, 0)
    return x if x > 0 else 0.0
    # END SOLUTION
"""
HIDDEN = """\
from checks.suite import cases, expect_equal, question

@question("toy.relu", points=100, kinks=("x exactly 0",))
@cases("x", {xs}, boundaries={{"x exactly 0": lambda x: x == 0, "negative x": lambda x: x < 0}})
def test_relu(student, x):
    expect_equal(student.toy.relu(x), max(x, 0.0))
"""
MUTANTS = """\
[[mutant]]
name = "relu_passes_negative"
question = "toy.relu"
file = "toy.py"
find = "x if x > 0 else 0.0"
replace = "x"
"""


def test_a_boundary_is_a_predicate_that_some_case_must_meet():
    decorate = cases("x", [-1.0, 0.0, 2.0], boundaries={"zero": lambda x: x == 0, "positive": lambda x: x > 0})
    run = decorate(lambda x: None)
    assert run.checks_boundaries == {"zero": ["0.0"], "positive": ["2.0"]}
    with pytest.raises(ValueError, match="declares the boundary 'exactly 0', but none of its 2 cases is at it"):
        cases("x", [-1.0, 2.0], boundaries={"exactly 0": lambda x: x == 0})
    with pytest.raises(ValueError, match="must be a predicate of a case's arguments"):
        cases("x", [0.0], boundaries={"zero": True})


def test_coverage_names_each_boundary_and_what_a_kink_misses():
    coverage = Coverage("q", kinks=["x exactly 0", "batch of 1"], covered={"x exactly 0": 2, "negative x": 1})
    assert coverage.missing == ["batch of 1"]
    assert coverage.describe() == "x exactly 0 (kink): 2; negative x: 1; NO case at the kink batch of 1"


def toy(make_course, xs):
    root = make_course({"solutions/toy/toy.py": SOLUTION, "autograder/toy/assignment.toml": 'files = ["toy.py"]\n'
                        'hidden_only = ["toy.relu"]\n', "autograder/toy/test_toy.py": HIDDEN.format(xs=xs),
                        "autograder/toy/mutants.toml": MUTANTS})
    return {v.expectation: v for v in verify(load_assignment(root, "toy"), jobs=1)}


def test_verify_fails_a_question_whose_kink_has_no_case_and_prints_what_is_covered(make_course):
    verdicts = toy(make_course, "[-1.0, 0.0, 2.0]")
    row = verdicts["toy.relu: a case at every kink"]
    assert row.ok and row.detail == "x exactly 0 (kink): 1; negative x: 1"
    # without the case at 0 the suite no longer collects: the boundary it claims is not drawn
    verdicts = toy(make_course, "[-1.0, 2.0]")
    row = verdicts["every kink has a case at it"]
    assert not row.ok and "declares the boundary 'x exactly 0', but none of its 2 cases is at it" in row.detail


def test_verify_fails_a_kink_that_no_case_generator_declares(make_course):
    root = make_course({"solutions/toy/toy.py": SOLUTION, "autograder/toy/assignment.toml": 'files = ["toy.py"]\n',
                        "autograder/toy/test_toy.py": HIDDEN.format(xs="[-1.0, 2.0]").replace(
                            ', boundaries={"x exactly 0": lambda x: x == 0, "negative x": lambda x: x < 0}', "")})
    coverage, errors = suite_coverage(load_assignment(root, "toy").autograder_dir)
    assert errors == []
    assert coverage["toy.relu"].missing == ["x exactly 0"]
    assert coverage["toy.relu"].describe() == "no boundary declared; NO case at the kink x exactly 0"


PARAMETRIZED = """\
import pytest
from checks.suite import covers, expect_equal, question

@question("toy.relu", points=100, kinks=("x exactly 0",))
@covers({"x exactly 0": lambda x: x == 0, "x above 10": lambda x: x > 10})
@pytest.mark.parametrize("x", [-1.0, 0.0, 2.0])
def test_relu(student, x):
    expect_equal(student.toy.relu(x), max(x, 0.0))
"""


def test_a_parametrized_test_declares_its_boundaries_with_covers_and_each_must_be_met(make_course):
    root = make_course({"solutions/toy/toy.py": SOLUTION, "autograder/toy/assignment.toml": 'files = ["toy.py"]\n',
                        "autograder/toy/test_toy.py": PARAMETRIZED})
    coverage, errors = suite_coverage(load_assignment(root, "toy").autograder_dir)
    assert errors == []
    found = coverage["toy.relu"]
    assert found.covered == {"x exactly 0": 1} and found.unmet == ["x above 10"] and not found.holds
    assert found.describe() == "x exactly 0 (kink): 1; declared but no case at x above 10"


@pytest.mark.long
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_kink_of_the_course_has_cases(name):
    coverage, errors = suite_coverage(load_assignment(REPO, name).autograder_dir)
    assert errors == []
    assert {qid: c.missing for qid, c in coverage.items() if c.missing} == {}
    if name in ("01_tensors", "02_autograd", "03_mlp"):  # where their implementations differ; a new one may have none
        assert sum(bool(c.kinks) for c in coverage.values()) >= 5, "kinks are declared where implementations differ"
