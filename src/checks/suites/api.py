"""What a hidden or public suite imports: the `question` marker and the checks.

Checks run in the grader on plain data that came back from the sandbox. A failed check raises
CheckFailed with a message written for the student: what was called, what came back, what was
expected and, when a `diagnose` function recognises it, the likely mistake.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import inspect
import string
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import numpy as np
import pytest

from checks.sandbox.codec import TensorData
from checks.sandbox.zygote import cuda_available
from checks.suites.describe import Later, summarize
from checks.suites.student import (MissingFunction, Student, StudentCrashed, StudentFault, StudentRaised,
                                   StudentTimeout, UnsupportedReturn)

__all__ = ["CheckFailed", "Later", "MissingFunction", "covers", "StudentCrashed", "StudentFault", "StudentRaised",
           "StudentTimeout", "TensorData", "UnsupportedReturn", "Refusal", "allclose", "as_index_tuple", "ask_reference",
           "cases", "expect_close", "expect_equal", "expect_raises", "fail", "first_match", "grading_devices", "is_close",
           "public_module", "question", "question_defaults", "reference_or_refusal"]

Diagnose = Callable[[Any], "str | None"]
TestFunction = TypeVar("TestFunction", bound=Callable[..., Any])
CaseSink = Callable[[str, dict[str, Any], "Exception | None"], None]
QUESTION_MARK = "checks_question"
COVERS_MARK = "checks_covers"
DEFAULTS_MARK = "checks_question_defaults"
QUESTION_DEFAULTS: dict[str, Any] = {"all_or_nothing": False, "use_reference": (), "block_imports": (),
                                     "timeout": 10.0, "kinks": (), "cap_stack": False}
ParameterSet = type(pytest.param())  # what pytest.param(...) returns; pytest has no public name for it

# Per-run state, set by the plugin around each test (context variables, not module globals):
# the student of the running test, and where a test made with @cases reports each case.
current_student: contextvars.ContextVar[Student | None] = contextvars.ContextVar("current_student", default=None)
case_sink: contextvars.ContextVar[CaseSink | None] = contextvars.ContextVar("case_sink", default=None)


class CheckFailed(AssertionError):
    """A check failed; str() is the feedback for the student."""


class CaseSettled(Exception):
    """Ends the running case early as passed (reference_or_refusal: the student refused as PyTorch did)."""


def question(qid: str, points: float | Mapping[str, float], *, all_or_nothing: bool | None = None,
             use_reference: tuple[str, ...] | None = None, block_imports: tuple[str, ...] | None = None,
             timeout: float | None = None,
             kinks: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
             cap_stack: bool | None = None) -> pytest.MarkDecorator:
    """Mark a test function as (part of) question `qid`, worth `points` over all its cases.

    `qid` may name a parameter of the test, as in "rules.{op}_backward": each value of `op` is then
    a question of its own, and `points` a mapping from that value to the question's points. Options
    not given come from the file's `question_defaults(...)`, then from QUESTION_DEFAULTS.

    `use_reference` names reference files ("rules.py") the question runs beside the student's other
    modules, so that a mistake there costs only its own question. Their code never enters the
    sandbox: the student's file of that name is left out, and a stand-in module takes its place
    whose functions the grader answers with the reference (sandbox/stand_ins.py). So they take
    and return plain data (arrays, numbers, tuples, slices), and each call is a round trip.

    `kinks` names the boundaries of the question where plausible implementations differ (a ReLU's
    input exactly 0, a count that divides exactly): `checks verify` fails the question unless some
    case of it is at each, as its `@cases(boundaries=...)` declare. A mapping gives them per value
    of the qid's parameter, as `points` does.

    `cap_stack`: the kernel holds how deep the student's code may call (sandbox/stack_cap.py):
    recursion a few hundred calls deep fails, whatever recursion limit the code sets, where a loop
    is never near it. For a check that code does not recurse once per item (02's deep chain).
    """
    given = {"all_or_nothing": all_or_nothing, "use_reference": use_reference, "block_imports": block_imports,
             "timeout": timeout, "kinks": kinks, "cap_stack": cap_stack}
    _check_options(given)
    return getattr(pytest.mark, QUESTION_MARK)(qid=qid, points=points, **{
        name: (tuple(value) if isinstance(value, (list, tuple)) else value)
        for name, value in given.items() if value is not None})


def question_defaults(**options: Any) -> pytest.MarkDecorator:
    """Options for every question of a file: `pytestmark = question_defaults(block_imports=("torch",))`,
    so that a new question cannot forget them. A question's own options win."""
    _check_options(options)
    return getattr(pytest.mark, DEFAULTS_MARK)(**{
        name: (tuple(value) if isinstance(value, (list, tuple)) else value) for name, value in options.items()})


def _check_options(options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(QUESTION_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown question option {', '.join(unknown)}; the options are "
                        f"{', '.join(QUESTION_DEFAULTS)}")


def question_options(item: pytest.Item) -> dict[str, Any] | None:
    """The resolved options of the question a collected test belongs to: its qid (a template
    filled from the test's parameters), its points, and every option. None without @question."""
    mark = item.get_closest_marker(QUESTION_MARK)
    if mark is None:
        return None
    options = dict(QUESTION_DEFAULTS)
    defaults = item.get_closest_marker(DEFAULTS_MARK)
    if defaults is not None:
        options.update(defaults.kwargs)
    options.update(mark.kwargs)
    template, points = options["qid"], options["points"]
    fields = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    if fields:
        params = getattr(getattr(item, "callspec", None), "params", {})
        missing = [name for name in fields if name not in params]
        if missing:
            raise pytest.UsageError(f"{item.nodeid}: question id {template!r} names {', '.join(missing)}, "
                                    "which is not a parameter of the test")
        values = {name: str(params[name]) for name in fields}
        options["qid"] = template.format(**values)
        if isinstance(points, Mapping):
            key = values[fields[0]] if len(fields) == 1 else options["qid"]
            if key not in points:
                raise pytest.UsageError(f"{item.nodeid}: question {options['qid']!r} has no entry {key!r} "
                                        "in its points")
            options["points"] = points[key]
        if isinstance(options["kinks"], Mapping):
            key = values[fields[0]] if len(fields) == 1 else options["qid"]
            options["kinks"] = tuple(options["kinks"].get(key, ()))
    elif isinstance(points, Mapping):
        raise pytest.UsageError(f"{item.nodeid}: points per value need a question id that names a parameter, "
                                f"such as \"rules.{{op}}_backward\"")
    if isinstance(options["kinks"], Mapping):
        raise pytest.UsageError(f"{item.nodeid}: kinks per value need a question id that names a parameter")
    if isinstance(options["kinks"], str):
        raise pytest.UsageError(f"{item.nodeid}: kinks is a tuple of boundary names, not the string "
                                f"{options['kinks']!r}")
    return options


def cases(argnames: str | Sequence[str], argvalues: Iterable[Any], *,
          ids: Sequence[str] | Callable[[Any], "str | None"] | None = None,
          reference: Callable[..., Any] | None = None,
          send_ahead: bool = False,
          boundaries: Mapping[str, Callable[..., Any]] | None = None) -> Callable[[TestFunction], TestFunction]:
    """Like pytest.mark.parametrize, but every case runs inside one pytest test and is still scored
    and reported as its own case: pytest's per-test set-up costs about a millisecond a case, more
    than most checks. Fixtures are set up once for all the cases; pytest.skip skips them all.

    `reference(**case)`, when given, is what the student's answer is checked against, passed to the
    test as its `reference` argument. It runs once per case when the suite is collected, before a
    batch forks a grading process per submission, so that every submission shares it. It must not
    depend on the student's code, nor touch CUDA, nor run autograd where a GPU is present: a
    process forked after either can use neither (checks.suite.precomputed, per_device).

    `send_ahead=True` sends the first student call of every case to the sandbox in one write before
    the cases run, instead of a round trip each (Student.send_ahead): only where those calls are
    pure functions of their arguments, so that the order they run in does not matter, and the code
    before a case's first call changes nothing.

    `boundaries` declares the boundary values the cases cover: a name ("relu input exactly 0",
    "batch of 1") to a predicate of a case's arguments that says whether that case is at it. Each
    must hold for at least one case (else the suite does not collect: a boundary claimed is a
    boundary drawn); `checks verify` prints them per question and holds them against the
    question's `kinks`.
    """
    names = [name.strip() for name in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
    argvalues = list(argvalues)
    if ids is not None and not callable(ids) and len(ids) != len(argvalues):
        raise ValueError(f"@cases got {len(argvalues)} cases but {len(ids)} ids")
    rows, labels = [], []
    for index, value in enumerate(argvalues):
        if isinstance(value, ParameterSet):  # pytest.param(..., id=...)
            if value.marks:
                raise ValueError("@cases takes no marks on a case; use pytest.mark.parametrize for that test")
            row, given_id = tuple(value.values), value.id
        else:
            row, given_id = (tuple(value) if len(names) > 1 else (value,)), None
        if len(row) != len(names):
            raise ValueError(f"case {index} has {len(row)} values for the {len(names)} names {', '.join(names)}")
        rows.append(row)
        if given_id is not None:
            labels.append(str(given_id))
        elif ids is None or callable(ids):
            labels.append("-".join(_case_label(ids, item) for item in row))
        else:
            labels.append(str(ids[index]))

    covered = _boundaries_covered(boundaries or {}, names, rows, labels)
    references = None if reference is None else [reference(**dict(zip(names, row))) for row in rows]
    given = [*names, *(["reference"] if references is not None else [])]

    def decorate(function: TestFunction) -> TestFunction:
        signature = inspect.signature(function)
        unknown = [name for name in given if name not in signature.parameters]
        if unknown:
            raise TypeError(f"{function.__name__} has no parameter {', '.join(unknown)} for its cases")

        @functools.wraps(function)
        def run_cases(**fixtures: Any) -> None:
            failures: list[tuple[str, Exception]] = []
            student, sink = current_student.get(), case_sink.get()
            each_case = [dict(zip(names, row)) for row in rows]
            runs = [functools.partial(function, **fixtures, **arguments,
                                      **({} if references is None else {"reference": references[index]}))
                    for index, arguments in enumerate(each_case)]
            if send_ahead and student is not None:
                student.send_ahead(runs)
            for label, arguments, run in zip(labels, each_case, runs):
                if student is not None:
                    student.last_call, student.last_result = "", None
                try:
                    run()
                    error = None
                except CaseSettled:
                    error = None
                except Exception as raised:  # noqa: BLE001 - pytest's skip and exit are BaseExceptions
                    error = raised
                if sink is not None:
                    sink(label, arguments, error)
                elif error is not None:
                    failures.append((label, error))
            if failures:  # run without the checks plugin: fail with the first failure
                label, first = failures[0]
                raise CheckFailed(f"{len(failures)} of {len(rows)} cases failed; the first, [{label}]: "
                                  f"{first}") from first

        run_cases.__signature__ = signature.replace(  # type: ignore[attr-defined] - what pytest reads
            parameters=[p for p in signature.parameters.values() if p.name not in given])
        run_cases.checks_cases = len(rows)  # type: ignore[attr-defined]
        run_cases.checks_boundaries = covered  # type: ignore[attr-defined] - read by suites/coverage.py
        return run_cases  # type: ignore[return-value]
    return decorate


def covers(boundaries: Mapping[str, Callable[..., Any]]) -> pytest.MarkDecorator:
    """`@cases(boundaries=...)` for a test parametrized with pytest.mark.parametrize (devices,
    dtypes): each predicate is asked of every parameter set (as keywords); `checks verify` counts
    the tests at each boundary, and fails one that none is at."""
    for name, at in boundaries.items():
        if not callable(at):
            raise ValueError(f"covers: boundary {name!r} must be a predicate of the test's parameters, "
                             f"not {type(at).__name__}")
    return getattr(pytest.mark, COVERS_MARK)(dict(boundaries))


def _boundaries_covered(boundaries: Mapping[str, Callable[..., Any]], names: list[str], rows: list[tuple],
                        labels: list[str]) -> dict[str, list[str]]:
    """{boundary: the labels of the cases at it}, each predicate asked of every case's arguments;
    a ValueError for a boundary no case is at, or a predicate that is not callable."""
    covered: dict[str, list[str]] = {}
    for name, at in boundaries.items():
        if not callable(at):
            raise ValueError(f"@cases boundary {name!r} must be a predicate of a case's arguments "
                             f"({', '.join(names)}), not {type(at).__name__}")
        covered[name] = [label for label, row in zip(labels, rows) if at(**dict(zip(names, row)))]
        if not covered[name]:
            raise ValueError(f"@cases declares the boundary {name!r}, but none of its {len(rows)} cases is at it")
    return covered


def _case_label(ids: Callable[[Any], "str | None"] | None, value: Any) -> str:
    label = ids(value) if ids is not None else None
    return str(label) if label is not None else repr(value)[:60]


_device_asked = ["auto"]  # the run's --device, set by the plugin before the suite is collected


def use_device(device: str) -> None:
    """Where this session's device checks run (auto, cpu or cuda): the grader's settings."""
    _device_asked[0] = device


def grading_devices() -> list[str]:
    """Devices to parametrize device checks over: cpu, plus cuda when present, else meta.

    The meta device has no data but catches tensors created on the wrong device; `checks grade
    --device cpu` leaves cuda out even where it exists.
    """
    wanted = _device_asked[0]
    available = cuda_available()  # asked of NVML: grading processes are forked after this
    if wanted == "cuda" and not available:
        raise RuntimeError("--device cuda was asked for, but torch sees no CUDA device")
    use_cuda = available and wanted != "cpu"
    return ["cpu", "cuda"] if use_cuda else ["cpu", "meta"]


def fail(message: str) -> None:
    raise CheckFailed(message)


def public_module(suite_file: str, name: str) -> types.ModuleType:
    """A module of the assignment's public checks, for the hidden suite that shares it with them:
    `diagnoses = public_module(__file__, "diagnoses")` in autograder/<a>/x.py loads
    assignments/<a>/tests/diagnoses.py, so that one table of likely mistakes serves both suites
    (students see it: it names mistakes, it holds no answer). Write `name` as a string constant:
    an export ships the modules its suite names so. Before the release is built, its source in
    solutions/<a>/tests/ serves (so that `checks verify` says only that the release is not built)."""
    suite = Path(suite_file).resolve().parent
    path = suite.parents[1] / "assignments" / suite.name / "tests" / f"{name}.py"
    source = suite.parents[1] / "solutions" / suite.name / "tests" / f"{name}.py"
    key = f"checks_public_{suite.name}_{name}"
    if key in sys.modules:
        return sys.modules[key]
    if not path.is_file() and source.is_file():
        path = source
    if not path.is_file():
        raise FileNotFoundError(f"the hidden suite in {suite} loads {path}, which is missing: run `checks build`")
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type] - a .py file always has a spec
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        del sys.modules[key]
        raise
    return module


def _call() -> str:
    student = current_student.get()
    return student.last_call if student is not None and student.last_call else "the call"


def _failed(got: Any, expected_text: str, diagnose: Diagnose | None, detail: str = "", *,
            subject: str | Later | None = None) -> None:
    opening = f"{subject} is" if subject else f"{_call()} returned"
    message = f"{opening} {summarize(got)}; expected {expected_text}."
    if detail:
        message += f" {detail}"
    hint = _diagnosis(diagnose, got)
    if hint:
        message += f" Likely mistake: {hint}"
    fail(message)


def _diagnosis(diagnose: Diagnose | None, got: Any) -> str | None:
    """What `diagnose` says of `got`; a diagnosis that breaks on an odd value says nothing, so
    that it never turns the student's failure into a grader error."""
    if diagnose is None:
        return None
    try:
        return diagnose(got)
    except Exception:  # noqa: BLE001 - a suite's diagnosis, run on whatever the student returned
        return None


def _is_int(value: Any) -> bool:
    return (type(value) is int) or (isinstance(value, np.integer) and type(value).__module__ == "numpy")


def as_index_tuple(got: Any, expected_len: int | None = None) -> tuple[int, ...]:
    """A shape, stride or index as a tuple of Python ints (lists and NumPy ints accepted)."""
    if type(got) in (tuple, list) and all(_is_int(item) for item in got):
        result = tuple(int(item) for item in got)
        if expected_len is None or len(result) == expected_len:
            return result
        fail(f"{_call()} returned {summarize(got)} with {len(result)} entries; expected {expected_len}.")
    fail(f"{_call()} returned {summarize(got)}; expected a tuple of ints.")
    raise AssertionError  # unreachable: fail raises


def expect_equal(got: Any, expected: Any, *, diagnose: Diagnose | None = None) -> None:
    """Exact equality, after checking that `got` is the kind of value `expected` is."""
    if isinstance(expected, bool):
        if type(got) is bool or isinstance(got, np.bool_):
            if bool(got) != expected:
                _failed(got, repr(expected), diagnose)
            return
        _failed(got, f"a bool ({expected!r})", diagnose)
    elif _is_int(expected):
        if not _is_int(got):
            _failed(got, f"an int ({int(expected)!r})", diagnose)
        elif int(got) != int(expected):
            _failed(got, repr(int(expected)), diagnose)
    elif isinstance(expected, tuple) and all(_is_int(item) for item in expected):
        if as_index_tuple(got) != tuple(int(item) for item in expected):
            _failed(got, summarize(tuple(int(item) for item in expected)), diagnose)
    elif isinstance(expected, np.ndarray):
        array = _as_array(got)
        if array is None or array.shape != expected.shape or not np.array_equal(array, expected):
            _failed(got, summarize(expected), diagnose)
    elif type(got) is not type(expected) or got != expected:
        _failed(got, summarize(expected), diagnose)


def expect_close(got: Any, expected: Any, *, rtol: float = 1e-7, atol: float = 1e-9,
                 diagnose: Diagnose | None = None, what: str = "values", subject: str | Later | None = None,
                 shape_hint: Callable[[tuple[int, ...]], "str | None"] | None = None,
                 alternatives: Iterable[tuple[Any, str]] = (), dtype: str | None = None,
                 note: str | Later = "") -> None:
    """Numerical closeness of arrays, tensors or numbers, with feedback on where they differ.

    `subject` names the value in the feedback ("add_backward(...): grad_a"; default: what the last
    call returned; a Later where saying it costs more than the check). `shape_hint(shape)`
    explains a wrong shape. `alternatives` are (value, sentence) pairs, each what a known mistake
    would give: a result close to one names that mistake. `dtype` is required of a close result
    ("float64"). `note` is added when the values differ.
    """
    want = _as_array(expected)
    have = _as_array(got)
    if want is None:
        raise TypeError(f"expect_close cannot compare against {type(expected).__name__}")
    if have is None or have.dtype.kind not in "biufc":
        _failed(got, f"an array of {what} of shape {tuple(want.shape)}", diagnose, subject=subject)
    if dtype is not None and not isinstance(got, (np.ndarray, np.generic, int, float)):
        _failed(got, f"a NumPy {dtype} array", None, subject=subject)
    if have.shape != want.shape:
        hint = _diagnosis(shape_hint, tuple(have.shape))
        _failed(got, f"shape {tuple(want.shape)}", diagnose if hint is None else (lambda _: hint),
                f"It has shape {tuple(have.shape)}.", subject=subject)
    values = have.astype(np.result_type(have.dtype, want.dtype, np.float64))
    want = want.astype(np.float64)

    def close(a: np.ndarray, b: np.ndarray) -> bool:
        return a.shape == b.shape and allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)

    if close(values, want):
        if dtype is not None and have.dtype != np.dtype(dtype):
            _failed(got, f"{what} of dtype {dtype}", None, f"It has dtype {have.dtype}.", subject=subject)
        return
    # Only a failure shows the expected value: summarizing it (np.array2string) costs more than the check.
    shown = summarize(expected) if want.size <= 8 else f"{what} of shape {tuple(want.shape)}"
    detail = _difference(values, want, rtol, atol, what)
    if np.abs(want).max(initial=0.0) > atol:
        for value, sentence in alternatives:
            candidate = _as_array(value)
            if candidate is not None and close(values, candidate.astype(np.float64)) \
                    and not close(candidate.astype(np.float64), want):
                _failed(got, shown, lambda _: sentence, detail, subject=subject)
    if dtype is not None and have.dtype != np.dtype(dtype):
        detail += f" It came back as {have.dtype}: keep everything in {dtype}."
    if note and _diagnosis(diagnose, got) is None:
        detail += f" {note}"
    _failed(got, shown, diagnose, detail, subject=subject)


def allclose(a: np.ndarray, b: np.ndarray, *, rtol: float, atol: float, equal_nan: bool = False) -> bool:
    """np.allclose(a, b, ...) for arrays of float dtype, in a third of its time when they are close
    (the usual answer, hundreds of times a submission); NumPy's own when they are not."""
    with np.errstate(invalid="ignore", over="ignore"):
        difference = np.abs(a - b)
        if (difference <= atol + rtol * np.abs(b)).all() and np.isfinite(difference).all():
            return True  # each pair finite and within the tolerance: exactly where np.isclose holds too
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def is_close(got: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Whether `got` (whatever came back: an array, a tensor, a number, None, a string) has
    `expected`'s shape and values within the tolerance; False for anything not numeric, so that a
    suite may ask it of any answer without guarding it first."""
    have, want = _as_floats(got), _as_floats(expected)
    if have is None or want is None or have.shape != want.shape:
        return False
    return allclose(have, want, rtol=rtol, atol=atol)


def first_match(got: Any, mistakes: Iterable[tuple[Any, str]], *, rtol: float = 1e-6,
                atol: float = 1e-9) -> str | None:
    """The sentence of the first (value, sentence) pair in `mistakes` whose value `got` is close
    to (is_close), else None: a `diagnose` from what known mistakes would return. A value of None
    is skipped (a mistake that cannot happen in this case). expect_close's `alternatives` do the
    same inside one check; this is for a diagnosis a suite writes itself."""
    for value, sentence in mistakes:
        if value is not None and is_close(got, value, rtol=rtol, atol=atol):
            return sentence
    return None


def _as_floats(value: Any) -> np.ndarray | None:
    """`value` as a float64 array, or None when it is not numeric."""
    array = _as_array(value)
    if array is None or array.dtype.kind not in "biuf":
        return None
    return array.astype(np.float64)


def _difference(have: np.ndarray, want: np.ndarray, rtol: float, atol: float, what: str) -> str:
    if np.isnan(have).any() and not np.isnan(want).any():
        return f"Some {what} are NaN (overflow, log of a non-positive number or 0/0?)."
    error = np.array(np.abs(have - want), dtype=np.float64)  # an array even when 0-d
    error[np.isnan(error)] = np.inf
    bad = ~np.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
    where = np.unravel_index(int(np.argmax(np.where(bad, error, -1.0))), error.shape) if error.ndim else ()
    index = list(map(int, where))
    at = f" at {index}" if index else ""
    text = (f"{int(bad.sum())} of {want.size} {what} differ; max abs error {float(error[where]):.3g}{at} "
            f"(got {have[where].item():.6g}, expected {want[where].item():.6g}).")
    if np.allclose(have, -want, rtol=rtol, atol=atol) and np.abs(want).max() > atol:
        text += " The values have the opposite sign."
    elif np.all(have == 0) and np.any(want != 0):
        text += " Everything came back zero."
    return text


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, TensorData):
        return value.array
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__ == "torch":
        return value.detach().cpu().numpy()
    if isinstance(value, (bool, int, float, np.generic)):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        try:
            array = np.asarray(value)
        except ValueError:
            return None
        return array if array.dtype.kind in "biufc" else None
    return None


@contextlib.contextmanager
def expect_raises(exception_type: type[BaseException] = ValueError, *, because: str = "") -> Iterator[None]:
    """Around one student call that must raise `exception_type` (or a subclass)."""
    reason = f" ({because})" if because else ""
    try:
        yield
    except StudentRaised as raised:
        if raised.is_a(exception_type):
            return
        if raised.is_stub:
            fail(f"{raised.call} raised NotImplementedError (still the stub); expected {exception_type.__name__}{reason}.")
        advice = " The course asks for ValueError on invalid input." if exception_type is ValueError else ""
        fail(f"{raised.call} raised {raised.type_name}: {raised.message}; expected "
             f"{exception_type.__name__}{reason}.{advice}")
    else:
        student = current_student.get()
        got = student.last_result if student is not None else None
        fail(f"{_call()} returned {summarize(got)}; expected it to raise {exception_type.__name__}{reason}.")


# ---- references from PyTorch, refusals included ------------------------------------------------

# What PyTorch raises when it rejects an input (a shape, an index, a layout).
TORCH_REFUSALS = (RuntimeError, IndexError, ValueError, TypeError, OverflowError)


class Refusal:
    """PyTorch rejected the input; keeps the first sentence of its message for the feedback."""

    def __init__(self, error: BaseException) -> None:
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if len(text) > 100 and ". " in text:  # PyTorch's first sentence says it
            text = text[:text.index(". ") + 1]
        self.message = text if len(text) <= 160 else text[:157] + "..."


def ask_reference(compute: Callable[[], Any]) -> Any:
    """What `compute()` (a PyTorch reference) returns, or a Refusal where PyTorch rejects the input."""
    try:
        return compute()
    except TORCH_REFUSALS as error:
        return Refusal(error)


def reference_or_refusal(compute: Callable[[], Any] | Any, call: Callable[[], Any],
                         because: str | Callable[[], str]) -> Any:
    """PyTorch's answer for this case. Where PyTorch rejects the input, the student's `call` must
    raise ValueError as well (the feedback says `because` and PyTorch's own words), and the case
    ends there: passed if it did, failed if not. `compute` may also be the answer itself, asked
    before with ask_reference (a @cases reference, computed once for every submission)."""
    expected = ask_reference(compute) if callable(compute) else compute
    if not isinstance(expected, Refusal):
        return expected
    why = because() if callable(because) else because
    with expect_raises(ValueError, because=f"{why}; PyTorch refuses it too: {expected.message}"):
        call()
    raise CaseSettled
