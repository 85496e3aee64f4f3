"""Hidden suite for strides.py. Every expected value and every refusal comes from PyTorch, asked
once per case when the suite is collected (each test's `reference`), not once per submission.
The functions of strides.py are pure, so each test sends its cases' calls to the sandbox at once
(send_ahead)."""

import numpy as np
import torch

import tensor_cases
from checks.suite import call_or_fail, cases, expect_equal, fail, question, reference_or_refusal
from tensor_checks import (ACCEPTED, diagnosis, expect_array, expect_layout, expect_strides, expect_value_error, fmt,
                           ints, layout, plural, strided, torch_reference, when_refused)


# ---- numel ------------------------------------------------------------------------------------

@question("strides.numel", points=4,
          kinks=("size-0 dim", "no dims ()"))
@cases("shape", tensor_cases.numel_cases(),
       reference=torch_reference(lambda shape: torch.empty(ints(shape)).numel()), send_ahead=True,
       boundaries=tensor_cases.SHAPE_BOUNDARIES)
def test_numel(student, shape, reference):
    expected = reference_or_refusal(reference, lambda: student.strides.numel(shape),
                                    because=lambda: f"shape {fmt(ints(shape))} has a negative size")
    expect_equal(call_or_fail(lambda: student.strides.numel(shape), expected=expected, because=ACCEPTED), expected,
                 diagnose=diagnosis("strides.numel", shape=shape, expected=expected))


# ---- contiguous_strides -----------------------------------------------------------------------

@question("strides.contiguous_strides", points=8,
          kinks=("size-0 dim", "size-1 dim", "no dims ()"))
@cases("shape", tensor_cases.contiguous_strides_cases(),
       reference=torch_reference(lambda shape: tuple(torch.empty(ints(shape)).stride())), send_ahead=True,
       boundaries=tensor_cases.SHAPE_BOUNDARIES)
def test_contiguous_strides(student, shape, reference):
    expected = reference_or_refusal(reference, lambda: student.strides.contiguous_strides(shape),
                                    because=lambda: f"shape {fmt(ints(shape))} has a negative size")
    expect_equal(call_or_fail(lambda: student.strides.contiguous_strides(shape), expected=expected,
                              because=ACCEPTED), expected,
                 diagnose=diagnosis("strides.contiguous_strides", shape=shape, expected=expected))


# ---- offset -----------------------------------------------------------------------------------

@torch_reference
def offset_reference(index, strides, storage_offset, keyword):
    # A storage just big enough, holding 0, 1, 2, ...: the element read back IS its offset.
    idx, steps, start = ints(index), ints(strides), int(storage_offset or 0)
    shape = tuple(i + 1 for i in idx)
    size = start + sum(i * s for i, s in zip(idx, steps)) + 1
    return int(torch.arange(size).as_strided(shape, steps, start)[idx].item())


@question("strides.offset", points=6,
          kinks=("a storage_offset", "lengths disagree (refused)"))
@cases("index, strides, storage_offset, keyword", tensor_cases.offset_cases(), reference=offset_reference,
       send_ahead=True,
       boundaries=tensor_cases.OFFSET_BOUNDARIES)
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

    expect_equal(call_or_fail(call, expected=expected, because=ACCEPTED), expected,
                 diagnose=diagnosis("strides.offset", index=index, strides=strides, storage_offset=start,
                                    expected=expected))


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


@question("strides.unravel", points=8,
          kinks=("flat == numel, the first out of range", "unequal dims above 1"))
@cases("flat, shape", tensor_cases.unravel_cases(), reference=unravel_reference, send_ahead=True,
       boundaries=tensor_cases.UNRAVEL_BOUNDARIES)
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

    expect_equal(call_or_fail(lambda: student.strides.unravel(flat, shape), expected=expected, because=ACCEPTED),
                 expected,
                 diagnose=diagnosis("strides.unravel", flat=flat, shape=shape, expected=expected))


# ---- transpose --------------------------------------------------------------------------------

@torch_reference
def transpose_reference(shape, strides, dim0, dim1):
    return layout(strided(shape, strides).transpose(int(dim0), int(dim1)))


@question("strides.transpose", points=8,
          kinks=("a negative dim", "a dim out of range (refused)"))
@cases("shape, strides, dim0, dim1", tensor_cases.transpose_cases(), reference=transpose_reference, send_ahead=True,
       boundaries=tensor_cases.TRANSPOSE_BOUNDARIES)
def test_transpose(student, shape, strides, dim0, dim1, reference):
    call = lambda: student.strides.transpose(shape, strides, dim0, dim1)  # noqa: E731
    expected = reference_or_refusal(reference, call,
                                    because=lambda: f"transpose({int(dim0)}, {int(dim1)}) is impossible for shape "
                                                    f"{fmt(ints(shape))} with strides {fmt(ints(strides))}")
    got = call_or_fail(call, expected=lambda: f"shape {fmt(expected[0])} with strides {fmt(expected[1])}",
                       because=ACCEPTED)
    expect_layout(student, got, *expected,
                  diagnose=diagnosis("strides.transpose", shape=shape, strides=strides, expected=expected))


# ---- permute ----------------------------------------------------------------------------------

@torch_reference
def permute_reference(shape, strides, dims):
    return layout(strided(shape, strides).permute(ints(dims)))


@question("strides.permute", points=8,
          kinks=("negative dims", "a repeated dim (refused)"))
@cases("shape, strides, dims", tensor_cases.permute_cases(), reference=permute_reference, send_ahead=True,
       boundaries=tensor_cases.PERMUTE_BOUNDARIES)
def test_permute(student, shape, strides, dims, reference):
    call = lambda: student.strides.permute(shape, strides, dims)  # noqa: E731

    def refusal_reason():
        if len(ints(shape)) != len(ints(strides)):
            return f"shape {fmt(ints(shape))} and strides {fmt(ints(strides))} differ in length"
        return f"dims {fmt(ints(dims))} does not name each of the {len(shape)} dims of shape {fmt(ints(shape))} exactly once"

    expected = reference_or_refusal(reference, call, because=refusal_reason)
    got = call_or_fail(call, expected=lambda: f"shape {fmt(expected[0])} with strides {fmt(expected[1])}",
                       because=ACCEPTED)
    expect_layout(student, got, *expected,
                  diagnose=diagnosis("strides.permute", shape=shape, strides=strides, dims=dims, expected=expected))


# ---- is_contiguous ----------------------------------------------------------------------------

@question("strides.is_contiguous", points=8,
          kinks=("a size-1 dim with any stride", "an empty tensor"))
@cases("shape, strides", tensor_cases.is_contiguous_cases(),
       reference=torch_reference(lambda shape, strides: bool(strided(shape, strides).is_contiguous())),
       send_ahead=True,
       boundaries=tensor_cases.IS_CONTIGUOUS_BOUNDARIES)
def test_is_contiguous(student, shape, strides, reference):
    call = lambda: student.strides.is_contiguous(shape, strides)  # noqa: E731
    expected = reference_or_refusal(reference, call,
                                    because=lambda: f"shape {fmt(ints(shape))} with strides {fmt(ints(strides))} "
                                                    "is not a valid layout")
    got = call_or_fail(call, expected=expected, because=ACCEPTED)
    if not isinstance(got, (bool, np.bool_)):
        fail(f"{student.last_call} returned {got!r}; expected a bool ({expected}).")
    expect_equal(got, expected, diagnose=diagnosis("strides.is_contiguous", shape=shape, strides=strides,
                                                   expected=expected))


# ---- view -------------------------------------------------------------------------------------

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


@question("strides.view", points=12,
          kinks=("-1 to infer", "a size-1 dim with any stride", "size-0 dim"))
@cases("shape, strides, new_shape", tensor_cases.view_cases(), reference=view_reference, send_ahead=True,
       boundaries=tensor_cases.VIEW_BOUNDARIES)
def test_view(student, shape, strides, new_shape, reference):
    call = lambda: student.strides.view(shape, strides, new_shape)  # noqa: E731
    expected = reference_or_refusal(reference, call,
                                    because=lambda: _view_refusal(shape, strides, new_shape))
    out_shape, out_strides = expected
    diagnose = diagnosis("strides.view", shape=shape, strides=strides, new_shape=new_shape, expected=expected)
    got = call_or_fail(call, expected=lambda: f"strides {fmt(out_strides)}", because=ACCEPTED,
                       mistake=when_refused(diagnose))
    expect_strides(student, got, out_strides, out_shape, diagnose=diagnose)


# ---- gather -----------------------------------------------------------------------------------

@torch_reference
def gather_reference(storage, shape, strides, storage_offset):
    source = torch.from_numpy(np.ascontiguousarray(storage).copy())
    return source.as_strided(ints(shape), ints(strides), int(storage_offset or 0)).numpy().copy()


@question("strides.gather", points=10,
          kinks=("a storage_offset", "integer storage", "a zero stride"))
@cases("storage, shape, strides, storage_offset", tensor_cases.gather_cases(), reference=gather_reference,
       send_ahead=True,
       boundaries=tensor_cases.GATHER_BOUNDARIES)
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
    got = call_or_fail(call, expected=lambda: f"an array of shape {fmt(expected.shape)}", because=ACCEPTED)
    expect_array(student, got, expected,
                 diagnose=diagnosis("strides.gather", storage=storage, shape=shape, strides=strides,
                                    storage_offset=start, expected=expected))
