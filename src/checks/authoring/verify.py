"""`checks verify`: proof that a hidden suite is sound.

The reference must score full marks, the stubs nothing, and each mutant in mutants.toml must
lose points on its own question and nowhere else: a question that no mutant can fail counts
for nothing. And the assignment must hang together: every hidden question has a public check
(unless assignment.toml declares it `hidden_only`) worth the same points, the reference passes
the public checks, the points add up to the assignment's total, and the lesson notebook has every
question. Where the reference loses points, its row says which question and the first failure.
And every question's cases are at its kinks: the boundary values where plausible implementations
differ (suites/coverage.py), printed per question.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from checks.authoring.build import release_files
from checks.authoring.points import README, ROW, has_points_region, in_table_order, readme_points_problems
from checks.course.assignment import Assignment, CourseError, read_course_toml
from checks.course.schema import ASSIGNMENT_TOML, MUTANTS_TOML
from checks.grading.session import PYTEST_ARGS, Source, grade_sources
from checks.suites.coverage import Coverage, read_coverage
from checks.config.settings import Settings
from checks.suites.scoring import SubmissionResult
from checks.course.submissions import read_submission

TOTAL_POINTS = 100.0
REFERENCE, STUBS = "reference", "stubs"
SUITE = "suite"  # the rows about the assignment as a whole
FIRST_FAILURE_CHARS = 240


@dataclass(frozen=True)
class Mutant:
    name: str
    question: str
    file: str
    find: str
    replace: str
    keeps_points: bool = False  # a change that must cost nothing (a quiz answer inside its tolerance)

    def apply(self, files: dict[str, bytes]) -> dict[str, bytes]:
        source = files[self.file].decode("utf-8")
        count = source.count(self.find)
        if count != 1:
            raise CourseError(f"mutant {self.name}: `find` occurs {count} times in {self.file}; it must occur once")
        return {**files, self.file: source.replace(self.find, self.replace).encode()}


@dataclass
class Verdict:
    submission: str
    expectation: str
    ok: bool
    detail: str


def load_mutants(assignment: Assignment) -> list[Mutant]:
    """The mutants of mutants.toml, or a CourseError naming every mistake in it: keys (schema),
    names used twice, a file that is not in the reference, a `find` that does not occur once."""
    path = assignment.autograder_dir / "mutants.toml"
    if not path.is_file():
        return []
    mutants = [Mutant(**entry) for entry in read_course_toml(path, MUTANTS_TOML).get("mutant", [])]
    found, seen = [], set()
    for mutant in mutants:
        if mutant.name in seen:
            found.append(f"two mutants are named {mutant.name!r}")
        seen.add(mutant.name)
        reference = assignment.solution_dir / mutant.file
        if not reference.is_file():
            found.append(f"mutant {mutant.name}: `file` {mutant.file!r} is not in {assignment.solution_dir}")
            continue
        count = reference.read_text(encoding="utf-8", errors="replace").count(mutant.find)
        if count != 1:
            found.append(f"mutant {mutant.name}: `find` occurs {count} times in {mutant.file}; it must occur once")
    if found:
        raise CourseError(f"{path}: " + "; ".join(found))
    return mutants


def verify(assignment: Assignment, *, jobs: int | None = None, settings: Settings | None = None) -> list[Verdict]:
    """Grade reference, stubs and every mutant; one verdict per expectation, in the jail and on
    the device `settings` name (default: the strongest jail here, any device)."""
    settings = settings or Settings()
    reference = read_submission(assignment.solution_dir).files
    stubs = release_files(assignment.solution_dir, with_notebook=False)
    mutants = load_mutants(assignment)
    sources = [Source.from_files(REFERENCE, reference), Source.from_files(STUBS, stubs)]
    sources += [Source.from_files(f"mutant:{m.name}", m.apply(reference)) for m in mutants]
    hidden_only = _hidden_only(assignment)
    results = {r.name: r for r in grade_sources(assignment, sources, jobs=jobs, isolation=settings.isolation,
                                                    device=settings.device)}
    reference_result = results[REFERENCE]
    verdicts = [_full_marks(reference_result), _nothing(results[STUBS])]
    questions = {q.qid for q in reference_result.questions}
    verdicts += [(_keeps_points if m.keeps_points else _only_question)(results[f"mutant:{m.name}"], m, questions)
                 for m in mutants]
    code_questions = {q for q in questions if not q.startswith("quiz.")}
    uncovered = sorted(code_questions - {m.question for m in mutants if not m.keeps_points})
    verdicts.append(Verdict(SUITE, "every code question has a mutant", not uncovered,
                            f"no mutant for {', '.join(uncovered)}" if uncovered else f"{len(code_questions)} questions covered"))
    verdicts.append(_points_add_up(reference_result))
    verdicts += _readme_points(assignment, reference_result)
    verdicts += boundary_verdicts(assignment, [q.qid for q in reference_result.questions if not q.qid.startswith("quiz.")])
    if reference_result.error:  # nothing to compare the public checks and the notebook with
        return verdicts
    if not assignment.release_dir.is_dir():  # verify before build: say so, not "no public checks at all"
        return verdicts + [Verdict(SUITE, "the release is built", False, f"assignments/{assignment.name} does not "
                                   f"exist yet: run `checks build {assignment.name}`, then verify again (the public "
                                   "checks and the notebook are compared with it)")]
    public = _public_result(assignment, reference, settings)
    verdicts += _public_checks(reference_result, public, hidden_only)
    notebook = _notebook_verdict(assignment, reference_result)
    return verdicts + ([notebook] if notebook else [])


COLLECT_SECONDS = 600


def suite_coverage(suite_dir: Path) -> tuple[dict[str, Coverage], list[str]]:
    """Each question's kinks and covered boundaries, from collecting the suite in a process of its
    own (nothing of the suite is imported here); and the errors that collection met."""
    with tempfile.TemporaryDirectory(prefix="checks-coverage-") as folder:
        out = Path(folder) / "coverage.json"
        command = [sys.executable, "-m", "pytest", str(suite_dir), "--collect-only", *PYTEST_ARGS,
                   "--rootdir", str(suite_dir), "-p", "checks.suites.coverage", "--checks-coverage", str(out)]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=COLLECT_SECONDS,
                                 env={**os.environ, "PY_COLORS": "0"}, cwd=suite_dir)
        except subprocess.TimeoutExpired:
            return {}, [f"collecting {suite_dir} took over {COLLECT_SECONDS} s"]
        if not out.is_file():
            return {}, [f"collecting {suite_dir} failed (exit status {run.returncode}): "
                        f"{(run.stderr or run.stdout).strip()[-800:]}"]
        return read_coverage(out)


def boundary_verdicts(assignment: Assignment, questions: list[str]) -> list[Verdict]:
    """A row per code question: the boundaries its cases are at, and whether each kink has one."""
    coverage, errors = suite_coverage(assignment.autograder_dir)
    if errors:
        return [Verdict(SUITE, "every kink has a case at it", False, "; ".join(errors))]
    return [Verdict(SUITE, f"{qid}: a case at every kink", found.holds, found.describe())
            for qid in questions for found in [coverage.get(qid, Coverage(qid))]]


def _hidden_only(assignment: Assignment) -> list[str]:
    """The questions assignment.toml declares to have no public check on purpose (`hidden_only`)."""
    path = assignment.autograder_dir / "assignment.toml"
    return list(read_course_toml(path, ASSIGNMENT_TOML).get("hidden_only", [])) if path.is_file() else []


def _public_result(assignment: Assignment, reference: dict[str, bytes],
                   settings: Settings) -> SubmissionResult | None:
    """The reference under the public checks students run (None when the release has none)."""
    if not assignment.public_tests_dir.is_dir():
        return None
    (result,) = grade_sources(assignment, [Source.from_files(REFERENCE, reference)], public=True, jobs=1,
                              isolation=settings.isolation, device=settings.device)
    return result


def _public_checks(hidden: SubmissionResult, public: SubmissionResult | None, hidden_only: list[str]) -> list[Verdict]:
    """Every hidden code question has a public check (or is declared hidden-only, and then has
    none), worth the same points; the reference passes them."""
    code = [q for q in hidden.questions if not q.qid.startswith("quiz.")]
    if public is None:
        missing = [q.qid for q in code if q.qid not in hidden_only]
        return [Verdict(SUITE, "every hidden question has a public check", not missing,
                        f"no public checks at all (assignments/<name>/tests); hidden-only? declare {', '.join(missing)} "
                        "in assignment.toml's hidden_only" if missing else f"all {len(code)} declared hidden-only")]
    if public.error:
        return [Verdict("reference", "passes the public checks", False, _grader_error(public))]
    in_public = {q.qid: q for q in public.questions}
    in_hidden = {q.qid for q in code}
    missing = [qid for qid in in_hidden if qid not in in_public and qid not in hidden_only]
    problems = [f"no public check for {', '.join(sorted(missing))} (add one, or declare it in assignment.toml's "
                "hidden_only)"] if missing else []
    for qid in hidden_only:
        if qid in in_public:
            problems.append(f"{qid} is declared hidden_only but has a public check")
        elif qid not in in_hidden:
            close = difflib.get_close_matches(qid, sorted(in_hidden), n=1)
            problems.append(f"hidden_only names {qid!r}, which the suite does not have"
                            + (f" (did you mean {close[0]!r}?)" if close else ""))
    declared = [qid for qid in hidden_only if qid in in_hidden and qid not in in_public]
    covered = f"{len(in_hidden) - len(declared)} of {len(in_hidden)} have one" + (
        f"; hidden-only: {', '.join(declared)}" if declared else "")
    verdicts = [Verdict(SUITE, "every hidden question has a public check", not problems,
                        "; ".join(problems) or covered)]
    differ = [f"{q.qid} public {in_public[q.qid].max_score:g}, hidden {q.max_score:g}"
              for q in code if q.qid in in_public and in_public[q.qid].max_score != q.max_score]
    extra = [qid for qid in in_public if qid not in in_hidden]
    detail = "; ".join(differ + ([f"public only (no hidden question): {', '.join(extra)}"] if extra else []))
    verdicts.append(Verdict(SUITE, "public and hidden points agree", not detail,
                            detail or f"{len(in_public)} questions, the same points"))
    lost = _lost(public)
    verdicts.append(Verdict(REFERENCE, "passes the public checks", not lost,
                            "; ".join(lost) or f"{len(public.questions)} questions"))
    return verdicts


def _points_add_up(result: SubmissionResult) -> Verdict:
    expectation = f"points add up to {TOTAL_POINTS:g}"
    if result.error:
        return Verdict(SUITE, expectation, False, "not known: the reference was not graded")
    code = sum(q.max_score for q in result.questions if not q.qid.startswith("quiz."))
    quiz = sum(q.max_score for q in result.questions if q.qid.startswith("quiz."))
    total = round(code + quiz, 2)
    detail = f"code {code:g} + quiz {quiz:g} = {total:g}" + (
        "" if total == TOTAL_POINTS else f", not {TOTAL_POINTS:g}: change the points of a @question or quiz key")
    return Verdict(SUITE, expectation, total == TOTAL_POINTS, detail)


def _readme_points(assignment: Assignment, result: SubmissionResult) -> list[Verdict]:
    """The README's points (its `| `qid` | N |` rows, the generated table among them) are those the
    reference was graded out of; no verdict where the README states none or the reference was not graded."""
    path = assignment.solution_dir / README
    if result.error or not path.is_file():
        return []
    points = in_table_order(assignment, {q.qid: q.max_score for q in result.questions})
    text = path.read_text(encoding="utf-8")
    rows = sum(row["qid"] in points for row in ROW.finditer(text))
    if not rows and not has_points_region(text):
        return []  # it states no question's points
    problems = readme_points_problems(text, points)
    rows = "the table between its points markers agrees" if has_points_region(text) else f"its {rows} rows of points agree"
    return [Verdict(SUITE, "the README's points are the suite's", not problems,
                    f"solutions/{assignment.name}/{README}: {'; '.join(problems)}: run `checks build {assignment.name}`, "
                    "which writes the table between <!-- points:begin --> and <!-- points:end --> from the suite"
                    if problems else rows)]


def _notebook_verdict(assignment: Assignment, result: SubmissionResult) -> Verdict | None:
    """Every question in the lesson notebook: a code question in a heading or a `%checks test` line,
    a quiz key as `**key**` or its id. None for an assignment without a lesson notebook."""
    name = f"{assignment.name}.ipynb"
    path = assignment.release_dir / name
    expectation = "every question is in the lesson notebook"
    if not path.is_file():
        source = assignment.solution_dir / f"{assignment.name}.py"
        return Verdict(SUITE, expectation, False, f"{name} is not built: run `checks build`") if source.is_file() else None
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        texts = ["".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"] for cell in cells]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return Verdict(SUITE, expectation, False, f"{name} cannot be read: {error}")
    lines = [line for text in texts for line in text.splitlines()]
    headings = [line for line in lines if line.lstrip().startswith("#") and "%checks" not in line]
    checked = [line for line in lines if "%checks test" in line]

    def present(qid: str) -> bool:
        word = re.compile(rf"(?<![\w.]){re.escape(qid)}(?![\w])")
        if any(word.search(line) for line in headings + checked):
            return True
        return qid.startswith("quiz.") and any(f"**{qid.removeprefix('quiz.')}**" in line for line in lines)

    absent = [q.qid for q in result.questions if not present(q.qid)]
    return Verdict(SUITE, expectation, not absent,
                   f"{name} has no section or `%checks test` for {', '.join(absent)}" if absent
                   else f"{len(result.questions)} questions in {name}")


def _lost(result: SubmissionResult) -> list[str]:
    """Each question the result lost points on, with its first failure: why the reference does not
    score its maximum."""
    return [f"{q.qid} {q.score:g}/{q.max_score:g}: {_first_failure(q.feedback)}" for q in result.questions
            if not q.passed]


def _first_failure(feedback: str) -> str:
    """The first failure of a question's feedback (scoring._feedback: a count, then `- ` items), on one line."""
    lines = feedback.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("- ")), None)
    if start is None:
        text = " ".join(lines)
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("- ")), len(lines))
        text = " ".join(line.strip() for line in lines[start:end])[2:]
    text = " ".join(text.split())
    return text if len(text) <= FIRST_FAILURE_CHARS else text[:FIRST_FAILURE_CHARS - 3] + "..."


def _grader_error(result: SubmissionResult) -> str:
    return f"grader error: {result.error.splitlines()[0]}" if result.error else ""


def _full_marks(result: SubmissionResult) -> Verdict:
    ok = result.score == result.max_score == TOTAL_POINTS and not result.error
    lost = _lost(result)
    detail = _grader_error(result) or f"{result.score:g}/{result.max_score:g}" + (f"; lost: {'; '.join(lost)}" if lost else "")
    return Verdict(result.name, f"scores {TOTAL_POINTS:g}/{TOTAL_POINTS:g}", ok, detail)


def _nothing(result: SubmissionResult) -> Verdict:
    ok = result.score == 0 and not result.error
    earned = [f"{q.qid} {q.score:g}" for q in result.questions if q.score > 0]
    detail = _grader_error(result) or f"{result.score:g}/{result.max_score:g}" + (f"; earned: {', '.join(earned)}" if earned else "")
    return Verdict(result.name, "scores 0", ok, detail)


def _keeps_points(result: SubmissionResult, mutant: Mutant, questions: set[str]) -> Verdict:
    """A mutant marked keeps_points (an answer within its quiz key's tolerance) scores full marks."""
    full = _full_marks(result)
    return Verdict(result.name, f"keeps full marks ({mutant.question})", full.ok, full.detail)


def _only_question(result: SubmissionResult, mutant: Mutant, questions: set[str]) -> Verdict:
    expectation = f"loses points on {mutant.question} only"
    if result.error:
        return Verdict(result.name, expectation, False, _grader_error(result))
    if mutant.question not in questions:
        close = difflib.get_close_matches(mutant.question, sorted(questions), n=1)
        return Verdict(result.name, expectation, False, f"mutants.toml names question {mutant.question!r}, which the suite "
                       "does not have" + (f" (did you mean {close[0]!r}?)" if close else ""))
    if mutant.question not in {q.qid for q in result.questions}:
        return Verdict(result.name, expectation, False, f"{mutant.question} is missing from this mutant's results")
    target = result.question(mutant.question)
    others = [f"{q.qid} {q.score:g}/{q.max_score:g}" for q in result.questions if q.qid != mutant.question and not q.passed]
    ok = not target.passed and not others
    detail = f"{target.qid} {target.score:g}/{target.max_score:g}"
    if others:
        detail += f"; also lost: {', '.join(others)}"
    return Verdict(result.name, expectation, ok, detail)
