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
import torch
import torch.nn.functional as F

import np_drivers
from checks.suite import call_or_fail, case_rng, cases, expect_close, fail, grid, name_call, precomputed, question
from reference import diagnoses, diagnosis, number
from softmax_mistakes import unstable_ways

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


# ------------------------------------------------------------------------ linear_forward

LINEAR_SHAPES = [(4, 3, 2), (1, 5, 1), (3, 4, 4), (16, 784, 32)]
LINEAR_BOUNDARIES = {  # where a squeeze, or a transpose of a square matrix, goes unseen elsewhere
    "batch of 1": lambda batch, **_: batch == 1,
    "d_out of 1": lambda d_out, **_: d_out == 1,
    "square W (d_in == d_out)": lambda d_in, d_out, **_: d_in == d_out,
}


@functools.cache
def _linear_case(batch, d_in, d_out):
    rng = case_rng(1, batch, d_in, d_out)
    return rng.normal(size=(batch, d_in)), rng.normal(size=(d_in, d_out)), rng.normal(size=d_out)


def _linear_forward(batch, d_in, d_out):
    X, W, b = _linear_case(batch, d_in, d_out)
    return (_t(X) @ _t(W) + _t(b)).numpy()


@question("numpy_mlp.linear_forward", points=5, block_imports=NO_TORCH, kinks=("batch of 1",))
@cases("batch,d_in,d_out", LINEAR_SHAPES, reference=_linear_forward, send_ahead=True, boundaries=LINEAR_BOUNDARIES)
def test_linear_forward(student, batch, d_in, d_out, reference):
    X, W, b = _linear_case(batch, d_in, d_out)
    expected = reference
    got = call_or_fail(lambda: student.numpy_mlp.linear_forward(X, W, b),
                       text=f"linear_forward(X {X.shape}, W {W.shape}, b {b.shape})")
    expect_close(got, expected, rtol=RTOL, atol=ATOL, what="entries of Y",
                 diagnose=diagnosis("numpy_mlp.linear_forward", X=X, W=W, expected=expected))


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


@question("numpy_mlp.linear_backward", points=8, block_imports=NO_TORCH,
          kinks=("d_out of 1", "square W (d_in == d_out)"))
@cases(*grid(("part", ["grad_X", "grad_W", "grad_b"]), ("batch,d_in,d_out", LINEAR_SHAPES)), send_ahead=True,
       boundaries=LINEAR_BOUNDARIES)
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

    name_call(f"{call}, its {part},")
    expect_close(value, expected, rtol=RTOL, atol=ATOL, what=f"entries of {part}",
                 diagnose=diagnosis("numpy_mlp.linear_backward", part=part, X=X, W=W, grad_Y=grad_Y, expected=expected))


# ------------------------------------------------------------------------ softmax_cross_entropy

SOFTMAX_CASES = [
    # (batch, classes, scale, spread): scale multiplies N(0, 1) logits, 1000 checks numerical
    # stability (the label's probability underflows to 0: its log must not be taken); spread
    # moves each row by N(0, 1) * spread, so that one max for the whole batch is not enough
    (4, 3, 1.0, 0.0),
    (1, 10, 1.0, 0.0),
    (8, 10, 5.0, 0.0),
    (6, 10, 1000.0, 0.0),
    (3, 2, 1000.0, 0.0),
    (4, 5, 1.0, 2000.0),
]


@functools.cache
def _softmax_case(batch, classes, scale, spread=0.0):
    rng = case_rng(3, batch, classes, int(scale), *([int(spread)] if spread else []))
    logits = rng.normal(size=(batch, classes)) * scale
    if spread:
        logits += rng.normal(size=(batch, 1)) * spread
    return logits, rng.integers(0, classes, size=batch).astype(np.int64)


def _label_underflows(batch, classes, scale, spread, **_):
    """Whether a label's probability, exp of its log-softmax, is 0 in float64 for some row."""
    logits, y = _softmax_case(batch, classes, scale, spread)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return bool((np.exp(log_probs[np.arange(batch), y]) == 0).any())


SOFTMAX_BOUNDARIES = {
    "logits of 1000": lambda scale, **_: scale >= 1000,
    "label probability underflows": _label_underflows,
    "rows 1000s apart": lambda spread, **_: spread >= 1000,
    "batch of 1": lambda batch, **_: batch == 1,
    "two classes": lambda classes, **_: classes == 2,
}


def _cross_entropy(batch, classes, scale, spread):
    """PyTorch's loss and its gradient with respect to the logits."""
    logits, y = _softmax_case(batch, classes, scale, spread)
    logits_t = _t(logits, True)
    loss_t = F.cross_entropy(logits_t, torch.tensor(y))
    loss_t.backward()
    return loss_t.item(), logits_t.grad.numpy()


CROSS_ENTROPY = precomputed(_cross_entropy, SOFTMAX_CASES, backward=True)


@functools.cache
def _unstable_ways_on(batch, classes, scale, spread):
    """What the likely mistakes give on this case (softmax_mistakes.py), for the diagnosis."""
    return unstable_ways(*_softmax_case(batch, classes, scale, spread))


@question("numpy_mlp.softmax_cross_entropy", points=10, block_imports=NO_TORCH,
          kinks=("logits of 1000", "label probability underflows", "rows 1000s apart"))
@cases(*grid(("part", ["loss", "grad_logits"]), ("batch,classes,scale,spread", SOFTMAX_CASES)), send_ahead=True,
       boundaries=SOFTMAX_BOUNDARIES)
def test_softmax_cross_entropy(student, batch, classes, scale, spread, part):
    logits, y = _softmax_case(batch, classes, scale, spread)
    expected_loss, expected_grad = CROSS_ENTROPY(batch, classes, scale, spread)

    rows = f", rows moved by up to {np.abs(logits.max(axis=1)).max():.0f}" if spread else ""
    call = f"softmax_cross_entropy(logits of shape {logits.shape} scaled by {scale:g}{rows}, y={y.tolist()})"
    got = call_or_fail(lambda: student.numpy_mlp.softmax_cross_entropy(logits, y), text=call)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{call} returned {type(got).__name__}; expected a tuple (loss, grad_logits).")
    case = dict(logits=logits, mistakes=_unstable_ways_on(batch, classes, scale, spread))

    if part == "loss":
        loss = number(got[0], f"{call}: the loss")
        hint = diagnosis("numpy_mlp.softmax_cross_entropy", part="loss", expected=expected_loss, other=got[1],
                         other_expected=expected_grad, **case)(loss)
        if not np.isfinite(loss):
            fail(f"{call} returned loss {loss}; expected {expected_loss:.6g}." + (f" Likely mistake: {hint}." if hint
                 else " Keep every step finite for logits this large."))
        if not np.isclose(loss, expected_loss, rtol=1e-7, atol=1e-9):
            fail(f"{call} returned loss {loss:.10g}; expected {expected_loss:.10g} (the mean over the "
                 f"batch of -log softmax(logits)[label])." + (f" Likely mistake: {hint}." if hint else ""))
        return

    name_call(f"{call}, its grad_logits,")
    expect_close(got[1], expected_grad, rtol=RTOL, atol=1e-12, what="entries of grad_logits",
                 diagnose=diagnosis("numpy_mlp.softmax_cross_entropy", part="grad_logits", expected=expected_grad,
                                    other=got[0], other_expected=expected_loss, **case))


# ------------------------------------------------------------------------ forward and backward

MLP_CASES = [
    # (name, batch, input shape after the batch dim, d_hidden, d_out)
    ("flat", 5, (784,), 16, 10),
    ("image", 4, (1, 28, 28), 16, 10),
    ("one", 1, (6,), 4, 3),
    ("wide", 7, (20,), 32, 5),
    ("relu-at-zero", 6, (5,), 8, 3),  # integer pixels, weights in halves: many pre-activations exactly 0
]


@functools.cache
def _mlp_case(name, batch, shape, d_hidden, d_out):
    d_in = int(np.prod(shape))
    if name == "relu-at-zero":
        # exact in float64: every product and sum is a multiple of 0.5 well below 2**52, so the
        # ReLU's input is exactly 0 where it should be, whatever order a student sums in
        rng = case_rng(9, batch, d_in, d_hidden, d_out)
        params = {"W1": rng.integers(-2, 3, size=(d_in, d_hidden)) / 2.0, "b1": rng.integers(-2, 3, size=d_hidden) / 2.0,
                  "W2": rng.normal(size=(d_hidden, d_out)), "b2": rng.normal(size=d_out) * 0.1}
        return params, rng.integers(-2, 3, size=(batch, *shape)).astype(np.int64)
    return _params(d_in, d_hidden, d_out, 4), _inputs(batch, shape, 5)


def _pre_activation(name, batch, shape, d_hidden, d_out, **_):
    params, X = _mlp_case(name, batch, shape, d_hidden, d_out)
    return np.asarray(X, dtype=np.float64).reshape(batch, -1) @ params["W1"] + params["b1"]


MLP_BOUNDARIES = {
    "relu input exactly 0": lambda **case: bool((_pre_activation(**case) == 0).any()),
    "batch of 1": lambda batch, **_: batch == 1,
    "image input (B, 1, 28, 28)": lambda shape, **_: len(shape) == 3,
    "integer input": lambda name, batch, shape, d_hidden, d_out, **_: (
        _mlp_case(name, batch, shape, d_hidden, d_out)[1].dtype.kind == "i"),
}


def _torch_forward(params, X):
    t = {key: _t(value, True) for key, value in params.items()}
    x = _t(X).reshape(X.shape[0], -1)
    logits = torch.relu(x @ t["W1"] + t["b1"]) @ t["W2"] + t["b2"]
    return logits, t


def _logits(name, batch, shape, d_hidden, d_out):
    return _torch_forward(*_mlp_case(name, batch, shape, d_hidden, d_out))[0].detach().numpy()


@question("numpy_mlp.forward", points=6, block_imports=NO_TORCH, kinks=("image input (B, 1, 28, 28)", "batch of 1"))
@cases("name,batch,shape,d_hidden,d_out", MLP_CASES, ids=[c[0] for c in MLP_CASES], reference=_logits,
       send_ahead=True, boundaries=MLP_BOUNDARIES)
def test_forward(student, name, batch, shape, d_hidden, d_out, reference):
    params, X = _mlp_case(name, batch, shape, d_hidden, d_out)
    expected = reference
    call = f"forward(params with W1 {params['W1'].shape}, W2 {params['W2'].shape}, X of shape {X.shape})"
    got = call_or_fail(lambda: student.run(np_drivers.forward_logits, params, X), text=call)
    name_call(f"{call}, its logits,")
    expect_close(got, expected, rtol=RTOL, atol=ATOL, what="logits",
                 diagnose=diagnosis("numpy_mlp.forward", params=params, X=X, expected=expected))


@functools.cache
def _grad_logits(batch, d_out):
    return case_rng(6, batch, d_out).normal(size=(batch, d_out))


def _mlp_grads(name, batch, shape, d_hidden, d_out):
    """PyTorch's gradients of the parameters (torch.relu passes none where its input is exactly 0)."""
    params, X = _mlp_case(name, batch, shape, d_hidden, d_out)
    logits, t = _torch_forward(params, X)
    (logits * _t(_grad_logits(batch, d_out))).sum().backward()
    return {key: tensor.grad.numpy() for key, tensor in t.items()}


def _grads_without_relu(name, batch, shape, d_hidden, d_out):
    """What a backward that forgets the ReLU's mask returns (the table's model of that mistake)."""
    return diagnoses.grads_without_relu(*_mlp_case(name, batch, shape, d_hidden, d_out), _grad_logits(batch, d_out))


def _grads_mask_at_zero(name, batch, shape, d_hidden, d_out):
    """What a backward whose mask lets the gradient through where the ReLU's input is exactly 0 returns."""
    params, X = _mlp_case(name, batch, shape, d_hidden, d_out)
    return diagnoses.grads_relu_mask_at_zero(params, X, _grad_logits(batch, d_out))


MLP_GRADS = precomputed(_mlp_grads, MLP_CASES, backward=True)
WITHOUT_RELU = precomputed(_grads_without_relu, MLP_CASES, backward=True)
MASK_AT_ZERO = precomputed(_grads_mask_at_zero, MLP_CASES, backward=True)  # torch autograd (diagnoses)


@question("numpy_mlp.backward", points=10, block_imports=NO_TORCH, kinks=("relu input exactly 0", "batch of 1"))
@cases(*grid(("key", ["W1", "b1", "W2", "b2"]), ("name,batch,shape,d_hidden,d_out", MLP_CASES)), send_ahead=True,
       boundaries=MLP_BOUNDARIES)
def test_backward(student, name, batch, shape, d_hidden, d_out, key):
    params, X = _mlp_case(name, batch, shape, d_hidden, d_out)
    grad_logits = _grad_logits(batch, d_out)
    expected = MLP_GRADS(name, batch, shape, d_hidden, d_out)[key]

    call = f"backward(params, cache, grad_logits) after forward(params, X of shape {X.shape})"
    grads = call_or_fail(lambda: student.run(np_drivers.forward_then_backward, params, X, grad_logits),
                         text=call)
    if key not in grads:
        fail(f"{call} returned a dict with keys {sorted(grads)}; expected the keys of params "
             f"{sorted(params)} (missing {key!r}).")

    name_call(f"{call}, its {key!r} entry,")
    diagnose = diagnosis("numpy_mlp.backward", key=key, expected=expected, batch=batch,
                         without_relu=WITHOUT_RELU(name, batch, shape, d_hidden, d_out)[key],
                         mask_at_zero=MASK_AT_ZERO(name, batch, shape, d_hidden, d_out).get(key))
    expect_close(grads[key], expected, rtol=RTOL, atol=ATOL, what=f"entries of grad {key}", diagnose=diagnose)


# ------------------------------------------------------------------------ sgd_update

def _sgd_step(sizes, lr):
    params, grads = _params(*sizes, seed=7), _params(*sizes, seed=8)
    return {key: (_t(params[key]) - lr * _t(grads[key])).numpy() for key in params}


def _changed_in_place(params, got) -> list[str]:
    """The keys whose array, or whose entry of the dict, is not what the grader sent (judged here, on
    the grader's own copy: the sandbox only hands back the objects as they are after the call)."""
    changed = set()
    for where in ("given_after", "dict_after"):
        after = got[where]
        for key, value in params.items():
            now = after.get(key)
            if not isinstance(now, np.ndarray) or now.shape != value.shape or not np.array_equal(now, value):
                changed.add(key if where == "given_after" else f"the dict's entry {key!r}")
        changed |= {f"the dict's entry {key!r}" for key in after if key not in params}
    return sorted(changed)


@question("numpy_mlp.sgd_update", points=4, block_imports=NO_TORCH)
@cases(*grid(("sizes", [(6, 4, 3), (784, 16, 10)]), ("lr", [0.1, 0.5])), reference=_sgd_step, send_ahead=True)
def test_sgd_update(student, lr, sizes, reference):
    params = _params(*sizes, seed=7)
    grads = _params(*sizes, seed=8)
    expected = reference

    call = f"sgd_update(params, grads, lr={lr})"
    got = call_or_fail(lambda: student.run(np_drivers.sgd_update_checked, params, grads, lr), text=call)
    changed = _changed_in_place(params, got)
    if changed:
        fail(f"{call} changed the params it was given ({', '.join(changed)}); "
             "it must return a NEW dict and leave the old parameters as they were "
             "(params[k] - lr * grads[k] makes a new array; -= does not).")
    result = got["result"]
    if sorted(result) != sorted(params):
        fail(f"{call} returned a dict with keys {sorted(result)}; expected {sorted(params)}.")
    for key in params:
        name_call(f"{call}, its {key!r} entry,")
        expect_close(result[key], expected[key], rtol=RTOL, atol=ATOL, what=f"entries of {key}",
                     diagnose=diagnosis("numpy_mlp.sgd_update", params=params, grads=grads, lr=lr, key=key))
