"""The pytest plugin that runs a suite against one submission and records every case.

It owns the `student` fixture (one sandbox per question, its worker forked from the zygote or
handed on from the last question) and turns each pytest report into a CaseResult. A failure of
the suite itself (collection error, broken fixture, an unexpected exception in a test) is
recorded as a grader error, never silently charged to the student.
"""

from __future__ import annotations

import os
import types
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from checks.course.assignment import Assignment, CourseError
from checks.sandbox.accounting import MemoryWatch
from checks.sandbox.jail import SANDBOX_UID_BASE
from checks.sandbox.stand_ins import StandIns
from checks.sandbox.supervisor import (Limits, NotCompiled, SandboxUnavailable, WorkerConfig, Zygote, kill_uid,
                                      with_bytecode)
from checks.suites import api
from checks.suites.budgets import TimeBudget
from checks.suites.scoring import CaseResult
from checks.suites.student import QuestionSandbox, Student, StudentFault, SubmissionWorkers, compile_drivers


class ChecksPlugin:
    def __init__(self, assignment: Assignment, files: dict[str, bytes], zygote: Zygote, *,
                 use_references: bool, limits: Limits, device: str = "auto") -> None:
        self.assignment = assignment
        api.use_device(device)  # before the suite is collected: its modules parametrize over grading_devices()
        self.zygote = zygote
        self.use_references = use_references
        # the assignment's own budgets (assignment.toml) in place of the defaults
        self.limits = replace(limits, temp_bytes=assignment.temp_mib * 2**20,
                              submission_memory_bytes=assignment.submission_memory_mib * 2**20)
        self.errors: list[str] = []  # failures of the suite itself (collection); they stand for every submission
        self._open: tuple[tuple, QuestionSandbox] | None = None
        self._student: Student | None = None  # the running test's
        self.workers = SubmissionWorkers(zygote, hand_on=not assignment.fresh_worker_per_question)
        self._items_seen: dict[pytest.Item, tuple[dict[str, Any], str]] = {}
        self._shared_bytecode: dict[tuple[str, bytes], bytes | NotCompiled] = {}  # see pytest_collection_finish
        self._suite_position: dict[pytest.Item, int] = {}  # each test's place in the suite, as written
        self._collected_options: dict[pytest.Item, dict[str, Any]] = {}  # each test's @question, read once
        self._references: dict[str, types.ModuleType] = {}  # the reference modules stand-ins answer from
        self.start_submission(files)

    def start_submission(self, files: dict[str, bytes]) -> None:
        """Grade these files from now on: in a grading process forked from a collected session."""
        self.files = files
        # compiled once, for every sandbox of the submission; what every submission shares, before
        self._bytecode: dict[tuple[str, bytes], bytes | NotCompiled] = dict(self._shared_bytecode)
        self.cases: list[CaseResult] = []
        self.sandbox_failures: list[str] = []  # no worker could be had: the submission is not graded
        self.devices: set[str] = set()
        self.budget = TimeBudget(self.assignment.question_seconds, self.assignment.submission_seconds)
        self._first_case_of_item = 0  # where the running test's cases start in self.cases
        # one uid per grading process, so per submission: its process limit and its kill switch
        self.uid = SANDBOX_UID_BASE + os.getpid() if self.zygote.isolation.per_submission_uid else None
        self.workers.watch_memory(MemoryWatch(self.limits.submission_memory_bytes, self.uid,
                                              lambda: set(self.workers.pids)))

    def compiled(self, name: str, source: bytes) -> bool | str | None:
        """What the grader found compiling this file for a worker: True (it compiles), why it does
        not, or None where it did not compile it. Nobody compiles it again to find out (milliseconds
        a file, and seconds for a file made to be slow to compile)."""
        found = self._bytecode.get((name, source))
        if found is None:
            return None
        return found.reason if isinstance(found, NotCompiled) else True

    def end_submission(self) -> None:
        self.workers.stop_watching()
        self._stop_processes()  # no process of a submission outlives its grading

    def _stop_processes(self) -> None:
        """The open question's worker, the idle one, and every process of the submission's uid."""
        self.close()
        self.workers.close()
        self._kill_strays()

    # ------------------------------------------------------------ the fixture

    @pytest.fixture
    def student(self, request: pytest.FixtureRequest) -> Iterator[Student]:
        options, _ = self._item_info(request.node)
        reached = Student(self._sandbox_for(options), self.assignment.modules)
        self._student = reached
        token = api.current_student.set(reached)
        try:
            yield reached
        finally:
            api.current_student.reset(token)

    def _sandbox_for(self, options: dict[str, Any]) -> QuestionSandbox:
        """One sandbox per question. Its worker may be the last question's (SubmissionWorkers),
        but only one holding the same files and import blocks: references never leak across."""
        key = (options["qid"], options["use_reference"], options["block_imports"], options["timeout"],
               options["cap_stack"])
        if self._open is not None and self._open[0] == key:
            return self._open[1]
        # the worker is handed on as between any two questions, with the reference files given or
        # not: a reference stays in the grader, and its keeper lays out the stand-ins in its place
        self.close()
        given = self._references_given(options)
        # the student's own copies of the reference modules are left out: their stand-ins answer
        files = {name: data for name, data in self.files.items() if name not in given}
        config = WorkerConfig(files=with_bytecode(files, self._bytecode, self.assignment.modules or None),
                              block_imports=options["block_imports"],
                              limits=self.limits, uid=self.uid, stand_ins=self._stand_ins(given))
        sandbox = QuestionSandbox(self.workers, config, options["timeout"], self.budget, options["qid"],
                                  cap_stack=options["cap_stack"])
        self._open = (key, sandbox)
        return sandbox

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def _kill_strays(self) -> None:
        """Every process of the submission's uid: daemons that left their process group."""
        if self.uid is not None:
            kill_uid(self.uid)

    # ------------------------------------------------------------ recording

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", f"{api.QUESTION_MARK}: the question a test belongs to")
        config.addinivalue_line("markers", f"{api.DEFAULTS_MARK}: options for every question of a file")
        config.addinivalue_line("markers", f"{api.COVERS_MARK}: the boundaries a parametrized test covers")
        config.addinivalue_line("markers", "cuda: needs a CUDA device")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append(f"the suite could not be collected at {report.nodeid or 'its root'}:\n"
                               f"{report.longreprtext[-1500:]}")

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Check every test's @question, then run the tests grouped by the worker they need (see
        _worker_order); their results are still listed in suite order (CaseResult.position)."""
        options: dict[pytest.Item, dict[str, Any]] = {}
        for item in items:
            try:
                found = self._question_options(item)
            except pytest.UsageError as error:
                self.errors.append(str(error))
                continue
            if found is None:
                self.errors.append(f"{item.nodeid} has no @question(...) marker")
            else:
                options[item] = found
        self._collected_options = options
        self._suite_position = {item: position for position, item in enumerate(items)}
        items.sort(key=self._worker_order(options))
        # a zygote for each set of packages the questions withhold, started before a batch forks
        # its grading processes (they share it) rather than in each of them
        self.zygote.withhold(*{frozenset(found["block_imports"]) for found in options.values()})

    def _worker_order(self, options: dict[pytest.Item, dict[str, Any]]) -> Callable[[pytest.Item], tuple[int, int]]:
        """A sort key (sorting is stable) that lets one worker serve as many questions in a row as
        it may: the questions given no reference files first, then each set of reference files in
        turn (its keeper lays the stand-ins out once for each); within each, those that withhold
        the same packages together (a worker serves only those: see WorkerConfig.serves)."""
        groups: dict[tuple[str, ...], int] = {(): 0}
        withheld: dict[frozenset[str], int] = {frozenset(): 0}
        for found in options.values():
            groups.setdefault(self._references_given(found), len(groups))
            withheld.setdefault(frozenset(found["block_imports"]), len(withheld))

        def key(item: pytest.Item) -> tuple[int, int]:
            found = options.get(item)
            if found is None:
                return 0, 0
            return groups[self._references_given(found)], withheld[frozenset(found["block_imports"])]
        return key

    def _stand_ins(self, given: tuple[str, ...]) -> StandIns | None:
        """The reference modules a question uses, loaded here in the grader (once, before a batch
        forks): the worker gets stand-ins that ask for their answers (sandbox/stand_ins.py), never
        their code."""
        if not given:
            return None
        for name in given:
            if name not in self._references:
                module = _reference_module(name, self.assignment.reference_files((name,))[name])
                classes = [attribute for attribute, value in vars(module).items() if not attribute.startswith("_")
                           and isinstance(value, type) and value.__module__ == module.__name__]
                if classes:
                    raise CourseError(f"use_reference={given!r}: the reference {name} defines {', '.join(classes)}, "
                                      "and a class cannot be answered from outside the sandbox (its stand-in "
                                      "offers functions of plain data only); build what the question needs from "
                                      "public parts in a driver (docs/authoring.md)")
                self._references[name] = module
        return StandIns({name.removesuffix(".py"): self._references[name] for name in given})

    def _references_given(self, options: dict[str, Any]) -> tuple[str, ...]:
        """The reference files a question's worker holds: none in the public suite."""
        return tuple(options["use_reference"]) if self.use_references else ()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Compile the files every submission is given (course files, the reference files of the
        questions that use them) and the suite's drivers once, here, before a batch forks a grading
        process per submission (milliseconds a file, which each of them would pay again)."""
        shared = dict(self.assignment.course_files())
        given = {name for options in self._collected_options.values() for name in self._references_given(options)}
        for name in sorted(given):
            try:
                self._stand_ins((name,))
            except CourseError:  # the question that names it says so when it runs
                continue
        with_bytecode(shared, self._shared_bytecode)
        self._bytecode.update(self._shared_bytecode)
        compile_drivers({item.path.parent for item in session.items},
                        {item.module.__name__ for item in session.items if getattr(item, "module", None)})

    def pytest_runtest_logstart(self) -> None:  # before each test's set-up, whatever happens in it
        self._first_case_of_item = len(self.cases)
        self._student = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        """A test made with @cases reports each of its cases here, as it finishes."""
        token = api.case_sink.set(lambda label, arguments, error: self._record_case_of_loop(item, label, arguments,
                                                                                           error))
        try:
            yield
        finally:
            api.case_sink.reset(token)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
        """Record the case and answer with a cheap report: pytest's own traceback formatting
        re-parses the test source for every failure (about 100 ms each)."""
        if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
            if call.when == "call":
                del self.cases[self._first_case_of_item:]  # a skip inside @cases skips its earlier cases too
            return None  # pytest's own report for skips
        if item.get_closest_marker(api.QUESTION_MARK) is None:
            return None
        passed = call.excinfo is None or call.excinfo.errisinstance(api.CaseSettled)
        error = None if passed else call.excinfo.value
        self._note_sandbox_failure(error)
        message, grader_error = ("", False) if passed else self._describe_failure(error, item)
        if not passed and call.when == "teardown" and len(self.cases) > self._first_case_of_item:
            for case in self.cases[self._first_case_of_item:]:  # a failing teardown taints what it followed
                case.passed, case.message = False, case.message or message
        elif not passed or (call.when == "call" and not _is_case_loop(item)):
            self._record(item, item.nodeid, passed, message, grader_error)
        if passed and call.when == "call" and _is_case_loop(item):
            passed, message = self._case_loop_outcome()
        return pytest.TestReport(item.nodeid, item.location, {}, "passed" if passed else "failed",
                          None if passed else message, call.when, [], call.duration, call.start, call.stop)

    def _case_loop_outcome(self) -> tuple[bool, str]:
        """A test made with @cases fails, for pytest, when one of its cases failed: an author's
        plain `pytest -p checks.suites.standalone` run must not say "passed" on failing work."""
        cases = self.cases[self._first_case_of_item:]
        failed = [case for case in cases if not case.passed]
        if not failed:
            return True, ""
        return False, f"{len(failed)} of {len(cases)} cases failed; the first, {failed[0].nodeid}: {failed[0].message}"

    def _record_case_of_loop(self, item: pytest.Item, label: str, arguments: dict[str, Any],
                             error: Exception | None) -> None:
        self._note_sandbox_failure(error)
        message, grader_error = ("", False) if error is None else self._describe_failure(error, item)
        nodeid = f"{item.nodeid[:-1]}-{label}]" if item.nodeid.endswith("]") else f"{item.nodeid}[{label}]"
        self._record(item, nodeid, error is None, message, grader_error)
        if "device" in arguments:
            self.devices.add(str(arguments["device"]).split(":")[0])

    def _describe_failure(self, error: BaseException | None, item: pytest.Item) -> tuple[str, bool]:
        """(feedback, whether the grader itself is at fault). A check that raises on the value the
        student's code just returned (a str where it reads a tuple, a key a driver's dict lost)
        met the student's junk: that is the student's failure, told without the suite's text."""
        message, grader_error = _describe_failure(error, item.nodeid, item.path.parent)
        student = self._student
        if grader_error and student is not None and student.returned and _met_a_value(error):
            return (f"{student.last_call}: what your code returned could not be checked (the check met a value "
                    f"of a kind it does not expect: {type(error).__name__}); return values of the kinds and "
                    "shapes the assignment asks for."), False
        return message, grader_error

    def record_not_run(self, item: pytest.Item) -> None:
        """A test never started because the submission's time budget ran out: scored 0, the student's cost."""
        self._record(item, item.nodeid, False, self.budget.not_run_message(), False)

    def _note_sandbox_failure(self, error: BaseException | None) -> None:
        """The sandbox itself could not start a worker: the grader's failure, never the student's."""
        if isinstance(error, SandboxUnavailable):
            self.sandbox_failures.append(str(error))

    def _record(self, item: pytest.Item, nodeid: str, passed: bool, message: str, grader_error: bool) -> None:
        options, test_key = self._item_info(item)
        self.cases.append(CaseResult(options["qid"], test_key, options["points"], options["all_or_nothing"],
                                     passed, message, grader_error, nodeid, self._suite_position.get(item, 0)))
        device = getattr(getattr(item, "callspec", None), "params", {}).get("device")
        if device is not None:
            self.devices.add(str(device).split(":")[0])

    def _item_info(self, item: pytest.Item) -> tuple[dict[str, Any], str]:
        """A test's question options and key, looked up once: a test with @cases records hundreds."""
        if item not in self._items_seen:
            options = self._question_options(item)
            if options is None:
                raise pytest.UsageError(f"{item.nodeid} uses the student fixture but has no @question(...) marker")
            self._items_seen[item] = (options, _test_key(item))
        return self._items_seen[item]

    def _question_options(self, item: pytest.Item) -> dict[str, Any] | None:
        """A test's @question options, withholding too what the assignment withholds from every question."""
        options = api.question_options(item)
        if options is not None and self.assignment.block_imports:
            options["block_imports"] = tuple(dict.fromkeys((*self.assignment.block_imports, *options["block_imports"])))
        return options

    def pytest_sessionfinish(self) -> None:
        self.end_submission()


def _test_key(item: pytest.Item) -> str:
    return f"{item.path.name}::{getattr(item, 'originalname', item.name)}"


def _is_case_loop(item: pytest.Item) -> bool:
    return hasattr(getattr(item, "function", None), "checks_cases")


# what reading a value of the wrong kind raises; a NameError, ImportError or OSError is the suite's own
VALUE_ERRORS = (TypeError, ValueError, LookupError, AttributeError)  # arithmetic on its own numbers is the suite's


def _met_a_value(error: BaseException | None) -> bool:
    """Whether `error` is what a check raises on a value of a kind it does not expect (an
    AttributeError of a module is a misspelt name in the suite: its own)."""
    if not isinstance(error, VALUE_ERRORS) or isinstance(error, (api.CheckFailed, SandboxUnavailable)):
        return False
    return not (isinstance(error, AttributeError) and isinstance(getattr(error, "obj", None), types.ModuleType))


# modules whose AssertionError is a verdict a check asked for, as an `assert` in the suite's own files is
ASSERTION_HELPERS = ("numpy.testing", "torch.testing", "unittest")


def _asserted_by_the_suite(error: AssertionError, suite: Path) -> bool:
    """Whether a check's own assertion raised `error` (an assert in the suite's folder, or an
    assertion helper it called), not a library's internal one: torch's "already registered in
    mega-cache" from an import that failed earlier is the grader's environment, never the student's."""
    frame, traceback = None, error.__traceback__
    while traceback is not None:
        frame, traceback = traceback.tb_frame, traceback.tb_next
    if frame is None:
        return True  # raised and never unwound: nothing says it is anyone else's
    module = str(frame.f_globals.get("__name__", ""))
    if any(module == helper or module.startswith(helper + ".") for helper in ASSERTION_HELPERS):
        return True
    return Path(frame.f_code.co_filename).resolve().is_relative_to(suite.resolve())


def _describe_failure(error: BaseException | None, nodeid: str, suite: Path) -> tuple[str, bool]:
    """(feedback, whether the grader itself is at fault)."""
    if isinstance(error, (api.CheckFailed, StudentFault)):
        return str(error), False
    if isinstance(error, AssertionError) and _asserted_by_the_suite(error, suite):
        return f"check failed: {error}".strip(), False
    kind = type(error).__name__ if error is not None else "error"
    return f"grader error in {nodeid}: {kind}: {error}", True


def _reference_module(filename: str, source: bytes) -> types.ModuleType:
    """A reference file run as a module of the grader's own, under its name but outside sys.modules."""
    module = types.ModuleType(filename.removesuffix(".py"))
    module.__file__ = f"<reference {filename}>"
    try:
        exec(compile(source, module.__file__, "exec", dont_inherit=True), module.__dict__)
    except Exception as error:
        raise CourseError(f"the reference {filename} could not be loaded: {type(error).__name__}: {error}") from error
    return module
