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
    # BEGIN SOLUTION hint: sum away the extra leading axes, then sum (keepdims) where shape has a 1 and grad does not
    grad = np.asarray(grad, dtype=np.float64)
    shape = tuple(int(size) for size in shape)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for k, size in enumerate(shape):
        if size == 1 and grad.shape[k] != 1:
            grad = grad.sum(axis=k, keepdims=True)
    return np.array(grad, dtype=np.float64).reshape(shape)
    # END SOLUTION


def add_backward(grad, a, b):
    """out = a + b. Returns (grad_a, grad_b)."""
    # BEGIN SOLUTION hint: both local derivatives are 1; reduce grad to each input's shape (sum_to_shape)
    grads = []
    for g, x in ((np.asarray(grad), a), (np.asarray(grad), b)):
        lead = g.ndim - np.ndim(x)
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(np.shape(x)) if n == 1)
        grads.append(np.array(g.sum(axis=axes), dtype=np.float64).reshape(np.shape(x)))
    return tuple(grads)
    # END SOLUTION


def sub_backward(grad, a, b):
    """out = a - b. Returns (grad_a, grad_b)."""
    # BEGIN SOLUTION hint: a receives +grad and b receives -grad; reduce each to its input's shape
    grads = []
    for g, x in ((np.asarray(grad), a), (-np.asarray(grad), b)):
        lead = g.ndim - np.ndim(x)
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(np.shape(x)) if n == 1)
        grads.append(np.array(g.sum(axis=axes), dtype=np.float64).reshape(np.shape(x)))
    return tuple(grads)
    # END SOLUTION


def mul_backward(grad, a, b):
    """out = a * b. Returns (grad_a, grad_b)."""
    # BEGIN SOLUTION hint: d(a*b)/da = b and d(a*b)/db = a; multiply by grad, then reduce to each input's shape
    grads = []
    for g, x in ((np.asarray(grad * b), a), (np.asarray(grad * a), b)):
        lead = g.ndim - np.ndim(x)
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(np.shape(x)) if n == 1)
        grads.append(np.array(g.sum(axis=axes), dtype=np.float64).reshape(np.shape(x)))
    return tuple(grads)
    # END SOLUTION


def div_backward(grad, a, b):
    """out = a / b. Returns (grad_a, grad_b)."""
    # BEGIN SOLUTION hint: d(a/b)/da = 1/b and d(a/b)/db = -a/b**2; reduce each to its input's shape
    grads = []
    for g, x in ((np.asarray(grad / b), a), (np.asarray(-grad * a / (b * b)), b)):
        lead = g.ndim - np.ndim(x)
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(np.shape(x)) if n == 1)
        grads.append(np.array(g.sum(axis=axes), dtype=np.float64).reshape(np.shape(x)))
    return tuple(grads)
    # END SOLUTION


def neg_backward(grad, a):
    """out = -a. Returns (grad_a,)."""
    # BEGIN SOLUTION hint: the derivative of -a is -1; return a one-element tuple (grad_a,)
    return (np.array(-np.asarray(grad), dtype=np.float64),)
    # END SOLUTION


def exp_backward(grad, a):
    """out = exp(a). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: the derivative of exp(a) is exp(a); multiply the upstream grad by it
    return (np.array(grad * np.exp(a), dtype=np.float64),)
    # END SOLUTION


def log_backward(grad, a):
    """out = log(a), the natural logarithm. Returns (grad_a,)."""
    # BEGIN SOLUTION hint: the derivative of log(a) is 1/a
    return (np.array(grad / a, dtype=np.float64),)
    # END SOLUTION


def relu_backward(grad, a):
    """out = max(a, 0). Returns (grad_a,). Where a == 0 the gradient is 0, as in PyTorch."""
    # BEGIN SOLUTION hint: let grad through where a > 0 (strictly) and put 0 everywhere else
    return (np.array(np.where(np.asarray(a) > 0, grad, 0.0), dtype=np.float64),)
    # END SOLUTION


def tanh_backward(grad, a):
    """out = tanh(a). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: the derivative of tanh(a) is 1 - tanh(a)**2
    t = np.tanh(a)
    return (np.array(grad * (1.0 - t * t), dtype=np.float64),)
    # END SOLUTION


def sigmoid_backward(grad, a):
    """out = 1 / (1 + exp(-a)). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: with s = sigmoid(a) the derivative is s * (1 - s)
    s = 1.0 / (1.0 + np.exp(-np.asarray(a, dtype=np.float64)))
    return (np.array(grad * s * (1.0 - s), dtype=np.float64),)
    # END SOLUTION


def pow_backward(grad, a, p):
    """out = a ** p with ``p`` a Python number. Returns (grad_a,)."""
    # BEGIN SOLUTION hint: d(a**p)/da = p * a**(p - 1); when p == 0 the gradient is 0 everywhere
    a = np.asarray(a, dtype=np.float64)
    if p == 0:
        return (np.zeros_like(a),)
    return (np.array(grad * p * a ** (p - 1), dtype=np.float64),)
    # END SOLUTION


def matmul_backward(grad, a, b):
    """out = a @ b with torch.matmul semantics. Returns (grad_a, grad_b).

    A 1-D ``a`` acts as a row (1, n) and a 1-D ``b`` as a column (n, 1); the added axis is
    dropped from the result. Dimensions before the last two are batch dimensions and broadcast.
    """
    # BEGIN SOLUTION hint: treat 1-D operands as a row / a column, take grad @ b^T and a^T @ grad over the last two axes, then sum over broadcast batch axes
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    grad = np.asarray(grad, dtype=np.float64)
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b
    if b.ndim == 1:
        grad = np.expand_dims(grad, -1)
    if a.ndim == 1:
        grad = np.expand_dims(grad, -2)
    grads = []
    for g, x2, x in ((grad @ np.swapaxes(b2, -1, -2), a2, a), (np.swapaxes(a2, -1, -2) @ grad, b2, b)):
        lead = g.ndim - x2.ndim
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(x2.shape[:-2]) if n == 1)
        grads.append(np.array(g.sum(axis=axes), dtype=np.float64).reshape(x.shape))
    return tuple(grads)
    # END SOLUTION


def sum_backward(grad, a, axis=None, keepdims=False):
    """out = a.sum(axis, keepdims). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: put back the reduced axes (unless keepdims kept them), then broadcast grad to a's shape
    shape = np.shape(a)
    grad = np.asarray(grad, dtype=np.float64)
    if not keepdims:
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        grad = np.expand_dims(grad, tuple(sorted(int(k) % len(shape) for k in axes)))
    return (np.array(np.broadcast_to(grad, shape), dtype=np.float64),)
    # END SOLUTION


def mean_backward(grad, a, axis=None, keepdims=False):
    """out = a.mean(axis, keepdims). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: like sum_backward, then divide by how many elements each mean averaged over
    shape = np.shape(a)
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
    axes = tuple(sorted(int(k) % len(shape) for k in axes))
    count = 1
    for k in axes:
        count *= shape[k]
    grad = np.asarray(grad, dtype=np.float64) / count
    if not keepdims:
        grad = np.expand_dims(grad, axes)
    return (np.array(np.broadcast_to(grad, shape), dtype=np.float64),)
    # END SOLUTION


# ----- view operations: the backward of 01's views -------------------------------------------
# A view moves or repeats elements without computing anything new, so its backward moves the
# gradient back to where each element came from, and adds up what reached the same element twice.


def reshape_backward(grad, a, shape):
    """out = a.reshape(shape) (one size may be -1). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: reshape grad back to a's shape (not to `shape`, which is the output's)
    return (np.array(np.reshape(grad, np.shape(a)), dtype=np.float64),)
    # END SOLUTION


def transpose_backward(grad, a, dim0, dim1):
    """out = a.transpose(dim0, dim1) (negative dims allowed). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: swapping the same two axes again undoes the swap (np.swapaxes)
    return (np.array(np.swapaxes(grad, dim0, dim1), dtype=np.float64),)
    # END SOLUTION


def permute_backward(grad, a, dims):
    """out = a.permute(dims): out's axis k is a's axis dims[k] (negative dims allowed). Returns (grad_a,)."""
    # BEGIN SOLUTION hint: apply the INVERSE permutation to grad: np.argsort of dims (after making negative dims positive)
    dims = [int(d) % np.ndim(a) for d in dims]
    return (np.array(np.transpose(grad, np.argsort(dims)), dtype=np.float64),)
    # END SOLUTION


def expand_backward(grad, a, shape):
    """out = a.expand(shape): new leading dims, size-1 dims stretched, -1 keeps a size. Returns (grad_a,)."""
    # BEGIN SOLUTION hint: each element of a was used once per copy: sum grad over the new leading dims, and (keepdims) over the dims a had as 1
    grad = np.asarray(grad, dtype=np.float64)
    lead = grad.ndim - np.ndim(a)
    stretched = tuple(lead + k for k, n in enumerate(np.shape(a)) if n == 1 and grad.shape[lead + k] != 1)
    grad = grad.sum(axis=stretched, keepdims=True)
    return (np.array(grad.sum(axis=tuple(range(lead))), dtype=np.float64).reshape(np.shape(a)),)
    # END SOLUTION


def getitem_backward(grad, a, index):
    """out = a[index] for ints, slices (with steps), None, Ellipsis and integer arrays. Returns (grad_a,)."""
    # BEGIN SOLUTION hint: start from zeros of a's shape and ADD grad in at the indexed places; np.add.at accumulates repeated indices
    out = np.zeros(np.shape(a), dtype=np.float64)
    np.add.at(out, index, grad)
    return (out,)
    # END SOLUTION
