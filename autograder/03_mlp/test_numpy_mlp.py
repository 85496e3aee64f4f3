"""Hidden checks for numpy_mlp.py: every value is compared with PyTorch autograd in float64 on
the same inputs. torch is blocked in the sandbox for these questions: the point is to derive the
gradients by hand.

The inputs are drawn once (functools.cache) and PyTorch's answers computed once per case
(@cases(reference=...), precomputed: gradients only where no GPU is present), both when the suite
is collected: every submission of a batch shares them.
Each case of a @cases test makes one call in the sandbox, so each test sends its cases' calls at once
(send_ahead): they run in the same order as one by one."""

import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import np_drivers
from checks.suite import call_or_fail, case_rng, cases, expect_close, fail, first_match, name_call, question
from reference import as_floats, grid, number, precomputed

NO_TORCH = ("torch",)
RTOL, ATOL = 1e-7, 1e-9  # float64 against float64


def _t(array, grad=False):
    return torch.tensor(np.asarray(array), dtype=torch.float64, requires_grad=grad)


@functools.cache
def _params(d_in, d_hidden, d_out, seed):
    rng = case_rng(seed, d_in, d_hidden, d_out)
    return {
        "W1": rng.normal(size=(d_in, d_hidden)) / np.sqrt(d_in),
        "b1": rng.normal(size=d_hidden) * 0.1,
        "W2": rng.normal(size=(d_hidden, d_out)) / np.sqrt(d_hidden),
        "b2": rng.normal(size=d_out) * 0.1,
    }


def _inputs(batch, shape, seed):
    return case_rng(seed, batch, *shape).uniform(-1.0, 1.0, size=(batch, *shape))


def _shape_hint(got, want, name, gradient=True):
    array = as_floats(got)
    if array is None:
        return None
    got_shape = array.shape
    if got_shape == tuple(reversed(want.shape)) and len(want.shape) == 2 and want.shape[0] != want.shape[1]:
        return (f"{name} is transposed: it should have shape {want.shape}"
                + (", the shape of what it is the gradient of" if gradient else ""))
    if got_shape == (1, *want.shape) and want.ndim == 1:
        return (f"{name} has shape {got_shape} but should be {want.shape}: sum over the batch "
                f"axis without keepdims (or reshape)")
    return None


# ------------------------------------------------------------------------ linear_forward

LINEAR_SHAPES = [(4, 3, 2), (1, 5, 1), (3, 4, 4), (16, 784, 32)]


@functools.cache
def _linear_case(batch, d_in, d_out):
    rng = case_rng(1, batch, d_in, d_out)
    return rng.normal(size=(batch, d_in)), rng.normal(size=(d_in, d_out)), rng.normal(size=d_out)


def _linear_forward(batch, d_in, d_out):
    X, W, b = _linear_case(batch, d_in, d_out)
    return (_t(X) @ _t(W) + _t(b)).numpy()


@question("numpy_mlp.linear_forward", points=5, block_imports=NO_TORCH)
@cases("batch,d_in,d_out", LINEAR_SHAPES, reference=_linear_forward, send_ahead=True)
def test_linear_forward(student, batch, d_in, d_out, reference):
    X, W, b = _linear_case(batch, d_in, d_out)
    expected = reference
    got = call_or_fail(lambda: student.numpy_mlp.linear_forward(X, W, b),
                       text=f"linear_forward(X {X.shape}, W {W.shape}, b {b.shape})")

    def diagnose(value):
        return first_match(value, [
            ((_t(X) @ _t(W)).numpy(), "b was not added: Y = X @ W + b"),
            (expected.T, "the result is transposed: Y has one row per example, shape (B, d_out)"),
        ]) or _shape_hint(value, expected, "Y", gradient=False)

    expect_close(got, expected, rtol=RTOL, atol=ATOL, what="entries of Y", diagnose=diagnose)


# ------------------------------------------------------------------------ linear_backward

@functools.cache
def _grad_Y(batch, d_in, d_out):
    return case_rng(2, batch, d_in, d_out).normal(size=(batch, d_out))


def _linear_backward(batch, d_in, d_out):
    """PyTorch's gradients of X @ W + b, backward from grad_Y."""
    X, W, b = _linear_case(batch, d_in, d_out)
    Xt, Wt, bt = _t(X, True), _t(W, True), _t(b, True)
    (Xt @ Wt + bt).backward(_t(_grad_Y(batch, d_in, d_out)))
    return {"grad_X": Xt.grad.numpy(), "grad_W": Wt.grad.numpy(), "grad_b": bt.grad.numpy()}


LINEAR_GRADS = precomputed(_linear_backward, LINEAR_SHAPES, backward=True)


@question("numpy_mlp.linear_backward", points=8, block_imports=NO_TORCH)
@cases(*grid(("part", ["grad_X", "grad_W", "grad_b"]), ("batch,d_in,d_out", LINEAR_SHAPES)), send_ahead=True)
def test_linear_backward(student, batch, d_in, d_out, part):
    X, W, b = _linear_case(batch, d_in, d_out)
    grad_Y = _grad_Y(batch, d_in, d_out)
    expected = LINEAR_GRADS(batch, d_in, d_out)[part]

    call = f"linear_backward(X {X.shape}, W {W.shape}, grad_Y {grad_Y.shape})"
    got = call_or_fail(lambda: student.numpy_mlp.linear_backward(X, W, grad_Y), text=call)
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        fail(f"linear_backward(X, W, grad_Y) returned {type(got).__name__}"
             f"{' of length %d' % len(got) if isinstance(got, (tuple, list)) else ''}; "
             "expected a tuple (grad_X, grad_W, grad_b).")
    value = got[["grad_X", "grad_W", "grad_b"].index(part)]

    def diagnose(value):
        hint = _shape_hint(value, expected, part)
        if hint:
            return hint
        candidates = [(expected.T, f"{part} is transposed")]
        if part == "grad_W":
            candidates.append(((_t(grad_Y).T @ _t(X)).numpy(),
                               "grad_W is grad_Y.T @ X, the transpose: it is X.T @ grad_Y, shape (d_in, d_out)"))
            candidates.append((expected / batch, "grad_W was divided by the batch size: "
                               "linear_backward only applies the chain rule to the grad_Y it is given"))
        if part == "grad_b":
            candidates.append((expected / batch, "grad_b is the MEAN of grad_Y over the batch; b is "
                               "added to every row, so its gradient is the SUM over rows"))
            candidates.append((np.ones_like(expected) * batch, "grad_b ignores grad_Y"))
        if part == "grad_X":
            candidates.append(((_t(grad_Y) @ _t(W)).numpy() if d_in == d_out else None,
                               "grad_X used W instead of W.T"))
        return first_match(value, candidates)

    name_call(f"{call}, its {part},")
    expect_close(value, expected, rtol=RTOL, atol=ATOL, what=f"entries of {part}", diagnose=diagnose)


# ------------------------------------------------------------------------ softmax_cross_entropy

SOFTMAX_CASES = [
    # (batch, classes, scale): scale multiplies N(0, 1) logits; 1000 checks numerical stability
    (4, 3, 1.0),
    (1, 10, 1.0),
    (8, 10, 5.0),
    (6, 10, 1000.0),
    (3, 2, 1000.0),
]


@functools.cache
def _softmax_case(batch, classes, scale):
    rng = case_rng(3, batch, classes, int(scale))
    logits = rng.normal(size=(batch, classes)) * scale
    return logits, rng.integers(0, classes, size=batch).astype(np.int64)


def _cross_entropy(batch, classes, scale):
    """PyTorch's loss and its gradient with respect to the logits."""
    logits, y = _softmax_case(batch, classes, scale)
    logits_t = _t(logits, True)
    loss_t = F.cross_entropy(logits_t, torch.tensor(y))
    loss_t.backward()
    return loss_t.item(), logits_t.grad.numpy()


CROSS_ENTROPY = precomputed(_cross_entropy, SOFTMAX_CASES, backward=True)


@question("numpy_mlp.softmax_cross_entropy", points=10, block_imports=NO_TORCH)
@cases(*grid(("part", ["loss", "grad_logits"]), ("batch,classes,scale", SOFTMAX_CASES)), send_ahead=True)
def test_softmax_cross_entropy(student, batch, classes, scale, part):
    logits, y = _softmax_case(batch, classes, scale)
    expected_loss, expected_grad = CROSS_ENTROPY(batch, classes, scale)

    call = f"softmax_cross_entropy(logits of shape {logits.shape} scaled by {scale:g}, y={y.tolist()})"
    got = call_or_fail(lambda: student.numpy_mlp.softmax_cross_entropy(logits, y), text=call)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{call} returned {type(got).__name__}; expected a tuple (loss, grad_logits).")
    overflow = ("not finite: exp overflows for large logits; subtract each row's max before "
                "exponentiating (softmax does not change)")

    if part == "loss":
        loss = number(got[0], f"{call}: the loss")
        if not np.isfinite(loss):
            fail(f"{call} returned loss {loss}; expected {expected_loss:.6g}. Likely mistake: {overflow}.")
        hint = first_match(loss, [
            (expected_loss * batch, "the loss is summed over the batch: average it (divide by B)"),
            (-expected_loss, "the sign is flipped: the loss is MINUS the mean log-probability of the label"),
        ])
        if not np.isclose(loss, expected_loss, rtol=1e-7, atol=1e-9):
            fail(f"{call} returned loss {loss:.10g}; expected {expected_loss:.10g} (the mean over the "
                 f"batch of -log softmax(logits)[label])." + (f" Likely mistake: {hint}." if hint else ""))
        return

    grad = got[1]

    def diagnose(value):
        array = as_floats(value)
        if array is not None and array.shape == expected_grad.shape and not np.all(np.isfinite(array)):
            return overflow
        if array is not None and array.shape == expected_grad.shape and any(
                np.allclose(array, naive, equal_nan=True) for naive in _naive_softmax_grads(logits, y)):
            return ("exp over- or underflows for logits this large: subtract each row's max from the "
                    "logits before exponentiating (softmax does not change)")
        return first_match(value, [
            (expected_grad * batch, "grad_logits was not divided by B: the loss is a mean, so "
                                    "every row of its gradient carries a factor 1/B"),
            (expected_grad / batch, "grad_logits was divided by B twice"),
        ]) or _shape_hint(value, expected_grad, "grad_logits")

    name_call(f"{call}, its grad_logits,")
    expect_close(grad, expected_grad, rtol=RTOL, atol=1e-12, what="entries of grad_logits", diagnose=diagnose)


def _naive_softmax_grads(logits, y):
    """grad_logits as computed without subtracting the row max, in the two usual ways."""
    batch, rows = logits.shape[0], np.arange(logits.shape[0])
    with np.errstate(all="ignore"):
        exps = np.exp(logits)
        direct = exps / exps.sum(axis=1, keepdims=True)
        via_log = np.exp(logits - np.log(exps.sum(axis=1, keepdims=True)))
    grads = []
    for probs in (direct, via_log):
        grad = probs.copy()
        grad[rows, y] -= 1.0
        grads.append(grad / batch)
    return grads


# ------------------------------------------------------------------------ forward and backward

MLP_CASES = [
    # (name, batch, input shape after the batch dim, d_hidden, d_out)
    ("flat", 5, (784,), 16, 10),
    ("image", 4, (1, 28, 28), 16, 10),
    ("one", 1, (6,), 4, 3),
    ("wide", 7, (20,), 32, 5),
]


@functools.cache
def _mlp_case(batch, shape, d_hidden, d_out):
    d_in = int(np.prod(shape))
    return _params(d_in, d_hidden, d_out, 4), _inputs(batch, shape, 5)


def _torch_forward(params, X, relu=True, b2=True):
    t = {key: _t(value, True) for key, value in params.items()}
    x = _t(X).reshape(X.shape[0], -1)
    pre = x @ t["W1"] + t["b1"]
    h = torch.relu(pre) if relu else pre
    logits = h @ t["W2"] + (t["b2"] if b2 else 0.0)
    return logits, t


def _logits(name, batch, shape, d_hidden, d_out):
    return _torch_forward(*_mlp_case(batch, shape, d_hidden, d_out))[0].detach().numpy()


@question("numpy_mlp.forward", points=6, block_imports=NO_TORCH)
@cases("name,batch,shape,d_hidden,d_out", MLP_CASES, ids=[c[0] for c in MLP_CASES], reference=_logits,
       send_ahead=True)
def test_forward(student, name, batch, shape, d_hidden, d_out, reference):
    params, X = _mlp_case(batch, shape, d_hidden, d_out)
    expected = reference
    call = f"forward(params with W1 {params['W1'].shape}, W2 {params['W2'].shape}, X of shape {X.shape})"
    got = call_or_fail(lambda: student.run(np_drivers.forward_logits, params, X), text=call)

    def diagnose(value):
        return first_match(value, [
            (_torch_forward(params, X, relu=False)[0].detach().numpy(),
             "no ReLU: the second layer must be applied to ReLU(X @ W1 + b1), not to X @ W1 + b1"),
            (_torch_forward(params, X, b2=False)[0].detach().numpy(), "b2 was not added"),
            (np.maximum(expected, 0), "a ReLU was applied to the logits: the last layer has none"),
        ])

    name_call(f"{call}, its logits,")
    expect_close(got, expected, rtol=RTOL, atol=ATOL, what="logits", diagnose=diagnose)


@functools.cache
def _grad_logits(batch, d_out):
    return case_rng(6, batch, d_out).normal(size=(batch, d_out))


def _mlp_grads(batch, shape, d_hidden, d_out, relu):
    """PyTorch's gradients of the parameters (with the ReLU's mask left out when not `relu`, to
    recognise that mistake)."""
    params, X = _mlp_case(batch, shape, d_hidden, d_out)
    logits, t = _torch_forward(params, X, relu=relu)
    (logits * _t(_grad_logits(batch, d_out))).sum().backward()
    return {key: tensor.grad.numpy() for key, tensor in t.items()}


MLP_GRADS = precomputed(_mlp_grads, [(*case[1:], relu) for case in MLP_CASES for relu in (True, False)],
                        backward=True)


@question("numpy_mlp.backward", points=10, block_imports=NO_TORCH)
@cases(*grid(("key", ["W1", "b1", "W2", "b2"]), ("name,batch,shape,d_hidden,d_out", MLP_CASES)), send_ahead=True)
def test_backward(student, name, batch, shape, d_hidden, d_out, key):
    params, X = _mlp_case(batch, shape, d_hidden, d_out)
    grad_logits = _grad_logits(batch, d_out)
    expected = MLP_GRADS(batch, shape, d_hidden, d_out, True)[key]
    unmasked = MLP_GRADS(batch, shape, d_hidden, d_out, False)[key]  # to recognise that mistake

    call = f"backward(params, cache, grad_logits) after forward(params, X of shape {X.shape})"
    grads = call_or_fail(lambda: student.run(np_drivers.forward_then_backward, params, X, grad_logits),
                         text=call)
    if key not in grads:
        fail(f"{call} returned a dict with keys {sorted(grads)}; expected the keys of params "
             f"{sorted(params)} (missing {key!r}).")

    def diagnose(value):
        hint = _shape_hint(value, expected, f"grad {key}")
        if hint:
            return hint
        candidates = [(expected.T, f"grad {key} is transposed")]
        if key in ("W1", "b1"):
            candidates.append((unmasked, "the ReLU's gradient is missing: multiply by (pre-activation > 0) "
                                         "on the way back through the ReLU"))
        if key.startswith("b"):
            candidates.append((expected / batch, f"grad {key} is a mean over the batch: it must be the sum"))
        return first_match(value, candidates)

    name_call(f"{call}, its {key!r} entry,")
    expect_close(grads[key], expected, rtol=RTOL, atol=ATOL, what=f"entries of grad {key}", diagnose=diagnose)


# ------------------------------------------------------------------------ sgd_update

def _sgd_step(sizes, lr):
    params, grads = _params(*sizes, seed=7), _params(*sizes, seed=8)
    return {key: (_t(params[key]) - lr * _t(grads[key])).numpy() for key in params}


@question("numpy_mlp.sgd_update", points=4, block_imports=NO_TORCH)
@cases(*grid(("sizes", [(6, 4, 3), (784, 16, 10)]), ("lr", [0.1, 0.5])), reference=_sgd_step, send_ahead=True)
def test_sgd_update(student, lr, sizes, reference):
    params = _params(*sizes, seed=7)
    grads = _params(*sizes, seed=8)
    expected = reference

    call = f"sgd_update(params, grads, lr={lr})"
    got = call_or_fail(lambda: student.run(np_drivers.sgd_update_checked, params, grads, lr), text=call)
    if got["same_dict"] or got["changed_in_place"]:
        fail(f"{call} changed the params it was given ({', '.join(got['changed_in_place']) or 'the dict'}); "
             "it must return a NEW dict and leave the old parameters as they were "
             "(params[k] - lr * grads[k] makes a new array; -= does not).")
    result = got["result"]
    if sorted(result) != sorted(params):
        fail(f"{call} returned a dict with keys {sorted(result)}; expected {sorted(params)}.")
    for key in params:
        name_call(f"{call}, its {key!r} entry,")
        expect_close(result[key], expected[key], rtol=RTOL, atol=ATOL, what=f"entries of {key}",
              diagnose=lambda value, key=key: first_match(value, [
                  ((_t(params[key]) + lr * _t(grads[key])).numpy(),
                   "the step goes uphill: theta - lr * grad, not theta + lr * grad"),
              ]))
