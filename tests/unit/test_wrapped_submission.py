"""Reading a submission as a student made it (issue 44): one zipped with its folder, or with the
folder that holds its folder, is read as its files (a zip wrapped twice scored 0 with "No
quiz.toml" though the file was there); a notebook without answer cells is said to lack them."""

from __future__ import annotations

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
