"""Strides: how a shape and a list of strides turn an index into a place in memory.

A tensor is a flat block of memory (its *storage*) seen through a lens: a shape, one stride per
dimension and a storage offset. Every function in this file works on that lens alone, with plain
tuples of ints, the way PyTorch does it internally. Strides count elements, not bytes.

Shapes, strides and indices may arrive as tuples, lists or hold NumPy integers; return tuples of
Python ints. Invalid input raises ValueError with a message that says what is wrong.

Check your work with:  checks test 01_tensors
"""

import operator

import numpy as np


# --------------------------------------------------------------------------------------------
# Helpers you may use. They are not graded, and they already raise the right ValueErrors for
# malformed input, so calling them first keeps your functions short.
# --------------------------------------------------------------------------------------------

def _as_ints(values, what):
    """`values` (a tuple, list or 1-D array of integers) as a tuple of Python ints."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{what} must be a tuple of ints, got {values!r}")
    result = []
    for value in values:
        try:
            result.append(operator.index(value))
        except TypeError:
            raise ValueError(f"{what} must hold ints only, got {value!r} in {values!r}") from None
    return tuple(result)


def _as_shape(shape):
    """`shape` as a tuple of ints; ValueError if a size is negative."""
    shape = _as_ints(shape, "shape")
    if any(size < 0 for size in shape):
        raise ValueError(f"shape {shape} has a negative size")
    return shape


def _as_layout(shape, strides):
    """`(shape, strides)` as tuples of ints; ValueError unless they describe a valid layout."""
    shape = _as_shape(shape)
    strides = _as_ints(strides, "strides")
    if len(strides) != len(shape):
        raise ValueError(f"shape {shape} has {len(shape)} dims but strides {strides} has {len(strides)}")
    if any(stride < 0 for stride in strides):
        raise ValueError(f"strides {strides} holds a negative stride (PyTorch allows only strides >= 0)")
    return shape, strides


def _wrap_dim(dim, ndim):
    """A dim in -ndim..ndim-1 turned into 0..ndim-1 (Python-style); ValueError if out of range.

    As in PyTorch, a 0-d tensor accepts dim 0 and -1 (and this returns 0 for both).
    """
    dim = operator.index(dim)
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise ValueError(f"dim {dim} is out of range for a {ndim}-d tensor "
                         f"(expected a dim in {-bound}..{bound - 1})")
    return dim % bound


# --------------------------------------------------------------------------------------------
# Graded functions
# --------------------------------------------------------------------------------------------

def numel(shape):
    """The number of elements in a tensor of this shape.

    numel((2, 3)) == 6; a 0-d tensor, shape (), holds one element; any size 0 makes it empty.
    """
    n = 1
    for d in _as_shape(shape):
        n = n * d
    return n


def contiguous_strides(shape):
    """The strides of a fresh row-major tensor of this shape, as `torch.empty(shape).stride()`.

    The last dim has stride 1 and each stride is the one to its right times the size to its
    right; a size-0 dim counts as size 1 in that product. contiguous_strides(()) == ().
    """
    shape = _as_shape(shape)
    strides = []
    running = 1
    for d in reversed(shape):
        strides.insert(0, running)
        running *= max(d, 1)
    return tuple(strides)


def offset(index, strides, storage_offset=0):
    """Where element `index` lives in storage: storage_offset + sum of index[k] * strides[k].

    ValueError if `index` and `strides` have different lengths.
    """
    index = _as_ints(index, "index")
    strides = _as_ints(strides, "strides")
    if len(index) != len(strides):
        raise ValueError("index and strides have different lengths")
    return storage_offset + sum(i * s for i, s in zip(index, strides))


def unravel(flat, shape):
    """The row-major index (a tuple) of element number `flat` in a tensor of this shape.

    Element numbers run 0, 1, ..., numel - 1 with the last dim moving fastest:
    unravel(5, (2, 3)) == (1, 2). ValueError unless 0 <= flat < numel(shape).
    """
    shape = _as_shape(shape)
    n = 1
    for d in shape:
        n *= d
    if flat < 0 or flat > n:  # TODO double-check the upper bound
        raise ValueError(f"flat index {flat} out of range")
    idx = []
    for d in reversed(shape):
        idx.append(flat % d)
        flat //= d
    return tuple(reversed(idx))


def transpose(shape, strides, dim0, dim1):
    """The layout `(shape, strides)` of `Tensor.transpose(dim0, dim1)`: no data moves.

    Dims may be negative. ValueError if a dim is out of range or the layout is invalid.
    """
    shape, strides = _as_layout(shape, strides)
    if len(shape) == 0:
        _wrap_dim(dim0, 0)
        _wrap_dim(dim1, 0)
        return (), ()
    i, j = _wrap_dim(dim0, len(shape)), _wrap_dim(dim1, len(shape))
    shape, strides = list(shape), list(strides)
    shape[i], shape[j] = shape[j], shape[i]
    strides[i], strides[j] = strides[j], strides[i]
    return tuple(shape), tuple(strides)


def permute(shape, strides, dims):
    """The layout `(shape, strides)` of `Tensor.permute(dims)`.

    Dim k of the result is dim `dims[k]` of the input. ValueError unless `dims` names every dim
    exactly once (negative dims allowed).
    """
    shape, strides = _as_layout(shape, strides)
    dims = [_wrap_dim(d, len(shape)) for d in _as_ints(dims, "dims")]
    if sorted(dims) != list(range(len(shape))):
        raise ValueError(f"{dims} is not a permutation")
    new_shape = [0] * len(shape)
    new_strides = [0] * len(shape)
    for k, d in enumerate(dims):
        # old dim k goes to position d
        new_shape[d] = shape[k]
        new_strides[d] = strides[k]
    return tuple(new_shape), tuple(new_strides)


def is_contiguous(shape, strides):
    """Whether this layout is row-major contiguous, as `Tensor.is_contiguous()`.

    The stride of a size-1 dim does not matter (it is never stepped over), and a tensor with no
    elements is contiguous whatever its strides.
    """
    shape, strides = _as_layout(shape, strides)
    if 0 in shape:
        return True
    expect = 1
    for d, s in reversed(list(zip(shape, strides))):
        if d != 1 and s != expect:
            return False
        expect *= d
    return True


def view(shape, strides, new_shape):
    """The strides of `Tensor.view(new_shape)` on a tensor with layout `(shape, strides)`.

    `new_shape` may hold one -1, whose size is inferred. A view never copies, so it exists only
    when every new dim walks memory with one constant stride. ValueError wherever PyTorch refuses
    the view: wrong number of elements, more than one -1, a bad size, or incompatible strides.
    """
    shape, strides = _as_layout(shape, strides)
    new_shape = list(_as_ints(new_shape, "new_shape"))
    total = 1
    for d in shape:
        total *= d
    if new_shape.count(-1) > 1 or any(d < -1 for d in new_shape):
        raise ValueError(f"invalid shape {new_shape}")
    rest = 1
    for d in new_shape:
        if d != -1:
            rest *= d
    if -1 in new_shape:
        if rest == 0 or total % rest != 0:
            raise ValueError(f"cannot infer -1 in {new_shape}")
        new_shape[new_shape.index(-1)] = total // rest
    elif rest != total:
        raise ValueError(f"{new_shape} does not have {total} elements")
    if total == 0:
        if tuple(new_shape) == shape:
            return strides
        out, run = [], 1
        for d in reversed(new_shape):
            out.insert(0, run)
            run *= max(d, 1)
        return tuple(out)
    # drop size-1 dims, then merge neighbours that are contiguous with each other
    groups = []  # [numel, innermost stride]
    for d, s in zip(shape, strides):
        if d == 1:
            continue
        if groups and groups[-1][1] == d * s:
            groups[-1] = [groups[-1][0] * d, s]
        else:
            groups.append([d, s])
    out = [1] * len(new_shape)
    pos = len(new_shape) - 1
    for count, inner in reversed(groups):
        step, covered = inner, 1
        while pos >= 0 and covered < count:
            out[pos] = step
            step *= new_shape[pos]
            covered *= new_shape[pos]
            pos -= 1
        if covered != count:
            raise ValueError(f"cannot view {shape} with strides {strides} as {new_shape}")
    return tuple(out)


def gather(storage, shape, strides, storage_offset=0):
    """Materialise the strided view of a 1-D NumPy `storage`, as `torch.as_strided` does.

    Element `index` of the result is storage[storage_offset + sum of index[k] * strides[k]]. The
    result is a NumPy array with this shape and storage's dtype. ValueError if the layout is
    invalid, the offset negative, or an element would lie outside the storage.
    """
    storage = np.asarray(storage)
    shape, strides = _as_layout(shape, strides)
    if storage.ndim != 1 or storage_offset < 0:
        raise ValueError("storage must be 1-D and storage_offset >= 0")
    out = np.empty(shape, dtype=storage.dtype)
    if out.size == 0:
        return out
    for index in np.ndindex(*shape):
        where = storage_offset + sum(i * s for i, s in zip(index, strides))
        if where >= len(storage):
            raise ValueError(f"element {index} is at {where}, past the end of storage")
        out[index] = storage[where]
    return out
