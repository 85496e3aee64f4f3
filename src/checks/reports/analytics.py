"""What the class got wrong, per question: for staff, from the gradebook alone.

For each question: how many passed, how many never started it (still the stub), the common
mistakes (the diagnoses its suite named: suites/diagnoses.py), each with how many submissions made
it and their share of the class, and the failures no diagnosis explains, with a sample of their
messages: where the suite's diagnoses are missing, and where a TA reads the code. A failure that
names a file the submission lacks is a packaging problem, counted once per submission (Packaging)
rather than under every question that imports the file.

`class_analytics` returns plain data (dataclasses; `.to_dict()` is JSON-ready) so that every front
end shows the same: report.html and the files beside it (analytics.json, mistakes.csv, written by
`write_analytics_files`), and the staff page of `checks serve` (`analytics_of_folder`).

"The class" is every submission the grader graded and could read: one it could not grade, or
refused (unreadable, scored 0), made no mistake in its code to count. Student text (names,
messages, a diagnosis quoting what came back) is kept as written here; every writer makes it inert.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from checks.course import inert
from checks.reports.gradebook import DB_FILE, Gradebook, GradebookError, Graded
from checks.suites.diagnoses import diagnoses_of, mistake_key
from checks.suites.scoring import STILL_THE_STUB, QuestionResult, SubmissionResult

ANALYTICS_JSON = "analytics.json"
MISTAKES_CSV = "mistakes.csv"
MAX_SAMPLES = 5  # messages shown of the failures no diagnosis explains, per question
MAX_SAMPLE_CHARS = 240
SCORE_BINS = 10  # of the total score as a share of the maximum, 100% in the last


@dataclass(frozen=True)
class Mistake:
    """One diagnosis of a question, over the class."""

    text: str  # as the suite worded it (the most frequent wording: some quote their case)
    count: int  # submissions whose failures named it
    share: float  # of the class
    submissions: list[str]


@dataclass(frozen=True)
class Sample:
    submission: str
    message: str  # the first failure its feedback shows, on one line, cut


@dataclass(frozen=True)
class Unexplained:
    """The failures of a question that no diagnosis explains."""

    count: int  # submissions that lost points on it, started it, and had no diagnosis
    share: float
    submissions: list[str]
    samples: list[Sample]  # at most MAX_SAMPLES, distinct messages first


@dataclass(frozen=True)
class Packaging:
    """A readable submission whose files were not as the assignment asks (a file missing or
    misnamed, files skipped, a name changed: its warnings). The failures its missing files explain
    are counted here, once, rather than as a mistake under every question that imports them."""

    submission: str
    warnings: list[str]
    missing: list[str]  # the files it lacks
    questions: list[str]  # the questions whose failures name a missing file


@dataclass(frozen=True)
class QuestionAnalytics:
    qid: str
    max_score: float
    mean: float
    passed: int  # full marks
    pass_rate: float
    not_started: int  # scored 0, still the stub
    failed: int  # lost points, started
    mistakes: list[Mistake]  # most frequent first
    unexplained: Unexplained
    packaging: list[str] = field(default_factory=list)  # lost points to a missing file (Packaging), not counted above


@dataclass(frozen=True)
class ClassAnalytics:
    assignment: str
    submissions: int  # in the gradebook
    class_size: int  # graded and readable: what shares are of
    not_graded: int  # the grader failed on them
    refused: int  # unreadable, scored 0
    max_score: float
    mean: float | None
    median: float | None
    score_bins: list[int] = field(default_factory=list)  # SCORE_BINS counts of total/max
    questions: list[QuestionAnalytics] = field(default_factory=list)
    packaging: list[Packaging] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready plain data (what analytics.json holds)."""
        return dataclasses.asdict(self)


def class_analytics(assignment: str, records: list[Graded] | list[SubmissionResult]) -> ClassAnalytics:
    """The class's analytics from its gradebook records (or results)."""
    results = [r.result if isinstance(r, Graded) else r for r in records]
    graded = [r for r in results if not r.error]
    cohort = sorted((r for r in graded if not r.refused), key=lambda r: r.name)
    totals = [r.score for r in cohort]
    max_score = max((r.max_score for r in cohort), default=0.0)
    bins = [0] * SCORE_BINS
    for r in cohort:
        share = r.score / r.max_score if r.max_score else 0.0
        bins[min(SCORE_BINS - 1, max(0, int(share * SCORE_BINS + 1e-9)))] += 1
    missing = {r.name: missing_files_named(r.warnings) for r in cohort}
    questions = [_question(qid, cohort, missing) for qid in _question_ids(cohort)]
    packaging = [Packaging(r.name, list(r.warnings), missing[r.name],
                           [q.qid for q in questions if r.name in q.packaging]) for r in cohort if r.warnings]
    return ClassAnalytics(
        assignment=assignment, submissions=len(results), class_size=len(cohort),
        not_graded=len(results) - len(graded), refused=len(graded) - len(cohort), max_score=max_score,
        mean=statistics.fmean(totals) if totals else None, median=statistics.median(totals) if totals else None,
        score_bins=bins, questions=questions, packaging=packaging)


_MISSING = re.compile(r"^(\S+) is missing\b")  # course/submissions.missing_files' lines


def missing_files_named(warnings: list[str]) -> list[str]:
    """The files a submission's warnings say it lacks (course/submissions.missing_files writes them)."""
    return [match[1] for warning in warnings if (match := _MISSING.match(warning))]


def _explained_by_missing(q: QuestionResult, missing: list[str]) -> bool:
    """Whether the question's failures name a file the submission lacks ("... while importing
    broadcasting.py: No module named 'broadcasting'"): a packaging problem, not a mistake in code."""
    return any(name in q.feedback for name in missing)


def _question_ids(results: list[SubmissionResult]) -> list[str]:
    names: dict[str, None] = {}
    for result in results:
        names.update((q.qid, None) for q in result.questions)
    return list(names)


def _question(qid: str, cohort: list[SubmissionResult], missing: dict[str, list[str]]) -> QuestionAnalytics:
    answered = [(r.name, q) for r in cohort for q in r.questions if q.qid == qid]
    size = len(cohort) or 1
    passed = [name for name, q in answered if q.passed]
    stub = [name for name, q in answered if not q.passed and _not_started(q)]
    lost = [(name, q) for name, q in answered if not q.passed and not _not_started(q)]
    packaging = [name for name, q in lost if _explained_by_missing(q, missing.get(name, []))]
    failed = [(name, q) for name, q in lost if name not in packaging]
    wordings: dict[str, Counter[str]] = {}
    makers: dict[str, list[str]] = {}
    unexplained: list[tuple[str, QuestionResult]] = []
    for name, q in failed:
        diagnoses = _diagnoses(q)
        if not diagnoses:
            unexplained.append((name, q))
        for text in diagnoses:
            key = mistake_key(text)
            wordings.setdefault(key, Counter())[text] += 1
            if name not in makers.setdefault(key, []):
                makers[key].append(name)
    mistakes = [Mistake(wordings[key].most_common(1)[0][0], len(names), len(names) / size, names)
                for key, names in makers.items()]
    mistakes.sort(key=lambda m: (-m.count, m.text))
    names = [name for name, _ in unexplained]
    return QuestionAnalytics(
        qid=qid, max_score=max((q.max_score for _, q in answered), default=0.0),
        mean=statistics.fmean(q.score for _, q in answered) if answered else 0.0,
        passed=len(passed), pass_rate=len(passed) / size, not_started=len(stub), failed=len(lost),
        mistakes=mistakes, unexplained=Unexplained(len(names), len(names) / size, names, _samples(unexplained)),
        packaging=packaging)


def _not_started(q: QuestionResult) -> bool:
    """Still the stub: recorded since schema 2; read from the feedback for an older gradebook row."""
    if q.not_started:
        return True
    return q.diagnoses is None and q.score == 0 and STILL_THE_STUB in q.feedback


def _diagnoses(q: QuestionResult) -> list[str]:
    """The question's recorded diagnoses; for a gradebook row written before they were recorded,
    those its feedback shows (the first few failures only)."""
    if q.diagnoses is not None:
        return q.diagnoses
    return diagnoses_of(q.feedback.splitlines())


def first_failure(feedback: str) -> str:
    """The first failure a question's feedback shows, on one line (its first "- " bullet; else its
    first line, as a quiz answer's feedback is), cut to MAX_SAMPLE_CHARS."""
    lines = [line for line in feedback.splitlines() if line.strip()]
    bullets = [line[2:] for line in lines if line.startswith("- ")]
    text = (bullets or lines or [""])[0].strip()
    return text if len(text) <= MAX_SAMPLE_CHARS else text[: MAX_SAMPLE_CHARS - 3] + "..."


def _samples(unexplained: list[tuple[str, QuestionResult]]) -> list[Sample]:
    """Up to MAX_SAMPLES messages, one per kind of failure (numbers aside) before any repeats."""
    seen: set[str] = set()
    distinct, repeats = [], []
    for name, q in unexplained:
        message = first_failure(q.feedback)
        key = mistake_key(message)
        (repeats if key in seen else distinct).append(Sample(name, message))
        seen.add(key)
    return (distinct + repeats)[:MAX_SAMPLES]


# ---------------------------------------------------------------- the files beside report.html

def analytics_json(analytics: ClassAnalytics) -> str:
    """analytics.json: class_analytics as JSON, student text made visible (no control characters)."""
    return json.dumps(inert.visible_tree(analytics.to_dict()), indent=2, ensure_ascii=False) + "\n"


def mistakes_csv(analytics: ClassAnalytics) -> str:
    """mistakes.csv: a row per question and mistake (kind `mistake`), per question with failures no
    diagnosis explains (kind `unexplained`, its first sample message as the text) and per question
    some never started (kind `not started`) or lacked a file it needs (kind `missing file`): count,
    share of the class, and the submissions."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")

    def row(cells: list) -> None:  # a diagnosis may quote what a student's code returned: no formula
        writer.writerow([inert.csv_cell(cell) for cell in cells])

    row(["question", "kind", "text", "count", "share", "submissions"])
    size = analytics.class_size or 1
    for q in analytics.questions:
        for m in q.mistakes:
            row([q.qid, "mistake", m.text, m.count, round(m.share, 4), " ".join(m.submissions)])
        if q.unexplained.count:
            sample = q.unexplained.samples[0].message if q.unexplained.samples else ""
            row([q.qid, "unexplained", sample, q.unexplained.count, round(q.unexplained.share, 4),
                 " ".join(q.unexplained.submissions)])
        if q.not_started:
            row([q.qid, "not started", "", q.not_started, round(q.not_started / size, 4), ""])
        if q.packaging:
            row([q.qid, "missing file", "", len(q.packaging), round(len(q.packaging) / size, 4), " ".join(q.packaging)])
    return buffer.getvalue()


def analytics_of_folder(out_dir: Path) -> dict:
    """The analytics of a `checks grade` output folder, as plain data (analytics.json's), read from
    its gradebook.sqlite: for a front end such as the staff page of `checks serve`. GradebookError
    when the folder holds no gradebook checks wrote."""
    if not Path(out_dir).is_dir():
        raise GradebookError(f"{out_dir} is not a folder: name the --out folder of a `checks grade` run")
    gradebook = Gradebook.existing(Path(out_dir) / DB_FILE)
    return inert.visible_tree(class_analytics(gradebook.assignment, gradebook.load()).to_dict())
