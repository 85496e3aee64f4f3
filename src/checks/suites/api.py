"""What a hidden or public suite imports: the `question` marker and the checks.

Checks run in the grader on plain data that came back from the sandbox. A failed check raises
CheckFailed with a message written for the student: what was called, what came back, what was
expected and, when a `diagnose` function recognises it, the likely mistake.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np
import pytest
from _pytest.mark.structures import ParameterSet

from checks.sandbox.codec import TensorData
from checks.suites.student import (MissingFunction, Student, StudentCrashed, StudentFault, StudentRaised, StudentTimeout,
                            UnsupportedReturn)
from checks.suites.describe import summarize

__all__ = ["CheckFailed", "MissingFunction", "StudentCrashed", "StudentFault", "StudentRaised", "StudentTimeout",
           "TensorData", "UnsupportedReturn", "as_index_tuple", "cases", "expect_close", "expect_equal", "expect_raises", "fail",
           "grading_devices", "question"]

Diagnose = Callable[[Any], "str | None"]
TestFunction = TypeVar("TestFunction", bound=Callable[..., Any])
QUESTION_MARK = "checks_question"

_current: Student | None = None  # set by the plugin for the test that is running
# Set by the plugin around a test made with @cases: called with (label, arguments, error or None)
# once per case, so that each case is scored on its own.
_case_sink: Callable[[str, dict[str, Any], "Exception | None"], None] | None = None


class CheckFailed(AssertionError):
    """A check failed; str() is the feedback for the student."""


def question(qid: str, points: float, *, all_or_nothing: bool = False, use_reference: tuple[str, ...] = (),
             block_imports: tuple[str, ...] = (), timeout: float = 10.0) -> pytest.MarkDecorator:
    """Mark a test function as (part of) question `qid`, worth `points` over all its cases."""
    return getattr(pytest.mark, QUESTION_MARK)(
        qid=qid, points=points, all_or_nothing=all_or_nothing, use_reference=tuple(use_reference),
        block_imports=tuple(block_imports), timeout=timeout)


def cases(argnames: str | Sequence[str], argvalues: Iterable[Any], *,
          ids: Sequence[str] | Callable[[Any], "str | None"] | None = None) -> Callable[[TestFunction], TestFunction]:
    """Like pytest.mark.parametrize, but every case runs inside one pytest test and is still scored
    and reported as its own case: pytest's per-test set-up costs about a millisecond a case, more
    than most checks. Fixtures are set up once for all the cases; pytest.skip skips them all.
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

    def decorate(function: TestFunction) -> TestFunction:
        signature = inspect.signature(function)
        unknown = [name for name in names if name not in signature.parameters]
        if unknown:
            raise TypeError(f"{function.__name__} has no parameter {', '.join(unknown)} for its cases")

        @functools.wraps(function)
        def run_cases(**fixtures: Any) -> None:
            failures: list[tuple[str, Exception]] = []
            for label, row in zip(labels, rows):
                if _current is not None:
                    _current.last_call, _current.last_result = "", None
                arguments = dict(zip(names, row))
                try:
                    function(**fixtures, **arguments)
                    error = None
                except Exception as raised:  # noqa: BLE001 - pytest's skip and exit are BaseExceptions
                    error = raised
                if _case_sink is not None:
                    _case_sink(label, arguments, error)
                elif error is not None:
                    failures.append((label, error))
            if failures:  # run without the checks plugin: fail with the first failure
                label, first = failures[0]
                raise CheckFailed(f"{len(failures)} of {len(rows)} cases failed; the first, [{label}]: "
                                  f"{first}") from first

        run_cases.__signature__ = signature.replace(  # type: ignore[attr-defined] - what pytest reads
            parameters=[p for p in signature.parameters.values() if p.name not in names])
        run_cases.checks_cases = len(rows)  # type: ignore[attr-defined]
        return run_cases  # type: ignore[return-value]
    return decorate


def _case_label(ids: Callable[[Any], "str | None"] | None, value: Any) -> str:
    label = ids(value) if ids is not None else None
    return str(label) if label is not None else repr(value)[:60]


def grading_devices() -> list[str]:
    """Devices to parametrize device checks over: cpu, plus cuda when present, else meta.

    The meta device has no data but catches tensors created on the wrong device; `checks grade
    --device cpu` (CHECKS_DEVICE=cpu) leaves cuda out even where it exists.
    """
    import torch

    wanted = os.environ.get("CHECKS_DEVICE", "auto")
    if wanted == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but torch sees no CUDA device")
    use_cuda = torch.cuda.is_available() and wanted != "cpu"
    return ["cpu", "cuda"] if use_cuda else ["cpu", "meta"]


def fail(message: str) -> None:
    raise CheckFailed(message)


def _call() -> str:
    return _current.last_call if _current is not None and _current.last_call else "the call"


def _failed(got: Any, expected_text: str, diagnose: Diagnose | None, detail: str = "") -> None:
    message = f"{_call()} returned {summarize(got)}; expected {expected_text}."
    if detail:
        message += f" {detail}"
    note = ""
    try:
        hint = diagnose(got) if diagnose is not None else None
        hint = str(hint) if hint else ""
    except Exception as error:  # noqa: BLE001 - the suite's bug: the student's failure stands, without a diagnosis
        hint, note = "", f"diagnose={getattr(diagnose, '__name__', diagnose)!r} raised {type(error).__name__}: {error}"
    if hint:
        message += f" Likely mistake: {hint}"
    failure = CheckFailed(message)
    if note:
        failure.add_note(note)  # for course staff: shown by plain pytest, never in the student's feedback
    raise failure


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
                 diagnose: Diagnose | None = None, what: str = "values") -> None:
    """Numerical closeness of arrays, tensors or numbers, with feedback on where they differ."""
    want = _as_array(expected)
    have = _as_array(got)
    if want is None:
        raise TypeError(f"expect_close cannot compare against {type(expected).__name__}")
    if have is None:
        _failed(got, f"an array of shape {tuple(want.shape)}", diagnose)
    if have.shape != want.shape:
        _failed(got, f"shape {tuple(want.shape)}", diagnose, f"It has shape {tuple(have.shape)}.")
    if have.dtype.kind not in "biufc":
        _failed(got, "numbers", diagnose)
    have, want = have.astype(np.result_type(have.dtype, want.dtype, np.float64)), want.astype(np.float64)
    if np.allclose(have, want, rtol=rtol, atol=atol, equal_nan=True):
        return
    detail = _difference(have, want, rtol, atol, what)
    _failed(got, summarize(expected) if want.size <= 8 else f"{what} of shape {tuple(want.shape)}", diagnose, detail)


def _difference(have: np.ndarray, want: np.ndarray, rtol: float, atol: float, what: str) -> str:
    if np.isnan(have).any() and not np.isnan(want).any():
        return f"Some {what} are NaN (overflow, log of a non-positive number or 0/0?)."
    error = np.abs(have - want)
    error[np.isnan(error)] = np.inf
    where = np.unravel_index(int(np.argmax(error)), error.shape) if error.ndim else ()
    index = list(map(int, where))
    bad = int((~np.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True)).sum())
    text = (f"{bad} of {want.size} {what} differ; max abs error {float(error[where]):.3g} at {index} "
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
        got = _current.last_result if _current is not None else None
        fail(f"{_call()} returned {summarize(got)}; expected it to raise {exception_type.__name__}{reason}.")
