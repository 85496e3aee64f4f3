"""Public checks for 01_tensors: a few cases per function, answers computed by PyTorch.

Run them with `checks test 01_tensors`. Passing these is a good sign, not a guarantee: the
grader runs many more cases (0-d tensors, size-0 dims, negative dims, expanded and permuted
layouts, storage offsets, and every input PyTorch refuses).
"""

import numpy as np
import pytest
import torch

from checks.suite import StudentRaised, as_index_tuple, expect_equal, expect_raises, fail, question



def layout(t):
    return tuple(t.shape), tuple(t.stride())


def split(student, got):
    """A (shape, strides) pair, or a failure that says what came back instead."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{student.last_call} returned {got!r}; expected a pair (shape, strides).")
    return got


def expect_strides(student, got, expected, shape, hint=""):
    """Strides must match, except on size-1 dims (their stride never changes an address)."""
    have = as_index_tuple(got, len(expected))
    for k, size in enumerate(shape):
        if size != 1 and have[k] != expected[k]:
            shown = ", ".join("*" if n == 1 else str(e) for n, e in zip(shape, expected))
            note = " where * is a size-1 dim (not compared)" if 1 in tuple(shape) else ""
            fail(f"{student.last_call} returned strides {have}; expected ({shown}){note}. "
                 f"Dim {k} (size {size}) has stride {have[k]}, expected {expected[k]}. {hint}")


# ---- strides.py -------------------------------------------------------------------------------

@question("strides.numel", points=4)
@pytest.mark.parametrize("shape", [(2, 3), (), (4, 0, 5)], ids=repr)
def test_numel(student, shape):
    expect_equal(student.strides.numel(shape), torch.empty(shape).numel())


@question("strides.contiguous_strides", points=8)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (5,), (3, 0, 2)], ids=repr)
def test_contiguous_strides(student, shape):
    expected = tuple(torch.empty(shape).stride())
    expect_equal(student.strides.contiguous_strides(shape), expected,
                 diagnose=lambda got: "in PyTorch the LAST dim has stride 1 (row-major)." if expected else None)


@question("strides.offset", points=6)
@pytest.mark.parametrize("index, shape, storage_offset", [((1, 2), (2, 3), 0), ((1, 0, 3), (2, 3, 4), 5),
                                                          ((), (), 2)], ids=repr)
def test_offset(student, index, shape, storage_offset):
    strides = torch.empty(shape).stride()
    numbered = torch.arange(storage_offset + torch.empty(shape).numel())
    view = numbered.as_strided(shape, strides, storage_offset)
    expect_equal(student.strides.offset(index, strides, storage_offset), int(view[index]))


@question("strides.unravel", points=6)
@pytest.mark.parametrize("flat, shape", [(5, (2, 3)), (13, (2, 3, 4)), (0, ())], ids=repr)
def test_unravel(student, flat, shape):
    numbered = torch.arange(torch.empty(shape).numel()).reshape(shape)  # each element holds its flat index
    expected = tuple(int(i) for i in (numbered == flat).nonzero()[0])
    expect_equal(student.strides.unravel(flat, shape), expected)


@question("strides.unravel", points=2)
def test_unravel_out_of_range(student):
    with expect_raises(ValueError, because="a (2, 3) tensor has elements 0..5 only"):
        student.strides.unravel(6, (2, 3))


@question("strides.transpose", points=8)
@pytest.mark.parametrize("shape, dim0, dim1", [((2, 3), 0, 1), ((2, 3, 4), 0, -1), ((2, 3, 4), 1, 1)], ids=repr)
def test_transpose(student, shape, dim0, dim1):
    t = torch.empty(shape)
    got = split(student, student.strides.transpose(shape, t.stride(), dim0, dim1))
    expected_shape, expected_strides = layout(t.transpose(dim0, dim1))
    expect_equal(got[0], expected_shape)
    expect_strides(student, got[1], expected_strides, expected_shape,
                   hint="A transpose swaps the two entries in the strides as well as in the shape.")


@question("strides.permute", points=6)
@pytest.mark.parametrize("shape, dims", [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1))], ids=repr)
def test_permute(student, shape, dims):
    t = torch.empty(shape)
    got = split(student, student.strides.permute(shape, t.stride(), dims))
    expected_shape, expected_strides = layout(t.permute(dims))
    expect_equal(got[0], expected_shape,
                 diagnose=lambda _: "result dim k is old dim dims[k]: new_shape[k] = shape[dims[k]].")
    expect_strides(student, got[1], expected_strides, expected_shape,
                   hint="Each stride travels with its dim: new_strides[k] = strides[dims[k]].")


@question("strides.permute", points=2)
def test_permute_repeated_dim(student):
    with expect_raises(ValueError, because="(0, 0) names dim 0 twice and never dim 1"):
        student.strides.permute((2, 3), (3, 1), (0, 0))


@question("strides.is_contiguous", points=8)
@pytest.mark.parametrize("t", [torch.empty(2, 3), torch.empty(2, 3).t(), torch.empty(2, 6)[:, ::2],
                               torch.empty(3, 1).expand(3, 4)], ids=["fresh", "transposed", "sliced", "expanded"])
def test_is_contiguous(student, t):
    expect_equal(student.strides.is_contiguous(tuple(t.shape), t.stride()), t.is_contiguous())


@question("strides.view", points=8)
@pytest.mark.parametrize("t, new_shape", [(torch.empty(2, 3, 4), (6, 4)), (torch.empty(2, 3, 4), (4, -1)),
                                          (torch.empty(3, 2).t(), (2, 3, 1))], ids=["merge", "infer", "transposed"])
def test_view(student, t, new_shape):
    v = t.view(new_shape)
    expect_strides(student, student.strides.view(tuple(t.shape), t.stride(), new_shape), v.stride(), tuple(v.shape),
                   hint="A view steps through memory the way the original strides do; it is not always contiguous.")


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
    expect_equal(got, expected)


# ---- broadcasting.py --------------------------------------------------------------------------

@question("broadcasting.broadcast_shape", points=6)
@pytest.mark.parametrize("shapes", [((2, 1), (3,)), ((64, 1), (768,)), ((5, 1, 4), (3, 1), ())], ids=repr)
def test_broadcast_shape(student, shapes):
    expected = tuple(torch.broadcast_tensors(*(torch.empty(s) for s in shapes))[0].shape)
    try:
        got = student.broadcasting.broadcast_shape(*shapes)
    except StudentRaised as raised:
        if raised.type_name != "ValueError":
            raise
        fail(f"{raised}\nThese shapes do broadcast, to {expected}: line them up from the RIGHT (last dims together).")
    expect_equal(got, expected)


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
                   hint="Stretched size-1 dims and new leading dims get stride 0.")


@question("broadcasting.broadcast_index", points=8)
@pytest.mark.parametrize("out_index, out_shape, shape", [((1, 2), (2, 3), (3,)), ((1, 2), (2, 3), (2, 1)),
                                                         ((3, 0, 1), (4, 2, 5), (2, 1))], ids=repr)
def test_broadcast_index(student, out_index, out_shape, shape):
    numbered = torch.arange(torch.empty(shape).numel()).reshape(shape)
    element = numbered.expand(out_shape)[out_index]
    expected = tuple(int(i) for i in (numbered == element).nonzero()[0])
    expect_equal(student.broadcasting.broadcast_index(out_index, out_shape, shape), expected,
                 diagnose=lambda _: "align from the right; a size-1 input dim always reads index 0.")
