"""Hidden suite for broadcasting.py. Every expected value and every refusal comes from PyTorch, asked
once per case when the suite is collected (each test's `reference`), not once per submission.
The functions of broadcasting.py are pure, so each test sends its cases' calls to the sandbox at once
(send_ahead)."""

import torch

import tensor_cases
from checks.suite import cases, expect_equal, question, reference_or_refusal
from tensor_checks import (expect_strides, expect_value_error, fmt, ints, safe_tuple, strided, torch_reference,
                           value_of)


def _left_aligned(shapes):
    """Model of the classic mistake: padding with 1s on the RIGHT (aligning from the left)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for k, size in enumerate(tuple(shape) + (1,) * (ndim - len(shape))):
            if size != 1:
                if out[k] not in (1, size):
                    return None
                out[k] = size
    return tuple(out)


# ---- broadcast_shape --------------------------------------------------------------------------

@question("broadcasting.broadcast_shape", points=8)
@cases("shapes", tensor_cases.broadcast_shape_cases(),
       reference=torch_reference(lambda shapes: tuple(torch.broadcast_shapes(*(ints(s) for s in shapes)))),
       send_ahead=True)
def test_broadcast_shape(student, shapes, reference):
    plain = [ints(s) for s in shapes]
    call = lambda: student.broadcasting.broadcast_shape(*shapes)  # noqa: E731
    def refusal_reason():
        why = ("a size is negative" if any(n < 0 for s in plain for n in s) else
               f"shapes {', '.join(fmt(s) for s in plain)} do not broadcast: aligned from the right, some dim "
               "has two sizes that differ and neither is 1")
        return why

    expected = reference_or_refusal(reference, call, because=refusal_reason)

    def diagnose(got):
        got = safe_tuple(got)
        if got is None:
            return None
        if got == _left_aligned(plain):
            return ("the shapes were aligned from the left. Broadcasting lines shapes up on their LAST "
                    "dim and pads the shorter ones with 1s at the front.")
        if len(got) == len(expected) and any(e == 0 and g == 1 for g, e in zip(got, expected)):
            return "a size-0 dim meeting a size-1 dim gives 0: the 1 is the one that stretches (to 0)."
        if len(got) != len(expected):
            return "the result has as many dims as the longest shape."
        return None

    def hint():  # for a student who refuses shapes that PyTorch broadcasts
        return ("these shapes do broadcast: line them up on their LAST dim (pad the shorter ones with 1s at the "
                "front), not on their first." if _left_aligned(plain) != expected else None)

    expect_equal(value_of(call, expected, hint), expected, diagnose=diagnose)


# ---- broadcast_strides ------------------------------------------------------------------------

@torch_reference
def broadcast_strides_reference(shape, strides, target_shape):
    return tuple(strided(shape, strides).expand(ints(target_shape)).stride())


@question("broadcasting.broadcast_strides", points=8)
@cases("shape, strides, target_shape", tensor_cases.broadcast_strides_cases(), reference=broadcast_strides_reference,
       send_ahead=True)
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
    lead = len(target) - len(sizes)

    def diagnose(got):
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

    hint = ("match the dims from the right: the last dim of the shape goes with the last dim of the target."
            if lead else None)
    expect_strides(student, value_of(call, expected, hint), expected, target, diagnose=diagnose)


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


@question("broadcasting.broadcast_index", points=8)
@cases("out_index, out_shape, shape", tensor_cases.broadcast_index_cases(), reference=broadcast_index_reference,
       send_ahead=True)
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

    def diagnose(got):
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

    hint = ("match the dims from the right: the last dim of shape goes with the last dim of out_shape."
            if len(sizes) < len(full) else None)
    expect_equal(value_of(call, expected, hint), expected, diagnose=diagnose)
