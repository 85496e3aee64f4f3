"""A two-layer MLP written by hand in NumPy (float64): forward, loss, gradients and an update.

Conventions: a linear layer computes Y = X @ W + b with W of shape (d_in, d_out) and b of shape
(d_out,). The network is linear -> ReLU -> linear, and `params` is a dict with keys
"W1", "b1", "W2", "b2". This file must not use torch: deriving the gradients is the point.
"""

import numpy as np


def linear_forward(X, W, b):
    """Y = X @ W + b for X (B, d_in), W (d_in, d_out), b (d_out,). Returns Y (B, d_out)."""
    # BEGIN SOLUTION hint: one matrix product and one broadcast addition
    return X @ W + b
    # END SOLUTION


def linear_backward(X, W, grad_Y):
    """Gradients of the loss w.r.t. X, W and b, given grad_Y = dL/dY (B, d_out).

    Returns (grad_X, grad_W, grad_b), each with the shape of X, W and b.
    """
    # BEGIN SOLUTION hint: grad_X = grad_Y @ W.T; grad_W = X.T @ grad_Y; b was broadcast over the batch
    grad_X = grad_Y @ W.T
    grad_W = X.T @ grad_Y
    grad_b = grad_Y.sum(axis=0)
    return grad_X, grad_W, grad_b
    # END SOLUTION


def softmax_cross_entropy(logits, y):
    """Mean cross-entropy of softmax(logits) against integer labels y, and its gradient.

    logits: (B, C) floats; y: (B,) integers in [0, C). Returns (loss, grad_logits) where loss is
    a float and grad_logits = dloss/dlogits has shape (B, C). Must stay finite for huge logits.
    """
    # BEGIN SOLUTION hint: subtract each row's max before exp; the gradient is (softmax - one_hot) / B
    logits = np.asarray(logits, dtype=np.float64)
    y = np.asarray(y).astype(np.int64)
    batch = logits.shape[0]
    rows = np.arange(batch)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_probs[rows, y].mean()
    grad_logits = np.exp(log_probs)
    grad_logits[rows, y] -= 1.0
    grad_logits /= batch
    return float(loss), grad_logits
    # END SOLUTION


def forward(params, X):
    """Logits of linear -> ReLU -> linear for X of shape (B, d_in) or (B, 1, 28, 28).

    Returns (logits, cache): logits (B, d_out), and whatever `backward` needs to know about
    this forward pass (your choice of contents).
    """
    # BEGIN SOLUTION hint: flatten X to (B, -1), then linear, ReLU, linear; keep X, the pre-activation and h
    X = np.asarray(X, dtype=np.float64)
    X = X.reshape(X.shape[0], -1)
    pre = X @ params["W1"] + params["b1"]
    h = np.maximum(pre, 0.0)
    logits = h @ params["W2"] + params["b2"]
    cache = (X, pre, h)
    return logits, cache
    # END SOLUTION


def backward(params, cache, grad_logits):
    """Gradients of the loss for every parameter, given grad_logits = dL/dlogits.

    `cache` is what `forward` returned. Returns a dict with the keys of `params`, each gradient
    the shape of its parameter.
    """
    # BEGIN SOLUTION hint: walk forward in reverse: second linear, ReLU mask (pre > 0), first linear
    X, pre, h = cache
    grad_W2 = h.T @ grad_logits
    grad_b2 = grad_logits.sum(axis=0)
    grad_h = grad_logits @ params["W2"].T
    grad_pre = grad_h * (pre > 0)
    grad_W1 = X.T @ grad_pre
    grad_b1 = grad_pre.sum(axis=0)
    return {"W1": grad_W1, "b1": grad_b1, "W2": grad_W2, "b2": grad_b2}
    # END SOLUTION


def sgd_update(params, grads, lr):
    """One step of gradient descent: a NEW dict with theta - lr * grad for every key.

    The arrays in `params` must not be modified.
    """
    # BEGIN SOLUTION hint: build a new dict; params[k] - lr * grads[k] makes a new array
    return {name: value - lr * grads[name] for name, value in params.items()}
    # END SOLUTION
