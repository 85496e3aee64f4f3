"""Grading: run an assignment's suite against submissions, each in its own forked process.

The calling process is the warm parent: it imports torch once, starts the sandbox zygote before
any suite is imported, and forks one grading child per submission. Children run pytest with the
ChecksPlugin and hand back a SubmissionResult as JSON.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from checks import jail
from checks.course import Assignment
from checks.pool import run_forked
from checks.quiz import grade_quiz
from checks.jail import Isolation
from checks.sandbox import Limits, Zygote, prepare_parent
from checks.scoring import QuestionResult, SubmissionResult, score_cases
from checks.submissions import Submission, SubmissionError, read_submission, submission_name

# No config file, no cache, and none of the per-test plugins whose output nobody reads here
# (terminal, capture, logging, warnings, faulthandler, thread and unraisable exceptions):
# together they cost more than the checks.
PYTEST_ARGS = ("-c", os.devnull, "-s", "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:logging",
               "-p", "no:warnings", "-p", "no:faulthandler", "-p", "no:threadexception",
               "-p", "no:unraisableexception")


# From this many submissions on, a second spent making forks cheaper (hugepages.py) pays off.
BATCH_SIZE = 8


@dataclass(frozen=True)
class Source:
    """A submission to grade, loaded lazily inside the grading child (a bad zip costs only it)."""

    name: str
    load: Callable[[], Submission]

    @classmethod
    def from_path(cls, path: Path) -> "Source":
        return cls(submission_name(path), lambda: read_submission(path))

    @classmethod
    def from_files(cls, name: str, files: dict[str, bytes]) -> "Source":
        return cls(name, lambda: Submission(name, dict(files)))


def grade_sources(assignment: Assignment, sources: list[Source], *, public: bool = False,
                  jobs: int | None = None, limits: Limits = Limits(),
                  isolation: Isolation | None = None) -> Iterator[SubmissionResult]:
    """Grade each source in a forked child; yield results as they finish (any order).

    `isolation` defaults to the strongest this machine allows (jail.choose()).
    """
    isolation = isolation or jail.choose()
    names = [source.name for source in sources]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"two submissions share the name {', '.join(duplicates)}; names come from the "
                         "folder name or zip stem and must be unique")
    # The zygote starts first, before any suite code is imported (workers never see it), and
    # warms up while this process does the same.
    batch = len(sources) >= BATCH_SIZE
    with Zygote(isolation, preload=True, huge_pages=batch) as zygote:
        prepare_parent(preload=True)
        _preload_pytest_plugins()
        with suite_preimported(assignment.suite_dir(public)):
            jobs_to_run = [(source.name, _child_job(assignment, source, zygote, public, limits))
                           for source in sources]
            for outcome in run_forked(jobs_to_run, jobs or os.cpu_count() or 1, huge_pages=batch):
                if outcome.error:
                    yield SubmissionResult(outcome.key, assignment.name, error=outcome.error.strip(),
                                           sandbox=isolation.description)
                else:
                    yield SubmissionResult.from_dict(outcome.value)


def _preload_pytest_plugins() -> None:
    """pytest imports its built-in plugins (and pdb, xml...) per session: once here, not per child."""
    from _pytest.config import default_plugins

    for name in (*(f"_pytest.{plugin}" for plugin in default_plugins), "_pytest._argcomplete", "pdb",
                 "checks.plugin"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


@contextlib.contextmanager
def suite_preimported(suite_dir: Path) -> Iterator[None]:
    """Import the suite's modules once, here, so every forked grading child finds them loaded;
    undo it afterwards, so that the caller's process is left as it was.

    pytest (prepend import mode) imports a test file by its bare module name after putting its
    folder on sys.path, and reuses a module already in sys.modules when it is the same file.
    A module that fails to import is left alone: the child reports the collection error.
    """
    modules_before, path_before = set(sys.modules), list(sys.path)
    if suite_dir.is_dir():
        sys.path.insert(0, str(suite_dir))
        for path in sorted(suite_dir.glob("*.py")):
            if path.stem != "conftest" and path.stem not in sys.modules:
                try:
                    importlib.import_module(path.stem)
                except Exception:  # noqa: BLE001 - reported by pytest in the child
                    pass
    try:
        yield
    finally:
        sys.path[:] = path_before
        for name in set(sys.modules) - modules_before:
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if module_file.startswith(str(suite_dir)):
                del sys.modules[name]


def _child_job(assignment: Assignment, source: Source, zygote: Zygote, public: bool,
               limits: Limits) -> Callable[[], dict]:
    def job() -> dict:
        return grade_in_this_process(assignment, source, zygote, public=public, limits=limits).to_dict()
    return job


def grade_in_this_process(assignment: Assignment, source: Source, zygote: Zygote, *, public: bool,
                          limits: Limits) -> SubmissionResult:
    """Run the suite here. Call it only in a fresh process: pytest leaves module state behind."""
    import pytest

    from checks.plugin import ChecksPlugin

    started = time.monotonic()
    result = SubmissionResult(source.name, assignment.name, sandbox=zygote.isolation.description)
    try:
        submission = source.load()
    except SubmissionError as error:
        # grade nothing, so that every question is listed at 0 with the reason
        unreadable = f"The submission could not be read: {error}"
        result.warnings.append(unreadable)
        submission = Submission(source.name, {})
    else:
        unreadable = ""
    result.warnings += submission.warnings
    if not unreadable:
        result.warnings += [f"{name} is missing from the submission" for name in assignment.files
                            if name not in submission.files]
    files = {**submission.files, **assignment.course_files()}
    plugin = ChecksPlugin(assignment, files, zygote, use_references=not public, limits=limits)
    suite_dir = assignment.suite_dir(public)
    pytest.main([str(suite_dir), *PYTEST_ARGS, "--rootdir", str(suite_dir)], plugins=[plugin])
    if not plugin.cases:
        plugin.errors.append(f"the suite in {suite_dir} ran no checks")
    if plugin.errors:
        result.error = "\n".join(plugin.errors)
    result.questions = score_cases(plugin.cases)
    if not public:
        result.questions += grade_quiz(assignment.quiz, submission.files)
    if unreadable:
        result.questions = [QuestionResult(q.qid, 0.0, q.max_score, unreadable, 0, q.total_cases)
                            for q in result.questions]
    result.devices = sorted(plugin.devices or {"cpu"})
    result.sandbox_uid = plugin.uid
    result.seconds = round(time.monotonic() - started, 3)
    return result
