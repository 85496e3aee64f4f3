"""The `%checks` IPython extension: real submissions that exit, kill their process, recurse without
end and raise cost their question's row, never the shell; what a student's code says is escaped in
the HTML; a run that hangs past its time limit is stopped with everything it started; edits are picked up without a
kernel restart.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from checks.notebooks.display import ChecksReport
from checks.notebooks.magic import run_checks

IPython = pytest.importorskip("IPython", reason="needs the [notebooks] extra (make setup installs it)")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

HOSTILE = """
import os, sys

def numel(shape):
    sys.exit(3)

def offset(index, strides, storage_offset=0):
    os._exit(1)

def unravel(flat, shape):
    return unravel(flat, shape)  # RecursionError (a hang costs a run its time limit: the test below)

def contiguous_strides(shape):
    raise ZeroDivisionError("<b>not bold</b>")
"""


@pytest.fixture
def shell():
    InteractiveShell.clear_instance()
    ipython = InteractiveShell.instance()
    yield ipython
    InteractiveShell.clear_instance()


@pytest.fixture
def copy_01(tmp_path: Path) -> Path:
    folder = tmp_path / "01_tensors"
    shutil.copytree(REPO / "assignments" / "01_tensors", folder)
    return folder


def runners_of(folder: Path) -> list[psutil.Process]:
    """Runner processes (and their children) working on `folder`, by their command line."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "checks.notebooks.runner" in cmdline and str(folder) in cmdline:
            found.append(process)
    return found


def test_a_hostile_submission_costs_its_rows_and_the_shell_goes_on(shell, copy_01, monkeypatch, capsys):
    reference = (REPO / "solutions" / "01_tensors" / "strides.py").read_text()
    (copy_01 / "strides.py").write_text(reference + HOSTILE)
    monkeypatch.chdir(copy_01)
    shell.run_line_magic("load_ext", "checks")
    shell.run_line_magic("checks", "test")
    shown = capsys.readouterr().out  # terminal IPython: the plain-text table
    rows: dict[str, str] = {}
    for line in shown.splitlines():  # the table's rows, not the failures' headings after it
        if line.startswith(("strides.", "broadcasting.")) and len(line.split()) > 1:
            rows.setdefault(line.split()[0], line)
    for qid in ("strides.numel", "strides.offset", "strides.unravel", "strides.contiguous_strides"):
        assert "checks failed" in rows[qid], shown
    for qid in ("strides.transpose", "strides.view", "strides.gather"):
        assert rows[qid].endswith("passed"), shown
    assert rows["broadcasting.broadcast_shape"].endswith("not started: still the stub"), shown
    assert "ZeroDivisionError" in shown
    assert shell.run_cell("21 * 2").result == 42  # the shell (the kernel, in Jupyter) is still there


def test_one_question_is_shown_alone_and_an_unknown_one_lists_the_questions(shell, copy_01, monkeypatch, capsys):
    monkeypatch.chdir(copy_01)
    shell.run_line_magic("load_ext", "checks")
    shell.run_line_magic("checks", "test strides.offset")
    shown = capsys.readouterr().out
    assert "strides.offset" in shown and "not started: still the stub" in shown
    assert "strides.numel" not in shown
    report = run_checks(copy_01, "strides.ofset")
    assert "has no question 'strides.ofset' (did you mean strides.offset?)" in report.problem, report.problem


def test_the_magic_reads_its_words_as_checks_test_does(copy_01):
    """`%checks test 01_tensors` is the CLI's `checks test 01_tensors` (the assignment, every question),
    not a question named 01_tensors; questions after it run alone; another assignment, or a mistyped
    question, is one line that says what to type."""
    everything = run_checks(copy_01, ["01_tensors"])
    assert everything.problem == "" and len(everything.rows) == 13, everything.problem
    two = run_checks(copy_01, ["01_tensors", "strides.offset", "quiz.broadcast_numel"])
    assert [row.qid for row in two.rows] == ["strides.offset", "quiz.broadcast_numel"], two
    assert "is a copy of 01_tensors, not of 02_autograd" in run_checks(copy_01, ["02_autograd"]).problem
    assert "no question 'numel' (did you mean strides.numel?)" in run_checks(copy_01, ["numel"]).problem


def test_a_big_notebook_beside_the_files_is_not_read_and_a_misnamed_file_is_pointed_out(copy_01):
    """The notebook with its outputs is no part of a submission: 6 MiB of it must not stop the checks."""
    (copy_01 / "01_tensors.ipynb").write_bytes(b"{}" + b" " * (6 * 2**20))
    (copy_01 / "broadcasting.py").rename(copy_01 / "broadcasting.PY")
    report = run_checks(copy_01)
    assert report.problem == ""
    assert any("found broadcasting.PY: rename it to broadcasting.py" in note for note in report.notes), report.notes
    assert {row.qid: row.state for row in report.rows}["strides.numel"] == "not started"


def test_usage_and_a_folder_that_is_no_assignment(shell, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shell.run_line_magic("load_ext", "checks")
    shell.run_line_magic("checks", "tset")
    assert "usage: %checks test [ASSIGNMENT] [QUESTION...]" in capsys.readouterr().out
    shell.run_line_magic("checks", "test")
    assert "is not an assignment folder" in capsys.readouterr().out


@pytest.mark.long  # it waits for the time limit: `make test-long`, which CI runs
def test_a_run_over_its_time_limit_is_stopped_with_everything_it_started(copy_01):
    """Every function hangs, so the run is still grading (zygote and workers up) at its limit."""
    (copy_01 / "strides.py").write_text("def _hang(*args, **kwargs):\n    while True:\n        pass\n\n" + "".join(
        f"{name} = _hang\n" for name in ("numel", "contiguous_strides", "offset", "unravel", "transpose",
                                          "permute", "is_contiguous", "view", "gather")))
    seen: set[psutil.Process] = set()
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run_checks, copy_01, timeout=12)
        while not running.done():
            for runner in runners_of(copy_01):
                try:
                    seen |= {runner, *runner.children(recursive=True)}
                except psutil.NoSuchProcess:
                    pass
            time.sleep(0.2)
        report = running.result()
    assert "did not finish in 12 s" in report.problem
    assert report.rows == []  # a grader failure is never shown as a score
    assert len(seen) >= 2, "the runner never got as far as starting the sandbox"
    _, alive = psutil.wait_procs(list(seen), timeout=5)
    assert alive == [], [(p.pid, p.ppid(), p.uids().real, p.cmdline()[:4]) for p in alive]


def test_the_html_escapes_what_student_code_says():
    feedback = "strides.numel((2, 3)) raised ValueError: <img src=x onerror=alert(1)>"
    result = {"name": "01_tensors", "assignment": "01_tensors", "questions": [
        {"qid": "strides.numel", "score": 0.0, "max_score": 4.0, "feedback": feedback, "passed_cases": 0,
         "total_cases": 3, "not_started": False}], "warnings": ["<script>x</script>"]}
    report = ChecksReport.from_runner({"result": result, "quiz": [], "quiz_problem": "", "question": None})
    page = report._repr_html_()
    assert "<img" not in page and "<script>x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert 'data-state="failed"' in page
    assert feedback in repr(report)


def test_the_notebook_picks_up_an_edit_without_a_kernel_restart(copy_01):
    """The lesson's own set-up cell, in a real kernel: a saved edit of strides.py is used by the next cell."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    lesson = nbformat.read(copy_01 / "01_tensors.ipynb", as_version=4)
    setup = next(cell for cell in lesson.cells if cell.cell_type == "code")
    reference = json.dumps((REPO / "solutions" / "01_tensors" / "strides.py").read_text())
    edit = textwrap.dedent(f"""
        import os, pathlib, time
        pathlib.Path("strides.py").write_text({reference})
        later = time.time() + 5
        os.utime("strides.py", (later, later))
    """)
    notebook = nbformat.v4.new_notebook(cells=[
        setup, nbformat.v4.new_code_cell("print(yours(strides.numel, (2, 3)))"),
        nbformat.v4.new_code_cell(edit), nbformat.v4.new_code_cell("print(yours(strides.numel, (2, 3)))")])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(copy_01)}}).execute()
    assert notebook.cells[1].outputs[0]["text"] == "not started\n"
    assert notebook.cells[3].outputs[0]["text"] == "6\n"


def test_not_started_is_one_word_in_the_terminal_and_the_notebook():
    from rich.console import Console

    from checks.reports.render import question_table
    from checks.suites.scoring import NOT_STARTED, QuestionResult, SubmissionResult

    stub = QuestionResult("strides.numel", 0.0, 4.0, "", 0, 3, not_started=True)
    result = SubmissionResult("01_tensors", "01_tensors", questions=[stub])
    console = Console(record=True, width=120)
    console.print(question_table(result, show_points=False))
    report = ChecksReport.from_runner({"result": result.to_dict(), "quiz": [], "quiz_problem": "", "question": None})
    assert NOT_STARTED in console.export_text() and report.rows[0].state == NOT_STARTED
    assert report.summary.endswith(f"{NOT_STARTED.capitalize()}: 1 question still raise the stub's NotImplementedError: "
                                   "its message, in your .py file, is a hint of where to begin.")


def test_quiz_rows_say_answered_not_started_or_malformed():
    result = {"name": "01_tensors", "assignment": "01_tensors", "questions": []}
    quiz = [{"key": "a", "ok": True, "note": "answered (number)"}, {"key": "b", "ok": False, "note": "no answer yet"},
            {"key": "c", "ok": False, "note": "expected a number, got 'six'"}]
    report = ChecksReport.from_runner({"result": result, "quiz": quiz, "quiz_problem": "", "question": None})
    assert [(row.qid, row.state) for row in report.rows] == [("quiz.a", "quiz ok"), ("quiz.b", "not started"),
                                                             ("quiz.c", "failed")]
