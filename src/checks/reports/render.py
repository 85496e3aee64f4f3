"""What a grade run leaves behind: results.json (Gradescope schema), feedback.md (and the same
rendered as feedback.html, which report.html links to), gradebook.csv, and the tables printed on
the terminal. Files are written atomically (temp file, then rename).

Names, feedback and messages come partly from student code (exception messages, printed output,
folder names): they are shown as written, never read as markup, a control sequence or a formula,
in every one of them; course/inert.py says how.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import html
import io
import json
import os
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from checks import __version__
from checks.course import inert
from checks.reports.gradebook import DB_FILE, Gradebook, GradebookError, lock_folder, refuse_unless_regular
from checks.suites.quiz import AnswerForm
from checks.suites.scoring import Adjustment, SubmissionResult

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

RESULTS_FILE = "results.json"
FEEDBACK_FILE = "feedback.md"
FEEDBACK_HTML_FILE = "feedback.html"
GRADEBOOK_FILE = "gradebook.csv"


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one. A lone surrogate that reached
    `text` is written as an escape (inert.mend): a write never fails on it."""
    text = inert.mend(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, 0o666 & ~_umask())  # mkstemp's 0600 is for secrets; these are for sharing
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_stale_temp_files(folder: Path) -> None:
    """Temp files of write_atomically that a killed run (kill -9) left behind in `folder`: files only
    (a folder of that name is none of the grader's: never removed, never in the way)."""
    for name in (RESULTS_FILE, FEEDBACK_FILE, FEEDBACK_HTML_FILE, GRADEBOOK_FILE, "report.html", "analytics.json",
                 "mistakes.csv", "regrade.csv"):
        for stale in folder.glob(f".{name}.*.tmp"):
            if stale.is_symlink() or stale.is_file():
                stale.unlink(missing_ok=True)


def write_if_changed(path: Path, text: str) -> bool:
    """write_atomically, unless the file already holds exactly `text`; True when it wrote."""
    text = inert.mend(text)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, ValueError):
        pass
    write_atomically(path, text)
    return True


# ---------------------------------------------------------------- one submission

def gradescope_results(result: SubmissionResult, *, grader_version: str = __version__,
                       graded_at: str | None = None) -> dict:
    """Gradescope's autograder results format: one tests[] entry per question; student text in it
    is inert (inert.visible_tree), as in every other output."""
    tests = [{"name": q.qid, "score": q.score, "max_score": q.max_score,
              "status": "passed" if q.passed else "failed", "output": q.feedback, "visibility": "visible"}
             for q in result.questions]
    overview = [f"{result.final_score:g} / {result.max_score:g} points."]
    if result.adjustments:
        overview += [f"The checks gave {result.score:g}; then:"] + [adjustment_line(a) for a in result.adjustments]
    overview += result.warnings
    if result.error:
        overview.append(f"The grader could not grade this submission: {result.error}")
    extra = {"assignment": result.assignment, "submission": result.name, "devices": result.devices,
             "grader_version": grader_version, "sandbox": result.sandbox, "error": result.error,
             "warnings": result.warnings}
    if result.adjustments or result.submitted_at:  # the course policy's part, apart from the checks' score
        extra |= {"raw_score": result.score, "submitted_at": result.submitted_at,
                  "adjustments": [dataclasses.asdict(a) for a in result.adjustments]}
    if graded_at:
        extra["graded_at"] = graded_at
    return inert.visible_tree({
        "score": result.final_score,
        "output": "\n".join(overview),
        "execution_time": result.seconds,
        "tests": tests,
        "extra_data": extra,
    })


def feedback_markdown(result: SubmissionResult, *, grader_version: str = __version__,
                      graded_at: str | None = None) -> str:
    """A student's feedback, readable on its own, as plain text or rendered."""
    passed = [q for q in result.questions if q.passed]
    lines = [f"# {result.assignment}: feedback for {inert.markdown(result.name)}", ""]
    if result.questions:
        lines += [f"**Score: {result.final_score:g} / {result.max_score:g}** "
                  f"({len(passed)} of {len(result.questions)} questions with full marks)", ""]
    if result.adjustments:
        lines += [f"The checks gave {result.score:g}; then:", ""]
        lines += [f"- {inert.markdown_line(adjustment_line(a))}" for a in result.adjustments] + [""]
    if result.error:
        lines += ["> **The grader itself could not finish grading this submission.** This is not your mistake: "
                  "the course staff see it in their report and will grade it again."
                  + (" The questions below are the ones it did grade." if result.questions else ""), ""]
    if result.warnings:
        lines += ["About your submission:", ""] + [f"- {inert.markdown_line(warning)}" for warning in result.warnings] + [""]
    if result.questions:
        lines += ["| question | score | status |", "|---|---:|---|"]
        lines += [f"| `{q.qid}` | {q.score:g} / {q.max_score:g} | {'passed' if q.passed else 'needs work'} |"
                  for q in result.questions]
        lines.append("")
    failed = [q for q in result.questions if not q.passed]
    if failed:
        lines += ["## What to fix", "",
                  "Each failed check below says what was called, what came back and what was expected.", ""]
        for q in failed:
            lines += [f"### `{q.qid}` ({q.score:g} / {q.max_score:g})", "", _feedback_block(q.feedback), ""]
    elif result.questions and not result.error:
        lines += ["Every question passed all its checks.", ""]
    stamp = f"Checked on {', '.join(result.devices) or 'cpu'} by checks {grader_version}"
    lines += [stamp + (f", {graded_at}." if graded_at else "."), ""]
    return "\n".join(lines)


def adjustment_line(adjustment: Adjustment) -> str:
    """An adjustment in one line, as a student and staff read it."""
    points = f"{adjustment.points:+g} point{'s' if abs(adjustment.points) != 1 else ''}" if adjustment.points \
        else "no points"
    who = "late policy" if adjustment.by == POLICY else f"staff ({adjustment.by})"
    return f"{who}, {points}: {adjustment.reason}"  # never starts with a sign: a CSV cell shows it as it is


POLICY = "policy"  # Adjustment.by of what the course policy decided


def _feedback_block(feedback: str) -> str:
    """A question's feedback (sentences, "- " bullets, indented continuations) as safe markdown."""
    out = []
    for line in feedback.splitlines():
        if line.startswith("- "):
            out.append("- " + inert.markdown_line(line[2:]))  # "- # x" would be a heading in a bullet
        elif line[:1].isspace() and line.strip():
            out.append("  " + inert.markdown_line(line))  # stays inside its bullet
        else:
            out.append(inert.markdown_line(line))
    return "\n".join(out)


_FEEDBACK_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  body {{ font: 15px/1.5 system-ui, sans-serif; color: #1d1d1f; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; }}
  table {{ border-collapse: collapse; }}
  th, td {{ text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #eee; }}
  code {{ font: .9em ui-monospace, monospace; }}
  li {{ margin: .3rem 0; overflow-wrap: anywhere; }}
  td, p, code {{ overflow-wrap: anywhere; }}
  pre {{ white-space: pre-wrap; overflow-wrap: anywhere; }}
  blockquote {{ border-left: 3px solid #b3261e; margin-left: 0; padding-left: 1rem; }}
</style>
</head>
<body>
{body}</body>
</html>
"""


def feedback_html(markdown: str, *, title: str) -> str:
    """feedback.md as a page of its own: rendered with raw HTML off (student text stays text), no
    script, nothing fetched."""
    return _FEEDBACK_PAGE.format(title=html.escape(inert.visible(title, keep="")),
                                 body=_markdown_renderer().render(markdown))


@functools.lru_cache(maxsize=1)
def _markdown_renderer() -> "MarkdownIt":
    """Made once (its rules are compiled as it is made), and only where a page is written: `checks
    test` prints tables from this module, and no page."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def write_submission_reports(out_dir: Path, result: SubmissionResult, *, grader_version: str = __version__,
                             graded_at: str | None = None, page_of: bytes | None = None) -> bytes:
    """DIR/<name>/feedback.md, feedback.html and results.json, each rewritten only when its content
    changed; a digest of the feedback text. `page_of`: the digest this call returned when it wrote
    feedback.html moments ago (the same run): where the text is the same, the page is not
    rendered again (Markdown to HTML is most of the cost of a submission's reports)."""
    folder = out_dir / result.name
    remove_stale_temp_files(folder)
    feedback = feedback_markdown(result, grader_version=grader_version, graded_at=graded_at)
    write_if_changed(folder / FEEDBACK_FILE, feedback)
    digest = hashlib.blake2b(feedback.encode(errors="surrogatepass"), digest_size=16).digest()
    if digest != page_of or not (folder / FEEDBACK_HTML_FILE).is_file():
        write_if_changed(folder / FEEDBACK_HTML_FILE,
                         feedback_html(feedback, title=f"{result.assignment}: feedback for {result.name}"))
    write_if_changed(folder / RESULTS_FILE, json.dumps(gradescope_results(result, grader_version=grader_version,
                                                                          graded_at=graded_at), indent=2) + "\n")
    return digest


# ---------------------------------------------------------------- the whole batch

@dataclass(frozen=True)
class QuestionStats:
    qid: str
    max_score: float
    mean: float
    pass_rate: float  # share of submissions with full marks
    count: int


def question_names(results: list[SubmissionResult]) -> list[str]:
    """Every question id, in the order the suites report them."""
    names: dict[str, None] = {}
    for result in results:
        names.update((q.qid, None) for q in result.questions)
    return list(names)


def question_stats(results: list[SubmissionResult]) -> list[QuestionStats]:
    """Per question, over the submissions the grader could grade."""
    graded = [r for r in results if not r.error]
    stats = []
    for qid in question_names(graded):
        questions = [q for r in graded for q in r.questions if q.qid == qid]
        stats.append(QuestionStats(qid, max(q.max_score for q in questions),
                                   sum(q.score for q in questions) / len(questions),
                                   sum(q.passed for q in questions) / len(questions), len(questions)))
    return stats


def gradebook_csv(results: list[SubmissionResult]) -> str:
    """One row per submission: its name, the student's id (the LMS's, else the name), a column per
    question, the total, and its status with the reason: graded, refused (unreadable, scored 0) or
    not graded (the grader failed: no score at all). The line below the header, POINTS_POSSIBLE,
    holds each question's maximum and the total's, as Canvas's gradebook export does; its status is
    empty, so that keeping the rows whose status is `graded` leaves it out.

    Where the course policy had a say (a submission time known, or an adjustment), the columns
    POLICY_COLUMNS come before the total: when it was submitted, the raw score of the checks, the
    late penalty and the manual adjustment, apart; the total is then the final score, and the
    reason names every adjustment."""
    graded = [r for r in results if not r.error]
    questions = question_names(graded)
    maxima = {s.qid: s.max_score for s in question_stats(results)}
    policy = any(r.adjustments or r.submitted_at for r in results)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    def row(cells: list) -> None:  # names and reasons come from students: no cell is a formula
        writer.writerow([inert.csv_cell(cell) for cell in cells])

    row([*_CSV_HEAD, *questions, *(POLICY_COLUMNS if policy else ()), *_CSV_TAIL])
    top = max((r.max_score for r in graded), default="")
    row([POINTS_POSSIBLE, "", *(maxima[q] for q in questions), *(("", top, "", "") if policy else ()), top, "", ""])
    for result in sorted(results, key=lambda r: r.name):
        student = [result.name, result.student_id or result.name]
        if result.error:  # a grader failure is never a grade
            row([*student, *("" for _ in questions), *(("", "", "", "") if policy else ()), "", result.status,
                 error_summary(result.error)])
            continue
        scores = {q.qid: q.score for q in result.questions}
        apart = (result.submitted_at, float(result.score), result.penalty, result.manual) if policy else ()
        reasons = [result.refused] if result.refused else []
        reasons += [adjustment_line(a) for a in result.adjustments]
        row([*student, *(scores.get(q, "") for q in questions), *apart, float(result.final_score), result.status,
             "; ".join(reasons)])
    return buffer.getvalue()


def export_gradebook_csv(out_dir: Path, dest: Path | None = None) -> tuple[Path, list[SubmissionResult]]:
    """Write gradebook.csv again from an output folder's gradebook.sqlite, grading nothing: into the
    folder (never over a CSV checks did not write), or to `dest`. While it holds the folder's lock,
    as a grade run does. The path written and the submissions in it."""
    if not out_dir.is_dir():
        raise GradebookError(f"{out_dir} is not a folder: name the --out folder of a `checks grade` run")
    if (out_dir / DB_FILE).is_symlink() or not (out_dir / DB_FILE).is_file():
        Gradebook.existing(out_dir / DB_FILE)  # says why, before the lock file is made in a folder of no run
    with lock_folder(out_dir):
        results = [record.result for record in Gradebook.existing(out_dir / DB_FILE).load()]
        target = dest or out_dir / GRADEBOOK_FILE
        if target.is_dir():
            raise GradebookError(f"{target} is a folder: name the CSV file to write")
        if dest is None:
            check_gradebook_csv(target, {q.qid for result in results for q in result.questions})
        else:
            refuse_unless_regular(target)
        write_atomically(target, gradebook_csv(results))
    return target, results


def plain(text: str, style: str = "", *, lines: bool = False) -> Text:
    """Student text for the terminal: rich markup and control sequences shown as written, and on
    one line unless `lines` (a name with a newline would forge a table row)."""
    return Text(inert.visible(text, keep="\n\t" if lines else ""), style=style)


# gradebook_csv's columns before and after the questions', and the label of its line of maxima
_CSV_HEAD = ("submission", "student_id")
_CSV_TAIL = ("total", "status", "reason")
POLICY_COLUMNS = ("submitted_at", "raw", "penalty", "adjustment")  # where the course policy had a say
POINTS_POSSIBLE = "Points Possible"


def check_gradebook_csv(path: Path, questions: Collection[str]) -> None:
    """GradebookError, naming `path`, unless it is missing or a gradebook.csv checks wrote: a link,
    another file, or one with columns checks never writes (a TA's own column) is never overwritten."""
    refuse_unless_regular(path)
    if not path.exists():
        return
    why = "it is not the CSV checks writes"
    try:
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        rows, why = [], f"it cannot be read as the CSV checks writes ({error})"
    header = rows[0] if rows else []
    unknown = [column for column in header if column not in {*_CSV_HEAD, *POLICY_COLUMNS, *_CSV_TAIL, *questions}]
    if unknown and header[:1] == ["submission"]:
        why = f"it has columns checks never wrote here ({', '.join(unknown[:5])})"
    elif header[:1] == ["submission"] and header[-3:] == list(_CSV_TAIL) and not unknown:  # with student_id or not
        if all(len(row) == len(header) for row in rows[1:]):
            return
        why = "a row has more or fewer cells than its header"
    raise GradebookError(f"{path} was not written by checks: {why}. Nothing was graded or overwritten; move it "
                         "aside (or grade into another --out folder) and run the same command again")


def question_table(result: SubmissionResult, *, show_points: bool = True,
                   quiz: Sequence[AnswerForm] = ()) -> Table:
    """A row per question, short: passed, not started (still the stub), or how many checks failed
    (the failures follow, once, from print_failures); then a row per quiz answer, on its form only."""
    heading = result.assignment if result.name == result.assignment else f"{result.assignment} — {result.name}"
    table = Table(title=plain(heading), title_justify="left")
    table.add_column("question")
    if show_points:
        table.add_column("score", justify="right")
    table.add_column("checks", justify="right")
    table.add_column("", justify="center")
    table.add_column("status", overflow="fold")
    for q in result.questions:
        if q.passed:
            status = Text("passed")
        elif q.not_started:
            status = Text("not started", style="yellow")
        else:
            status = Text(f"{q.total_cases - q.passed_cases} of {q.total_cases} checks failed: see below")
        cells = [plain(q.qid)] + ([f"{q.score:g}/{q.max_score:g}"] if show_points else [])
        table.add_row(*cells, f"{q.passed_cases}/{q.total_cases}", _mark(q.passed), status)
    if quiz:
        table.add_section()
    for form in quiz:
        note = form.note + ("; it is marked when graded" if form.ok else "")
        table.add_row(plain(form.qid), *([""] if show_points else []), "", _mark(form.ok), plain(note))
    return table


def _mark(ok: bool) -> Text:
    return Text("✓", style="green") if ok else Text("✗", style="red")


def submissions_table(results: list[SubmissionResult]) -> Table:
    """The batch at a glance: score and the questions that lost points."""
    table = Table(title="submissions", title_justify="left")
    for column, justify in (("submission", "left"), ("score", "right"), ("lost points on", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for result in sorted(results, key=lambda r: r.name):
        lost = ", ".join(f"{q.qid} {q.score:g}/{q.max_score:g}" for q in result.questions if not q.passed)
        score = Text("grader error", style="red") if result.error else f"{result.final_score:g}/{result.max_score:g}"
        if result.refused:
            lost = f"refused: {result.refused}"
        table.add_row(plain(result.name), score, plain(lost or "-"))
    return table


def questions_table(results: list[SubmissionResult]) -> Table:
    """Per question over the batch: mean score and pass rate (the share with full marks)."""
    graded = [r for r in results if not r.error]
    table = Table(title=f"questions (over {len(graded)} graded submission{'s' if len(graded) != 1 else ''})",
                  title_justify="left")
    for column, justify in (("question", "left"), ("mean", "right"), ("max", "right"), ("pass rate", "right")):
        table.add_column(column, justify=justify)
    for s in question_stats(results):
        table.add_row(plain(s.qid), f"{s.mean:.2f}", f"{s.max_score:g}", f"{s.pass_rate:.0%}")
    if graded:
        table.add_section()
        table.add_row("total", f"{statistics.fmean(r.score for r in graded):.2f}", f"{graded[0].max_score:g}",
                      f"{sum(r.score >= r.max_score for r in graded) / len(graded):.0%}")
        table.caption = f"median total {statistics.median(r.score for r in graded):g}"
    return table


def slowest_table(results: list[SubmissionResult], count: int = 5) -> Table:
    """The submissions that took longest to grade (a hang costs its question the time limit)."""
    table = Table(title="slowest to grade", title_justify="left")
    for column, justify in (("submission", "left"), ("seconds", "right"), ("score", "right")):
        table.add_column(column, justify=justify)
    for result in sorted(results, key=lambda r: (-r.seconds, r.name))[:count]:
        score = "grader error" if result.error else f"{result.score:g}/{result.max_score:g}"
        table.add_row(plain(result.name), f"{result.seconds:.1f}", score)
    return table


def grader_errors_table(results: list[SubmissionResult]) -> Table:
    """Submissions the grader itself could not grade, and why (never the student's doing)."""
    table = Table(title="the grader could not grade", title_justify="left", title_style="red")
    table.add_column("submission")
    table.add_column("reason", overflow="fold")
    for result in sorted((r for r in results if r.error), key=lambda r: r.name):
        table.add_row(plain(result.name), plain(error_summary(result.error)))
    return table


def refused_table(results: list[SubmissionResult]) -> Table:
    """Submissions that could not be read at all (scored 0), and why: worth a word to the student."""
    table = Table(title="refused (scored 0)", title_justify="left", title_style="yellow")
    table.add_column("submission")
    table.add_column("reason", overflow="fold")
    for result in sorted((r for r in results if r.refused and not r.error), key=lambda r: r.name):
        table.add_row(plain(result.name), plain(result.refused))
    return table


def error_summary(error: str, limit: int = 300) -> str:
    """A grader error in one line: a traceback's last line says most."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    if not lines:
        return "unknown error"
    text = lines[-1] if lines[0].startswith("Traceback") else " ".join(lines)
    return _shorten(text, limit)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_failures(console: Console, result: SubmissionResult) -> None:
    """Each failing question's first failures, once; questions not started are left to one line."""
    for q in result.questions:
        if not q.passed and not q.not_started:
            console.print(Text("\n") + plain(q.qid, style="bold"))
            console.print(plain(q.feedback, lines=True))
    not_started = [q.qid for q in result.questions if q.not_started]
    if not_started:
        console.print(Text(f"\nNot started: {len(not_started)} question{'s' if len(not_started) != 1 else ''} "
                           "still raise the stub's NotImplementedError. Its message, in your file, is a hint "
                           "of where to begin."))
