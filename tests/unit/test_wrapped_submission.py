"""Reading a submission as a student made it (issue 44): one zipped with its folder, or with the
folder that holds its folder, is read as its files (a zip wrapped twice scored 0 with "No
quiz.toml" though the file was there); a notebook without answer cells is said to lack them."""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

import pytest

from checks.course.submissions import read_submission

FILES = {"strides.py": b"x = 1\n", "quiz.toml": b"a = 1\n", "broadcasting.py": b"y = 2\n"}


@pytest.mark.parametrize("prefix", ["", "01_tensors/", "01_tensors/01_tensors/", "a/b/c/"])
def test_lone_enclosing_folders_are_looked_inside_however_deep(tmp_path, prefix):
    path = tmp_path / "upload.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("__MACOSX/._x", b"junk")
        archive.writestr(".DS_Store", b"junk")
        for name, data in FILES.items():
            archive.writestr(prefix + name, data)
    submission = read_submission(path, tuple(FILES))
    assert {name: submission.files.get(name) for name in FILES} == FILES

    folder = tmp_path / "folder"
    for name, data in FILES.items():
        (folder / prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / prefix / name).write_bytes(data)
    assert {name: read_submission(folder, tuple(FILES)).files.get(name) for name in FILES} == FILES


def test_two_folders_side_by_side_are_not_guessed_between(tmp_path):
    path = tmp_path / "upload.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mine/mine/strides.py", b"x = 1\n")
        archive.writestr("mine/other/strides.py", b"x = 2\n")
    assert "strides.py" not in read_submission(path, ("strides.py",)).files


def test_a_notebook_without_answer_cells_is_said_to_lack_them(tmp_path):
    """Not "skipped, as the assignment does not use them": each file's missing cell is named."""
    import json

    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "def view(x):\n    return x\n"}]}
    path = tmp_path / "01_tensors.ipynb"
    path.write_text(json.dumps(notebook))
    submission = read_submission(path, ("strides.py", "quiz.toml"))
    assert not any("does not use them" in warning for warning in submission.warnings), submission.warnings
    assert "01_tensors.ipynb has no answer cell for strides.py" in submission.unread["strides.py"]
    assert any("no answer cell for quiz.toml" in warning for warning in submission.warnings)


# ---------------------------------------------------------------------------- a zip inside the zip (issue 44)

def zipped(files: dict[str, bytes]) -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize("inner_prefix", ["", "01_tensors/"])
@pytest.mark.parametrize("outer_prefix", ["", "submission/"])
def test_a_zip_whose_only_file_is_a_zip_is_read_as_what_that_zip_holds(tmp_path, inner_prefix, outer_prefix):
    """A zip zipped again (with or without folders around either) scored 0 with "No quiz.toml"."""
    inner = zipped({inner_prefix + name: data for name, data in FILES.items()})
    path = tmp_path / "upload.zip"
    path.write_bytes(zipped({outer_prefix + "01_tensors.zip": inner, "__MACOSX/._01_tensors.zip": b"junk",
                             ".DS_Store": b"junk"}))
    submission = read_submission(path, tuple(FILES))
    assert {name: submission.files.get(name) for name in FILES} == FILES
    assert any("holds only 01_tensors.zip: the files inside 01_tensors.zip were read" in w
               for w in submission.warnings), submission.warnings


def test_a_folder_whose_only_file_is_a_zip_is_read_as_what_the_zip_holds(tmp_path):
    """`checks grade` on a class folder where a student's folder holds just their zip."""
    folder = tmp_path / "s001"
    folder.mkdir()
    (folder / "work.zip").write_bytes(zipped(FILES))
    submission = read_submission(folder, tuple(FILES))
    assert {name: submission.files.get(name) for name in FILES} == FILES


def test_a_zip_beside_other_files_is_not_opened(tmp_path):
    path = tmp_path / "upload.zip"
    path.write_bytes(zipped({"strides.py": b"x = 1\n", "data.zip": zipped({"quiz.toml": b"a = 1\n"})}))
    submission = read_submission(path, tuple(FILES))
    assert "quiz.toml" not in submission.files and submission.files["strides.py"] == b"x = 1\n"


@pytest.mark.parametrize("inner, says", [
    (lambda: zipped({"deeper.zip": zipped(FILES)}), "holds only another zip (deeper.zip)"),
    (lambda: zipped({"../strides.py": b"x = 1\n"}), "would land outside the submission folder"),
    (lambda: zipped({"strides.py": b"x = 1\n", "./strides.py": b"x = 2\n"}), "holds strides.py twice"),
    (lambda: zipped({"big.py": b"\0" * (4 * 2**20)}), "a zip bomb?"),  # with the caps made small below
    (lambda: b"PK\x03\x04 not a zip at all", "is not a readable zip file"),
])
def test_the_zip_inside_is_refused_as_a_zip_of_its_own_would_be(tmp_path, monkeypatch, inner, says):
    from checks.course import submissions
    from checks.course.submissions import SubmissionError

    monkeypatch.setattr(submissions, "MAX_UNPACKED_BYTES", 2 * 2**20)  # the outer zip is well within them

    path = tmp_path / "upload.zip"
    path.write_bytes(zipped({"work.zip": inner()}))
    with pytest.raises(SubmissionError, match=re.escape(says)) as refused:
        read_submission(path, tuple(FILES))
    assert "upload.zip: work.zip" in str(refused.value)


def test_a_zip_inside_over_the_cap_is_refused_unread(tmp_path, monkeypatch):
    from checks.course import submissions

    monkeypatch.setattr(submissions, "MAX_NESTED_ZIP_BYTES", 1000)
    path = tmp_path / "upload.zip"
    path.write_bytes(zipped({"work.zip": zipped({"strides.py": os.urandom(5000)})}))
    with pytest.raises(submissions.SubmissionError, match="the most the grader reads of a zip inside a submission"):
        read_submission(path, tuple(FILES))
