"""`checks new NAME`: an assignment that builds and verifies at once in a course of its own (the
reference 100, the stubs 0, each mutant its own question, a quiz answer inside its tolerance keeping
its points), grades, and is served; an edit that makes two questions test the same code is caught
by verify; names that cannot be used, or that the course has, are refused and nothing is written."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from checks.authoring.new import new_assignment
from checks.authoring.points import assignment_points, readme_points_problems
from checks.authoring.verify import load_mutants, verify
from checks.course.submissions import read_submission
from checks.grading.session import Source, grade_sources
from checks.course.assignment import CourseError, load_assignment
from conftest import course_assignments
from serving import checks, course_folder, import_roster, start_server, submit, wait_graded
from test_assignments import assert_reference_100_and_stubs_0, assert_verified
from test_diagnoses import assert_one_table_of_mistakes, shares_a_table
from test_no_answer_released import assert_release_holds_no_solution_code


def _new_course(tmp_path: Path, name: str = "demo") -> Path:
    root = tmp_path / "course_repo"
    root.mkdir()
    made = checks("new", name, cwd=root)
    assert made.returncode == 0, made.stdout + made.stderr
    assert f"new assignment {name}: 9 files" in " ".join(made.stdout.split())
    built = checks("build", name, cwd=root)
    assert built.returncode == 0, built.stdout + built.stderr
    return root


def test_the_tests_that_hold_for_every_assignment_find_a_new_one_and_it_passes_them(tmp_path):
    """The course's tests take its assignments from list_assignments (conftest.course_assignments),
    so `make test` holds an assignment that `checks new` wrote to what it holds 01..03 to: here
    those checks, run on a course of its own."""
    from test_notebooks import assert_a_section_for_every_question_and_quiz_key  # needs the [notebooks] extra

    root = _new_course(tmp_path)
    assert course_assignments(root) == ["demo"]
    assert_reference_100_and_stubs_0(root, "demo")
    assert_release_holds_no_solution_code(root, "demo")
    assert_a_section_for_every_question_and_quiz_key(root, "demo")
    assert shares_a_table(root, "demo")  # its likely mistakes: one table for both suites, as 02's and 03's
    assert_one_table_of_mistakes(root, "demo")
    # which the hidden suite names a mistake from, in the public checks' words
    assignment = load_assignment(root, "demo")
    mutant = next(m for m in load_mutants(assignment) if m.name == "sample_std")
    (graded,) = grade_sources(assignment, [Source.from_files("sample_std", mutant.apply(
        read_submission(assignment.solution_dir).files))], jobs=1, questions=["exercise.standardize"])
    assert "Likely mistake: divided by the sample standard deviation" in graded.question("exercise.standardize").feedback


def test_a_new_assignment_builds_and_verifies_at_once_and_an_edit_that_shares_code_is_caught(tmp_path):
    root = _new_course(tmp_path)
    verdicts = {(v.submission, v.expectation): v for v in assert_verified(root, "demo", jobs=1)}
    assert verdicts[("reference", "scores 100/100")].detail == "100/100"
    assert verdicts[("stubs", "scores 0")].detail == "0/100"
    assert verdicts[("mutant:sample_std", "loses points on exercise.standardize only")].ok
    assert verdicts[("mutant:quiz_within_tolerance", "keeps full marks (quiz.population_std)")].ok
    assert verdicts[("mutant:quiz_sample_std", "loses points on quiz.population_std only")].ok
    assert verdicts[("suite", "the README's points are the suite's")].ok  # `checks new` wrote its table

    # the author adds a second question on the same function: the mutant now costs both, and verify says so
    suite = root / "autograder" / "demo" / "test_exercise.py"
    suite.write_text(suite.read_text().replace('points=90', 'points=80') + '''

@question("exercise.standardize_batch", points=10)
def test_standardize_batch(student):
    x = example((4, 3))
    got = call_or_fail(lambda: student.exercise.standardize(x), text="standardize(x) with x of shape (4, 3)")
    expect_close(got, (x - x.mean()) / x.std(correction=0), rtol=1e-6, atol=1e-9)
''')
    verdicts = verify(load_assignment(root, "demo"), jobs=1)
    again = {v.submission: v for v in verdicts if v.submission.startswith("mutant:")}
    assert not again["mutant:sample_std"].ok
    assert "also lost: exercise.standardize_batch 0/10" in again["mutant:sample_std"].detail
    # and its README still says 90: verify says so, `checks build` writes the table again from the suite
    (readme,) = [v for v in verdicts if v.expectation == "the README's points are the suite's"]
    assert not readme.ok and "exercise.standardize 90 (the suite: 80)" in readme.detail
    assert checks("build", "demo", cwd=root).returncode == 0
    assert readme_points_problems((root / "solutions" / "demo" / "README.md").read_text(),
                                  assignment_points(load_assignment(root, "demo"))) == []


@pytest.mark.parametrize("name, message", [
    ("../escape", "cannot name an assignment"), ("", "cannot name an assignment"), ("a b", "cannot name an assignment"),
    (".hidden", "cannot name an assignment"), ("x" * 65, "cannot name an assignment"),
])
def test_a_name_that_is_not_a_plain_folder_name_is_refused(tmp_path, name, message):
    with pytest.raises(CourseError, match=message):
        new_assignment(tmp_path, name)
    assert not any(tmp_path.iterdir())


def test_an_existing_name_is_refused_and_nothing_is_written(tmp_path):
    (tmp_path / "assignments" / "demo").mkdir(parents=True)
    refused = checks("new", "demo", cwd=tmp_path)
    assert refused.returncode == 2
    assert "already has assignments/demo" in " ".join((refused.stdout + refused.stderr).split())
    assert not (tmp_path / "solutions").exists() and not (tmp_path / "autograder").exists()


@pytest.mark.long
def test_a_new_assignment_is_graded_and_served(tmp_path):
    root = _new_course(tmp_path)
    stubs = root / "assignments" / "demo"
    graded = checks("grade", "demo", str(root / "solutions" / "demo"), str(stubs), "--out", str(tmp_path / "grades"),
                    cwd=root, timeout=300)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert "mean 50.0 of 100 over 2" in " ".join(graded.stdout.split())

    folder = course_folder(tmp_path, course=root, assignments="[assignment.demo]\n")
    tokens = import_roster(folder)
    server = start_server(folder)
    try:
        http = server.client(tokens["s001"])
        upload = tmp_path / "demo.zip"
        with zipfile.ZipFile(upload, "w") as archive:
            for name in ("exercise.py", "quiz.toml"):
                archive.write(root / "solutions" / "demo" / name, name)
        answer = submit(http, upload.read_bytes(), assignment="demo")
        assert answer.status_code in (200, 201, 202), answer.text
        result = wait_graded(http, answer.json()["id"], timeout=180)
        assert sum(q["score"] for q in result["result"]["questions"]) == 100, result
    finally:
        server.kill()
        shutil.rmtree(folder / "data", ignore_errors=True)
