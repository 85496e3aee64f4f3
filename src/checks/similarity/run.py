"""`checks similarity ASSIGNMENT SUBMISSIONS... --out DIR`: read a class's code, compare every pair,
write the ranked CSV and the page with the matched regions side by side.

Submissions are found as `checks grade` finds them (folders, zips, notebooks' answer cells, a
class folder, an LMS's bulk download) and read under the same caps, never run. What is compared is
each submission's Python files (the assignment's, and other modules beside them); the starter code
is every Python file of the release (assignments/<name>/: the stubs and the public tests).

The result is evidence for a person to weigh, not a verdict: similar code has innocent causes
(the starter, an idiom the exercise calls for, a worked example from the lectures, help allowed by
the course), and a disguised copy may still score low. docs/analytics.md says so too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from checks.config.errors import UsageError
from checks.course.assignment import Assignment
from checks.course.submissions import SubmissionError, read_found
from checks.grading.batch import check_out_dir, expand_submission_paths
from checks.grading.names import batch_names
from checks.grading.session import named_files
from checks.reports.render import write_atomically
from checks.similarity.compare import Code, Comparison, compare
from checks.similarity.fingerprints import fingerprints
from checks.similarity.page import CSV_FILE, HTML_FILE, similarity_csv, similarity_html

DEFAULT_THRESHOLD = 0.5  # a pair at or above it is marked for a person to look at
DEFAULT_SHOWN = 30  # pairs whose matched regions the page shows side by side


@dataclass
class SimilarityRun:
    out_dir: Path
    comparison: Comparison
    codes: list[Code]
    threshold: float
    skipped: dict[str, str] = field(default_factory=dict)  # submission -> why it was not compared
    seconds: float = 0.0

    @property
    def flagged(self) -> list:
        return [p for p in self.comparison.pairs if p.similarity >= self.threshold]


def python_files(files: dict[str, bytes]) -> dict[str, str]:
    """A submission's Python files as text (undecodable bytes shown as replacement characters)."""
    return {name: data.decode("utf-8", errors="replace") for name, data in sorted(files.items())
            if name.endswith(".py")}


def starter_files(assignment: Assignment) -> dict[str, str]:
    """The code every student was given: every Python file of the release (assignments/<name>/:
    the stubs, the public tests), by its path in the release."""
    root = assignment.release_dir
    found = {}
    if root.is_dir():
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root)
            if path.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
                found[relative.as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return found


def read_codes(assignment: Assignment, paths: list[Path]) -> tuple[list[Code], dict[str, str]]:
    """Each submission's code and fingerprints, and why any could not be compared (unreadable, no
    Python file). UsageError for a path that does not exist, or a path given twice."""
    found = expand_submission_paths(paths, assignment.name)
    names = batch_names(found)
    codes, skipped = [], {}
    for item, named in zip(found, names):
        try:
            submission = read_found(item, named_files(assignment))
        except SubmissionError as error:
            skipped[named.name] = f"could not be read: {error}"
            continue
        files = python_files(submission.files)
        if not files:
            skipped[named.name] = "holds no Python file"
            continue
        codes.append(Code(named.name, files, fingerprints(files)))
    return codes, skipped


def similarity_to_folder(assignment: Assignment, paths: list[Path], out_dir: Path, *,
                         threshold: float = DEFAULT_THRESHOLD, shown: int = DEFAULT_SHOWN) -> SimilarityRun:
    """Compare every pair of the submissions at `paths` and write DIR/similarity.csv and
    DIR/similarity.html. UsageError, before anything is written, for a path that does not exist,
    an --out inside the submissions, or fewer than two submissions with code to compare."""
    if not 0.0 <= threshold <= 1.0:
        raise UsageError(f"--threshold must be between 0 and 1, not {threshold}")
    started = time.monotonic()
    check_out_dir(out_dir, paths)
    codes, skipped = read_codes(assignment, paths)
    if len(codes) < 2:
        why = "".join(f"; {name} {reason}" for name, reason in sorted(skipped.items()))
        raise UsageError(f"found {len(codes)} submission{'s' if len(codes) != 1 else ''} with Python code in "
                         f"{', '.join(map(str, paths))}: at least two are needed to compare{why}")
    comparison = compare(codes, fingerprints(starter_files(assignment)))
    run = SimilarityRun(out_dir, comparison, codes, threshold, skipped)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(out_dir / CSV_FILE, similarity_csv(comparison, threshold))
    write_atomically(out_dir / HTML_FILE, similarity_html(assignment.name, comparison, codes, threshold=threshold,
                                                          shown=shown, skipped=skipped))
    run.seconds = time.monotonic() - started
    return run
