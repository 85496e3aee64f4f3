"""Broadcasting: combining tensors of different shapes without copying anything.

Shapes are compared from the right; missing leading dims count as size 1. A pair of sizes is
compatible when they are equal or one of them is 1, and the result takes the other one. A size-1
dim is stretched for free: its stride becomes 0, so every step along it reads the same element.

Shapes, strides and indices may arrive as tuples, lists or hold NumPy integers; return tuples of
Python ints. Invalid input raises ValueError with a message that says what is wrong.

Check your work with:  checks test 01_tensors
"""

import operator


# --------------------------------------------------------------------------------------------
# Helpers you may use. They are not graded, and they already raise the right ValueErrors for
# malformed input. (They repeat the ones in strides.py so that this file stands on its own.)
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


def _as_shape(shape, what="shape"):
    """`shape` as a tuple of ints; ValueError if a size is negative."""
    shape = _as_ints(shape, what)
    if any(size < 0 for size in shape):
        raise ValueError(f"{what} {shape} has a negative size")
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


# --------------------------------------------------------------------------------------------
# Graded functions
# --------------------------------------------------------------------------------------------

def broadcast_shape(*shapes):
    """The shape all `shapes` broadcast to, as `torch.broadcast_shapes(*shapes)`.

    broadcast_shape((2, 1), (3,)) == (2, 3); with no shapes at all the answer is ().
    ValueError if two sizes in the same (right-aligned) position differ and neither is 1.
    """
    raise NotImplementedError('broadcast_shape: line the shapes up on their last dim (pad the shorter ones with leading 1s); in each column every size must be 1 or one common value')


def broadcast_strides(shape, strides, target_shape):
    """The strides of `Tensor.expand(target_shape)` on a tensor with layout `(shape, strides)`.

    Dims are matched from the right. A dim that keeps its size keeps its stride; a size-1 dim
    stretched to another size, and every new leading dim, get stride 0. ValueError when the
    tensor cannot be expanded to `target_shape`.
    """
    raise NotImplementedError('broadcast_strides: match dims from the right; a dim that keeps its size keeps its stride, while stretched size-1 dims and brand-new leading dims read the same element again and again')


def broadcast_index(out_index, out_shape, shape):
    """The index into a tensor of `shape` that feeds element `out_index` of the broadcast result.

    The result has shape `out_shape`; e.g. broadcast_index((1, 2), (2, 3), (3,)) == (2,) and
    broadcast_index((1, 2), (2, 3), (2, 1)) == (1, 0). ValueError if `shape` does not broadcast
    to `out_shape` or `out_index` is not a valid index into `out_shape`.
    """
    raise NotImplementedError('broadcast_index: align the dims from the right and drop the extra leading entries of out_index; along a dim where the input has size 1 there is only one element to read')
