"""What a grade run leaves behind: results.json (Gradescope schema), feedback.md, gradebook.csv,
and the tables printed on the terminal. Files are written atomically (temp file, then rename).
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from checks import __version__
from checks.scoring import SubmissionResult

RESULTS_FILE = "results.json"
FEEDBACK_FILE = "feedback.md"
GRADEBOOK_FILE = "gradebook.csv"


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def gradescope_results(result: SubmissionResult) -> dict:
    """Gradescope's autograder results format: one tests[] entry per question."""
    tests = [{"name": q.qid, "score": q.score, "max_score": q.max_score,
              "status": "passed" if q.passed else "failed", "output": q.feedback, "visibility": "visible"}
             for q in result.questions]
    overview = [f"{result.score:g} / {result.max_score:g} points."] + result.warnings
    if result.error:
        overview.append(f"The grader could not grade this submission: {result.error}")
    return {
        "score": result.score,
        "output": "\n".join(overview),
        "execution_time": result.seconds,
        "tests": tests,
        "extra_data": {"assignment": result.assignment, "submission": result.name, "devices": result.devices,
                       "grader_version": __version__, "sandbox": result.sandbox, "error": result.error,
                       "warnings": result.warnings},
    }


def feedback_markdown(result: SubmissionResult) -> str:
    """A student's feedback, readable on its own."""
    lines = [f"# {result.assignment}: feedback for {result.name}", "",
             f"**Score: {result.score:g} / {result.max_score:g}**", ""]
    if result.error:
        lines += ["> The grader itself ran into a problem with this submission; course staff have been told.", ""]
    lines += [f"- {warning}" for warning in result.warnings]
    if result.warnings:
        lines.append("")
    lines += ["| question | score | status |", "|---|---:|---|"]
    lines += [f"| `{q.qid}` | {q.score:g} / {q.max_score:g} | {'passed' if q.passed else 'needs work'} |"
              for q in result.questions]
    for q in result.questions:
        if not q.passed:
            lines += ["", f"## `{q.qid}` ({q.score:g} / {q.max_score:g})", "", q.feedback]
    lines += ["", f"Checked on: {', '.join(result.devices) or 'cpu'}.", ""]
    return "\n".join(lines)


def write_submission_reports(out_dir: Path, result: SubmissionResult) -> None:
    folder = out_dir / result.name
    write_atomically(folder / FEEDBACK_FILE, feedback_markdown(result))
    write_atomically(folder / RESULTS_FILE, json.dumps(gradescope_results(result), indent=2) + "\n")


def read_submission_results(out_dir: Path, name: str) -> dict | None:
    path = out_dir / name / RESULTS_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def gradebook_csv(rows: list[dict]) -> str:
    """One row per submission (from results.json dicts), one column per question, and the total."""
    questions = _question_names(rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", *questions, "total", "graded"])
    for row in sorted(rows, key=lambda r: r["extra_data"]["submission"]):
        scores = {test["name"]: test["score"] for test in row["tests"]}
        writer.writerow([row["extra_data"]["submission"], *(scores.get(q, "") for q in questions), row["score"],
                         "no" if row["extra_data"].get("error") else "yes"])
    return buffer.getvalue()


def question_table(result: SubmissionResult, *, show_points: bool = True) -> Table:
    table = Table(title=f"{result.assignment} — {result.name}", title_justify="left")
    table.add_column("question")
    if show_points:
        table.add_column("score", justify="right")
    table.add_column("checks", justify="right")
    table.add_column("", justify="center")
    table.add_column("first problem", overflow="fold")
    for q in result.questions:
        first = "" if q.passed else _first_problem(q.feedback)
        mark = "[green]✓[/green]" if q.passed else "[red]✗[/red]"
        cells = [q.qid] + ([f"{q.score:g}/{q.max_score:g}"] if show_points else [])
        table.add_row(*cells, f"{q.passed_cases}/{q.total_cases}", mark, first)
    return table


def _first_problem(feedback: str, limit: int = 160) -> str:
    lines = feedback.splitlines()
    first = next((line[2:] for line in lines if line.startswith("- ")), lines[0] if lines else "")
    return first if len(first) <= limit else first[: limit - 3] + "..."


def submissions_table(rows: list[dict]) -> Table:
    """The batch at a glance, from results.json dicts: score and the questions that lost points."""
    table = Table(title="submissions", title_justify="left")
    for column, justify in (("submission", "left"), ("score", "right"), ("lost points on", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for row in sorted(rows, key=lambda r: r["extra_data"]["submission"]):
        lost = ", ".join(f"{t['name']} {t['score']:g}/{t['max_score']:g}" for t in row["tests"] if t["status"] != "passed")
        score = "[red]grader error[/red]" if row["extra_data"].get("error") else f"{row['score']:g}"
        table.add_row(row["extra_data"]["submission"], score, lost or "-")
    return table


def questions_table(rows: list[dict]) -> Table:
    """Per question over the batch: mean score and the share of submissions with full marks."""
    table = Table(title="questions", title_justify="left")
    for column, justify in (("question", "left"), ("mean", "right"), ("max", "right"), ("full marks", "right")):
        table.add_column(column, justify=justify)
    graded = [row for row in rows if not row["extra_data"].get("error")]
    for name in _question_names(graded):
        tests = [t for row in graded for t in row["tests"] if t["name"] == name]
        mean = sum(t["score"] for t in tests) / len(tests)
        passed = sum(t["status"] == "passed" for t in tests) / len(tests)
        table.add_row(name, f"{mean:.2f}", f"{tests[0]['max_score']:g}", f"{passed:.0%}")
    return table


def _question_names(rows: list[dict]) -> list[str]:
    names: list[str] = []
    for row in rows:
        names += [t["name"] for t in row["tests"] if t["name"] not in names]
    return names


def print_failures(console: Console, result: SubmissionResult) -> None:
    for q in result.questions:
        if not q.passed:
            console.print(f"\n[bold]{q.qid}[/bold]", highlight=False)
            console.print(q.feedback, highlight=False, markup=False)
