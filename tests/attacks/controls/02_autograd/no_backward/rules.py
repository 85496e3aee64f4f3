"""Backward rules (vector-Jacobian products) for the ops of a tiny autograd engine.

Every ``<op>_backward`` receives ``grad``, the gradient of the loss with respect to the op's
OUTPUT (the "upstream" gradient), followed by the op's inputs, and returns a tuple holding one
gradient per array input. Each returned gradient has exactly the shape of its input, even when
the inputs were broadcast against each other in the forward pass.

Everything here is NumPy in float64. Do not import torch: writing these by hand is the point.
"""

import numpy as np


def sum_to_shape(grad, shape):
    """Sum ``grad`` over the dimensions that broadcasting added or stretched, down to ``shape``.

    ``grad`` has the broadcast shape; ``shape`` is the shape of one input of the op. Leading
    dimensions that the input did not have are summed away; dimensions where the input has size 1
    but ``grad`` does not are summed with keepdims.
    """
    raise NotImplementedError('sum_to_shape: sum away the extra leading axes, then sum (keepdims) where shape has a 1 and grad does not')


def add_backward(grad, a, b):
    """out = a + b. Returns (grad_a, grad_b)."""
    raise NotImplementedError("add_backward: both local derivatives are 1; reduce grad to each input's shape (sum_to_shape)")


def sub_backward(grad, a, b):
    """out = a - b. Returns (grad_a, grad_b)."""
    raise NotImplementedError("sub_backward: a receives +grad and b receives -grad; reduce each to its input's shape")


def mul_backward(grad, a, b):
    """out = a * b. Returns (grad_a, grad_b)."""
    raise NotImplementedError("mul_backward: d(a*b)/da = b and d(a*b)/db = a; multiply by grad, then reduce to each input's shape")


def div_backward(grad, a, b):
    """out = a / b. Returns (grad_a, grad_b)."""
    raise NotImplementedError("div_backward: d(a/b)/da = 1/b and d(a/b)/db = -a/b**2; reduce each to its input's shape")


def neg_backward(grad, a):
    """out = -a. Returns (grad_a,)."""
    raise NotImplementedError('neg_backward: the derivative of -a is -1; return a one-element tuple (grad_a,)')


def exp_backward(grad, a):
    """out = exp(a). Returns (grad_a,)."""
    raise NotImplementedError('exp_backward: the derivative of exp(a) is exp(a); multiply the upstream grad by it')


def log_backward(grad, a):
    """out = log(a), the natural logarithm. Returns (grad_a,)."""
    raise NotImplementedError('log_backward: the derivative of log(a) is 1/a')


def relu_backward(grad, a):
    """out = max(a, 0). Returns (grad_a,). Where a == 0 the gradient is 0, as in PyTorch."""
    raise NotImplementedError('relu_backward: let grad through where a > 0 (strictly) and put 0 everywhere else')


def tanh_backward(grad, a):
    """out = tanh(a). Returns (grad_a,)."""
    raise NotImplementedError('tanh_backward: the derivative of tanh(a) is 1 - tanh(a)**2')


def sigmoid_backward(grad, a):
    """out = 1 / (1 + exp(-a)). Returns (grad_a,)."""
    raise NotImplementedError('sigmoid_backward: with s = sigmoid(a) the derivative is s * (1 - s)')


def pow_backward(grad, a, p):
    """out = a ** p with ``p`` a Python number. Returns (grad_a,)."""
    raise NotImplementedError('pow_backward: d(a**p)/da = p * a**(p - 1); when p == 0 the gradient is 0 everywhere')


def matmul_backward(grad, a, b):
    """out = a @ b with torch.matmul semantics. Returns (grad_a, grad_b).

    A 1-D ``a`` acts as a row (1, n) and a 1-D ``b`` as a column (n, 1); the added axis is
    dropped from the result. Dimensions before the last two are batch dimensions and broadcast.
    """
    raise NotImplementedError('matmul_backward: treat 1-D operands as a row / a column, take grad @ b^T and a^T @ grad over the last two axes, then sum over broadcast batch axes')


def sum_backward(grad, a, axis=None, keepdims=False):
    """out = a.sum(axis, keepdims). Returns (grad_a,)."""
    raise NotImplementedError("sum_backward: put back the reduced axes (unless keepdims kept them), then broadcast grad to a's shape")


def mean_backward(grad, a, axis=None, keepdims=False):
    """out = a.mean(axis, keepdims). Returns (grad_a,)."""
    raise NotImplementedError('mean_backward: like sum_backward, then divide by how many elements each mean averaged over')


# ----- view operations: the backward of 01's views -------------------------------------------
# A view moves or repeats elements without computing anything new, so its backward moves the
# gradient back to where each element came from, and adds up what reached the same element twice.


def reshape_backward(grad, a, shape):
    """out = a.reshape(shape) (one size may be -1). Returns (grad_a,)."""
    raise NotImplementedError("reshape_backward: reshape grad back to a's shape (not to `shape`, which is the output's)")


def transpose_backward(grad, a, dim0, dim1):
    """out = a.transpose(dim0, dim1) (negative dims allowed). Returns (grad_a,)."""
    raise NotImplementedError('transpose_backward: swapping the same two axes again undoes the swap (np.swapaxes)')


def permute_backward(grad, a, dims):
    """out = a.permute(dims): out's axis k is a's axis dims[k] (negative dims allowed). Returns (grad_a,)."""
    raise NotImplementedError('permute_backward: apply the INVERSE permutation to grad: np.argsort of dims (after making negative dims positive)')


def expand_backward(grad, a, shape):
    """out = a.expand(shape): new leading dims, size-1 dims stretched, -1 keeps a size. Returns (grad_a,)."""
    raise NotImplementedError('expand_backward: each element of a was used once per copy: sum grad over the new leading dims, and (keepdims) over the dims a had as 1')


def getitem_backward(grad, a, index):
    """out = a[index] for ints, slices (with steps), None, Ellipsis and integer arrays. Returns (grad_a,)."""
    raise NotImplementedError("getitem_backward: start from zeros of a's shape and ADD grad in at the indexed places; np.add.at accumulates repeated indices")
