"""A student notebook as a submission: its answer cells (`%%checks file NAME`) are read with
nbformat, never run, and graded as the files they stand for; a missing cell costs only its
questions; a corrupt notebook costs only its submission. And the same cells run in a kernel."""

from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from rich.console import Console

from checks import cli
from checks.course.answer_cells import answer_cell, parse_answer_cell, read_answers
from checks.course.assignment import load_assignment
from checks.course.submissions import SubmissionError, read_submission
from checks.grading.batch import expand_submission_paths
from checks.notebooks.magic import ANSWERS, run_answer_cell

from conftest import REPO

NAMED = ("strides.py", "broadcasting.py", "quiz.toml")
BEN = REPO / "examples/01_tensors/ben_bitdiddle"


def notebook_of(folder: Path, names=NAMED, *, extra_cells: tuple[str, ...] = ()) -> str:
    """A student's notebook as the exports release it: prose, then one answer cell per file."""
    cells = [nbformat.v4.new_markdown_cell("# 01_tensors"), nbformat.v4.new_code_cell("%load_ext checks")]
    cells += [nbformat.v4.new_code_cell(answer_cell(name, (folder / name).read_text())) for name in names]
    cells += [nbformat.v4.new_code_cell(source) for source in extra_cells]
    return nbformat.writes(nbformat.v4.new_notebook(cells=cells))


def test_an_answer_cell_is_its_first_line_and_the_file_after_it():
    assert parse_answer_cell(answer_cell("strides.py", "x = 1\n")) == ("strides.py", "x = 1\n")
    assert parse_answer_cell("\n%%checks  file quiz.toml\r\na = 1") == ("quiz.toml", "a = 1")
    assert parse_answer_cell("# %%checks file strides.py\nx = 1") is None
    assert parse_answer_cell("%checks test") is None


def test_a_notebook_reads_as_the_files_of_its_answer_cells(tmp_path):
    path = tmp_path / "ben.ipynb"
    path.write_text(notebook_of(BEN, extra_cells=("print(numel((2, 3)))",)))
    submission = read_submission(path, NAMED)
    assert submission.name == "ben"
    assert submission.files == {name: (BEN / name).read_bytes() for name in NAMED}
    assert submission.warnings == [] and submission.unread == {}


def test_a_later_cell_for_the_same_file_wins_and_is_pointed_out(tmp_path):
    path = tmp_path / "ben.ipynb"
    path.write_text(notebook_of(BEN, extra_cells=(answer_cell("quiz.toml", "broadcast_numel = 7\n"),)))
    submission = read_submission(path, NAMED)
    assert submission.files["quiz.toml"] == b"broadcast_numel = 7\n"
    assert submission.warnings == ["ben.ipynb has more than one answer cell for quiz.toml; the last one was graded"]


def test_a_folder_or_zip_holding_a_notebook_and_none_of_the_files_is_that_notebook(tmp_path):
    folder = tmp_path / "alice" / "01_tensors"  # nbgrader's submitted/<student>/<assignment>/
    folder.mkdir(parents=True)
    (folder / "01_tensors.ipynb").write_text(notebook_of(BEN))
    (folder / "notes.txt").write_text("unrelated")
    assert read_submission(tmp_path / "alice", NAMED).files == {name: (BEN / name).read_bytes() for name in NAMED}
    archive = tmp_path / "bob.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("01_tensors.ipynb", notebook_of(BEN))
    assert sorted(read_submission(archive, NAMED).files) == sorted(NAMED)


def test_the_files_win_over_a_notebook_beside_them(tmp_path):
    folder = tmp_path / "carol"
    shutil.copytree(BEN, folder)
    (folder / "scratch.ipynb").write_text(notebook_of(BEN, extra_cells=(answer_cell("strides.py", "broken(\n"),)))
    assert read_submission(folder, NAMED).files["strides.py"] == (BEN / "strides.py").read_bytes()


def test_a_missing_answer_cell_costs_only_its_file_and_says_which_cell(tmp_path):
    path = tmp_path / "dan.ipynb"
    path.write_text(notebook_of(BEN, names=("strides.py", "quiz.toml")))
    submission = read_submission(path, NAMED)
    assert sorted(submission.files) == ["quiz.toml", "strides.py"]
    assert "dan.ipynb has no answer cell for broadcasting.py" in submission.unread["broadcasting.py"]
    assert "`%%checks file broadcasting.py`" in submission.unread["broadcasting.py"]
    assert any("the questions that use broadcasting.py score 0" in w for w in submission.warnings)


@pytest.mark.parametrize("content, why", [
    (b"{not json", "not a notebook nbformat can read"),
    (b'{"cells": "no", "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "not a notebook nbformat can read"),
    (b"\xff\xfe", "not a notebook nbformat can read"),
    (b"", "is empty, not a notebook"),
])
def test_a_corrupt_notebook_refuses_its_submission_with_the_reason(tmp_path, content, why):
    path = tmp_path / "eve.ipynb"
    path.write_bytes(content)
    with pytest.raises(SubmissionError, match=why):
        read_submission(path, NAMED)


def test_two_notebooks_with_answer_cells_are_refused_rather_than_guessed(tmp_path):
    folder = tmp_path / "fay"
    folder.mkdir()
    (folder / "a.ipynb").write_text(notebook_of(BEN))
    (folder / "b.ipynb").write_text(notebook_of(BEN))
    with pytest.raises(SubmissionError, match="2 notebooks hold answer cells"):
        read_submission(folder, NAMED)


def test_an_answer_cell_cannot_name_a_file_outside_the_submission(tmp_path):
    path = tmp_path / "gus.ipynb"
    path.write_text(notebook_of(BEN, extra_cells=(answer_cell("../../escape.py", "x = 1\n"),)))
    submission = read_submission(path, NAMED)
    assert "../../escape.py" not in submission.files and "escape.py" not in submission.files
    assert any("outside the submission; ignored" in warning for warning in submission.warnings)


def test_a_class_folder_of_notebooks_and_nbgraders_layout_expand_to_one_submission_each(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in ("alice", "bob"):
        (notebooks / f"{name}.ipynb").write_text("{}")
        (tmp_path / "submitted" / name / "01_tensors").mkdir(parents=True)
    assert [f.path for f in expand_submission_paths([notebooks], "01_tensors")] == [notebooks / "alice.ipynb",
                                                                                     notebooks / "bob.ipynb"]
    students = sorted((tmp_path / "submitted").iterdir())
    assert [f.path for f in expand_submission_paths(students, "01_tensors")] == students  # not submitted/*/01_tensors


def test_checks_grade_scores_a_notebook_as_the_folder_and_refuses_only_the_corrupt_one(tmp_path, monkeypatch):
    (tmp_path / "ben_notebook.ipynb").write_text(notebook_of(BEN))
    (tmp_path / "corrupt.ipynb").write_text("{not json")
    monkeypatch.setattr(cli.common, "console", Console(file=io.StringIO(), width=200))
    monkeypatch.delenv("CHECKS_COURSE", raising=False)
    out = tmp_path / "grades"
    code = cli.main(["--course", str(REPO), "grade", "01_tensors", str(BEN), str(tmp_path / "ben_notebook.ipynb"),
                     str(tmp_path / "corrupt.ipynb"), "--out", str(out)])
    assert code == 0
    results = {name: json.loads((out / name / "results.json").read_text())
               for name in ("ben_bitdiddle", "ben_notebook", "corrupt")}
    scores = {name: {test["name"]: test["score"] for test in result["tests"]} for name, result in results.items()}
    assert scores["ben_notebook"] == scores["ben_bitdiddle"] and results["ben_notebook"]["score"] == 93.74
    assert results["corrupt"]["score"] == 0
    rows = {row["submission"]: row for row in csv.DictReader((out / "gradebook.csv").open())}
    assert rows["corrupt"]["status"] == "refused"
    assert rows["corrupt"]["reason"].startswith("corrupt.ipynb is not a notebook nbformat can read")
    assert rows["ben_notebook"]["status"] == "graded"


def test_an_answer_cell_runs_as_its_module_and_is_kept_for_grading(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(__import__("sys").modules, "rules", raising=False)
    monkeypatch.delitem(__import__("sys").modules, "engine", raising=False)
    namespace: dict = {}
    run_answer_cell("rules.py", "def double(x):\n    return 2 * x\n", namespace)
    run_answer_cell("engine.py", "import rules\n\ndef quadruple(x):\n    return rules.double(rules.double(x))\n",
                    namespace)
    run_answer_cell("quiz.toml", "a_grad = 3\n", namespace)
    assert namespace["quadruple"](1) == 4 and namespace["rules"].double(2) == 4
    assert ANSWERS["engine.py"].startswith("import rules") and ANSWERS["quiz.toml"] == "a_grad = 3\n"
    with pytest.raises(ZeroDivisionError):
        run_answer_cell("rules.py", "1 / 0\n", namespace)
    assert ANSWERS["rules.py"] == "1 / 0\n"  # kept as written, even when it raises: it is graded as it is
    for name in ("rules.py", "engine.py", "quiz.toml"):
        ANSWERS.pop(name)


def test_a_grading_cell_scores_the_cells_its_kernel_ran_as_checks_grade_does(tmp_path, monkeypatch, capsys):
    from checks.exports import kernel

    monkeypatch.delenv("CHECKS_COURSE", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(kernel.HiddenSuiteMissing, match="they run when your notebook is graded"):
        kernel.hidden_course_root("01_tensors")
    monkeypatch.chdir(REPO / "assignments/01_tensors")  # the hidden suite is found above it
    monkeypatch.setattr(kernel, "ANSWERS", {name: (BEN / name).read_text() for name in NAMED})
    assert kernel.score("01_tensors", "strides.offset") == 6.0  # as the CSV of checks grade says, above
    assert kernel.score("01_tensors", "broadcasting.broadcast_strides") == 5.38
    assert "broadcasting.broadcast_strides: 5.38 of 8 points\n17 of 52 checks failed." in capsys.readouterr().out
    assert len(kernel._graded) == 1  # graded once for both cells


def test_a_grading_cell_ends_its_kernel_where_the_grader_fails(tmp_path, monkeypatch, capfd):
    """Neither passing nor failing a grading cell would be right where the grader failed (both are a
    score): the cell ends the kernel, and nothing is kept to be reused by the next cell. A hidden
    suite that is not there is such a failure for otter's hidden tests (the zip puts it beside
    them) and in `nbgrader autograde`, not for nbgrader's cells elsewhere: a student also runs
    them in a copy without it."""
    from checks.exports import kernel
    from checks.exports.hidden import hidden_files

    course = tmp_path / "course"
    for name, path in hidden_files(load_assignment(REPO, "01_tensors")).items():
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_bytes(path.read_bytes())
    with (course / "autograder/01_tensors/test_strides.py").open("a") as suite:
        suite.write("def broken(:\n")
    monkeypatch.setenv("CHECKS_COURSE", str(course))
    monkeypatch.setattr(kernel, "ANSWERS", {name: (BEN / name).read_text() for name in NAMED})
    monkeypatch.setattr(kernel, "_graded", {})  # nothing graded before, by the test above
    with pytest.raises(kernel.GraderFailed, match="the suite could not be collected at test_strides.py"):
        kernel.grade_answers("01_tensors", dict(kernel.ANSWERS))
    monkeypatch.setattr(kernel, "TIMEOUT_S", 0.2)  # less than the grading child takes to start
    with pytest.raises(kernel.GraderFailed, match="it took over 0.2 s; this is not your score"):
        kernel.grade_answers("01_tensors", dict(kernel.ANSWERS))
    assert not kernel._graded

    class Ended(Exception):
        pass

    def exit_(status):
        raise Ended(status)

    monkeypatch.setattr(kernel.os, "_exit", exit_)
    monkeypatch.delenv("CHECKS_COURSE")
    monkeypatch.chdir(tmp_path)  # no hidden suite at or above it
    with pytest.raises(kernel.HiddenSuiteMissing):  # nbgrader's cell in a student's copy: said in the cell
        kernel.score("01_tensors", "strides.offset")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # as `nbgrader autograde` sets it
    with pytest.raises(Ended):
        kernel.score("01_tensors", "strides.offset")
    assert "the hidden checks of 01_tensors are not here" in capfd.readouterr().err
    monkeypatch.delenv("NBGRADER_EXECUTION")
    with pytest.raises(Ended):  # otter's hidden test runs only where the autograder zip put the suite
        kernel.check_case("01_tensors", "strides.offset", 0, 0, 1)
    assert "the hidden checks of 01_tensors are not here" in capfd.readouterr().err
    def sandbox_down(assignment, qid):
        raise kernel.GraderFailed("the grader failed; this is not your score: the sandbox could not start")

    monkeypatch.setattr(kernel, "question_result", sandbox_down)
    for cell in (lambda: kernel.score("01_tensors", "strides.offset"),
                 lambda: kernel.check_case("01_tensors", "strides.offset", 0, 0, 1)):
        with pytest.raises(Ended, match=str(kernel.GRADER_FAILED_EXIT)):
            cell()
        shown = capfd.readouterr()
        for stream in (shown.out, shown.err):  # in the cell, and in the log of the tool that ran it
            assert ("checks: the grader failed; this is not your score: the sandbox could not start\n"
                    "This kernel is ended so that no score is recorded for this notebook.") in stream


def test_checks_test_runs_the_public_checks_on_a_notebook_as_on_the_folder(tmp_path, monkeypatch):
    (tmp_path / "ben.ipynb").write_text(notebook_of(BEN))
    monkeypatch.delenv("CHECKS_COURSE", raising=False)
    printed = []
    for path in (BEN, tmp_path / "ben.ipynb"):
        out = io.StringIO()
        monkeypatch.setattr(cli.common, "console", Console(file=out, width=200))
        code = cli.main(["--course", str(REPO), "test", "01_tensors", str(path)])
        printed.append((code, out.getvalue().split("\n", 2)[2]))  # after the header and title: they name it
    assert printed[0] == printed[1]
    assert "quiz answers present and well-formed" in printed[1][1]


def test_a_zipped_notebook_that_cannot_be_inflated_refuses_its_submission(tmp_path):
    archive = tmp_path / "hal.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("01_tensors.ipynb", notebook_of(BEN))
    data = bytearray(archive.read_bytes())
    data[60:80] = bytes(20)  # inside the member's compressed data: inflating it fails
    archive.write_bytes(bytes(data))
    with pytest.raises(SubmissionError, match="01_tensors.ipynb could not be read"):
        read_submission(archive, NAMED)
