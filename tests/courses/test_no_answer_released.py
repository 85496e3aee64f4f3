"""Nothing a student is handed holds an implementation of a graded function (issue 43): every
released file (assignments/<name>/, what `checks fetch` serves; the student export; the student's
side of the Gradescope zip) is compared with the solution regions of solutions/<name>/, and a line
or a renamed run of lines found there fails (checks.authoring.copyable).
"""

from __future__ import annotations

import ast
import json
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


# ---- the numerics of a graded function, however it is written -------------------------------------

def _called(node: ast.AST) -> set[str]:
    """The names of what is called in `node` (`np.exp(...)` and `x.sum(...)` give exp and sum)."""
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _log_sum_exps(source: str) -> list[str]:
    """Functions that take the log of a sum, and an exp: the softmax cross-entropy 03 grades, which
    copyable's line measures miss when it is written another way (03's public table once modelled
    its overflowing variants with the stable one beside them). A released diagnosis works from data
    `checks build` computed instead (softmax_mistakes.json)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [f"{node.name} (line {node.lineno})" for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "exp" in _called(node)
            and any(_name(call) == "log" and "sum" in _called(call)
                    for call in ast.walk(node) if isinstance(call, ast.Call))]


def _name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _python_sources(files: dict[str, bytes]) -> dict[str, str]:
    """The Python of released files: .py files, and a notebook's code cells (one source each)."""
    sources = {}
    for name, data in files.items():
        if name.endswith(".py"):
            sources[name] = data.decode("utf-8", "replace")
        elif name.endswith(".ipynb"):
            cells = json.loads(data).get("cells", [])
            for k, cell in enumerate(c for c in cells if c.get("cell_type") == "code"):
                source = cell.get("source", "")
                text = "".join(source) if isinstance(source, list) else source
                sources[f"{name}#cell{k}"] = "\n".join(line for line in text.splitlines()
                                                       if not line.startswith(("%", "!")))  # IPython's magics
    return sources


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_release_computes_no_softmax_cross_entropy(name):
    assignment = load_assignment(REPO, name)
    found = {file: hits for file, source in _python_sources(_folder(assignment.release_dir)).items()
             if (hits := _log_sum_exps(source))}
    assert not found, f"released code that computes a log of a sum of exps (03's graded softmax): {found}"


def test_the_softmax_check_finds_the_old_table_and_not_the_new():
    """Able to fail: 03's public table before it read softmax_mistakes.json (from git history)."""
    old = '''
def _softmax_mistakes(logits, y):
    logits = np.asarray(logits, dtype=np.float64)
    found = []
    for shift in (0.0, logits.max(), logits.max(axis=1, keepdims=True)):
        shifted = logits - shift
        exps = np.exp(shifted)
        via_log = shifted - np.log(exps.sum(axis=1, keepdims=True))
        found.append(via_log)
    return found
'''
    assert _log_sum_exps(old) == ["_softmax_mistakes (line 2)"]
    released = (REPO / "assignments" / "03_mlp" / "tests" / "diagnoses.py").read_text()
    assert "softmax_cross_entropy" in released and not _log_sum_exps(released)
