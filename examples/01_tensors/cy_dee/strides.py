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
    result = 1
    for size in _as_shape(shape):
        result *= size
    return result


def contiguous_strides(shape):
    """The strides of a fresh row-major tensor of this shape, as `torch.empty(shape).stride()`.

    The last dim has stride 1 and each stride is the one to its right times the size to its
    right; a size-0 dim counts as size 1 in that product. contiguous_strides(()) == ().
    """
    shape = _as_shape(shape)
    strides = [1] * len(shape)
    for k in reversed(range(len(shape) - 1)):
        strides[k] = strides[k + 1] * max(1, shape[k + 1])
    return tuple(strides)


def offset(index, strides, storage_offset=0):
    """Where element `index` lives in storage: storage_offset + sum of index[k] * strides[k].

    ValueError if `index` and `strides` have different lengths.
    """
    index = _as_ints(index, "index")
    strides = _as_ints(strides, "strides")
    if len(index) != len(strides):
        raise ValueError(f"index has {len(index)} entries, strides has {len(strides)}")
    total = int(storage_offset)
    for k in range(len(index)):
        total += index[k] * strides[k]
    return total


def unravel(flat, shape):
    """The row-major index (a tuple) of element number `flat` in a tensor of this shape.

    Element numbers run 0, 1, ..., numel - 1 with the last dim moving fastest:
    unravel(5, (2, 3)) == (1, 2). ValueError unless 0 <= flat < numel(shape).
    """
    shape = _as_shape(shape)
    count = 1
    for size in shape:
        count *= size
    if not 0 <= flat < count:
        raise ValueError(f"{flat} is out of range for {count} elements")
    index = [0] * len(shape)
    for k in range(len(shape) - 1, -1, -1):
        index[k] = flat % shape[k]
        flat = flat // shape[k]
    return tuple(index)


def transpose(shape, strides, dim0, dim1):
    """The layout `(shape, strides)` of `Tensor.transpose(dim0, dim1)`: no data moves.

    Dims may be negative. ValueError if a dim is out of range or the layout is invalid.
    """
    shape, strides = _as_layout(shape, strides)
    ndim = len(shape)
    d0, d1 = _wrap_dim(dim0, ndim), _wrap_dim(dim1, ndim)
    if ndim == 0:
        return shape, strides
    new_shape = list(shape)
    new_strides = list(strides)
    new_shape[d0] = shape[d1]
    new_shape[d1] = shape[d0]
    new_strides[d0] = strides[d1]
    new_strides[d1] = strides[d0]
    return tuple(new_shape), tuple(new_strides)


def permute(shape, strides, dims):
    """The layout `(shape, strides)` of `Tensor.permute(dims)`.

    Dim k of the result is dim `dims[k]` of the input. ValueError unless `dims` names every dim
    exactly once (negative dims allowed).
    """
    shape, strides = _as_layout(shape, strides)
    dims = _as_ints(dims, "dims")
    if len(dims) != len(shape):
        raise ValueError("permute needs one entry per dim")
    dims = [_wrap_dim(d, len(shape)) for d in dims]
    if len(set(dims)) != len(dims):
        raise ValueError("permute: repeated dim")
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)


def is_contiguous(shape, strides):
    """Whether this layout is row-major contiguous, as `Tensor.is_contiguous()`.

    The stride of a size-1 dim does not matter (it is never stepped over), and a tensor with no
    elements is contiguous whatever its strides.
    """
    shape, strides = _as_layout(shape, strides)
    count = 1
    for size in shape:
        count *= size
    if count == 0:
        return True
    want = 1
    for k in range(len(shape) - 1, -1, -1):
        if shape[k] == 1:
            continue
        if strides[k] != want:
            return False
        want *= shape[k]
    return True


def view(shape, strides, new_shape):
    """The strides of `Tensor.view(new_shape)` on a tensor with layout `(shape, strides)`.

    `new_shape` may hold one -1, whose size is inferred. A view never copies, so it exists only
    when every new dim walks memory with one constant stride. ValueError wherever PyTorch refuses
    the view: wrong number of elements, more than one -1, a bad size, or incompatible strides.
    """
    shape, strides = _as_layout(shape, strides)
    new_shape = list(_as_ints(new_shape, "new_shape"))
    count = 1
    for size in shape:
        count *= size
    if new_shape.count(-1) > 1:
        raise ValueError("only one -1 allowed")
    if any(size < -1 for size in new_shape):
        raise ValueError("negative size")
    known = 1
    for size in new_shape:
        if size != -1:
            known *= size
    if -1 in new_shape:
        if known == 0 or count % known != 0:
            raise ValueError("cannot infer the -1")
        new_shape[new_shape.index(-1)] = count // known
    elif known != count:
        raise ValueError("wrong number of elements")
    if count == 0:
        if tuple(new_shape) == shape:
            return strides
        out = [1] * len(new_shape)
        for k in range(len(new_shape) - 2, -1, -1):
            out[k] = out[k + 1] * max(1, new_shape[k + 1])
        return tuple(out)
    # Strip size-1 dims from the old layout; then walk both shapes from the right.
    old = [(size, stride) for size, stride in zip(shape, strides) if size != 1]
    out = [1] * len(new_shape)
    j = len(new_shape) - 1
    i = len(old) - 1
    while i >= 0:
        # a run of old dims that are contiguous with each other
        run_count, base = old[i][0], old[i][1]
        while i > 0 and old[i - 1][1] == old[i][0] * old[i][1]:
            i -= 1
            run_count *= old[i][0]
        i -= 1
        covered = 1
        while j >= 0 and covered < run_count:
            out[j] = base * covered
            covered *= new_shape[j]
            j -= 1
        if covered != run_count:
            raise ValueError("view would need a copy")
    return tuple(out)


def gather(storage, shape, strides, storage_offset=0):
    """Materialise the strided view of a 1-D NumPy `storage`, as `torch.as_strided` does.

    Element `index` of the result is storage[storage_offset + sum of index[k] * strides[k]]. The
    result is a NumPy array with this shape and storage's dtype. ValueError if the layout is
    invalid, the offset negative, or an element would lie outside the storage.
    """
    storage = np.asarray(storage)
    shape, strides = _as_layout(shape, strides)
    if storage.ndim != 1:
        raise ValueError("storage must be 1-D")
    if storage_offset < 0:
        raise ValueError("negative storage_offset")
    count = 1
    for size in shape:
        count *= size
    if count == 0:
        return np.empty(shape, dtype=storage.dtype)
    last = storage_offset
    for size, stride in zip(shape, strides):
        last += (size - 1) * stride
    if last >= len(storage):
        raise ValueError("layout goes past the end of storage")
    flat = np.zeros(shape, dtype=np.int64) + storage_offset
    for k in range(len(shape)):
        steps = np.arange(shape[k]) * strides[k]
        flat += steps.reshape([-1 if j == k else 1 for j in range(len(shape))])
    return storage[flat]
