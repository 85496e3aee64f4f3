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
    raise NotImplementedError('numel: multiply the sizes together (what is the product of no sizes at all?); _as_shape validates the input')


def contiguous_strides(shape):
    """The strides of a fresh row-major tensor of this shape, as `torch.empty(shape).stride()`.

    The last dim has stride 1 and each stride is the one to its right times the size to its
    right; a size-0 dim counts as size 1 in that product. contiguous_strides(()) == ().
    """
    raise NotImplementedError('contiguous_strides: start from the last dim (stride 1) and work leftwards: how many elements does one step along dim k jump over?')


def offset(index, strides, storage_offset=0):
    """Where element `index` lives in storage: storage_offset + sum of index[k] * strides[k].

    ValueError if `index` and `strides` have different lengths.
    """
    raise NotImplementedError('offset: every index i_k moves you i_k * s_k elements from the storage offset; check the two lengths agree first')


def unravel(flat, shape):
    """The row-major index (a tuple) of element number `flat` in a tensor of this shape.

    Element numbers run 0, 1, ..., numel - 1 with the last dim moving fastest:
    unravel(5, (2, 3)) == (1, 2). ValueError unless 0 <= flat < numel(shape).
    """
    raise NotImplementedError('unravel: check 0 <= flat < number of elements, then peel dims off from the last one with divmod')


def transpose(shape, strides, dim0, dim1):
    """The layout `(shape, strides)` of `Tensor.transpose(dim0, dim1)`: no data moves.

    Dims may be negative. ValueError if a dim is out of range or the layout is invalid.
    """
    raise NotImplementedError('transpose: a transpose only relabels axes: exchange two entries of the shape AND of the strides (_wrap_dim handles negative dims)')


def permute(shape, strides, dims):
    """The layout `(shape, strides)` of `Tensor.permute(dims)`.

    Dim k of the result is dim `dims[k]` of the input. ValueError unless `dims` names every dim
    exactly once (negative dims allowed).
    """
    raise NotImplementedError('permute: result dim k is old dim dims[k], so take its size and its stride from that same old dim; reject repeats and wrong lengths')


def is_contiguous(shape, strides):
    """Whether this layout is row-major contiguous, as `Tensor.is_contiguous()`.

    The stride of a size-1 dim does not matter (it is never stepped over), and a tensor with no
    elements is contiguous whatever its strides.
    """
    raise NotImplementedError('is_contiguous: walk the dims from the last one: each stride must equal the product of the sizes to its right; size-1 dims are skipped and empty tensors count as contiguous')


def view(shape, strides, new_shape):
    """The strides of `Tensor.view(new_shape)` on a tensor with layout `(shape, strides)`.

    `new_shape` may hold one -1, whose size is inferred. A view never copies, so it exists only
    when every new dim walks memory with one constant stride. ValueError wherever PyTorch refuses
    the view: wrong number of elements, more than one -1, a bad size, or incompatible strides.
    """
    raise NotImplementedError('view: resolve the -1 and check the element count; then group the old dims into runs that are contiguous with each other: a new dim must not straddle two runs')


def gather(storage, shape, strides, storage_offset=0):
    """Materialise the strided view of a 1-D NumPy `storage`, as `torch.as_strided` does.

    Element `index` of the result is storage[storage_offset + sum of index[k] * strides[k]]. The
    result is a NumPy array with this shape and storage's dtype. ValueError if the layout is
    invalid, the offset negative, or an element would lie outside the storage.
    """
    raise NotImplementedError('gather: compute the storage position of every element at once (np.arange per dim, reshaped so they broadcast, summed), check they all fall inside storage, then index')
