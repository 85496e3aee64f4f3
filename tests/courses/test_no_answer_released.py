"""Nothing a student is handed holds an implementation of a graded function (issue 43): every
released file (assignments/<name>/, what `checks fetch` serves; the student export; the student's
side of the Gradescope zip) is compared with the solution regions of solutions/<name>/, and a line
or a renamed run of lines found there fails (checks.authoring.copyable).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from checks.authoring.copyable import copyable
from checks.course.assignment import load_assignment
from checks.course.solution_regions import Region, split_regions
from conftest import ASSIGNMENTS, REPO

# Taught on purpose, as copyable.py's normal form writes them, with the reason.
ALLOWED = {
    # 03's README teaches the five lines of every training loop: the lesson, not the answer (train_epoch
    # also averages the losses and sets the mode)
    "x , y = x . to ( device ) , y . to ( device )",
    "loss = loss_fn ( model ( x ) , y )",
    "for v0 , v1 in v2 : / v0 , v1 = v0 . to ( v3 ) , v1 . to ( v3 ) / v4 . zero_grad ( )",
    "v0 , v1 = v0 . to ( v2 ) , v1 . to ( v2 ) / v3 . zero_grad ( ) / v4 = v5 ( v6 ( v0 ) , v1 )",
    "v0 . zero_grad ( ) / v1 = v2 ( v3 ( v4 ) , v5 ) / v1 . backward ( )",
    "v0 = v1 ( v2 ( v3 ) , v4 ) / v0 . backward ( ) / v5 . step ( )",
    # a conversion every NumPy function of 03 starts with
    "X = np . asarray ( X , dtype = np . float64 )",
    "logits = np . asarray ( logits , dtype = np . float64 )",
}


def _folder(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts}


def _report(found) -> str:
    return "copyable solution code in released files:\n" + "\n".join(map(str, found))


def assert_release_holds_no_solution_code(root, name):
    """assignments/<name>/ holds no line of solutions/<name>/'s solution regions; shared with the
    tests of a course that `checks new` wrote."""
    assignment = load_assignment(root, name)
    found = copyable(assignment.solution_dir, _folder(assignment.release_dir), allowed=ALLOWED)
    assert not found, _report(found)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_release_holds_no_solution_code(name):
    assert_release_holds_no_solution_code(REPO, name)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_student_export_and_the_gradescope_zips_student_side_hold_no_solution_code(name, tmp_path):
    from checks.exports.gradescope import export_gradescope
    from checks.exports.student import export_student

    assignment = load_assignment(REPO, name)
    bundle = export_student(assignment, tmp_path / "student")
    released = {f"student/{k}": v for k, v in _folder(bundle.folder).items() if not k.endswith(".whl")}
    zipped = export_gradescope(assignment, tmp_path / "gradescope")
    with zipfile.ZipFile(zipped.zip_path) as archive:
        released |= {f"gradescope/{n}": archive.read(n) for n in archive.namelist()
                     if n.startswith("course/assignments/")}
    assert any(k.startswith("student/assignments/") for k in released)
    found = copyable(assignment.solution_dir, released, allowed=ALLOWED)
    assert not found, _report(found)


def _region_of(path: Path, function: str) -> str:
    lines = path.read_text().splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith(f"def {function}("))
    regions = [p for p in split_regions("".join(lines[start:]), path.name) if isinstance(p, Region)]
    return "".join(regions[0].body)


def test_a_renamed_copy_of_a_solution_is_found_and_a_lookup_table_is_not(tmp_path):
    """Able to fail: 01's old public diagnoses held `is_contiguous` with other names; so does this."""
    solutions = REPO / "solutions" / "01_tensors"
    body = _region_of(solutions / "strides.py", "is_contiguous")
    renamed = body.replace("packed", "step").replace("steps", "strides_").replace("sizes", "dims")
    helper = "def helper(dims, strides_):\n" + renamed
    found = copyable(solutions, {"tests/helper.py": helper.encode(),
                                 "tests/table.json": b'{"strides.numel": [[5, "the sizes were added"]]}'})
    assert found and {c.file for c in found} == {"tests/helper.py"} and all(c.source == "strides.py" for c in found)
    assert copyable(solutions, {"notebook.ipynb": b'{"cells": [{"source": ["' +
                                body.replace("\n", "\\n").replace('"', '\\"').encode() + b'"]}]}'})
