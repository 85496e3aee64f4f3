"""`checks export gradescope`: the zip holds the hidden suite and never the solutions or mutants,
and its run_autograder, in Gradescope's layout, writes the results.json `checks grade` writes."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from rich.console import Console

from checks import cli
from checks.authoring.verify import load_mutants
from checks.course.assignment import Assignment, CourseError, load_assignment
from checks.exports.gradescope import ZIP_NAME, Visibility, export_gradescope, gradescope_visibility, main, with_visibility
from checks.exports.hidden import hidden_files, referenced_files
from conftest import REPO

VOLATILE = ("execution_time",)  # and extra_data.graded_at: when, not what


def test_zip_holds_the_hidden_suite_never_solutions_or_mutants(tmp_path):
    export = export_gradescope(load_assignment(REPO, "01_tensors"), tmp_path)
    with zipfile.ZipFile(export.zip_path) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        contents = b"".join(archive.read(name) for name in names)
    assert export.zip_path == tmp_path / ZIP_NAME
    assert {"setup.sh", "run_autograder", "constraints.txt", "pyproject.toml", "src/checks/cli/__init__.py",
            "course/autograder/01_tensors/assignment.toml", "course/autograder/01_tensors/test_strides.py"} <= set(names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert not [n for n in names if "solutions/" in n or n.endswith("mutants.toml") or n.endswith("quiz.toml")]
    assert not [n for n in names if n.startswith("course/references/")]  # 01's suite grades with no reference
    # no reference code either, under whatever name: the solved strides.py is nowhere in it
    assert (REPO / "solutions/01_tensors/strides.py").read_bytes() not in contents


def test_a_suite_that_grades_with_a_reference_gets_only_that_file():
    assignment = load_assignment(REPO, "02_autograd")
    assert referenced_files(assignment.autograder_dir) == ["rules.py"]
    chosen = hidden_files(assignment)
    assert "references/02_autograd/rules.py" in chosen
    assert not [path for path in chosen if path.endswith(("/engine.py", "/mutants.toml", "/quiz.toml"))]


def _gradescope_layout(zip_path: Path, root: Path, code: dict[str, bytes]) -> Path:
    """/autograder as Gradescope lays it out: the zip in source/, run_autograder beside it, the upload in submission/."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source/run_autograder", root / "run_autograder")
    for name, data in code.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_bytes(data)
    return root


def _comparable(results: dict) -> dict:
    results = {key: value for key, value in results.items() if key not in VOLATILE}
    results["extra_data"] = {k: v for k, v in results["extra_data"].items() if k != "graded_at"}
    results["tests"] = [{k: v for k, v in test.items() if k != "visibility"} for test in results["tests"]]
    return results


@pytest.mark.long
def test_run_autograder_writes_what_checks_grade_writes(tmp_path, monkeypatch):
    assignment = load_assignment(REPO, "01_tensors")
    export = export_gradescope(assignment, tmp_path / "export")
    reference = {name: (assignment.solution_dir / name).read_bytes() for name in assignment.files}
    reference["quiz.toml"] = (assignment.solution_dir / "quiz.toml").read_bytes()
    stubs = {name: (assignment.release_dir / name).read_bytes() for name in (*assignment.files, "quiz.toml")}
    mutant = next(m for m in load_mutants(assignment) if m.question == "strides.offset")
    submissions = {"reference": reference, "stubs": stubs, "mutant": mutant.apply(reference)}

    env = {**os.environ, "CHECKS_PYTHON": sys.executable}
    env.pop("CHECKS_COURSE", None)
    monkeypatch.delenv("CHECKS_COURSE", raising=False)
    for label, code in submissions.items():
        root = _gradescope_layout(export.zip_path, tmp_path / "gs" / label / "autograder", code)
        run = subprocess.run(["bash", str(root / "run_autograder")], env={**env, "AUTOGRADER_ROOT": str(root)},
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]

        # the same code, graded by `checks grade` (in this process) from the course, as a folder of the same name
        folder = tmp_path / "grade" / label / "submission"
        shutil.copytree(root / "submission", folder)
        monkeypatch.setattr(cli.common, "console", Console(file=io.StringIO()))
        assert cli.main(["--course", str(REPO), "grade", "01_tensors", str(folder),
                         "--out", str(tmp_path / "grade" / label / "out")]) == 0

        exported = json.loads((root / "results/results.json").read_text())
        graded = json.loads((tmp_path / "grade" / label / "out/submission/results.json").read_text())
        assert _comparable(exported) == _comparable(graded), label
        # the staff's copy shows every test; Gradescope shows the hidden suite's after the due date
        assert {t["visibility"] for t in graded["tests"]} == {"visible"}
        assert {t["visibility"] for t in exported["tests"]} == {"after_due_date"}, label
        submissions[label] = exported["score"]
    assert submissions["reference"] == 100 and submissions["stubs"] == 0 and 0 < submissions["mutant"] < 100


def test_run_autograder_writes_no_score_when_the_grader_fails(tmp_path):
    export = export_gradescope(load_assignment(REPO, "01_tensors"), tmp_path / "export")
    root = _gradescope_layout(export.zip_path, tmp_path / "autograder", {"strides.py": b""})
    (root / "source/course/autograder/01_tensors/assignment.toml").write_text("files = 'strides.py'\n")  # broken course
    run = subprocess.run(["bash", str(root / "run_autograder")],
                         env={**os.environ, "AUTOGRADER_ROOT": str(root), "CHECKS_PYTHON": sys.executable},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "no score was written" in run.stderr
    assert not (root / "results/results.json").exists()


def test_the_exported_course_grades_with_its_reference_files_in_place_of_solutions(tmp_path):
    export = export_gradescope(load_assignment(REPO, "02_autograd"), tmp_path)
    with zipfile.ZipFile(export.zip_path) as archive:
        archive.extractall(tmp_path / "source")
    exported = load_assignment(tmp_path / "source/course", "02_autograd")
    assert not exported.solution_dir.exists()
    assert exported.reference_files(("rules.py",)) == {"rules.py": (REPO / "solutions/02_autograd/rules.py").read_bytes()}


TOY = {"autograder/toy/assignment.toml": 'files = ["toy.py"]\n', "assignments/toy/toy.py": ""}
RESULTS = {"score": 5.0, "tests": [{"name": q, "score": 1.0, "max_score": 1.0, "status": "passed", "output": "",
                                    "visibility": "visible"}
                                   for q in ("strides.view", "strides.numel", "quiz.numel", "broadcasting.shape", "x")]}


def test_gradescope_shows_the_hidden_suite_after_the_due_date_unless_the_assignment_says_otherwise(make_course,
                                                                                                  tmp_path):
    root = make_course(TOY)
    assignment = load_assignment(root, "toy")
    assert gradescope_visibility(assignment) == Visibility("after_due_date", {})  # no [gradescope]: the default
    (root / "autograder/toy/assignment.toml").write_text(
        'files = ["toy.py"]\n[gradescope]\nvisibility = "after_published"\n'
        '[gradescope.questions]\nquiz = "visible"\nstrides = "hidden"\n"strides.view" = "visible"\n')
    visibility = gradescope_visibility(load_assignment(root, "toy"))
    shown = {t["name"]: t["visibility"] for t in with_visibility(RESULTS, visibility)["tests"]}
    assert shown == {"strides.view": "visible",  # the question's own setting beats its group's
                     "strides.numel": "hidden", "quiz.numel": "visible", "broadcasting.shape": "after_published",
                     "x": "after_published"}
    assert with_visibility(RESULTS, visibility)["score"] == 5.0  # nothing else changes

    # run_autograder's last step, as it calls it
    (tmp_path / "results.json").write_text(json.dumps(RESULTS))
    assert main([str(root), "toy", str(tmp_path / "results.json"), str(tmp_path / "out.json")]) == 0
    assert json.loads((tmp_path / "out.json").read_text()) == with_visibility(RESULTS, visibility)


def test_a_visibility_gradescope_does_not_know_is_refused_when_exported(make_course, tmp_path, capsys):
    root = make_course(TOY)
    (root / "autograder/toy/assignment.toml").write_text(
        'files = ["toy.py"]\n[gradescope]\nvisibility = "after_due"\n[gradescope.questions]\nquiz = "never"\n')
    code = cli.main(["--course", str(root), "export", "gradescope", "toy", "--out", str(tmp_path / "gs")])
    printed = " ".join(capsys.readouterr().out.split())
    assert code == 2 and "`visibility` in [gradescope] must be \"visible\" or \"hidden\" or \"after_due_date\" or " \
        "\"after_published\", not the string 'after_due'" in printed, printed
    assert "`quiz` in [gradescope.questions] must be" in printed and not (tmp_path / "gs").exists()
    with pytest.raises(CourseError, match="after_due"):
        gradescope_visibility(Assignment("toy", root))
