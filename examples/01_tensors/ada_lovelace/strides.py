"""Strides, done my way: every layout question answered with small pure functions."""

from itertools import accumulate
from math import prod

import numpy as np


def _tuple(values, name):
    try:
        out = tuple(int(v) for v in values)
    except TypeError:
        raise ValueError(f"{name} should be a sequence of integers: {values!r}") from None
    if any(out[i] != values[i] for i in range(len(out))):
        raise ValueError(f"{name} should hold integers: {values!r}")
    return out


def _shape(shape):
    shape = _tuple(shape, "shape")
    if min(shape, default=0) < 0:
        raise ValueError(f"negative size in {shape}")
    return shape


def _layout(shape, strides):
    shape, strides = _shape(shape), _tuple(strides, "strides")
    if len(shape) != len(strides):
        raise ValueError(f"{len(shape)} sizes but {len(strides)} strides")
    if min(strides, default=0) < 0:
        raise ValueError(f"negative stride in {strides}")
    return shape, strides


def _dim(dim, ndim):
    n = ndim or 1
    if dim < -n or dim >= n:
        raise ValueError(f"dim {dim} out of range for {ndim} dims")
    return int(dim) % n


def _row_major(shape):
    # suffix products of the sizes (a 0 counts as 1), shifted by one place
    if not shape:
        return ()
    suffix = list(accumulate(reversed([max(d, 1) for d in shape[1:]]), lambda a, b: a * b, initial=1))
    return tuple(reversed(suffix))


def numel(shape):
    return prod(_shape(shape))


def contiguous_strides(shape):
    return _row_major(_shape(shape))


def offset(index, strides, storage_offset=0):
    index, strides = _tuple(index, "index"), _tuple(strides, "strides")
    if len(index) != len(strides):
        raise ValueError("index and strides must have the same length")
    return int(storage_offset) + sum(i * s for i, s in zip(index, strides))


def unravel(flat, shape):
    shape = _shape(shape)
    flat = int(flat)
    if flat < 0 or flat >= prod(shape):
        raise ValueError(f"{flat} is not an element number of a tensor of shape {shape}")
    strides = _row_major(shape)
    return tuple((flat // s) % d for s, d in zip(strides, shape))


def transpose(shape, strides, dim0, dim1):
    shape, strides = _layout(shape, strides)
    a, b = _dim(dim0, len(shape)), _dim(dim1, len(shape))
    order = list(range(len(shape)))
    if order:
        order[a], order[b] = order[b], order[a]
    return tuple(shape[k] for k in order), tuple(strides[k] for k in order)


def permute(shape, strides, dims):
    shape, strides = _layout(shape, strides)
    dims = [_dim(d, len(shape)) for d in _tuple(dims, "dims")] if len(dims) == len(shape) else None
    if dims is None or set(dims) != set(range(len(shape))):
        raise ValueError("dims must be a permutation of the tensor's dimensions")
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)


def is_contiguous(shape, strides):
    shape, strides = _layout(shape, strides)
    if prod(shape) == 0:
        return True
    expected = _row_major(shape)
    return all(d == 1 or s == e for d, s, e in zip(shape, strides, expected))


def _blocks(shape, strides):
    """Merge the dims into memory blocks: (number of elements, stride of the innermost dim)."""
    blocks = []
    for d, s in zip(shape, strides):
        if d == 1:
            continue
        if blocks and blocks[-1][1] == d * s:
            blocks[-1] = (blocks[-1][0] * d, s)
        else:
            blocks.append((d, s))
    return blocks


def view(shape, strides, new_shape):
    shape, strides = _layout(shape, strides)
    new_shape = list(_tuple(new_shape, "new_shape"))
    total = prod(shape)
    if new_shape.count(-1) > 1 or any(d < -1 for d in new_shape):
        raise ValueError(f"bad shape {new_shape}")
    if -1 in new_shape:
        rest = prod(d for d in new_shape if d != -1)
        if rest == 0 or total % rest:
            raise ValueError(f"cannot infer -1 in {new_shape} for {total} elements")
        new_shape[new_shape.index(-1)] = total // rest
    if prod(new_shape) != total:
        raise ValueError(f"{new_shape} does not hold {total} elements")
    if total == 0:
        return strides if tuple(new_shape) == shape else _row_major(new_shape)

    result = [1] * len(new_shape)
    blocks = _blocks(shape, strides)
    k = 0
    for count, inner in blocks:
        # the new dims that cover this block, from its outermost to its innermost
        start = k
        covered = 1
        while covered < count:
            covered *= new_shape[k]
            k += 1
        while k < len(new_shape) and new_shape[k] == 1:
            k += 1
        if covered != count:
            raise ValueError(f"view {new_shape} is incompatible with shape {shape} and strides {strides}")
        step = inner
        for j in reversed(range(start, k)):
            result[j] = step
            step *= new_shape[j]
    return tuple(result)


def gather(storage, shape, strides, storage_offset=0):
    storage = np.asarray(storage)
    shape, strides = _layout(shape, strides)
    if storage.ndim != 1 or storage_offset < 0:
        raise ValueError("need a 1-D storage and a non-negative storage offset")
    if prod(shape) == 0:
        return np.zeros(shape, dtype=storage.dtype)
    if shape:
        grid = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
        where = int(storage_offset) + np.asarray(strides, dtype=np.int64) @ grid
    else:
        where = np.array([int(storage_offset)])
    if where.max() >= storage.size:
        raise ValueError("the layout reaches past the end of storage")
    return storage[where].reshape(shape)
