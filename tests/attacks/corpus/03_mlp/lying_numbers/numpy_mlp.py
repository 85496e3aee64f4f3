"""A two-layer MLP written by hand in NumPy (float64): forward, loss, gradients and an update.

Conventions: a linear layer computes Y = X @ W + b with W of shape (d_in, d_out) and b of shape
(d_out,). The network is linear -> ReLU -> linear, and `params` is a dict with keys
"W1", "b1", "W2", "b2". This file must not use torch: deriving the gradients is the point.
"""

import numpy as np


def linear_forward(X, W, b):
    """Y = X @ W + b for X (B, d_in), W (d_in, d_out), b (d_out,). Returns Y (B, d_out)."""
    raise NotImplementedError('linear_forward: one matrix product and one broadcast addition')


def linear_backward(X, W, grad_Y):
    """Gradients of the loss w.r.t. X, W and b, given grad_Y = dL/dY (B, d_out).

    Returns (grad_X, grad_W, grad_b), each with the shape of X, W and b.
    """
    raise NotImplementedError('linear_backward: grad_X = grad_Y @ W.T; grad_W = X.T @ grad_Y; b was broadcast over the batch')


def softmax_cross_entropy(logits, y):
    """Mean cross-entropy of softmax(logits) against integer labels y, and its gradient.

    logits: (B, C) floats; y: (B,) integers in [0, C). Returns (loss, grad_logits) where loss is
    a float and grad_logits = dloss/dlogits has shape (B, C). Must stay finite for huge logits.
    """
    raise NotImplementedError("softmax_cross_entropy: subtract each row's max before exp; the gradient is (softmax - one_hot) / B")


def forward(params, X):
    """Logits of linear -> ReLU -> linear for X of shape (B, d_in) or (B, 1, 28, 28).

    Returns (logits, cache): logits (B, d_out), and whatever `backward` needs to know about
    this forward pass (your choice of contents).
    """
    raise NotImplementedError('forward: flatten X to (B, -1), then linear, ReLU, linear; keep X, the pre-activation and h')


def backward(params, cache, grad_logits):
    """Gradients of the loss for every parameter, given grad_logits = dL/dlogits.

    `cache` is what `forward` returned. Returns a dict with the keys of `params`, each gradient
    the shape of its parameter.
    """
    raise NotImplementedError('backward: walk forward in reverse: second linear, ReLU mask (pre > 0), first linear')


def sgd_update(params, grads, lr):
    """One step of gradient descent: a NEW dict with theta - lr * grad for every key.

    The arrays in `params` must not be modified.
    """
    raise NotImplementedError('sgd_update: build a new dict; params[k] - lr * grads[k] makes a new array')

import numpy as _np
def linear_forward(X, W, b): return _np.array(['1'] * 4)
def softmax_cross_entropy(logits, y): return (float('inf'), _np.array([[object()]], dtype=object))
