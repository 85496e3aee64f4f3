"""Grader-side helpers for the 01_tensors suite: PyTorch references and stride comparisons. The
likely mistakes are named by the grader's models of them (tensor_mistakes.py, never released: a
model of a mistake is most of an answer); the public checks read what those models say of the
public cases only, from a table `checks build` writes (release_data.py).

Every expected value is computed by PyTorch: once per case when the suite is collected (a test's
`reference`, see torch_reference), so that every submission of a batch shares it. This module only
asks, compares and explains.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from checks.suite import as_index_tuple, ask_reference, expect_raises, fail
from tensor_mistakes import REFUSED, diagnosis


# ---- asking PyTorch -------------------------------------------------------------------------
# (a reference, or PyTorch's refusal of the input: checks.suite.reference_or_refusal)

def torch_reference(compute):
    """A @cases reference: what `compute(**case)` returns, or PyTorch's Refusal of the case's input.
    @cases runs it once per case at collection time, so `compute` must stay on the CPU."""
    @functools.wraps(compute)
    def reference(**case):
        return ask_reference(lambda: compute(**case))
    return reference


def expect_value_error(call, why: str) -> None:
    """The student call must raise ValueError: the input is invalid where PyTorch has no say."""
    with expect_raises(ValueError, because=why):
        call()


# What the feedback says where the student's code raised on an input PyTorch accepts (call_or_fail).
ACCEPTED = "PyTorch accepts this input"


def when_refused(diagnose):
    """call_or_fail's `mistake` for these checks: where the student's code raised ValueError on an
    input PyTorch accepts, what the table says of a refusal (REFUSED); else nothing."""
    return lambda raised: diagnose(REFUSED) if raised.is_a(ValueError) else None


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def ints(values) -> tuple[int, ...]:
    """Plain Python ints for handing to PyTorch (cases may hold lists or NumPy integers)."""
    return tuple(map(int, values))  # called about 2,700 times a submission: no generator


def strided(shape, strides) -> torch.Tensor:
    """A tensor with exactly this layout (its values are never read)."""
    return torch.empty_strided(ints(shape), ints(strides), dtype=torch.uint8)


def layout(tensor: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A tensor's (shape, strides), as the student's layout functions return them."""
    return tuple(tensor.shape), tuple(tensor.stride())


# ---- comparing ------------------------------------------------------------------------------

def fmt(values) -> str:
    """A tuple the way Python prints one: (3,) and (2, 3)."""
    values = tuple(values)
    return f"({values[0]},)" if len(values) == 1 else "(" + ", ".join(str(v) for v in values) + ")"


def _hint(diagnose, got) -> str:
    if diagnose is None:
        return ""
    try:
        text = diagnose(got)
    except Exception:  # a diagnosis must never turn a student's failure into a grader error
        text = None
    return f" Likely mistake: {text}" if text else ""


def expect_strides(student, got, expected, shape, *, diagnose=None, what="strides") -> None:
    """Compare strides, skipping the dims of size 1 (their stride never changes an address)."""
    expected = ints(expected)
    have = as_index_tuple(got)
    if len(have) != len(expected):
        fail(f"{student.last_call} returned {what} {fmt(have)} with {len(have)} entries; expected "
             f"{len(expected)}, one per dim of a tensor of shape {fmt(shape)}.{_hint(diagnose, got)}")
    bad = [k for k, size in enumerate(shape) if size != 1 and have[k] != expected[k]]
    if not bad:
        return
    shown = fmt("*" if size == 1 else str(e) for size, e in zip(shape, expected))
    skipped = " (* marks a size-1 dim, whose stride is not graded)" if 1 in tuple(shape) else ""
    k = bad[0]
    fail(f"{student.last_call} returned {what} {fmt(have)}; expected {shown}{skipped}. Dim {k} (size {shape[k]}) "
         f"has stride {have[k]}, expected {expected[k]}.{_hint(diagnose, got)}")


def split_layout(student, got):
    """A (shape, strides) pair from the student as two tuples of ints."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{student.last_call} returned {got!r}; expected a pair (shape, strides).")
    parts = []
    for part, name in zip(got, ("shape", "strides")):
        if not isinstance(part, (tuple, list)) or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in part):
            fail(f"{student.last_call} returned {got!r}; the {name} part should be a tuple of ints.")
        parts.append(tuple(int(v) for v in part))
    return parts[0], parts[1]


def expect_layout(student, got, shape, strides, *, diagnose=None) -> None:
    """A (shape, strides) result: the shape exactly, the strides outside size-1 dims."""
    got_shape, got_strides = split_layout(student, got)
    shape, strides = ints(shape), ints(strides)
    if got_shape != shape:
        fail(f"{student.last_call} returned shape {fmt(got_shape)} (with strides {fmt(got_strides)}); "
             f"expected shape {fmt(shape)}.{_hint(diagnose, (got_shape, got_strides))}")
    expect_strides(student, got_strides, strides, shape, what="strides",
                   diagnose=(lambda _got: diagnose((got_shape, got_strides))) if diagnose else None)


def expect_array(student, got, expected: np.ndarray, *, diagnose=None) -> None:
    """A NumPy array with the expected shape, dtype and values (exactly)."""
    if isinstance(got, np.generic):
        got = np.asarray(got)
    if not isinstance(got, np.ndarray):
        kind = "a tensor (return a NumPy array: tensor.numpy())" if type(got).__name__ == "TensorData" \
            else type(got).__name__
        fail(f"{student.last_call} returned {kind}; expected a NumPy array of shape {fmt(expected.shape)}.")
    if got.shape != expected.shape:
        fail(f"{student.last_call} returned an array of shape {fmt(got.shape)}; expected shape {fmt(expected.shape)}."
             f"{_hint(diagnose, got)}")
    if got.dtype != expected.dtype:
        fail(f"{student.last_call} returned an array of dtype {got.dtype}; expected storage's dtype {expected.dtype}: "
             "the result holds storage's own elements, so build it from them (or pass dtype=storage.dtype).")
    if np.array_equal(got, expected):
        return
    where = tuple(int(i) for i in np.argwhere(got != expected)[0])
    fail(f"{student.last_call} returned {_short(got)}; expected {_short(expected)}. First difference at index "
         f"{fmt(where)}: got {got[where]!r}, expected {expected[where]!r}.{_hint(diagnose, got)}")


def _short(array: np.ndarray) -> str:
    if array.size <= 12:
        return np.array2string(array, separator=", ").replace("\n", "")
    return f"an array of shape {fmt(array.shape)}"
