"""Grading: run an assignment's suite against submissions, each in its own forked process.

The calling process is the warm parent: it starts the sandbox zygote, imports torch once and
never imports the suite. It forks one session child, which runs pytest once (configuration and
collection), and in place of pytest's run loop forks one grading child per submission from the
collected session. Each grading child runs the items with the ChecksPlugin and hands back a
SubmissionResult as JSON, which the session child passes on.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Iterator

from checks.config.errors import UsageError
from checks.sandbox import hugepages, jail
from checks.course.assignment import Assignment
from checks.course.answer_cells import import_nbformat
from checks.sandbox.jail import Isolation
from checks.grading.pool import ChildFailed, run_forked, stream_forked
from checks.suites.quiz import QUIZ_FILE, grade_quiz
from checks.sandbox.supervisor import Limits, Zygote, prepare_parent, why_not_compiled
from checks.suites.scoring import CaseResult, QuestionResult, SubmissionResult, score_cases
from checks.course.submissions import (NOTEBOOK_SUFFIX, Found, Submission, SubmissionError, missing_files, read_found,
                                       read_submission, submission_name)

if TYPE_CHECKING:
    import pytest

    from checks.suites.plugin import ChecksPlugin

# No config file, no cache, and none of the per-test plugins whose output nobody reads here
# (terminal, capture, logging, warnings, faulthandler, thread and unraisable exceptions):
# together they cost more than the checks. Nor the plugins other packages install (anyio's,
# say): a grader runs none it has not chosen, and loading anyio's took 0.4 s a session.
PYTEST_ARGS = ("-c", os.devnull, "-s", "--disable-plugin-autoload", "-p", "no:terminal", "-p", "no:cacheprovider",
               "-p", "no:logging",
               "-p", "no:warnings", "-p", "no:faulthandler", "-p", "no:threadexception",
               "-p", "no:unraisableexception")


# From this many submissions on, a second spent making forks cheaper (sandbox/hugepages.py) pays off.
BATCH_SIZE = 8


@dataclass(frozen=True)
class Source:
    """A submission to grade, loaded lazily inside the grading child (a bad zip costs only it)."""

    name: str
    load: Callable[[], Submission]
    may_be_notebook: bool = False  # then the grader imports nbformat once, before it forks

    @classmethod
    def from_path(cls, path: Path, named: tuple[str, ...] | None = None, *, name: str | None = None) -> "Source":
        """`named`: the files the assignment names (see named_files); None reads every file. `name`:
        the batch's name for it (grading/names.py), else its own."""
        return cls(name or submission_name(path), lambda: read_submission(path, named), _may_be_notebook(path))

    @classmethod
    def from_found(cls, found: Found, named: tuple[str, ...] | None = None, *, name: str | None = None) -> "Source":
        """A submission as grading/batch.py found it: a path, or a student's files in a bulk download."""
        if not found.members:
            return cls(name or found.name, lambda: read_found(found, named), _may_be_notebook(found.path))
        notebook = any(own.endswith((NOTEBOOK_SUFFIX, ".zip")) for _, own in found.members)
        return cls(name or found.name, lambda: read_found(found, named), notebook)

    @classmethod
    def from_files(cls, name: str, files: dict[str, bytes]) -> "Source":
        return cls(name, lambda: Submission(name, dict(files)))


def _may_be_notebook(path: Path) -> bool:
    """A notebook, or a folder with one at its top or one level down (nbgrader's submitted/<student>/
    holds <assignment>/<assignment>.ipynb); looked for without walking a whole student folder."""
    if path.suffix == NOTEBOOK_SUFFIX:
        return True
    return path.is_dir() and any(next(path.glob(level + NOTEBOOK_SUFFIX), None) is not None for level in ("*", "*/*"))


def named_files(assignment: Assignment) -> tuple[str, ...] | None:
    """What a submission of `assignment` is graded on: its files and its quiz answers (None, so
    every file, for an assignment that names none)."""
    named = (*assignment.files, *([QUIZ_FILE] if assignment.quiz else []))
    return named or None


class WarmGrader:
    """The warm parent, as a context manager: the sandbox's zygotes started first, torch imported
    while they warm up, then (per `grade` call) a session child that collects the hidden suite
    once and forks a grading child per submission. `checks grade`, `checks test` and the pool a
    Dask worker keeps (executors/serve.py) all grade through one."""

    def __init__(self, assignment: Assignment, isolation: Isolation, *, public: bool = False,
                 limits: Limits = Limits(), submissions: int | None = None, notebooks: bool = False,
                 device: str = "auto") -> None:
        """`submissions`: how many will be graded (None: a stream, as many as come), so that the
        second spent making forks cheaper is spent only where it pays off; `notebooks`: whether
        some may be notebooks; `device`: where device checks run (auto, cpu, cuda)."""
        self.assignment, self.isolation, self.public, self.limits = assignment, isolation, public, limits
        self.device = device
        self.notebooks = notebooks
        # torch's lazy modules (about a second) pay off only when several grading children would
        # each import them: one child (`checks test`) imports what it needs, if anything
        self.preload = submissions is None or submissions > 1
        self.huge_pages = submissions is None or submissions >= BATCH_SIZE
        self.zygote: Zygote | None = None

    def __enter__(self) -> "WarmGrader":
        # The zygote starts first and warms up while this process does the same. No suite code is
        # imported here at all: the session child does that, so workers never see it.
        self.zygote = Zygote(self.isolation, imports=self.assignment.sandbox_imports, huge_pages=self.huge_pages,
                             withhold=self.assignment.zygote_sets)
        try:
            prepare_parent(preload=self.preload, modules=self.assignment.grader_imports)
            if self.notebooks:
                import_nbformat()  # once here, rather than in each grading child
            gc.freeze()
            if self.huge_pages:
                hugepages.collapse_heap()  # the session child and every grading child fork from this heap
        except BaseException:
            self.zygote.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.zygote is not None:
            self.zygote.close()

    def grade(self, sources: Iterable[Source], jobs: int,
              questions: Collection[str] | None = None) -> Iterator[tuple[str, dict | None, str]]:
        """(name, result as a dict or None, the grader's error or "") for each source as it is
        graded, `jobs` at a time; `sources` may be a stream. `questions`: run only the tests of
        these. ChildFailed if the session ends first."""
        assert self.zygote is not None, "use WarmGrader as a context manager"
        session = functools.partial(_grading_session, self.assignment, sources, self.zygote, self.public,
                                    self.limits, jobs, questions=questions, device=self.device)
        yield from stream_forked(session)


def grade_sources(assignment: Assignment, sources: list[Source], *, public: bool = False,
                  jobs: int | None = None, limits: Limits = Limits(),
                  isolation: Isolation | None = None, device: str = "auto",
                  questions: Collection[str] | None = None) -> Iterator[SubmissionResult]:
    """Grade each source in a forked child; yield results as they finish (any order).

    `isolation`: the front end's choice (Settings.isolation), else the strongest this machine
    allows. `device`: where device checks run. `questions`: run only the tests of these
    (`checks test 01_tensors strides.offset`); the results hold only them.
    """
    isolation = isolation or jail.choose()
    names = [source.name for source in sources]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise UsageError(f"two submissions share the name {', '.join(duplicates)}; names come from the "
                         "folder name or zip stem and must be unique")
    warm = WarmGrader(assignment, isolation, public=public, limits=limits, submissions=len(sources),
                      notebooks=any(source.may_be_notebook for source in sources), device=device)
    with warm:
        graded: set[str] = set()
        try:
            for name, value, error in warm.grade(sources, jobs or os.cpu_count() or 1, questions):
                graded.add(name)
                yield _result(assignment, name, value, error, isolation)
        except ChildFailed as failure:
            reason = f"the grading session ended before grading it: {failure}"
            for source in sources:
                if source.name not in graded:
                    yield _result(assignment, source.name, None, reason, isolation)


def _result(assignment: Assignment, name: str, value: dict | None, error: str,
            isolation: Isolation) -> SubmissionResult:
    if error or value is None:
        return SubmissionResult(name, assignment.name, error=error.strip(), sandbox=isolation.description)
    return SubmissionResult.from_dict(value)


def _grading_session(assignment: Assignment, sources: Iterable[Source], zygote: Zygote, public: bool, limits: Limits,
                     jobs: int, emit: Callable[[tuple[str, dict | None, str]], None], *,
                     questions: Collection[str] | None = None, device: str = "auto") -> None:
    """In the session child: collect the suite once, then grade each source in a child forked
    from the collected session (set-up and collection cost about 0.1 s a submission). A suite
    that cannot run is every source's grader error (a stream's: the session's, which ends)."""
    import pytest

    from checks.suites.plugin import ChecksPlugin

    # pytest's reports are read as plain text (in feedback, in a log), even where the caller's
    # environment forces colour, as a Jupyter kernel's does
    os.environ["PY_COLORS"] = "0"
    plugin = ChecksPlugin(assignment, {}, zygote, use_references=not public, limits=limits, device=device)
    loop = SubmissionLoop(assignment, sources, plugin, public, jobs, emit, questions=questions)
    suite_dir = assignment.suite_dir(public)
    exit_code = pytest.main([str(suite_dir), *PYTEST_ARGS, "--rootdir", str(suite_dir)], plugins=[plugin, loop])
    if not loop.ran:  # pytest stopped before its run loop: a usage error, say
        reason = "\n".join(plugin.errors) or f"pytest could not run the suite in {suite_dir} (exit code {exit_code})"
        if not isinstance(sources, list):
            raise RuntimeError(reason)
        for source in sources:
            emit((source.name, None, reason))


class SubmissionLoop:
    """Replaces pytest's run loop in the session child: each submission runs the collected items
    in a child of its own. `sources` may be a stream (the Dask pool's requests as they arrive)."""

    def __init__(self, assignment: Assignment, sources: Iterable[Source], plugin: "ChecksPlugin", public: bool,
                 jobs: int, emit: Callable[[tuple[str, dict | None, str]], None], *,
                 questions: Collection[str] | None = None) -> None:
        self.assignment, self.sources, self.plugin, self.public = assignment, sources, plugin, public
        self.jobs, self.emit = jobs, emit
        self.questions = None if questions is None else frozenset(questions)
        self.ran = False

    def pytest_runtestloop(self, session: "pytest.Session") -> bool:
        self.ran = True
        items = [] if session.testsfailed else list(session.items)  # a suite that does not collect runs nothing
        if self.questions is not None:
            items = [item for item in items if _question_of(item) in self.questions]
        for item in items:
            item.location  # noqa: B018 - cached on the item: worked out here once, not in every grading child
        jobs = ((source.name, functools.partial(self._grade, source, items)) for source in self.sources)
        for outcome in run_forked(jobs, self.jobs):
            self.emit((outcome.key, outcome.value, outcome.error))
        return True

    def _grade(self, source: Source, items: list["pytest.Item"]) -> dict:
        return grade_submission(self.assignment, source, self.plugin, items, public=self.public).to_dict()


def _question_of(item: "pytest.Item") -> str | None:
    from checks.suites import api  # in the session child, where pytest is already imported

    options = api.question_options(item)
    return None if options is None else options["qid"]


def grade_submission(assignment: Assignment, source: Source, plugin: "ChecksPlugin", items: list["pytest.Item"],
                     *, public: bool) -> SubmissionResult:
    """Load one submission, run the collected `items` against it through `plugin` (as pytest's
    own run loop would), and score what it recorded."""
    started = time.monotonic()
    result = SubmissionResult(source.name, assignment.name, sandbox=plugin.zygote.isolation.description)
    try:
        submission = source.load()
    except SubmissionError as error:
        # grade nothing, so that every question is listed at 0 with the reason
        unreadable = f"The submission could not be read: {error}"
        result.refused = str(error)
        result.warnings.append(unreadable)
        submission = Submission(source.name, {})
    else:
        unreadable = ""
    result.warnings += submission.warnings
    if not unreadable:
        result.warnings += missing_files(tuple(name for name in assignment.files if name not in submission.unread),
                                         submission.files)
    plugin.start_submission({**submission.files, **_stand_ins(submission.unread), **assignment.course_files()})
    try:
        for item, following in zip(items, [*items[1:], None]):
            if plugin.sandbox_failures:  # every later question would fail the same way
                break
            if plugin.budget.submission_ran_out:
                plugin.record_not_run(item)
                continue
            item.ihook.pytest_runtest_protocol(item=item, nextitem=following)
    finally:
        plugin.end_submission()
    if plugin.budget.submission_ran_out:
        result.warnings.append(f"The submission used up its time budget of {plugin.budget.submission_seconds:g} s "
                               "(time limit): the checks not yet run when it ran out score 0.")
    broken = _does_not_compile(submission.files, assignment.files, known=plugin.compiled)
    if broken:
        result.warnings += [f"{name} does not compile: {why}. Nothing in it can run, so every check that uses it "
                            "fails: fix this first." for name, why in broken.items()]
        _one_line_for_uncompiled(plugin.cases, broken)
    errors = list(plugin.errors)
    if not plugin.cases:
        errors.append(f"the suite in {assignment.suite_dir(public)} ran no checks")
    if not public:  # a check the grader could not run leaves no score to give (its questions say which)
        errors += _grader_errors(plugin.cases)
    result.error = "\n".join(errors)
    result.questions = score_cases(plugin.cases)
    if not public:
        result.questions += grade_quiz(assignment.quiz, submission.files, unread=submission.unread)
    if unreadable:
        result.questions = [QuestionResult(q.qid, 0.0, q.max_score, unreadable, 0, q.total_cases)
                            for q in result.questions]
    if plugin.sandbox_failures:  # the grader's failure, not the student's: no score at all
        result.error = f"the sandbox was unavailable: {plugin.sandbox_failures[0]}"
        result.questions = []
    result.devices = sorted(plugin.devices or {"cpu"})
    result.sandbox_uid = plugin.uid
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _grader_errors(cases: list[CaseResult]) -> list[str]:
    """One line for the checks that broke on the grader's side: a score without them would be
    lower than the work earned, so the submission is not graded until the suite (or the machine)
    is mended. A student's `checks test` keeps its score: each question says which checks broke."""
    broken = [case for case in cases if case.grader_error]
    if not broken:
        return []
    questions = ", ".join(dict.fromkeys(case.qid for case in broken))
    first = broken[0].message.splitlines()[0] if broken[0].message else "no message"
    return [f"{len(broken)} check(s) of {questions} broke in the grader, not in the submission; the first: {first}"]


def _does_not_compile(files: dict[str, bytes], names: Iterable[str],
                      known: Callable[[str, bytes], bool | str | None] = lambda name, source: None) -> dict[str, str]:
    """The student's Python files (of `names`) that do not compile, each with why, in one line;
    `known`: what the grader found compiling one already for its workers (ChecksPlugin.compiled)."""
    broken = {}
    for name in names:
        if not name.endswith(".py") or name not in files:
            continue
        found = known(name, files[name])
        if found is None:
            try:
                compile(files[name], name, "exec", dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError) as error:  # null bytes, absurd nesting
                found = why_not_compiled(error)
        if isinstance(found, str):
            broken[name] = found
    return broken


_COMPILE_FAILURES = (" while importing ", "SyntaxError", "IndentationError", "TabError")


def _one_line_for_uncompiled(cases: list[CaseResult], broken: dict[str, str]) -> None:
    """Each case that failed on importing a file that does not compile says so in one sentence,
    the same for every case, so that a question's feedback shows it once (with a count) rather
    than the compiler's message per call; the submission's warnings say where the error is."""
    for case in cases:
        if case.passed or not any(word in case.message for word in _COMPILE_FAILURES):
            continue
        names = [name for name in broken if name in case.message]
        if names:
            case.message = (f"{names[0]} does not compile, so nothing in it could run (the line at the top of "
                            "your feedback says where).")


def _stand_ins(unread: dict[str, str]) -> dict[str, bytes]:
    """A module that was not read (too big, say) fails to import with the reason, so that each
    question that uses it says why in its feedback; the others are graded as usual."""
    return {name: f"raise ImportError({why!r})\n".encode() for name, why in unread.items() if name.endswith(".py")}
