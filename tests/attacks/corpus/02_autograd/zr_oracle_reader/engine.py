"""A small define-by-run reverse-mode autograd engine over NumPy.

Each op on Tensors computes its result with NumPy right away and, when gradients are being
recorded, attaches a ``Node`` to the result (its ``grad_fn``). The node remembers the op's
inputs and which rule in ``rules.py`` turns the gradient of the output into gradients of the
inputs. ``backward()`` walks those nodes from the output back to the leaves.
"""

import numpy as np

import rules

_recording = [True]   # one flag in a list, so no_grad can change it without `global`


class no_grad:
    """Context manager: ops inside ``with no_grad():`` record nothing."""

    def __enter__(self):
        raise NotImplementedError('no_grad.__enter__: remember whether recording was on, then switch it off')

    def __exit__(self, exc_type, exc, tb):
        raise NotImplementedError('no_grad.__exit__: restore the state saved in __enter__ (no_grad blocks can nest)')


class Node:
    """What backward needs to know about one recorded op (the grad_fn of its output)."""

    def __init__(self, name, rule, parents, arrays, extra=()):
        self.name = name          # e.g. "MulBackward"
        self.rule = rule          # e.g. rules.mul_backward
        self.parents = parents    # one entry per array input: a Tensor, or None for a constant
        self.arrays = arrays      # the input arrays the rule needs (freed after backward)
        self.extra = extra        # non-array arguments of the rule (an exponent, axis, keepdims)
        self.freed = False

    def __repr__(self):
        return f"<{self.name}>"


def _sizes(args):
    """The sizes of t.reshape(2, 3) or t.reshape((2, 3)) as one tuple of ints, both spellings
    being PyTorch's."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return tuple(int(n) for n in args)


def _to_tensor(value):
    """Wrap a Python number or array as a constant Tensor; leave Tensors alone."""
    return value if isinstance(value, Tensor) else Tensor(value)


class Tensor:
    """An n-dimensional float64 array that can record the ops applied to it."""

    __array_ufunc__ = None   # `ndarray + Tensor` defers to Tensor.__radd__

    def __init__(self, data, requires_grad=False):
        raise NotImplementedError('Tensor.__init__: store a float64 ndarray copy of data; a new tensor has no grad and no grad_fn')

    # ----- basic properties -------------------------------------------------------------
    @property
    def shape(self):
        raise NotImplementedError('Tensor.shape: the shape of the underlying array, as a tuple')

    @property
    def is_leaf(self):
        raise NotImplementedError('Tensor.is_leaf: a tensor is a leaf unless a recorded op made it')

    def item(self):
        raise NotImplementedError('Tensor.item: the single value as a Python float')

    def __repr__(self):
        extra = f", grad_fn={self.grad_fn!r}" if self.grad_fn is not None else (
            ", requires_grad=True" if self.requires_grad else "")
        return f"Tensor({self.data!r}{extra})"

    # ----- recording ops ----------------------------------------------------------------
    @staticmethod
    def _record(value, name, rule, inputs, extra=()):
        """The Tensor holding ``value``, with a Node attached when the op must be recorded."""
        raise NotImplementedError('Tensor._record: the result requires grad when recording is on and some input requires grad; then give it a Node')

    def __add__(self, other):
        raise NotImplementedError('Tensor.__add__: compute self.data + other.data and record rules.add_backward')

    def __radd__(self, other):
        raise NotImplementedError('Tensor.__radd__: other + self, where other is a number')

    def __sub__(self, other):
        raise NotImplementedError('Tensor.__sub__: compute self.data - other.data and record rules.sub_backward')

    def __rsub__(self, other):
        raise NotImplementedError('Tensor.__rsub__: other - self, where other is a number: mind the order')

    def __mul__(self, other):
        raise NotImplementedError('Tensor.__mul__: compute self.data * other.data and record rules.mul_backward')

    def __rmul__(self, other):
        raise NotImplementedError('Tensor.__rmul__: other * self, where other is a number')

    def __truediv__(self, other):
        raise NotImplementedError('Tensor.__truediv__: compute self.data / other.data and record rules.div_backward')

    def __rtruediv__(self, other):
        raise NotImplementedError('Tensor.__rtruediv__: other / self, where other is a number: mind the order')

    def __neg__(self):
        raise NotImplementedError('Tensor.__neg__: compute -self.data and record rules.neg_backward')

    def __pow__(self, p):
        raise NotImplementedError('Tensor.__pow__: p is a Python number; pass it to rules.pow_backward as an extra argument')

    def __matmul__(self, other):
        raise NotImplementedError('Tensor.__matmul__: compute np.matmul(self.data, other.data) and record rules.matmul_backward')

    def __rmatmul__(self, other):
        raise NotImplementedError('Tensor.__rmatmul__: other @ self')

    def exp(self):
        raise NotImplementedError('Tensor.exp: np.exp, recorded with rules.exp_backward')

    def log(self):
        raise NotImplementedError('Tensor.log: np.log, recorded with rules.log_backward')

    def relu(self):
        raise NotImplementedError('Tensor.relu: np.maximum(data, 0), recorded with rules.relu_backward')

    def tanh(self):
        raise NotImplementedError('Tensor.tanh: np.tanh, recorded with rules.tanh_backward')

    def sigmoid(self):
        raise NotImplementedError('Tensor.sigmoid: 1 / (1 + exp(-x)), recorded with rules.sigmoid_backward')

    def sum(self, axis=None, keepdims=False):
        raise NotImplementedError('Tensor.sum: np.sum with axis and keepdims; pass both to rules.sum_backward')

    def mean(self, axis=None, keepdims=False):
        raise NotImplementedError('Tensor.mean: np.mean with axis and keepdims; pass both to rules.mean_backward')

    # ----- views: the backward of each moves the gradient back (rules.py's view rules) ------
    def reshape(self, *shape):
        raise NotImplementedError('Tensor.reshape: accept t.reshape(2, 3) and t.reshape((2, 3)); record rules.reshape_backward with the shape')

    def transpose(self, dim0, dim1):
        raise NotImplementedError('Tensor.transpose: np.swapaxes, recorded with rules.transpose_backward and both dims')

    def permute(self, *dims):
        raise NotImplementedError('Tensor.permute: accept t.permute(2, 0, 1) and t.permute((2, 0, 1)); np.transpose, recorded with rules.permute_backward')

    @property
    def T(self):
        raise NotImplementedError('Tensor.T: the dims in reverse order (for a 2-D tensor: transpose(0, 1)), through a recorded op')

    def expand(self, *sizes):
        raise NotImplementedError("Tensor.expand: new dims go in front and -1 keeps a dim's size; np.broadcast_to, recorded with rules.expand_backward")

    def __getitem__(self, index):
        raise NotImplementedError('Tensor.__getitem__: index self.data as NumPy does and record rules.getitem_backward with the index')

    # ----- gradients --------------------------------------------------------------------
    def retain_grad(self):
        raise NotImplementedError('Tensor.retain_grad: mark this tensor so backward stores its gradient even if it is not a leaf')

    def detach(self):
        raise NotImplementedError('Tensor.detach: a new leaf Tensor over the same data, with no history and requires_grad False')

    def backward(self, grad=None, retain_graph=False):
        """Accumulate d(self)/d(leaf), weighted by ``grad``, into every leaf that requires grad."""
        raise NotImplementedError("Tensor.backward: seed grad (ones for a one-element tensor), sort the graph topologically without recursion, then apply each node's rule from the output back to the leaves")


def zero_grad(tensors, set_to_none=True):
    """Reset the .grad of each tensor: to None, or (set_to_none=False) to zeros of its shape."""
    raise NotImplementedError('zero_grad: for each tensor, set .grad to None or to np.zeros_like(tensor.data)')
