"""`checks verify`: proof that a hidden suite is sound.

The reference must score full marks, the stubs nothing, and each mutant in mutants.toml must
lose points on its own question and nowhere else: a question that no mutant can fail counts
for nothing.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from checks.authoring.build import release_files
from checks.course.assignment import Assignment, CourseError, read_course_toml
from checks.course.schema import MUTANTS_TOML
from checks.grading.session import Source, grade_sources
from checks.sandbox.jail import Isolation
from checks.suites.scoring import SubmissionResult
from checks.course.submissions import read_submission

TOTAL_POINTS = 100.0
REFERENCE, STUBS = "reference", "stubs"


@dataclass(frozen=True)
class Mutant:
    name: str
    question: str
    file: str
    find: str
    replace: str

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


def verify(assignment: Assignment, *, jobs: int | None = None, isolation: Isolation | None = None) -> list[Verdict]:
    """Grade reference, stubs and every mutant; one verdict per expectation. `isolation`: as
    for grading.grade_sources."""
    reference = read_submission(assignment.solution_dir).files
    stubs = release_files(assignment.solution_dir, with_notebook=False)
    mutants = load_mutants(assignment)
    sources = [Source.from_files(REFERENCE, reference), Source.from_files(STUBS, stubs)]
    sources += [Source.from_files(f"mutant:{m.name}", m.apply(reference)) for m in mutants]
    results = {r.name: r for r in grade_sources(assignment, sources, jobs=jobs, isolation=isolation)}
    verdicts = [_full_marks(results[REFERENCE]), _nothing(results[STUBS])]
    questions = {q.qid for q in results[REFERENCE].questions}
    verdicts += [_only_question(results[f"mutant:{m.name}"], m, questions) for m in mutants]
    code_questions = {q for q in questions if not q.startswith("quiz.")}
    uncovered = sorted(code_questions - {m.question for m in mutants})
    verdicts.append(Verdict("suite", "every code question has a mutant", not uncovered,
                            f"no mutant for {', '.join(uncovered)}" if uncovered else f"{len(code_questions)} questions covered"))
    return verdicts


def _grader_error(result: SubmissionResult) -> str:
    return f"grader error: {result.error.splitlines()[0]}" if result.error else ""


def _full_marks(result: SubmissionResult) -> Verdict:
    ok = result.score == result.max_score == TOTAL_POINTS and not result.error
    lost = [f"{q.qid} {q.score:g}/{q.max_score:g}" for q in result.questions if not q.passed]
    detail = _grader_error(result) or f"{result.score:g}/{result.max_score:g}" + (f"; lost: {', '.join(lost)}" if lost else "")
    return Verdict(result.name, f"scores {TOTAL_POINTS:g}/{TOTAL_POINTS:g}", ok, detail)


def _nothing(result: SubmissionResult) -> Verdict:
    ok = result.score == 0 and not result.error
    earned = [f"{q.qid} {q.score:g}" for q in result.questions if q.score > 0]
    detail = _grader_error(result) or f"{result.score:g}/{result.max_score:g}" + (f"; earned: {', '.join(earned)}" if earned else "")
    return Verdict(result.name, "scores 0", ok, detail)


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
