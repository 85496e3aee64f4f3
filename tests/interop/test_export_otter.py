"""`checks export otter`, validated by otter itself: the real `otter assign` and `otter run` (no
Docker) grade the reference, the stubs and three mutants to the same per-question scores as
`checks grade` of the same .py folders and of the filled notebooks; the student release holds no
solution and no hidden case. 01_tensors runs by default; each other assignment takes minutes (slow)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from checks.authoring.build import release_files
from checks.authoring.verify import load_mutants
from checks.course.answer_cells import parse_answer_cell
from checks.course.assignment import load_assignment
from checks.exports.otter import otter_name, with_otter_markers
from conftest import REPO, each_assignment

BIN = Path(sys.executable).parent
QUIZ = "quiz.toml"
OTTER_RUN_TIMEOUT_S = 600
pytest.importorskip("otter", reason="otter-grader is in the interop extra (make setup installs it)")


def _env() -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("CHECKS_COURSE", None)  # otter's kernel must find the hidden suite the zip shipped, not ours
    return env


def _run(command: list[str], cwd: Path, timeout: float = 600, succeeds: bool = True) -> subprocess.CompletedProcess:
    run = subprocess.run(command, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=timeout)
    assert (run.returncode == 0) == succeeds, \
        f"{' '.join(command)} exited with {run.returncode}:\n{(run.stdout + run.stderr)[-3000:]}"
    return run


def _submissions(name: str, where: Path) -> dict[str, Path]:
    """reference, stubs and three mutants of `name`, as .py folders."""
    assignment = load_assignment(REPO, name)
    named = (*assignment.files, QUIZ)
    reference = {f: (assignment.solution_dir / f).read_bytes() for f in named}
    stubs = {f: data for f, data in release_files(assignment.solution_dir).items() if f in named}
    # three mutants of three questions, one file after another (02's engine.tensor_basics, a question
    # of two tests with unequal points per check, gets one)
    mutants = load_mutants(assignment)
    by_file = [[m for m in mutants if m.file == f] for f in assignment.files]
    chosen, questions = {}, set()
    for mutant in (m for row in itertools.zip_longest(*by_file) for m in row if m is not None):
        if mutant.question not in questions and len(chosen) < 3:
            questions.add(mutant.question)
            chosen[f"mutant_{otter_name(mutant.name)}"] = mutant.apply(reference)
    folders = {}
    for label, files in {"reference": reference, "stubs": stubs, **chosen}.items():
        for file, data in files.items():
            (where / label / file).parent.mkdir(parents=True, exist_ok=True)
            (where / label / file).write_bytes(data)
        folders[label] = where / label
    return folders


def _checks_scores(results: Path) -> dict[str, float]:
    return {otter_name(t["name"]): t["score"] for t in json.loads(results.read_text())["tests"]}


def _otter_scores(results: Path) -> dict[str, float]:
    """Otter's per-question scores from its results.json (Gradescope's format; "Public Tests" has none)."""
    return {t["name"]: t["score"] for t in json.loads(results.read_text())["tests"] if t.get("score") is not None}


def _distinctive_lines(paths: list[Path]) -> set[str]:
    """Lines long enough to be telling, from the files a student must never see."""
    lines = set()
    for path in paths:
        lines.update(s for s in (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
                     if len(s) >= 30 and not s.startswith("#"))
    return lines


def _quoted(line: str, json_text: str) -> bool:
    """Whether a JSON document's text holds `line` (escaped as json.dump writes it, or not)."""
    return any(form in json_text for form in (line, json.dumps(line)[1:-1], json.dumps(line, ensure_ascii=False)[1:-1]))


def _assert_otter_grades_as_checks_does(name: str, tmp_path: Path) -> None:
    folders = _submissions(name, tmp_path / "py")
    export = tmp_path / "export"
    _run([str(BIN / "checks"), "--course", str(REPO), "export", "otter", name, "--out", str(export),
          "--fill", *map(str, folders.values())], cwd=tmp_path)
    _run([str(BIN / "otter"), "assign", str(export / f"{name}.ipynb"), str(tmp_path / "dist"), "--no-pdfs"],
         cwd=tmp_path)
    (zip_path,) = (tmp_path / "dist/autograder").glob(f"{name}-autograder_*.zip")

    otter: dict[str, dict[str, float]] = {}
    for label in folders:
        out = tmp_path / "otter" / label
        out.mkdir(parents=True)
        _run([str(BIN / "otter"), "run", "-a", str(zip_path), "-o", str(out), "--no-logo",
              str(export / "submissions" / f"{label}.ipynb")], cwd=tmp_path, timeout=OTTER_RUN_TIMEOUT_S)
        otter[label] = _otter_scores(out / "results.json")

    _run([str(BIN / "checks"), "--course", str(REPO), "grade", name, *map(str, folders.values()),
          "--out", str(tmp_path / "grade_py")], cwd=tmp_path)
    notebooks = sorted((export / "submissions").glob("*.ipynb"))
    _run([str(BIN / "checks"), "--course", str(REPO), "grade", name, *map(str, notebooks),
          "--out", str(tmp_path / "grade_nb")], cwd=tmp_path)
    for label in folders:
        checks = _checks_scores(tmp_path / "grade_py" / label / "results.json")
        from_notebook = _checks_scores(tmp_path / "grade_nb" / label / "results.json")
        assert set(otter[label]) == set(checks) == set(from_notebook), label
        for question, points in checks.items():
            assert otter[label][question] == pytest.approx(points, abs=0.01), (label, question)
            assert from_notebook[question] == pytest.approx(points, abs=0.01), (label, question)
    totals = {label: sum(scores.values()) for label, scores in otter.items()}
    assert totals["reference"] == pytest.approx(100, abs=0.01) and totals["stubs"] == 0
    assert all(0 < total < 100 for label, total in totals.items() if label.startswith("mutant_")), totals

    # the student release: otter's student notebook is the stubs, and no solution or hidden case is in it
    assignment = load_assignment(REPO, name)
    student = tmp_path / "dist/student"
    released = nbformat.read(str(student / f"{name}.ipynb"), as_version=4)
    cells = dict(filter(None, (parse_answer_cell(c.source) for c in released.cells if c.cell_type == "code")))
    stubs = release_files(assignment.solution_dir)
    assert cells == {f: stubs[f].decode() for f in (*assignment.files, QUIZ)}
    secret = _distinctive_lines([*sorted(assignment.autograder_dir.glob("*.py")),
                                 *(assignment.solution_dir / f for f in assignment.files)])
    # less what the release gives students anyway (the stubs, the provided files, the lesson)
    secret -= {line.strip() for data in stubs.values() for line in data.decode("utf-8", "replace").splitlines()}
    student_text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in student.rglob("*") if p.is_file())
    assert not [line for line in secret if line in student_text]
    assert "check_case" not in student_text and not (student / "autograder").exists()
    # nor in the tests the zip holds; and otter's feedback shows no more of them than checks grade's does
    # for the same code (which quotes a failing student's own lines and the call that failed, by design)
    tests_text = "\n".join(p.read_text() for p in (tmp_path / "dist/autograder").rglob("tests/*.py"))
    assert not [line for line in secret if line in tests_text]
    for label in folders:
        by_otter = (tmp_path / "otter" / label / "results.json").read_text()
        by_checks = (tmp_path / "grade_py" / label / "results.json").read_text()
        assert {line for line in secret if _quoted(line, by_otter)} <= {line for line in secret if _quoted(line, by_checks)}, label


# 01_tensors runs with the long tests; every other assignment of the course, found, with the slow ones
@pytest.mark.parametrize("name", each_assignment({"01_tensors": pytest.mark.long}, pytest.mark.slow))
def test_otter_grades_as_checks_does(name, tmp_path):
    _assert_otter_grades_as_checks_does(name, tmp_path)


@pytest.mark.long
def test_a_grader_failure_is_an_error_in_otter_not_a_score(tmp_path):
    """A hidden suite that does not collect, shipped in the zip: the test case ends the kernel, so
    `otter run` fails with checks' reason and writes no results.json (Gradescope then shows that the
    autograder failed) rather than 0 points a question."""
    reference = _submissions("01_tensors", tmp_path / "py")["reference"]
    export = tmp_path / "export"
    _run([str(BIN / "checks"), "--course", str(REPO), "export", "otter", "01_tensors", "--out", str(export),
          "--fill", str(reference)], cwd=tmp_path)
    with (export / "autograder/01_tensors/test_strides.py").open("a") as suite:
        suite.write("def broken(:\n")
    _run([str(BIN / "otter"), "assign", str(export / "01_tensors.ipynb"), str(tmp_path / "dist"), "--no-pdfs"],
         cwd=tmp_path)
    (zip_path,) = (tmp_path / "dist/autograder").glob("01_tensors-autograder_*.zip")
    out = tmp_path / "otter"
    out.mkdir()
    run = _run([str(BIN / "otter"), "run", "-a", str(zip_path), "-o", str(out), "--no-logo",
                str(export / "submissions/reference.ipynb")], cwd=tmp_path, timeout=OTTER_RUN_TIMEOUT_S, succeeds=False)
    log = run.stdout + run.stderr
    assert "checks: the grader failed; this is not your score: the suite could not be collected at test_strides.py" \
        in log
    assert "This kernel is ended so that no score is recorded for this notebook." in log
    assert not (out / "results.json").exists()


def test_solution_regions_become_otter_prompt_and_solution_blocks():
    solution = "def f(x):\n    # BEGIN SOLUTION hint: double it\n    y = 2 * x\n    return y\n    # END SOLUTION\n"
    stub = "def f(x):\n    raise NotImplementedError('f: double it')\n"
    marked = with_otter_markers(solution, stub, "f.py")
    assert marked == ('def f(x):\n    """ # BEGIN PROMPT\n    raise NotImplementedError(\'f: double it\')\n'
                      '    """ # END PROMPT\n    # BEGIN SOLUTION NO PROMPT\n    y = 2 * x\n    return y\n'
                      '    # END SOLUTION\n')
    namespace: dict = {}
    exec(marked, namespace)  # in the reference the prompt is a string that does nothing
    assert namespace["f"](3) == 6


def test_otter_names_replace_every_character_but_letters_and_digits():
    assert otter_name("strides.offset") == "strides_offset"
    assert otter_name("rules.add_backward") == "rules_add_backward"
    assert otter_name("quiz.broadcast-numel 2") == "quiz_broadcast_numel_2"


def test_export_refuses_fill_for_gradescope(tmp_path):
    run = subprocess.run([str(BIN / "checks"), "--course", str(REPO), "export", "gradescope", "01_tensors",
                          "--out", str(tmp_path), "--fill", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "--fill is for the nbgrader and otter exports" in run.stdout + run.stderr


def test_check_case_fails_exactly_the_failed_checks_with_the_feedback_once(monkeypatch):
    from checks.exports import kernel
    from checks.suites.scoring import QuestionResult

    parts = [{"points": 2.0, "all_or_nothing": False, "passed": [True, False, True, False]},
             {"points": 1.0, "all_or_nothing": True, "passed": [True, False]}]
    result = QuestionResult("engine.tensor_basics", 1.0, 3.0, "3 of 6 checks failed.", 3, 6, parts=parts)
    monkeypatch.setattr(kernel, "question_result", lambda assignment, qid: result)
    outcomes = {}
    for part, count in ((0, 4), (1, 1)):
        for index in range(count):
            try:
                kernel.check_case("02_autograd", "engine.tensor_basics", part, index, count)
                outcomes[part, index] = "passed"
            except AssertionError as error:
                outcomes[part, index] = str(error)
    assert [k for k, v in outcomes.items() if v == "passed"] == [(0, 0), (0, 2)]
    assert outcomes[0, 1].startswith("engine.tensor_basics: 1 of 3 points\n3 of 6 checks failed.")
    assert all("failed too" in outcomes[k] for k in ((0, 3), (1, 0)))
    # the otter score (points per check of each part, summed over the passed ones) is checks' score
    assert sum(2.0 / 4 for k, v in outcomes.items() if v == "passed") == result.score
    # graded with more checks than the export saw (another device): the same share passes
    parts[0]["passed"] = [True, False] * 4
    passed = []
    for index in range(4):
        try:
            kernel.check_case("02_autograd", "engine.tensor_basics", 0, index, 4)
            passed.append(index)
        except AssertionError:
            pass
    assert len(passed) == 2
