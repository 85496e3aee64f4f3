"""Public checks for 01_tensors: a few cases per function, answers computed by PyTorch.

Run them with `checks test 01_tensors`. Passing these is a good sign, not a guarantee: the
grader runs many more cases (0-d tensors, size-0 dims, negative dims, expanded and permuted
layouts, storage offsets, and every input PyTorch refuses).
"""

import numpy as np
import pytest
import torch

from checks.suite import as_index_tuple, call_or_fail, expect_equal, expect_raises, fail, question
from diagnoses import REFUSED, diagnosis  # the likely mistakes: the same table as the grader's


def layout(t):
    return tuple(t.shape), tuple(t.stride())


def split(student, got):
    """A (shape, strides) pair, or a failure that says what came back instead."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{student.last_call} returned {got!r}; expected a pair (shape, strides).")
    return got


def expect_strides(student, got, expected, shape, diagnose=None):
    """Strides must match, except on size-1 dims (their stride never changes an address)."""
    have = as_index_tuple(got, len(expected))
    for k, size in enumerate(shape):
        if size != 1 and have[k] != expected[k]:
            shown = ", ".join("*" if n == 1 else str(e) for n, e in zip(shape, expected))
            note = " where * is a size-1 dim (not compared)" if 1 in tuple(shape) else ""
            hint = diagnose(got) if diagnose else None
            fail(f"{student.last_call} returned strides {have}; expected ({shown}){note}. "
                 f"Dim {k} (size {size}) has stride {have[k]}, expected {expected[k]}."
                 + (f" Likely mistake: {hint}" if hint else ""))


# ---- strides.py -------------------------------------------------------------------------------

@question("strides.numel", points=4)
@pytest.mark.parametrize("shape", [(2, 3), (), (4, 0, 5)], ids=repr)
def test_numel(student, shape):
    expected = torch.empty(shape).numel()
    expect_equal(student.strides.numel(shape), expected,
                 diagnose=diagnosis("strides.numel", shape=shape, expected=expected))


@question("strides.contiguous_strides", points=8)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (5,), (3, 0, 2)], ids=repr)
def test_contiguous_strides(student, shape):
    expected = tuple(torch.empty(shape).stride())
    expect_equal(student.strides.contiguous_strides(shape), expected,
                 diagnose=diagnosis("strides.contiguous_strides", shape=shape, expected=expected))


@question("strides.offset", points=6)
@pytest.mark.parametrize("index, shape, storage_offset", [((1, 2), (2, 3), 0), ((1, 0, 3), (2, 3, 4), 5),
                                                          ((), (), 2)], ids=repr)
def test_offset(student, index, shape, storage_offset):
    strides = torch.empty(shape).stride()
    numbered = torch.arange(storage_offset + torch.empty(shape).numel())
    view = numbered.as_strided(shape, strides, storage_offset)
    expected = int(view[index])
    expect_equal(student.strides.offset(index, strides, storage_offset), expected,
                 diagnose=diagnosis("strides.offset", index=index, strides=strides, storage_offset=storage_offset,
                                    expected=expected))


@question("strides.unravel", points=6)
@pytest.mark.parametrize("flat, shape", [(5, (2, 3)), (13, (2, 3, 4)), (0, ())], ids=repr)
def test_unravel(student, flat, shape):
    numbered = torch.arange(torch.empty(shape).numel()).reshape(shape)  # each element holds its flat index
    expected = tuple(int(i) for i in (numbered == flat).nonzero()[0])
    expect_equal(student.strides.unravel(flat, shape), expected,
                 diagnose=diagnosis("strides.unravel", flat=flat, shape=shape, expected=expected))


@question("strides.unravel", points=2)
def test_unravel_out_of_range(student):
    with expect_raises(ValueError, because="a (2, 3) tensor has elements 0..5 only"):
        student.strides.unravel(6, (2, 3))


@question("strides.transpose", points=8)
@pytest.mark.parametrize("shape, dim0, dim1", [((2, 3), 0, 1), ((2, 3, 4), 0, -1), ((2, 3, 4), 1, 1)], ids=repr)
def test_transpose(student, shape, dim0, dim1):
    t = torch.empty(shape)
    got = split(student, student.strides.transpose(shape, t.stride(), dim0, dim1))
    expected = layout(t.transpose(dim0, dim1))
    diagnose = diagnosis("strides.transpose", shape=shape, strides=t.stride(), expected=expected)
    expect_equal(got[0], expected[0], diagnose=lambda _: diagnose(got))
    expect_strides(student, got[1], expected[1], expected[0], diagnose=lambda _: diagnose(got))


@question("strides.permute", points=6)
@pytest.mark.parametrize("shape, dims", [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1))], ids=repr)
def test_permute(student, shape, dims):
    t = torch.empty(shape)
    got = split(student, student.strides.permute(shape, t.stride(), dims))
    expected = layout(t.permute(dims))
    diagnose = diagnosis("strides.permute", shape=shape, strides=t.stride(), dims=dims, expected=expected)
    expect_equal(got[0], expected[0], diagnose=lambda _: diagnose(got))
    expect_strides(student, got[1], expected[1], expected[0], diagnose=lambda _: diagnose(got))


@question("strides.permute", points=2)
def test_permute_repeated_dim(student):
    with expect_raises(ValueError, because="(0, 0) names dim 0 twice and never dim 1"):
        student.strides.permute((2, 3), (3, 1), (0, 0))


@question("strides.is_contiguous", points=8)
@pytest.mark.parametrize("t", [torch.empty(2, 3), torch.empty(2, 3).t(), torch.empty(2, 6)[:, ::2],
                               torch.empty(3, 1).expand(3, 4)], ids=["fresh", "transposed", "sliced", "expanded"])
def test_is_contiguous(student, t):
    expect_equal(student.strides.is_contiguous(tuple(t.shape), t.stride()), t.is_contiguous(),
                 diagnose=diagnosis("strides.is_contiguous", shape=tuple(t.shape), strides=t.stride(),
                                    expected=t.is_contiguous()))


@question("strides.view", points=8)
@pytest.mark.parametrize("t, new_shape", [(torch.empty(2, 3, 4), (6, 4)), (torch.empty(2, 3, 4), (4, -1)),
                                          (torch.empty(3, 2).t(), (2, 3, 1))], ids=["merge", "infer", "transposed"])
def test_view(student, t, new_shape):
    v = t.view(new_shape)
    diagnose = diagnosis("strides.view", shape=tuple(t.shape), strides=t.stride(), new_shape=new_shape,
                         expected=layout(v))
    got = call_or_fail(lambda: student.strides.view(tuple(t.shape), t.stride(), new_shape),
                       expected=lambda: f"strides {v.stride()}", because="PyTorch accepts this view",
                       mistake=lambda raised: diagnose(REFUSED) if raised.is_a(ValueError) else None)
    expect_strides(student, got, v.stride(), tuple(v.shape), diagnose=diagnose)


@question("strides.view", points=4)
def test_view_refused(student):
    t = torch.empty(2, 3).t()
    with pytest.raises(RuntimeError):
        t.view(6)  # PyTorch refuses: the transposed dims are not one block of memory
    with expect_raises(ValueError, because="a transposed (3, 2) tensor cannot be flattened without a copy"):
        student.strides.view((3, 2), t.stride(), (6,))


@question("strides.gather", points=10)
@pytest.mark.parametrize("shape, strides, storage_offset", [((2, 3), (3, 1), 0), ((3, 2), (1, 3), 0),
                                                            ((2, 2), (0, 2), 1)], ids=repr)
def test_gather(student, shape, strides, storage_offset):
    storage = np.arange(10, 16, dtype=np.int32)
    expected = torch.from_numpy(storage.copy()).as_strided(shape, strides, storage_offset).numpy()
    got = student.strides.gather(storage, shape, strides, storage_offset)
    if isinstance(got, np.generic):
        got = np.asarray(got)
    if not isinstance(got, np.ndarray):
        fail(f"{student.last_call} returned {type(got).__name__}; expected a NumPy array.")
    if got.dtype != expected.dtype:
        fail(f"{student.last_call} returned an array of dtype {got.dtype}; expected storage's dtype {expected.dtype}.")
    expect_equal(got, expected, diagnose=diagnosis("strides.gather", storage=storage, shape=shape, strides=strides,
                                                   storage_offset=storage_offset, expected=expected))


# ---- broadcasting.py --------------------------------------------------------------------------

@question("broadcasting.broadcast_shape", points=6)
@pytest.mark.parametrize("shapes", [((2, 1), (3,)), ((64, 1), (768,)), ((5, 1, 4), (3, 1), ())], ids=repr)
def test_broadcast_shape(student, shapes):
    expected = tuple(torch.broadcast_tensors(*(torch.empty(s) for s in shapes))[0].shape)
    refused = diagnosis("broadcasting.broadcast_shape", shapes=shapes, expected=expected)(REFUSED)
    got = call_or_fail(lambda: student.broadcasting.broadcast_shape(*shapes), expected=expected,
                       because="these shapes do broadcast",
                       mistake=lambda raised: (refused or "line them up from the RIGHT.") if raised.is_a(ValueError)
                       else None)
    expect_equal(got, expected, diagnose=diagnosis("broadcasting.broadcast_shape", shapes=shapes, expected=expected))


@question("broadcasting.broadcast_shape", points=2)
def test_broadcast_shape_clash(student):
    with expect_raises(ValueError, because="3 and 4 differ and neither is 1"):
        student.broadcasting.broadcast_shape((3,), (4,))


@question("broadcasting.broadcast_strides", points=8)
@pytest.mark.parametrize("shape, target", [((3,), (2, 3)), ((2, 1), (2, 4)), ((1, 3), (5, 4, 3))], ids=repr)
def test_broadcast_strides(student, shape, target):
    t = torch.empty(shape)
    expect_strides(student, student.broadcasting.broadcast_strides(shape, t.stride(), target),
                   t.expand(target).stride(), target,
                   diagnose=diagnosis("broadcasting.broadcast_strides", shape=shape, strides=t.stride(),
                                      target_shape=target))


@question("broadcasting.broadcast_index", points=8)
@pytest.mark.parametrize("out_index, out_shape, shape", [((1, 2), (2, 3), (3,)), ((1, 2), (2, 3), (2, 1)),
                                                         ((3, 0, 1), (4, 2, 5), (2, 1))], ids=repr)
def test_broadcast_index(student, out_index, out_shape, shape):
    numbered = torch.arange(torch.empty(shape).numel()).reshape(shape)
    element = numbered.expand(out_shape)[out_index]
    expected = tuple(int(i) for i in (numbered == element).nonzero()[0])
    expect_equal(student.broadcasting.broadcast_index(out_index, out_shape, shape), expected,
                 diagnose=diagnosis("broadcasting.broadcast_index", out_index=out_index, out_shape=out_shape,
                                    shape=shape))
