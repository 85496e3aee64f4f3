"""`checks grade`: a whole class into an output folder that survives interruption.

Each finished submission is written at once (atomically), so an interrupted run loses at most
the submissions in flight; a re-run skips every submission whose results.json is already there
(unless asked to regrade) and rebuilds the gradebook from all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from checks.course import Assignment
from checks.grading import Source, grade_sources
from checks.reports import (GRADEBOOK_FILE, gradebook_csv, read_submission_results, write_atomically,
                            write_submission_reports)
from checks.scoring import SubmissionResult
from checks.submissions import submission_name


@dataclass
class BatchSummary:
    graded: list[SubmissionResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already graded by an earlier run
    rows: list[dict] = field(default_factory=list)  # results.json of every submission asked for

    @property
    def failed(self) -> list[SubmissionResult]:
        """Submissions the grader itself could not grade (never the student's doing)."""
        return [r for r in self.graded if r.error]


def expand_submission_paths(paths: list[Path]) -> list[Path]:
    """Folders and zips as given; a folder that only holds submissions stands for each of them."""
    expanded: list[Path] = []
    for path in paths:
        children = sorted(p for p in path.iterdir() if p.is_dir() or p.suffix == ".zip") if path.is_dir() else []
        holds_submissions = children and not any(path.glob("*.py")) and not (path / "quiz.toml").exists()
        expanded += children if holds_submissions else [path]
    return expanded


def grade_to_folder(assignment: Assignment, paths: list[Path], out_dir: Path, *, jobs: int | None = None,
                    regrade: bool = False, on_result: Callable[[SubmissionResult], None] | None = None,
                    on_skip: Callable[[str], None] | None = None) -> BatchSummary:
    summary = BatchSummary()
    sources = []
    for path in paths:
        name = submission_name(path)
        if not regrade and read_submission_results(out_dir, name) is not None:
            summary.skipped.append(name)
            if on_skip:
                on_skip(name)
        else:
            sources.append(Source.from_path(path))
    for result in grade_sources(assignment, sources, jobs=jobs):
        write_submission_reports(out_dir, result)
        summary.graded.append(result)
        if on_result:
            on_result(result)
    summary.rows = [row for row in (read_submission_results(out_dir, submission_name(p)) for p in paths) if row]
    write_atomically(out_dir / GRADEBOOK_FILE, gradebook_csv(summary.rows))
    return summary
