"""End to end on the real 01_tensors assignment: the reference, the stubs, every mutant, hostile
submissions and the command line."""

from __future__ import annotations

import csv
import json

import pytest

from checks.cli import main
from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.course.submissions import read_submission
from checks.authoring.verify import load_mutants, verify

from conftest import REPO

ASSIGNMENT = load_assignment(REPO, "01_tensors")
REFERENCE = read_submission(ASSIGNMENT.solution_dir).files


def test_the_reference_scores_100_the_stubs_0_and_each_mutant_only_its_question():
    mutants = load_mutants(ASSIGNMENT)
    assert len(mutants) >= 10
    verdicts = verify(ASSIGNMENT)
    failed = [f"{v.submission}: {v.expectation}: {v.detail}" for v in verdicts if not v.ok]
    assert not failed, "\n".join(failed)


def with_changes(**changes: str) -> dict[str, bytes]:
    """The reference with some files rewritten: (find, replace) pairs joined by '=>'."""
    files = dict(REFERENCE)
    for name, change in changes.items():
        filename = f"{name}.py"
        text = files[filename].decode()
        for edit in change.split("\n||\n"):
            if edit.startswith("PREPEND:"):
                text = edit[len("PREPEND:"):] + "\n" + text
            else:
                find, replace = edit.split("=>")
                assert text.count(find.strip("\n")) == 1, find
                text = text.replace(find.strip("\n"), replace.strip("\n"))
        files[filename] = text.encode()
    return files


PATCH_LIBRARIES = """PREPEND:
import builtins, numpy, pytest, torch
numpy.array_equal = numpy.allclose = numpy.isclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
torch.equal = torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
pytest.approx = lambda *a, **k: True
builtins.__import__ = builtins.__import__
"""


def numel_returning(expression: str) -> str:
    return f"def numel(shape):\n    return {expression}\n"


LIAR = """PREPEND:
class Anything(tuple):
    def __eq__(self, other):
        return True
    __hash__ = tuple.__hash__
"""


@pytest.fixture(scope="module")
def hostile_results():
    numel_start = REFERENCE["strides.py"].decode().index("def numel(")
    numel_end = REFERENCE["strides.py"].decode().index("\ndef ", numel_start + 1)
    numel_source = REFERENCE["strides.py"].decode()[numel_start:numel_end].strip("\n")
    liar_numel = numel_source.replace("def numel(shape):", "def numel(shape):\n    return Anything()", 1)
    hang_numel = numel_source.replace("def numel(shape):", "def numel(shape):\n    while True:\n        pass", 1)
    wrong_numel = numel_source.replace("def numel(shape):", "def numel(shape):\n    return -1", 1)
    sources = {
        "patches_libraries": with_changes(strides=PATCH_LIBRARIES + f"\n||\n{numel_source}=>{wrong_numel}"),
        "lying_eq": with_changes(strides=LIAR + f"\n||\n{numel_source}=>{liar_numel}"),
        "exits_at_import": with_changes(broadcasting="PREPEND:import sys\nsys.exit(0)\n"),
        "hangs": with_changes(strides=f"{numel_source}=>{hang_numel}"),
    }
    results = grade_sources(ASSIGNMENT, [Source.from_files(name, files) for name, files in sources.items()])
    return {result.name: result for result in results}


@pytest.mark.parametrize("name", ["patches_libraries", "lying_eq", "hangs"])
def test_a_hostile_numel_earns_nothing_there_and_everything_else_is_graded_normally(hostile_results, name):
    result = hostile_results[name]
    assert not result.error
    assert result.question("strides.numel").score == 0, result.question("strides.numel").feedback
    others = [q for q in result.questions if q.qid != "strides.numel"]
    assert all(q.passed for q in others), [(q.qid, q.feedback) for q in others if not q.passed]


def test_exit_at_import_costs_exactly_that_modules_questions(hostile_results):
    result = hostile_results["exits_at_import"]
    for q in result.questions:
        if q.qid.startswith("broadcasting."):
            assert q.score == 0 and "called sys.exit(0)" in q.feedback
        else:
            assert q.passed, (q.qid, q.feedback)


def test_feedback_names_what_happened(hostile_results):
    assert "unsupported type" in hostile_results["lying_eq"].question("strides.numel").feedback
    assert "did not finish" in hostile_results["hangs"].question("strides.numel").feedback


def test_grade_command_writes_results_feedback_and_gradebook(tmp_path, capsys):
    out = tmp_path / "grades"
    code = main(["--course", str(REPO), "grade", "01_tensors", str(ASSIGNMENT.solution_dir),
                 str(REPO / "examples/01_tensors/ben_bitdiddle"), "--out", str(out)])
    assert code == 0
    results = json.loads((out / "01_tensors/results.json").read_text())
    assert results["score"] == 100
    names = [test["name"] for test in results["tests"]]
    assert len(names) == len(set(names)) and "strides.numel" in names and "quiz.broadcast_numel" in names
    assert all(set(test) >= {"name", "score", "max_score", "status", "output", "visibility"} for test in results["tests"])
    assert results["extra_data"]["assignment"] == "01_tensors" and results["extra_data"]["devices"]
    ben = json.loads((out / "ben_bitdiddle/results.json").read_text())
    assert 0 < ben["score"] < 100
    assert "ben_bitdiddle" in (out / "ben_bitdiddle/feedback.md").read_text()
    rows = [row for row in csv.DictReader((out / "gradebook.csv").open()) if row["status"]]  # not Points Possible
    assert {row["submission"] for row in rows} == {"01_tensors", "ben_bitdiddle"}
    assert set(names) <= set(rows[0])

    # a second run skips what is graded and ends with the same gradebook
    before = (out / "gradebook.csv").read_text()
    assert main(["--course", str(REPO), "grade", "01_tensors", str(ASSIGNMENT.solution_dir),
                 str(REPO / "examples/01_tensors/ben_bitdiddle"), "--out", str(out)]) == 0
    assert "already graded" in capsys.readouterr().out
    assert (out / "gradebook.csv").read_text() == before


def test_test_command_exit_status_follows_the_public_checks(capsys):
    assert main(["--course", str(REPO), "test", "01_tensors", str(ASSIGNMENT.solution_dir)]) == 0
    assert main(["--course", str(REPO), "test", "01_tensors"]) == 1  # the untouched stubs
    assert "NotImplementedError" in capsys.readouterr().out
