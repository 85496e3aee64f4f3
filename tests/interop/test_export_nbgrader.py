"""`checks export nbgrader`, validated by nbgrader itself: generate_assignment releases no solution
and no hidden case, and `nbgrader autograde` of notebooks made from the reference, the stubs and
mutants gives, per question, the points `checks grade` gives the same code (and the same notebooks).

These run the real nbgrader commands, each notebook's grading cells in a real kernel (a few
seconds a notebook): 01_tensors runs by default, every other assignment of the course with `make test-all`.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from rich.console import Console

from checks import cli
from checks.authoring.build import release_files
from checks.authoring.verify import load_mutants
from checks.course.assignment import load_assignment
from checks.course.submissions import read_submission
from checks.exports.hidden import hidden_files
from checks.exports.nbgrader import grade_id, nbgrader_regions
from checks.grading.session import named_files
from conftest import REPO, each_assignment

MUTANTS = 3
NBGRADER_TIMEOUT_S = 900  # autograde of 5 notebooks of 03_mlp on a loaded 2-core machine, with room
DISTINCT = 40  # characters: a line at least this long is taken to be distinctive


def _nbgrader(root: Path, *args: str, env: dict[str, str], succeeds: bool = True) -> str:
    """Run `nbgrader ARGS` in the course folder with a time limit, killing its whole process group
    (kernels included) when it runs over; returns its output, failing the test where its exit status
    is not what `succeeds` says."""
    process = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env, text=True,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=NBGRADER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"nbgrader {' '.join(args)} ran over {NBGRADER_TIMEOUT_S} s")
    finally:
        try:  # nothing it started outlives it
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert (process.returncode == 0) == succeeds, \
        f"nbgrader {' '.join(args)} exited with {process.returncode}:\n{output[-4000:]}"
    return output


@pytest.fixture
def nbgrader_env(tmp_path_factory) -> dict[str, str]:
    """The environment for nbgrader: its kernel `python3` is this Python (a kernelspec in a temp
    JUPYTER_PATH, which comes before any user's), and no CHECKS_COURSE (the kernel finds the suite)."""
    jupyter = tmp_path_factory.mktemp("jupyter")
    spec = jupyter / "kernels/python3/kernel.json"
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                "display_name": "Python 3 (ipykernel)", "language": "python"}))
    env = {key: value for key, value in os.environ.items() if key != "CHECKS_COURSE"}
    path = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # nbgrader runs `alembic`
    return {**env, "PATH": path, "JUPYTER_PATH": str(jupyter), "PYTHONWARNINGS": "ignore"}


def _quiet_cli(monkeypatch, *argv: str) -> int:
    monkeypatch.setattr(cli.common, "console", Console(file=io.StringIO(), width=200))
    return cli.main(["--course", str(REPO), *argv])


def _submissions(name: str, folder: Path) -> list[Path]:
    """.py submissions as folders: the reference, the stubs, and MUTANTS mutants on different questions."""
    assignment = load_assignment(REPO, name)
    named = named_files(assignment)
    reference = {n: data for n, data in read_submission(assignment.solution_dir).files.items() if n in named}
    stubs = {n: data for n, data in release_files(assignment.solution_dir).items() if n in named}
    chosen, questions = [], set()
    for mutant in load_mutants(assignment):
        if mutant.question not in questions and len(chosen) < MUTANTS:
            chosen.append(mutant)
            questions.add(mutant.question)
    assert len(chosen) == MUTANTS
    codes = {"reference": reference, "stubs": stubs, **{f"mutant_{m.name}": m.apply(reference) for m in chosen}}
    paths = []
    for label, files in codes.items():
        for file_name, data in files.items():
            (folder / label / file_name).parent.mkdir(parents=True, exist_ok=True)
            (folder / label / file_name).write_bytes(data)
        paths.append(folder / label)
    return paths


def _checks_scores(out: Path) -> dict[str, dict[str, float]]:
    """student -> qid -> points, from the results.json files `checks grade` wrote."""
    return {path.parent.name: {test["name"]: test["score"] for test in json.loads(path.read_text())["tests"]}
            for path in out.glob("*/results.json")}


def _nbgrader_scores(root: Path, name: str) -> dict[str, dict[str, float]]:
    """student -> grade_id -> points, from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        return {submission.student_id: {grade.name: grade.score for notebook in submission.notebooks
                                        for grade in notebook.grades}
                for submission in gradebook.assignment_submissions(name)}


def _distinctive_lines(texts: list[str], *, absent_from: list[str]) -> set[str]:
    """Lines of `texts` long enough to be distinctive and in none of `absent_from`."""
    lines = {line.strip() for text in texts for line in text.splitlines() if len(line.strip()) >= DISTINCT}
    return {line for line in lines if not any(line in other for other in absent_from)}


def _notebook_text(path: Path) -> str:
    """A notebook's cell sources and outputs, as a student reads them (not JSON-escaped)."""
    texts = []
    for cell in nbformat.read(path, as_version=4).cells:
        texts.append(cell.source)
        for output in cell.get("outputs", []):
            texts += [output.get("text", ""), *output.get("data", {}).values(), *output.get("traceback", [])]
    return "\n".join(text if isinstance(text, str) else json.dumps(text) for text in texts)


def _html_text(path: Path) -> str:
    """An HTML page's text: tags (syntax highlighting included) removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(errors="replace")))


def _released_text(root: Path) -> str:
    files = sorted(path for path in (root / "release").rglob("*") if path.is_file())
    return "".join(_notebook_text(p) if p.suffix == ".ipynb" else p.read_text(errors="replace") for p in files)


def test_release_holds_no_solution_and_no_hidden_case(tmp_path, monkeypatch, nbgrader_env):
    name = "02_autograd"  # its suite also ships a reference file (references/), which must stay unreleased
    assignment = load_assignment(REPO, name)
    root = tmp_path / "course"
    partial = tmp_path / "partial"  # a submission with only the first file
    partial.mkdir()
    (partial / assignment.files[0]).write_text("def mine():\n    return 1\n")
    assert _quiet_cli(monkeypatch, "export", "nbgrader", name, "--out", str(root), "--fill", str(partial)) == 0
    _nbgrader(root, "generate_assignment", name, "--force", env=nbgrader_env)

    # --fill starts from what nbgrader released: only the student's file differs
    release_cells = nbformat.read(root / "release" / name / f"{name}.ipynb", as_version=4).cells
    filled_cells = nbformat.read(root / "submitted/partial" / name / f"{name}.ipynb", as_version=4).cells
    assert [c.source for c in filled_cells] == [f"%%checks file {assignment.files[0]}\ndef mine():\n    return 1\n"
                                                if c.source.startswith(f"%%checks file {assignment.files[0]}\n")
                                                else c.source for c in release_cells]
    assert [c.source for c in filled_cells] != [c.source for c in release_cells]

    released = _released_text(root)
    release = {n: data.decode() for n, data in release_files(assignment.solution_dir).items() if n in assignment.files}
    solutions = [nbgrader_regions((assignment.solution_dir / n).read_text(), n) for n in assignment.files]
    regions = [re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", text, re.S) for text in solutions]
    secret_solution = _distinctive_lines([r for found in regions for r in found], absent_from=list(release.values()))
    hidden = [path.read_text() for path in hidden_files(assignment).values()]
    secret_suite = _distinctive_lines(hidden, absent_from=[*release.values(), *solutions])
    assert secret_solution and secret_suite  # there is something to look for
    source = _notebook_text(root / "source" / name / f"{name}.ipynb")
    assert secret_solution <= {line for line in secret_solution if line in source}  # the instructor's copy has them
    assert not [line for line in secret_solution | secret_suite if line in released]
    assert sorted(p.relative_to(root / "release").as_posix() for p in (root / "release").rglob("*") if p.is_file()) \
        == [f"{name}/{name}.ipynb"]
    # the hidden suite is in the course folder, where the grading cells look for it
    assert (root / "autograder" / name / "assignment.toml").is_file()
    assert (root / "references" / name / "rules.py").is_file() and not (root / "autograder" / name / "mutants.toml").exists()

    notebook = nbformat.read(root / "release" / name / f"{name}.ipynb", as_version=4)
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in notebook.cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    assert sum(graded.values()) == pytest.approx(100)
    assert "raise NotImplementedError()" in notebook.cells[2].source and "# Hint: " in notebook.cells[2].source


def test_fill_refuses_what_is_not_a_submission(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    output = io.StringIO()
    monkeypatch.setattr(cli.common, "console", Console(file=output, width=300))
    assert cli.main(["--course", str(REPO), "export", "nbgrader", "01_tensors", "--out", str(tmp_path / "out"),
                     "--fill", str(tmp_path / "empty")]) == 2
    assert "holds none of strides.py, broadcasting.py, quiz.toml" in output.getvalue()
    assert not (tmp_path / "out").exists()  # refused before anything was written
    assert cli.main(["--course", str(REPO), "export", "gradescope", "01_tensors", "--out", str(tmp_path / "gs"),
                     "--fill", str(tmp_path / "empty")]) == 2
    assert "--fill is for the nbgrader and otter exports" in output.getvalue()


# 01_tensors runs with the long tests; every other assignment of the course, found, with the slow ones
@pytest.mark.parametrize("name", each_assignment({"01_tensors": pytest.mark.long}, pytest.mark.slow))
def test_nbgrader_autograde_gives_checks_grade_points(name, tmp_path, monkeypatch, nbgrader_env):
    folders = _submissions(name, tmp_path / "py")
    root = tmp_path / "course"
    assert _quiet_cli(monkeypatch, "export", "nbgrader", name, "--out", str(root),
                      "--fill", *map(str, folders)) == 0
    _nbgrader(root, "generate_assignment", name, "--force", env=nbgrader_env)
    _nbgrader(root, "autograde", name, "--create", "--force", env=nbgrader_env)
    _nbgrader(root, "generate_feedback", name, "--force", env=nbgrader_env)

    assert _quiet_cli(monkeypatch, "grade", name, *map(str, folders), "--out", str(tmp_path / "grades")) == 0
    expected = _checks_scores(tmp_path / "grades")
    assert sorted(expected) == sorted(f.name for f in folders)
    by_nbgrader = _nbgrader_scores(root, name)
    assert sorted(by_nbgrader) == sorted(expected)
    for student, scores in expected.items():
        got = by_nbgrader[student]
        assert sorted(got) == sorted(grade_id(qid) for qid in scores), student  # one graded cell per question
        wrong = {qid: (got[grade_id(qid)], points) for qid, points in scores.items()
                 if got[grade_id(qid)] != pytest.approx(points, abs=0.01)}
        assert not wrong, f"{student}: nbgrader's points differ from checks grade's (nbgrader, checks): {wrong}"
    totals = {student: sum(scores.values()) for student, scores in expected.items()}
    assert totals["reference"] == pytest.approx(100) and totals["stubs"] == 0
    assert all(totals[f.name] < 100 for f in folders if f.name.startswith("mutant_"))

    # item 3's direction: `checks grade` reads nbgrader's submitted notebooks to the same points
    assert _quiet_cli(monkeypatch, "grade", name, *map(str, sorted((root / "submitted").iterdir())),
                      "--out", str(tmp_path / "notebook-grades")) == 0
    assert _checks_scores(tmp_path / "notebook-grades") == expected

    # the feedback students get names no line of the hidden suite
    assignment = load_assignment(REPO, name)
    pages = sorted((root / "feedback").rglob("*.html"))
    assert len(pages) == len(folders)
    feedback = "".join(_html_text(p) for p in pages)
    feedback += "".join(_notebook_text(p) for p in (root / "autograded").rglob("*.ipynb"))
    assert "of" in feedback and "points" in feedback  # the failures' feedback is there (mutants fail)
    secret = _distinctive_lines([p.read_text() for p in hidden_files(assignment).values()],
                                absent_from=[(assignment.solution_dir / n).read_text() for n in assignment.files])
    assert not [line for line in secret if line in feedback]


@pytest.mark.long
def test_a_grader_failure_is_an_error_in_nbgrader_not_a_score(tmp_path, monkeypatch, nbgrader_env):
    """A hidden suite that does not collect is the course's mistake, not the student's: the grading
    cell ends its kernel, so nbgrader records an error for the notebook, with checks' reason in its
    log, and no points for any cell (before, each cell failed: 0 of its points)."""
    reference = _submissions("01_tensors", tmp_path / "py")[0]
    root = tmp_path / "course"
    assert _quiet_cli(monkeypatch, "export", "nbgrader", "01_tensors", "--out", str(root), "--fill", str(reference)) == 0
    with (root / "autograder/01_tensors/test_strides.py").open("a") as suite:
        suite.write("def broken(:\n")
    _nbgrader(root, "generate_assignment", "01_tensors", "--force", env=nbgrader_env)
    output = _nbgrader(root, "autograde", "01_tensors", "--create", "--force", env=nbgrader_env, succeeds=False)

    assert "checks: the grader failed; this is not your score: the suite could not be collected at test_strides.py" \
        in output
    assert "SyntaxError" in output and "\x1b[" not in output  # the reason, as plain text
    assert "There was an error processing assignment '01_tensors' for student 'reference'" in output
    assert not (root / "autograded/reference/01_tensors").exists()
    from nbgrader.api import Gradebook

    def no_auto_scores() -> bool:
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
            (submission,) = gradebook.assignment_submissions("01_tensors")
            grades = [grade for notebook in submission.notebooks for grade in notebook.grades]
            return bool(grades) and all(grade.auto_score is None for grade in grades)

    assert no_auto_scores()
    # a course folder without its hidden suite is the course's mistake too, when autograding
    shutil.rmtree(root / "autograder")
    output = _nbgrader(root, "autograde", "01_tensors", "--create", "--force", env=nbgrader_env, succeeds=False)
    assert "checks: the grader failed; this is not your score: the hidden checks of 01_tensors are not here" in output
    assert no_auto_scores()
