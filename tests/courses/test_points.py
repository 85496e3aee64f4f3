"""A question's points are written once, in the hidden suite's @question (and assignment.toml's
quiz keys): `checks build` writes each README's table of points from them, `checks build --check`
and `checks verify` fail where a README disagrees (authoring/points.py)."""

from __future__ import annotations

import shutil

import pytest

from checks.authoring.build import build
from checks.authoring.points import assignment_points, points_table, readme_points_problems, with_points_table
from checks.authoring.verify import _readme_points
from checks.course.assignment import CourseError, load_assignment
from checks.suites.questions import declared_points
from checks.suites.scoring import QuestionResult, SubmissionResult
from conftest import ASSIGNMENTS, REPO


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_readme_states_the_points_the_suite_gives(name):
    assignment = load_assignment(REPO, name)
    points = assignment_points(assignment)
    assert sum(points.values()) == 100
    for readme in (assignment.solution_dir / "README.md", assignment.release_dir / "README.md"):
        text = readme.read_text()
        assert "<!-- points:begin -->" in text, f"{readme}: its points table is not generated"
        assert readme_points_problems(text, points) == []


def test_the_points_are_read_from_the_suite_as_written():
    points = declared_points(REPO / "autograder" / "02_autograd")
    # a templated id: a question per key of its mapping; relu is named by two test functions (1 + 1)
    assert points["rules.add_backward"] == 2 and points["rules.neg_backward"] == 1
    assert points["rules.relu_backward"] == 2
    assert list(assignment_points(load_assignment(REPO, "01_tensors")))[:2] == ["strides.numel", "strides.contiguous_strides"]


def _copy_01(tmp_path):
    for part in ("solutions", "autograder", "assignments"):
        shutil.copytree(REPO / part / "01_tensors", tmp_path / part / "01_tensors")
    return tmp_path


def test_a_readme_that_disagrees_with_the_suite_is_caught_and_build_rewrites_it(tmp_path):
    root = _copy_01(tmp_path)
    readme = root / "solutions" / "01_tensors" / "README.md"
    readme.write_text(readme.read_text().replace("| `strides.numel` | 4 |", "| `strides.numel` | 6 |"))
    points = assignment_points(load_assignment(root, "01_tensors"))
    assert readme_points_problems(readme.read_text(), points) == ["strides.numel 6 (the suite: 4)"]
    assert build(root, ["01_tensors"], check=True) == ["solutions/01_tensors/README.md: its points table is not the suite's"]
    assert "| `strides.numel` | 6 |" in readme.read_text()  # --check changes nothing
    build(root, ["01_tensors"])
    assert readme_points_problems(readme.read_text(), points) == [] and build(root, ["01_tensors"], check=True) == []

    # the suite's points change: the next build writes the README's table again
    suite = root / "autograder" / "01_tensors" / "test_strides.py"
    assert suite.read_text().count('@question("strides.numel", points=4,') == 1
    suite.write_text(suite.read_text().replace('@question("strides.numel", points=4,', '@question("strides.numel", points=5,'))
    build(root, ["01_tensors"])
    assert "| `strides.numel` | 5 |" in readme.read_text() and "| **total** | **101** |" in readme.read_text()
    assert "| `strides.numel` | 5 |" in (root / "assignments" / "01_tensors" / "README.md").read_text()


def test_verify_says_which_row_is_wrong_and_what_to_run(tmp_path):
    root = _copy_01(tmp_path)
    assignment = load_assignment(root, "01_tensors")
    # graded in another order than the suite declares (as the grader may): the same table
    graded = SubmissionResult("reference", "01_tensors", questions=[
        QuestionResult(qid, value, value, "", 1, 1) for qid, value in reversed(assignment_points(assignment).items())])
    (verdict,) = _readme_points(assignment, graded)
    assert verdict.ok and verdict.detail == "the table between its points markers agrees"
    next(q for q in graded.questions if q.qid == "strides.numel").max_score = 6
    (verdict,) = _readme_points(assignment, graded)
    assert not verdict.ok and verdict.expectation == "the README's points are the suite's"
    assert verdict.detail.startswith("solutions/01_tensors/README.md: strides.numel 4 (the suite: 6): run "
                                     "`checks build 01_tensors`, which writes the table")


def test_a_hand_written_row_is_checked_and_a_row_inside_the_markers_must_be_a_question():
    points = {"a.f": 60.0, "quiz.k": 40.0}
    assert readme_points_problems("| `a.f` | 50 |\n| `a.py` | 3 |\n", points) == ["a.f 50 (the suite: 60)"]
    generated = with_points_table("# A\n<!-- points:begin -->\nold\n<!-- points:end -->\n", points)
    assert generated == "# A\n<!-- points:begin -->\n" + points_table(points) + "<!-- points:end -->\n"
    assert points_table(points).endswith("| `quiz.k` | 40 |\n| **total** | **100** |\n")
    assert readme_points_problems(generated, points) == []
    extra = generated.replace("| **total**", "| `a.g` | 5 |\n| **total**")
    assert readme_points_problems(extra, points) == ["a.g is not a question of the suite"]
    assert with_points_table("no markers", points) == "no markers"


def test_points_that_are_not_literal_are_refused_with_what_to_do(make_course):
    root = make_course({"solutions/toy/toy.py": "def f():\n    return 1\n",
                        "autograder/toy/assignment.toml": 'files = ["toy.py"]\n',
                        "autograder/toy/test_toy.py": "from checks.suite import question\nP = 3\n\n"
                                                      "@question('toy.f', points=P)\ndef test_f(student):\n    pass\n"})
    assert declared_points(root / "autograder" / "toy") is None
    with pytest.raises(CourseError, match="not written as a literal, so the README's points table cannot be generated"):
        assignment_points(load_assignment(root, "toy"))
