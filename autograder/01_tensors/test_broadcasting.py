"""Hidden suite for broadcasting.py. Every expected value and every refusal comes from PyTorch, asked
once per case when the suite is collected (each test's `reference`), not once per submission.
The functions of broadcasting.py are pure, so each test sends its cases' calls to the sandbox at once
(send_ahead)."""

import torch

import tensor_cases
from checks.suite import cases, expect_equal, question, reference_or_refusal
from checks.suite import call_or_fail
from tensor_checks import (ACCEPTED, diagnosis, expect_strides, expect_value_error, fmt, ints, strided, torch_reference,
                           when_refused)


# ---- broadcast_shape --------------------------------------------------------------------------

@question("broadcasting.broadcast_shape", points=8,
          kinks=("a size-1 dim stretched", "different numbers of dims", "size 0 against 1"))
@cases("shapes", tensor_cases.broadcast_shape_cases(),
       reference=torch_reference(lambda shapes: tuple(torch.broadcast_shapes(*(ints(s) for s in shapes)))),
       send_ahead=True,
       boundaries=tensor_cases.BROADCAST_SHAPE_BOUNDARIES)
def test_broadcast_shape(student, shapes, reference):
    plain = [ints(s) for s in shapes]
    call = lambda: student.broadcasting.broadcast_shape(*shapes)  # noqa: E731
    def refusal_reason():
        why = ("a size is negative" if any(n < 0 for s in plain for n in s) else
               f"shapes {', '.join(fmt(s) for s in plain)} do not broadcast: aligned from the right, some dim "
               "has two sizes that differ and neither is 1")
        return why

    expected = reference_or_refusal(reference, call, because=refusal_reason)
    diagnose = diagnosis("broadcasting.broadcast_shape", shapes=shapes, expected=expected)
    got = call_or_fail(call, expected=expected, because=ACCEPTED, mistake=when_refused(diagnose))
    expect_equal(got, expected, diagnose=diagnose)


# ---- broadcast_strides ------------------------------------------------------------------------

@torch_reference
def broadcast_strides_reference(shape, strides, target_shape):
    return tuple(strided(shape, strides).expand(ints(target_shape)).stride())


@question("broadcasting.broadcast_strides", points=8,
          kinks=("a size-1 dim stretched", "new leading dims"))
@cases("shape, strides, target_shape", tensor_cases.broadcast_strides_cases(), reference=broadcast_strides_reference,
       send_ahead=True,
       boundaries=tensor_cases.BROADCAST_STRIDES_BOUNDARIES)
def test_broadcast_strides(student, shape, strides, target_shape, reference):
    sizes, steps, target = ints(shape), ints(strides), ints(target_shape)
    call = lambda: student.broadcasting.broadcast_strides(shape, strides, target_shape)  # noqa: E731
    def refusal_reason():
        if len(sizes) != len(steps) or any(s < 0 for s in steps):
            why = f"shape {fmt(sizes)} with strides {fmt(steps)} is not a valid layout"
        elif len(target) < len(sizes):
            why = f"the target {fmt(target)} has fewer dims than the shape {fmt(sizes)}"
        else:
            why = f"shape {fmt(sizes)} cannot expand to {fmt(target)}: only size-1 dims can be stretched"
        return why

    expected = reference_or_refusal(reference, call, because=refusal_reason)
    diagnose = diagnosis("broadcasting.broadcast_strides", shape=shape, strides=strides, target_shape=target_shape)
    got = call_or_fail(call, expected=expected, because=ACCEPTED, mistake=when_refused(diagnose))
    expect_strides(student, got, expected, target, diagnose=diagnose)


# ---- broadcast_index --------------------------------------------------------------------------

@torch_reference
def broadcast_index_reference(out_index, out_shape, shape):
    """The index of the input element that out_index reads; None for an index of the wrong length,
    which PyTorch would misread (the test asks for a ValueError itself)."""
    where, full, sizes = ints(out_index), ints(out_shape), ints(shape)
    if len(where) != len(full):
        return None
    numbered = torch.arange(torch.empty(sizes).numel()).reshape(sizes)
    element = int(numbered.expand(full)[where].item())  # the number of the input element it reads
    return tuple(int(i) for i in (numbered == element).nonzero()[0])


@question("broadcasting.broadcast_index", points=8,
          kinks=("a size-1 dim stretched", "new leading dims"))
@cases("out_index, out_shape, shape", tensor_cases.broadcast_index_cases(), reference=broadcast_index_reference,
       send_ahead=True,
       boundaries=tensor_cases.BROADCAST_INDEX_BOUNDARIES)
def test_broadcast_index(student, out_index, out_shape, shape, reference):
    where, full, sizes = ints(out_index), ints(out_shape), ints(shape)

    call = lambda: student.broadcasting.broadcast_index(out_index, out_shape, shape)  # noqa: E731
    if len(where) != len(full):
        expect_value_error(call, f"an index into shape {fmt(full)} needs {len(full)} entries, not {len(where)}")
        return

    def refusal_reason():
        if any(not 0 <= i < n for i, n in zip(where, full)):
            why = f"{fmt(where)} is out of range for a tensor of shape {fmt(full)}"
        else:
            why = f"shape {fmt(sizes)} does not broadcast to {fmt(full)}"
        return why

    expected = reference_or_refusal(reference, call, because=refusal_reason)

    diagnose = diagnosis("broadcasting.broadcast_index", out_index=out_index, out_shape=out_shape, shape=shape)
    got = call_or_fail(call, expected=expected, because=ACCEPTED, mistake=when_refused(diagnose))
    expect_equal(got, expected, diagnose=diagnose)
