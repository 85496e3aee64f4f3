"""Hidden suite for strides.py. Every expected value and every refusal comes from PyTorch, asked
once per case when the suite is collected (each test's `reference`), not once per submission.
The functions of strides.py are pure, so each test sends its cases' calls to the sandbox at once
(send_ahead)."""

import numpy as np
import torch

import tensor_cases
from checks.suite import Refusal, ask_reference, cases, expect_equal, fail, question, reference_or_refusal
from tensor_checks import (column_major, expect_array, expect_layout, expect_strides,
                           expect_value_error, fmt, inclusive_row_major, ints, layout, plural, row_major, safe_tuple,
                           same_ignoring_size1, strided, torch_reference, unclamped_row_major, value_of)


# ---- numel ------------------------------------------------------------------------------------

@question("strides.numel", points=4)
@cases("shape", tensor_cases.numel_cases(),
       reference=torch_reference(lambda shape: torch.empty(ints(shape)).numel()), send_ahead=True)
def test_numel(student, shape, reference):
    expected = reference_or_refusal(reference, lambda: student.strides.numel(shape),
                                    because=lambda: f"shape {fmt(ints(shape))} has a negative size")

    def diagnose(got):
        sizes = ints(shape)
        if got == 0 and not sizes:
            return "the product of no sizes at all is 1: a 0-d tensor holds exactly one element."
        if got == sum(sizes):
            return "the sizes were added; the number of elements is their product."
        if 0 in sizes and got != 0:
            return "a dim of size 0 makes the whole tensor empty (0 elements), however big the other dims are."
        return None

    expect_equal(value_of(lambda: student.strides.numel(shape), expected), expected, diagnose=diagnose)


# ---- contiguous_strides -----------------------------------------------------------------------

@question("strides.contiguous_strides", points=8)
@cases("shape", tensor_cases.contiguous_strides_cases(),
       reference=torch_reference(lambda shape: tuple(torch.empty(ints(shape)).stride())), send_ahead=True)
def test_contiguous_strides(student, shape, reference):
    expected = reference_or_refusal(reference, lambda: student.strides.contiguous_strides(shape),
                                    because=lambda: f"shape {fmt(ints(shape))} has a negative size")
    sizes = ints(shape)

    def diagnose(got):
        got = safe_tuple(got)
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

    expect_equal(value_of(lambda: student.strides.contiguous_strides(shape), expected), expected,
                 diagnose=diagnose)


# ---- offset -----------------------------------------------------------------------------------

@torch_reference
def offset_reference(index, strides, storage_offset, keyword):
    # A storage just big enough, holding 0, 1, 2, ...: the element read back IS its offset.
    idx, steps, start = ints(index), ints(strides), int(storage_offset or 0)
    shape = tuple(i + 1 for i in idx)
    size = start + sum(i * s for i, s in zip(idx, steps)) + 1
    return int(torch.arange(size).as_strided(shape, steps, start)[idx].item())


@question("strides.offset", points=6)
@cases("index, strides, storage_offset, keyword", tensor_cases.offset_cases(), reference=offset_reference,
       send_ahead=True)
def test_offset(student, index, strides, storage_offset, keyword, reference):
    if storage_offset is None:
        call = lambda: student.strides.offset(index, strides)  # noqa: E731
    elif keyword:
        call = lambda: student.strides.offset(index, strides, storage_offset=storage_offset)  # noqa: E731
    else:
        call = lambda: student.strides.offset(index, strides, storage_offset)  # noqa: E731
    start = int(storage_offset or 0)
    idx, steps = ints(index), ints(strides)
    expected = reference_or_refusal(reference, call,
                                    because=lambda: f"index {fmt(idx)} has length {len(idx)} but strides {fmt(steps)} "
                                                    f"has length {len(steps)}")

    def diagnose(got):
        if got == expected - start and start:
            return f"the storage offset ({start}) was not added: every address starts from it."
        if got == start + sum(i * s for i, s in zip(idx, reversed(steps))) and steps != tuple(reversed(steps)):
            return "index k must be multiplied by stride k: the strides were paired in reverse order."
        if got == start + sum(idx) and any(s != 1 for s in steps):
            return "each index must be multiplied by its stride before adding."
        return None

    expect_equal(value_of(call, expected), expected, diagnose=diagnose)


# ---- unravel ----------------------------------------------------------------------------------

def _torch_unravel(flat, shape):
    """PyTorch's index of element number `flat` (0 <= flat < numel) in a row-major tensor."""
    shape = ints(shape)
    numbered = torch.arange(torch.empty(shape).numel()).reshape(shape)
    return tuple(int(i) for i in (numbered == int(flat)).nonzero()[0])


@torch_reference
def unravel_reference(flat, shape):
    """The number of elements of `shape`, and the index of element `flat` (None when out of range)."""
    total = torch.empty(ints(shape)).numel()
    return total, (_torch_unravel(flat, shape) if 0 <= int(flat) < total else None)


@question("strides.unravel", points=8)
@cases("flat, shape", tensor_cases.unravel_cases(), reference=unravel_reference, send_ahead=True)
def test_unravel(student, flat, shape, reference):
    sizes = ints(shape)
    total, expected = reference_or_refusal(reference, lambda: student.strides.unravel(flat, shape),
                                           because=lambda: f"shape {fmt(sizes)} has a negative size")
    if not 0 <= int(flat) < total:
        expect_value_error(lambda: student.strides.unravel(flat, shape),
                           f"a tensor of shape {fmt(sizes)} has {plural(total, 'element')}, numbered 0..{total - 1}, "
                           f"so {int(flat)} is out of range" if total else
                           f"a tensor of shape {fmt(sizes)} has no elements at all")
        return

    def diagnose(got):
        got = safe_tuple(got)
        if got is None or len(got) != len(sizes):
            return None if got is None else f"the index needs one entry per dim: {len(sizes)} here."
        for near in (int(flat) - 1, int(flat) + 1):
            if 0 <= near < int(np.prod(sizes)) and got == _torch_unravel(near, sizes):
                return f"off by one: that is the index of element {near}, not {int(flat)}."
        if got == tuple(reversed(expected)) and got != expected:
            return "the entries are in reverse order: the first one is the index along dim 0."
        f, col = int(flat), []
        for size in sizes:
            f, digit = divmod(f, size)
            col.append(digit)
        if got == tuple(col):
            return "this is column-major order; in row-major order the LAST dim moves fastest."
        return None

    expect_equal(value_of(lambda: student.strides.unravel(flat, shape), expected), expected, diagnose=diagnose)


# ---- transpose --------------------------------------------------------------------------------

@torch_reference
def transpose_reference(shape, strides, dim0, dim1):
    return layout(strided(shape, strides).transpose(int(dim0), int(dim1)))


@question("strides.transpose", points=8)
@cases("shape, strides, dim0, dim1", tensor_cases.transpose_cases(), reference=transpose_reference, send_ahead=True)
def test_transpose(student, shape, strides, dim0, dim1, reference):
    call = lambda: student.strides.transpose(shape, strides, dim0, dim1)  # noqa: E731
    expected = reference_or_refusal(reference, call,
                                    because=lambda: f"transpose({int(dim0)}, {int(dim1)}) is impossible for shape "
                                                    f"{fmt(ints(shape))} with strides {fmt(ints(strides))}")
    sizes, steps = ints(shape), ints(strides)

    def diagnose(pair):
        got_shape, got_strides = pair
        if got_shape == expected[0] and same_ignoring_size1(got_strides, steps, got_shape):
            return "the shape was swapped but the strides were not: swap both, in the same two places."
        if got_shape == sizes and same_ignoring_size1(got_strides, expected[1], expected[0]):
            return "the strides were swapped but the shape was not: swap both."
        if got_shape == sizes and got_strides == steps:
            return ("nothing was swapped. Negative dims count from the end (dim -1 is the last one); "
                    "wrap them before using them as positions.")
        if got_shape == tuple(reversed(sizes)):
            return "the whole shape was reversed; a transpose exchanges exactly the two dims it is given."
        return None

    expect_layout(student, value_of(call, lambda: f"shape {fmt(expected[0])} with strides {fmt(expected[1])}"),
                  *expected, diagnose=diagnose)


# ---- permute ----------------------------------------------------------------------------------

@torch_reference
def permute_reference(shape, strides, dims):
    return layout(strided(shape, strides).permute(ints(dims)))


@question("strides.permute", points=8)
@cases("shape, strides, dims", tensor_cases.permute_cases(), reference=permute_reference, send_ahead=True)
def test_permute(student, shape, strides, dims, reference):
    call = lambda: student.strides.permute(shape, strides, dims)  # noqa: E731

    def refusal_reason():
        if len(ints(shape)) != len(ints(strides)):
            return f"shape {fmt(ints(shape))} and strides {fmt(ints(strides))} differ in length"
        return f"dims {fmt(ints(dims))} does not name each of the {len(shape)} dims of shape {fmt(ints(shape))} exactly once"

    expected = reference_or_refusal(reference, call, because=refusal_reason)
    sizes, steps = ints(shape), ints(strides)

    def diagnose(pair):
        got_shape, got_strides = pair
        order = [d % len(sizes) for d in ints(dims)] if sizes else []
        inverse = [order.index(k) for k in range(len(order))]
        inv_shape = tuple(sizes[d] for d in inverse)
        inv_strides = tuple(steps[d] for d in inverse)
        if got_shape == expected[0] and same_ignoring_size1(got_strides, steps, got_shape):
            return "the shape was permuted but the strides were not: each stride travels with its dim."
        if got_shape == expected[0] and same_ignoring_size1(got_strides, inv_strides, got_shape):
            return ("the shape and the strides were permuted differently: the strides got the inverse "
                    "permutation. Result dim k is old dim dims[k], for its size AND its stride.")
        if got_shape == inv_shape:
            return ("this is the inverse permutation: result dim k must be old dim dims[k] "
                    "(new[k] = old[dims[k]]), not new[dims[k]] = old[k].")
        return None

    expect_layout(student, value_of(call, lambda: f"shape {fmt(expected[0])} with strides {fmt(expected[1])}"),
                  *expected, diagnose=diagnose)


# ---- is_contiguous ----------------------------------------------------------------------------

@question("strides.is_contiguous", points=8)
@cases("shape, strides", tensor_cases.is_contiguous_cases(),
       reference=torch_reference(lambda shape, strides: bool(strided(shape, strides).is_contiguous())),
       send_ahead=True)
def test_is_contiguous(student, shape, strides, reference):
    call = lambda: student.strides.is_contiguous(shape, strides)  # noqa: E731
    expected = reference_or_refusal(reference, call,
                                    because=lambda: f"shape {fmt(ints(shape))} with strides {fmt(ints(strides))} "
                                                    "is not a valid layout")
    sizes, steps = ints(shape), ints(strides)

    def diagnose(got):
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

    got = value_of(call, expected)
    if not isinstance(got, (bool, np.bool_)):
        fail(f"{student.last_call} returned {got!r}; expected a bool ({expected}).")
    expect_equal(got, expected, diagnose=diagnose)


# ---- view -------------------------------------------------------------------------------------

def total_of(sizes) -> int:
    return int(torch.empty(ints(sizes)).numel())


def _view_refusal(shape, strides, new_shape) -> str:
    new = ints(new_shape)
    total = int(np.prod(ints(shape))) if shape else 1
    if len(ints(shape)) != len(ints(strides)):
        return f"shape {fmt(ints(shape))} and strides {fmt(ints(strides))} differ in length"
    if new.count(-1) > 1:
        return f"{fmt(new)} has more than one -1"
    if any(n < -1 for n in new):
        return f"{fmt(new)} has a negative size other than -1"
    known = int(np.prod([n for n in new if n != -1])) if new else 1
    if -1 in new and known == 0:
        return f"in {fmt(new)} the -1 is ambiguous: the other sizes multiply to 0, so any size would fit"
    if known != total and (-1 not in new or total % known):
        return f"a tensor of shape {fmt(new)} cannot hold exactly {plural(total, 'element')}"
    return (f"shape {fmt(ints(shape))} with strides {fmt(ints(strides))} cannot be viewed as {fmt(new)} "
            "without copying: some new dim would have to span two separate blocks of memory")


@torch_reference
def view_reference(shape, strides, new_shape):
    return layout(strided(shape, strides).view(ints(new_shape)))


@question("strides.view", points=12)
@cases("shape, strides, new_shape", tensor_cases.view_cases(), reference=view_reference, send_ahead=True)
def test_view(student, shape, strides, new_shape, reference):
    call = lambda: student.strides.view(shape, strides, new_shape)  # noqa: E731
    expected = reference_or_refusal(reference, call,
                                    because=lambda: _view_refusal(shape, strides, new_shape))
    out_shape, out_strides = expected
    sizes, steps = ints(shape), ints(strides)

    def diagnose(got):
        got = safe_tuple(got)
        if got is None:
            return None
        if -1 in ints(new_shape) and len(got) == len(out_shape) and -1 in got:
            return "the -1 must be replaced by the size that makes the element count match."
        fresh = row_major(out_shape)
        as_if_contiguous = any(same_ignoring_size1(got, tuple(c * f for f in fresh), out_shape) for c in {1, *steps})
        if as_if_contiguous and not strided(sizes, steps).is_contiguous():
            return (f"these strides treat the tensor as if it were contiguous, but its strides are {fmt(steps)}: "
                    "a view must step through memory the way the original dims do.")
        return None

    def hint():  # for a student who refuses a view that PyTorch accepts
        if total_of(sizes) == 0:
            return "a tensor with no elements can be viewed as any shape with no elements."
        if any(n == 1 for n in sizes):
            return "a size-1 dim never splits memory into separate blocks, whatever its stride: skip it."
        return None

    expect_strides(student, value_of(call, lambda: f"strides {fmt(out_strides)}", hint), out_strides, out_shape,
                   diagnose=diagnose)


# ---- gather -----------------------------------------------------------------------------------

@torch_reference
def gather_reference(storage, shape, strides, storage_offset):
    source = torch.from_numpy(np.ascontiguousarray(storage).copy())
    return source.as_strided(ints(shape), ints(strides), int(storage_offset or 0)).numpy().copy()


@question("strides.gather", points=10)
@cases("storage, shape, strides, storage_offset", tensor_cases.gather_cases(), reference=gather_reference,
       send_ahead=True)
def test_gather(student, storage, shape, strides, storage_offset, reference):
    start = int(storage_offset or 0)
    if storage_offset is None:
        call = lambda: student.strides.gather(storage, shape, strides)  # noqa: E731
    else:
        call = lambda: student.strides.gather(storage, shape, strides, storage_offset)  # noqa: E731
    sizes, steps = ints(shape), ints(strides)

    def refusal_reason():
        if len(sizes) != len(steps) or any(n < 0 for n in sizes):
            why = f"shape {fmt(sizes)} with strides {fmt(steps)} is not a valid layout"
        elif start < 0 or any(s < 0 for s in steps):
            why = "offsets and strides must be >= 0"
        else:
            last = start + sum((n - 1) * s for n, s in zip(sizes, steps))
            why = (f"the last element would be storage[{last}] but storage has only {plural(len(storage), 'element')}"
                   f" (positions 0..{len(storage) - 1})")
        return why

    expected = reference_or_refusal(reference, call, because=refusal_reason)

    def diagnose(got):
        if start:
            ignored = ask_reference(lambda: torch.from_numpy(np.ascontiguousarray(storage).copy())
                                .as_strided(sizes, steps, 0).numpy())
            if not isinstance(ignored, Refusal) and np.array_equal(got, ignored):
                return f"the storage offset ({start}) was ignored: element (0, ..., 0) is storage[{start}]."
        if len(sizes) >= 2:
            flipped = ask_reference(lambda: torch.from_numpy(np.ascontiguousarray(storage).copy())
                                .as_strided(sizes, steps[::-1], start).numpy())
            if not isinstance(flipped, Refusal) and np.array_equal(got, flipped) and not np.array_equal(got, expected):
                return "strides were applied to the dims in reverse order: stride k belongs to dim k."
        return None

    expect_array(student, value_of(call, lambda: f"an array of shape {fmt(expected.shape)}"), expected,
                 diagnose=diagnose)
