"""The likely mistakes of 01_tensors, as the grader models them: never released.

Each entry of DIAGNOSES takes what the student's function returned (`got`) and the case (its
arguments and PyTorch's answer, `expected`) and names the mistake that would give that result, or
says None. REFUSED stands for a ValueError on an input PyTorch accepts. A model of a mistake is
most of an answer (the strides of a column-major tensor are one loop away from a row-major one's),
so this module stays in the grader: the hidden suite calls it, and for the public checks
`checks build` asks it about the public cases only (CANDIDATES: the wrong answers each mistake
gives there) and releases what it said as data (release_data.py, tests/diagnoses.json).

    expect_equal(got, expected, diagnose=diagnosis("strides.numel", shape=shape, expected=expected))
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from checks.suite import diagnosis_table

REFUSED = object()  # `got` when the student raised ValueError on an input PyTorch accepts


# ---- models of common mistakes ------------------------------------------------------------------

def ints(values) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def row_major(shape) -> tuple[int, ...]:
    out, step = [], 1
    for size in reversed(tuple(shape)):
        out.append(step)
        step *= max(size, 1)
    return tuple(reversed(out))


def column_major(shape) -> tuple[int, ...]:
    out, step = [], 1
    for size in shape:
        out.append(step)
        step *= max(size, 1)
    return tuple(out)


def unclamped_row_major(shape) -> tuple[int, ...]:
    return tuple(math.prod(shape[k + 1:]) for k in range(len(shape)))


def inclusive_row_major(shape) -> tuple[int, ...]:
    return tuple(math.prod(max(s, 1) for s in shape[k:]) for k in range(len(shape)))


def is_contiguous(sizes, steps) -> bool:
    """PyTorch's rule: no elements, or each dim of size > 1 has the row-major stride."""
    if 0 in sizes:
        return True
    step = 1
    for size, stride in zip(reversed(sizes), reversed(steps)):
        if size != 1:
            if stride != step:
                return False
            step *= size
    return True


def gathered(storage, sizes, steps, start) -> np.ndarray | None:
    """The strided view of a 1-D storage, as torch.as_strided gives it; None when it reaches outside."""
    data = np.asarray(storage)
    positions = np.full(sizes, start, dtype=np.int64)
    for k, (size, stride) in enumerate(zip(sizes, steps)):
        shape = [1] * len(sizes)
        shape[k] = size
        positions = positions + np.arange(size, dtype=np.int64).reshape(shape) * stride
    if positions.size and (positions.min() < 0 or positions.max() >= data.shape[0]):
        return None
    return data[positions.reshape(-1)].reshape(sizes)


def same_ignoring_size1(a, b, shape) -> bool:
    a, b = tuple(a), tuple(b)
    return len(a) == len(b) == len(shape) and all(s == 1 or x == y for x, y, s in zip(a, b, shape))


def safe_tuple(got):
    """`got` as a tuple of ints, or None when it is not one (a diagnosis must not fail)."""
    if isinstance(got, (tuple, list)) and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in got):
        return tuple(int(v) for v in got)
    return None


def left_aligned(shapes):
    """Broadcasting's classic mistake: padding with 1s on the RIGHT (aligning from the left)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for k, size in enumerate(tuple(shape) + (1,) * (ndim - len(shape))):
            if size != 1:
                if out[k] not in (1, size):
                    return None
                out[k] = size
    return tuple(out)


def _row_major_index(flat: int, sizes) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, sizes)) if sizes else ()


# ---- strides.py ----------------------------------------------------------------------------------

def numel(got, shape, **_) -> str | None:
    sizes = ints(shape)
    if got == 0 and not sizes:
        return "the product of no sizes at all is 1: a 0-d tensor holds exactly one element."
    if got == sum(sizes):
        return "the sizes were added; the number of elements is their product."
    if 0 in sizes and got != 0:
        return "a dim of size 0 makes the whole tensor empty (0 elements), however big the other dims are."
    return None


def contiguous_strides(got, shape, **_) -> str | None:
    sizes, got = ints(shape), safe_tuple(got)
    if got is None:
        return None
    if not sizes and got:
        return "a 0-d tensor has no dims, so it has no strides: return ()."
    if got == column_major(sizes):
        return ("these are column-major (Fortran-order) strides. PyTorch is row-major: the LAST "
                "dim moves fastest and has stride 1.")
    if got == unclamped_row_major(sizes):
        return ("a size-0 dim must count as size 1 when you multiply the sizes to its right "
                "(PyTorch does this so the other strides stay meaningful).")
    if got == inclusive_row_major(sizes):
        return ("off by one dim: the stride of dim k is the product of the sizes to the RIGHT of "
                "dim k, not including size k itself.")
    if got == tuple(reversed(row_major(sizes))):
        return "the strides came out in reverse order: the first entry belongs to dim 0, the largest."
    if len(got) == len(sizes) and got[-1:] == (1,):
        return ("one step along dim k skips a whole block made of the dims AFTER k: its stride is the "
                "product of the sizes of dims k+1, k+2, ..., last (a size 0 counting as 1).")
    return None


def offset(got, index, strides, expected, storage_offset=0, **_) -> str | None:
    start, idx, steps = int(storage_offset or 0), ints(index), ints(strides)
    if got == expected - start and start:
        return f"the storage offset ({start}) was not added: every address starts from it."
    if got == start + sum(i * s for i, s in zip(idx, reversed(steps))) and steps != tuple(reversed(steps)):
        return "index k must be multiplied by stride k: the strides were paired in reverse order."
    if got == start + sum(idx) and any(s != 1 for s in steps):
        return "each index must be multiplied by its stride before adding."
    return None


def unravel(got, flat, shape, expected, **_) -> str | None:
    sizes, got = ints(shape), safe_tuple(got)
    if got is None or len(got) != len(sizes):
        return None if got is None else f"the index needs one entry per dim: {len(sizes)} here."
    # Each mistake is named only when it gives this very index for this flat; a whole-order
    # mistake (column-major, reversed) first, since the index of a neighbour can coincide with it.
    f, col = int(flat), []
    for size in sizes:
        f, digit = divmod(f, size)
        col.append(digit)
    if got == tuple(col) and got != tuple(expected):
        return "this is column-major order; in row-major order the LAST dim moves fastest."
    if got == tuple(reversed(expected)) and got != tuple(expected):
        return "the entries are in reverse order: the first one is the index along dim 0."
    for near in (int(flat) - 1, int(flat) + 1):
        if 0 <= near < math.prod(sizes) and got == _row_major_index(near, sizes):
            return f"off by one: that is the index of element {near}, not {int(flat)}."
    return None


def transpose(got, shape, strides, expected, **_) -> str | None:
    """`got` and `expected`: (shape, strides) pairs."""
    got_shape, got_strides = ints(got[0]), ints(got[1])
    sizes, steps = ints(shape), ints(strides)
    if got_shape == tuple(expected[0]) and same_ignoring_size1(got_strides, steps, got_shape):
        return "the shape was swapped but the strides were not: swap both, in the same two places."
    if got_shape == sizes and same_ignoring_size1(got_strides, expected[1], expected[0]):
        return "the strides were swapped but the shape was not: swap both."
    if got_shape == sizes and got_strides == steps:
        return ("nothing was swapped. Negative dims count from the end (dim -1 is the last one); "
                "wrap them before using them as positions.")
    if got_shape == tuple(reversed(sizes)):
        return "the whole shape was reversed; a transpose exchanges exactly the two dims it is given."
    return None


def permute(got, shape, strides, dims, expected, **_) -> str | None:
    """`got` and `expected`: (shape, strides) pairs."""
    got_shape, got_strides = ints(got[0]), ints(got[1])
    sizes, steps = ints(shape), ints(strides)
    order = [d % len(sizes) for d in ints(dims)] if sizes else []
    inverse = [order.index(k) for k in range(len(order))]
    inv_shape = tuple(sizes[d] for d in inverse)
    inv_strides = tuple(steps[d] for d in inverse)
    if got_shape == tuple(expected[0]) and same_ignoring_size1(got_strides, steps, got_shape):
        return "the shape was permuted but the strides were not: each stride travels with its dim."
    if got_shape == tuple(expected[0]) and same_ignoring_size1(got_strides, inv_strides, got_shape):
        return ("the shape and the strides were permuted differently: the strides got the inverse "
                "permutation. Result dim k is old dim dims[k], for its size AND its stride.")
    if got_shape == inv_shape:
        return ("this is the inverse permutation: result dim k must be old dim dims[k] "
                "(new[k] = old[dims[k]]), not new[dims[k]] = old[k].")
    return None


def is_contiguous_(got, shape, strides, expected, **_) -> str | None:
    sizes, steps = ints(shape), ints(strides)
    if expected and 0 in sizes:
        return "a tensor with no elements is always contiguous, whatever its strides."
    if expected and 1 in sizes:
        return ("the stride of a size-1 dim never matters (you never step along it), so skip size-1 "
                "dims when you compare.")
    if not expected and any(s == 0 and n > 1 for n, s in zip(sizes, steps)):
        return "a stride-0 dim of size > 1 reads the same element repeatedly: that layout is not contiguous."
    if not expected and all(a >= b for a, b in zip(steps, steps[1:])):
        return ("decreasing strides are not enough: each stride must be exactly the product of the "
                "sizes to its right (no gaps, as in a sliced tensor).")
    return None


def view(got, shape, strides, new_shape, expected, **_) -> str | None:
    """`expected`: the (shape, strides) pair of the view."""
    sizes, steps = ints(shape), ints(strides)
    if got is REFUSED:  # a view PyTorch accepts
        if math.prod(sizes) == 0:
            return "a tensor with no elements can be viewed as any shape with no elements."
        if any(n == 1 for n in sizes):
            return "a size-1 dim never splits memory into separate blocks, whatever its stride: skip it."
        return None
    got, (out_shape, _) = safe_tuple(got), expected
    if got is None:
        return None
    if -1 in ints(new_shape) and len(got) == len(out_shape) and -1 in got:
        return "the -1 must be replaced by the size that makes the element count match."
    fresh = row_major(out_shape)
    as_if_contiguous = any(same_ignoring_size1(got, tuple(c * f for f in fresh), out_shape) for c in {1, *steps})
    if as_if_contiguous and not is_contiguous(sizes, steps):
        return (f"these strides treat the tensor as if it were contiguous, but its strides are {steps}: "
                "a view must step through memory the way the original dims do.")
    return None


def gather(got, storage, shape, strides, expected, storage_offset=0, **_) -> str | None:
    start, sizes, steps = int(storage_offset or 0), ints(shape), ints(strides)
    if start:
        ignored = gathered(storage, sizes, steps, 0)
        if ignored is not None and np.array_equal(got, ignored):
            return f"the storage offset ({start}) was ignored: element (0, ..., 0) is storage[{start}]."
    if len(sizes) >= 2:
        flipped = gathered(storage, sizes, steps[::-1], start)
        if flipped is not None and np.array_equal(got, flipped) and not np.array_equal(got, expected):
            return "strides were applied to the dims in reverse order: stride k belongs to dim k."
    return None


# ---- broadcasting.py -----------------------------------------------------------------------------

def broadcast_shape(got, shapes, expected, **_) -> str | None:
    plain = [ints(s) for s in shapes]
    if got is REFUSED:  # shapes PyTorch broadcasts
        return ("these shapes do broadcast: line them up on their LAST dim (pad the shorter ones with 1s at the "
                "front), not on their first." if left_aligned(plain) != tuple(expected) else None)
    got = safe_tuple(got)
    if got is None:
        return None
    if got == left_aligned(plain):
        return ("the shapes were aligned from the left. Broadcasting lines shapes up on their LAST "
                "dim and pads the shorter ones with 1s at the front.")
    if len(got) == len(expected) and any(e == 0 and g == 1 for g, e in zip(got, expected)):
        return "a size-0 dim meeting a size-1 dim gives 0: the 1 is the one that stretches (to 0)."
    if len(got) != len(expected):
        return "the result has as many dims as the longest shape."
    return None


def broadcast_strides(got, shape, strides, target_shape, **_) -> str | None:
    sizes, steps, target = ints(shape), ints(strides), ints(target_shape)
    lead = len(target) - len(sizes)
    if got is REFUSED:
        return ("match the dims from the right: the last dim of the shape goes with the last dim of the target."
                if lead else None)
    got = safe_tuple(got)
    if got is None or len(got) != len(target):
        return None if got is None else f"one stride per dim of the target: {len(target)} here."
    stretched = [lead + k for k, n in enumerate(sizes) if n == 1 and target[lead + k] != 1]
    if any(got[k] != 0 for k in stretched if got[k] == steps[k - lead]):
        return ("a stretched size-1 dim must get stride 0, so that every step along it reads the same "
                "element again (that is why broadcasting copies nothing).")
    if any(got[k] != 0 and target[k] != 1 for k in range(lead)):
        return "new leading dims must get stride 0: the whole tensor is repeated without copying it."
    if lead and got[:len(sizes)] == steps:
        return "the strides were aligned from the left; dims are matched from the RIGHT (last dims together)."
    return None


def broadcast_index(got, out_index, out_shape, shape, **_) -> str | None:
    where, full, sizes = ints(out_index), ints(out_shape), ints(shape)
    if got is REFUSED:
        return ("match the dims from the right: the last dim of shape goes with the last dim of out_shape."
                if len(sizes) < len(full) else None)
    got = safe_tuple(got)
    if got is None:
        return None
    if len(got) != len(sizes):
        return f"the result indexes the input, so it has one entry per input dim: {len(sizes)} here."
    if any(n == 1 and g != 0 for g, n in zip(got, sizes)):
        return "along a dim where the input has size 1 there is only element 0 to read: use index 0."
    if len(sizes) < len(full) and got == where[:len(sizes)]:
        return "the dims were aligned from the left; keep the LAST len(shape) entries of out_index."
    return None


# ---- the table -----------------------------------------------------------------------------------

DIAGNOSES: dict[str, Callable[..., str | None]] = {
    "strides.numel": numel,
    "strides.contiguous_strides": contiguous_strides,
    "strides.offset": offset,
    "strides.unravel": unravel,
    "strides.transpose": transpose,
    "strides.permute": permute,
    "strides.is_contiguous": is_contiguous_,
    "strides.view": view,
    "strides.gather": gather,
    "broadcasting.broadcast_shape": broadcast_shape,
    "broadcasting.broadcast_strides": broadcast_strides,
    "broadcasting.broadcast_index": broadcast_index,
}


# The `diagnose` for one case of a question: given what came back, the likely mistake or None (an
# entry that breaks on an odd value says nothing).
diagnosis = diagnosis_table(DIAGNOSES)


def refusal_hint(qid: str, **case: Any) -> str | None:
    """What to say to a student whose function raised ValueError on an input PyTorch accepts."""
    return diagnosis(qid, **case)(REFUSED)


# ---- the wrong answers each mistake gives, for the public table -----------------------------------
# `checks build` asks DIAGNOSES about each of these on each public case and releases the value with
# what was said of it (release_data.py): data about the public cases, no code.

def _offset_candidates(index, strides, expected, storage_offset=0, **_):
    start, idx, steps = int(storage_offset or 0), ints(index), ints(strides)
    return [expected - start, start + sum(i * s for i, s in zip(idx, reversed(steps))), start + sum(idx)]


def _unravel_candidates(flat, shape, expected, **_):
    sizes = ints(shape)
    near = [_row_major_index(f, sizes) for f in (int(flat) - 1, int(flat) + 1) if 0 <= f < math.prod(sizes)]
    f, col = int(flat), []
    for size in sizes:
        f, digit = divmod(f, size)
        col.append(digit)
    return [*near, tuple(reversed(expected)), tuple(col)]


def _pair_candidates(shape, strides, expected, dims=None, **_):
    sizes, steps = ints(shape), ints(strides)
    out = [(tuple(expected[0]), steps), (sizes, tuple(expected[1])), (sizes, steps),
           (tuple(reversed(sizes)), tuple(reversed(steps))), (tuple(reversed(sizes)), steps)]
    if dims is not None and sizes:
        order = [d % len(sizes) for d in ints(dims)]
        inverse = [order.index(k) for k in range(len(order))]
        inv_shape, inv_strides = tuple(sizes[d] for d in inverse), tuple(steps[d] for d in inverse)
        out += [(tuple(expected[0]), inv_strides), (inv_shape, inv_strides), (inv_shape, steps)]
    return out


def _view_candidates(shape, strides, expected, **_):
    fresh = row_major(expected[0])
    return [REFUSED, *(tuple(c * f for f in fresh) for c in sorted({1, *ints(strides)}))]


def _gather_candidates(storage, shape, strides, storage_offset=0, **_):
    sizes, steps = ints(shape), ints(strides)
    return [x for x in (gathered(storage, sizes, steps, 0), gathered(storage, sizes, steps[::-1], int(storage_offset)))
            if x is not None]


def _broadcast_shape_candidates(shapes, expected, **_):
    plain = [ints(s) for s in shapes]
    return [REFUSED, left_aligned(plain), tuple(1 if e == 0 else e for e in expected), tuple(expected)[1:]]


def _broadcast_strides_candidates(shape, strides, target_shape, expected, **_):
    sizes, steps, target = ints(shape), ints(strides), ints(target_shape)
    lead = len(target) - len(sizes)
    kept = tuple(expected[:lead]) + tuple(steps)
    leading = tuple(row_major(target)[:lead]) + tuple(expected[lead:])
    return [REFUSED, kept, leading, tuple(steps) + (0,) * lead]


def _broadcast_index_candidates(out_index, out_shape, shape, **_):
    where, sizes = ints(out_index), ints(shape)
    lead = len(ints(out_shape)) - len(sizes)
    return [REFUSED, where[:len(sizes)], where[lead:]]


CANDIDATES: dict[str, Callable[..., list]] = {
    "strides.numel": lambda shape, **_: [sum(ints(shape)), 0, 1, math.prod(s for s in ints(shape) if s)],
    "strides.contiguous_strides": lambda shape, **_: [
        (), column_major(ints(shape)), unclamped_row_major(ints(shape)), inclusive_row_major(ints(shape)),
        tuple(reversed(row_major(ints(shape))))],
    "strides.offset": _offset_candidates,
    "strides.unravel": _unravel_candidates,
    "strides.transpose": _pair_candidates,
    "strides.permute": _pair_candidates,
    "strides.is_contiguous": lambda expected, **_: [not expected],
    "strides.view": _view_candidates,
    "strides.gather": _gather_candidates,
    "broadcasting.broadcast_shape": _broadcast_shape_candidates,
    "broadcasting.broadcast_strides": _broadcast_strides_candidates,
    "broadcasting.broadcast_index": _broadcast_index_candidates,
}
