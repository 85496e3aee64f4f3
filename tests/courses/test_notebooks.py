"""Every assignment's lesson notebook, executed headless by nbclient in a real kernel: with the
stubs it runs to the end and reports every question as not started; with the reference files in
its folder every question passes. Also how the notebooks are built from their sources.
"""

from __future__ import annotations

import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from checks.authoring.build import build, release_files
from checks.course.assignment import load_assignment
from checks.notebooks.lesson import build_notebook

nbformat = pytest.importorskip("nbformat", reason="needs the [notebooks] extra (make setup installs it)")
nbclient = pytest.importorskip("nbclient", reason="needs the [notebooks] extra (make setup installs it)")

from conftest import REPO, course_assignments

# those with a lesson notebook (solutions/<name>/<name>.py, its source), found, not listed
ASSIGNMENTS = [name for name in course_assignments() if (REPO / "solutions" / name / f"{name}.py").is_file()]
ROW = re.compile(r'<tr data-question="(?P<qid>[^"]+)" data-state="(?P<state>[^"]+)">')


def public_questions(name: str, root: Path = REPO) -> set[str]:
    """The question ids of an assignment's public tests and quiz, as `checks test` lists them."""
    source = (root / "solutions" / name / "tests" / "test_public.py").read_text()
    quiz = {f"quiz.{item.key}" for item in load_assignment(root, name).quiz}
    return set(re.findall(r'@question\("([^"]+)"', source)) | quiz


def execute(folder: Path, name: str) -> nbformat.NotebookNode:
    notebook = nbformat.read(folder / f"{name}.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()
    return notebook


def checks_rows(notebook: nbformat.NotebookNode) -> dict[str, str]:
    """question -> state, from the HTML table the last `%checks test` cell displayed."""
    last = [cell for cell in notebook.cells if cell.cell_type == "code" and "%checks test" in cell.source][-1]
    (html,) = [output["data"]["text/html"] for output in last.outputs if "text/html" in output.get("data", {})]
    return {match["qid"]: match["state"] for match in ROW.finditer(html)}


def release_copy(tmp_path: Path, name: str, *, reference: bool) -> Path:
    """A copy of assignments/<name> outside the course, as a student would have it; with
    `reference`, the reference's files and quiz answers in place of the stubs."""
    folder = tmp_path / ("reference" if reference else "stubs") / name
    shutil.copytree(REPO / "assignments" / name, folder)
    if reference:
        for path in (REPO / "solutions" / name).glob("*.py"):
            if path.stem != name:
                shutil.copy(path, folder / path.name)
        shutil.copy(REPO / "solutions" / name / "quiz.toml", folder / "quiz.toml")
    return folder


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_notebook_runs_on_the_stubs_and_passes_with_the_reference(name, tmp_path):
    """Both runs at once, one kernel each (most of their time is starting Python and torch)."""
    with ThreadPoolExecutor(2) as pool:
        on_stubs, on_reference = pool.map(lambda reference: execute(release_copy(tmp_path, name, reference=reference),
                                                                    name), (False, True))
    # with the stubs: it ran to the end (nbclient raises on a cell that fails), every row is "not started"
    rows = checks_rows(on_stubs)
    assert set(rows) == public_questions(name)
    assert set(rows.values()) == {"not started"}, rows
    printed = "".join(o.get("text", "") for c in on_stubs.cells if c.cell_type == "code" for o in c.outputs)
    assert "yours: not started" in printed  # the demonstrations beside the student's functions ran too
    # with the reference: every question passes, every quiz answer is there
    rows = checks_rows(on_reference)
    assert set(rows) == public_questions(name)
    assert all(state in ("passed", "quiz ok") for state in rows.values()), rows


def assert_a_section_for_every_question_and_quiz_key(root: Path, name: str) -> None:
    """The built notebook has a heading naming each public question and a **key** for each quiz
    key; shared with the tests of a course that `checks new` wrote."""
    notebook = json.loads((root / "assignments" / name / f"{name}.ipynb").read_text())
    text = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    headings = [line for line in text.splitlines() if line.startswith("#")]
    code = sorted(q for q in public_questions(name, root) if not q.startswith("quiz."))
    without_heading = [q for q in code if not any(re.search(rf"\b{re.escape(q)}\b", line) for line in headings)]
    assert not without_heading, headings
    quiz = sorted(q for q in public_questions(name, root) if q.startswith("quiz."))
    assert not [q for q in quiz if f"**{q.removeprefix('quiz.')}**" not in text]  # and the quiz, question by question


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_notebook_has_a_section_for_every_question_and_quiz_key(name):
    assert_a_section_for_every_question_and_quiz_key(REPO, name)


def test_the_notebook_is_built_from_its_source_and_the_source_is_not_released(tmp_path):
    for folder in ("solutions/01_tensors", "autograder/01_tensors"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    assert build(tmp_path, ["01_tensors"]) != []
    release = tmp_path / "assignments" / "01_tensors"
    assert (release / "01_tensors.ipynb").is_file()
    assert not (release / "01_tensors.py").exists()  # the source of the notebook is not a stub
    assert "01_tensors.py" not in release_files(tmp_path / "solutions" / "01_tensors")
    assert build(tmp_path, ["01_tensors"], check=True) == []

    source = tmp_path / "solutions" / "01_tensors" / "01_tensors.py"
    source.write_text(source.read_text() + "\n# %%\nprint('one more cell')\n")
    assert build(tmp_path, ["01_tensors"], check=True) == ["assignments/01_tensors/01_tensors.ipynb: out of date"]


def test_building_a_notebook_twice_gives_the_same_text_with_magics_uncommented():
    source = "# %% [markdown]\n# # Title\n\n# %%\n# %load_ext checks\nx = 1\n"
    text = build_notebook(source, "demo.py")
    assert text == build_notebook(source, "demo.py")
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    assert [cell.cell_type for cell in notebook.cells] == ["markdown", "code"]
    assert notebook.cells[1].source == "%load_ext checks\nx = 1"
    assert notebook.metadata.kernelspec.name == "python3"
