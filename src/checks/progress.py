"""What `checks grade` shows while it runs and when it ends.

On a terminal: a progress bar with the elapsed time and an ETA, each finished submission printed
above it. Otherwise (a log file, CI): one plain line per finished submission, with the ETA.
The bar is redrawn when a submission finishes, never from a timer thread: the grader forks its
grading children and forking a process that runs threads can deadlock the child.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from checks.grading.batch import NEW, REGRADE, BatchListener, BatchSummary, Planned
from checks.reports.gradebook import DB_FILE
from checks.reports.html import REPORT_FILE
from checks.reports.render import (GRADEBOOK_FILE, error_summary, grader_errors_table, plain, questions_table,
                                   refused_table, slowest_table, submissions_table)
from checks.suites.scoring import SubmissionResult

ALL_SUBMISSIONS_UP_TO = 30  # longer batches: the table is in gradebook.csv and report.html


class GradeProgress(BatchListener):
    def __init__(self, console: Console, *, interactive: bool | None = None, header: Text | str = "") -> None:
        """`header`: printed once the run holds the output folder, so that a second run into the
        same folder says only why it stopped."""
        self.console = console
        self.header = header
        self.interactive = console.is_terminal if interactive is None else interactive
        self.bar: Progress | None = None
        self.task = None
        self.started_at = time.monotonic()

    def locked(self) -> None:
        if self.header:
            self.console.print(self.header, soft_wrap=True)

    def started(self, plan: list[Planned]) -> None:
        self.started_at = time.monotonic()
        todo = [p for p in plan if p.reason]
        skipped = len(plan) - len(todo)
        if skipped:
            self.console.print(f"{skipped} of {len(plan)} already graded, skipped (--regrade grades them again)")
        for planned in plan:  # a name a student chose that could not be its folder: the TA is told
            if planned.note:
                self.console.print(Text("  ") + plain(planned.note))
        for planned in todo:
            if planned.reason not in (NEW, REGRADE):
                self.console.print(Text("  ") + plain(planned.name) + Text(f": {planned.reason}, grading it again"))
        if not todo:
            return
        self.console.print(f"grading {len(todo)} submission{'s' if len(todo) != 1 else ''}")
        if self.interactive:
            self.bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
                                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                console=self.console, auto_refresh=False, redirect_stdout=False,
                                redirect_stderr=False)
            self.task = self.bar.add_task("grading", total=len(todo))
            self.bar.start()

    def graded(self, result: SubmissionResult, done: int, total: int) -> None:
        status = (Text("GRADER ERROR", style="red") if result.error
                  else Text(f"{result.score:g}/{result.max_score:g}"))
        line = Text.assemble(f"  [{done}/{total}] ", plain(result.name), ": ", status, f" ({result.seconds:.1f} s)")
        if self.bar is not None:
            self.bar.console.print(line)
            self.bar.update(self.task, completed=done)
            self.bar.refresh()
        else:
            elapsed = time.monotonic() - self.started_at
            eta = elapsed / done * (total - done)
            self.console.print(line + Text(f", eta {format_seconds(eta)}" if done < total else ""))

    def stopped(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def problem(self, message: str) -> None:
        self.console.print(Text("problem: ", style="red") + plain(message), soft_wrap=True)


def format_seconds(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def print_summary(console: Console, summary: BatchSummary) -> None:
    """The end of a run: tables over the whole gradebook, then what this run did and where it is."""
    results = summary.results
    if results and len(results) <= ALL_SUBMISSIONS_UP_TO:
        console.print(submissions_table(results))
    if results:
        console.print(questions_table(results))
        console.print(slowest_table(results))
    refused = [r for r in results if r.refused and not r.error]
    if refused:
        console.print(refused_table(results))
    if any(r.error for r in results):
        console.print(grader_errors_table(results))
    out = summary.out_dir
    console.print(f"\ngraded {len(summary.graded)}, skipped {len(summary.skipped)} already graded, "
                  f"in {format_seconds(summary.seconds)}; the gradebook holds {len(results)} submission(s)"
                  + (f", {len(refused)} of them refused (unreadable, scored 0)" if refused else ""))
    console.print(plain(f"gradebook: {out / GRADEBOOK_FILE} and {out / DB_FILE}; report: {out / REPORT_FILE}"))
    for result in summary.failed:
        console.print(Text.assemble(Text("could not grade ", style="red"), plain(result.name), ": ",
                                    plain(error_summary(result.error)),
                                    " (not graded; the same command grades it again)"))
