"""The likely mistakes of 03_mlp: one table, read by the public checks and the hidden suite alike.

Each entry of DIAGNOSES takes what came back (`got`) and the case (its inputs and, where a mistake
is told from it, the right answer `expected`) and names the mistake that would give that result,
or says None; RAISED does the same for an exception the student's code raised. What a mistake
returns is computed from the case's inputs (the layer without its bias, the count with the frozen
parameters): compared with a wrong answer, never used as the answer. A mistake that takes
autograd to model (the MLP's gradients without the ReLU's mask) is computed by the caller with
the function here (`grads_without_relu`) and passed in, so that the hidden suite can compute it
once, when the suite is collected. One whose model would be the graded answer written in NumPy
(softmax cross-entropy's) is modelled in the grader only and passed in as values (`mistakes`).

    expect_close(got, expected, diagnose=diagnosis("numpy_mlp.linear_forward", X=X, W=W, b=b, expected=expected))
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from checks.suite import diagnosis_table, first_match, is_close


def _floats(value) -> np.ndarray | None:
    """`value` as a float64 array, or None when it is not numeric (anything may come back)."""
    if value is None:
        return None
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None


def _shape(got, expected, name, gradient=True) -> str | None:
    """A result of the transposed shape, or with a batch axis kept."""
    array, want = _floats(got), np.asarray(expected)
    if array is None:
        return None
    if array.shape == tuple(reversed(want.shape)) and want.ndim == 2 and want.shape[0] != want.shape[1]:
        return (f"{name} is transposed: it should have shape {want.shape}"
                + (", the shape of what it is the gradient of" if gradient else ""))
    if array.shape == (1, *want.shape) and want.ndim == 1:
        return (f"{name} has shape {array.shape} but should be {want.shape}: sum over the batch "
                f"axis without keepdims (or reshape)")
    return None


# ---- numpy_mlp.py ------------------------------------------------------------------------------

def linear_forward(got, X, W, expected, **_) -> str | None:
    return first_match(got, [
        (np.asarray(X) @ np.asarray(W), "b was not added: Y = X @ W + b"),
        (np.asarray(expected).T, "the result is transposed: Y has one row per example, shape (B, d_out)"),
    ]) or _shape(got, expected, "Y", gradient=False)


def linear_backward(got, part, X, W, grad_Y, expected, **_) -> str | None:
    """`part`: which of (grad_X, grad_W, grad_b) `got` and `expected` are."""
    hint = _shape(got, expected, part)
    if hint:
        return hint
    X, W, grad_Y, expected = map(np.asarray, (X, W, grad_Y, expected))
    batch = X.shape[0]
    candidates = [(expected.T, f"{part} is transposed")]
    if part == "grad_W":
        candidates.append((grad_Y.T @ X,
                           "grad_W is grad_Y.T @ X, the transpose: it is X.T @ grad_Y, shape (d_in, d_out)"))
        candidates.append((expected / batch, "grad_W was divided by the batch size: "
                           "linear_backward only applies the chain rule to the grad_Y it is given"))
    if part == "grad_b":
        candidates.append((expected / batch, "grad_b is the MEAN of grad_Y over the batch; b is "
                           "added to every row, so its gradient is the SUM over rows"))
        candidates.append((np.ones_like(expected) * batch, "grad_b ignores grad_Y"))
    if part == "grad_X":
        candidates.append((grad_Y @ W if W.shape[0] == W.shape[1] else None, "grad_X used W instead of W.T"))
    return first_match(got, candidates)


OVERFLOW = ("exp over- or underflows for logits this large: subtract each row's max from the "
            "logits before exponentiating (softmax does not change)")
LOG_OF_UNDERFLOW = ("the label's probability underflowed to 0 and its log is -inf: take the log-softmax "
                    "directly, shifted - log(sum(exp(shifted))), instead of the log of the softmax")
GLOBAL_MAX = ("one max for the whole batch was subtracted: rows far apart still over- or underflow; "
              "subtract each ROW's max (logits.max(axis=1, keepdims=True))")
# by the names the grader's models of these mistakes give them (autograder/03_mlp/softmax_mistakes.py)
SOFTMAX_MISTAKES = {"overflow": OVERFLOW, "global_max": GLOBAL_MAX, "log_of_underflow": LOG_OF_UNDERFLOW}


def _same(got: np.ndarray, value, expected) -> bool:
    """`got` is what `value` is (NaN for NaN, inf for inf, else close) and `value` is wrong."""
    value, expected = np.asarray(value, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if got.shape != value.shape:
        return False
    with np.errstate(all="ignore"):
        wrong = not np.allclose(value, expected, rtol=1e-7, atol=1e-9, equal_nan=True)
        return wrong and bool(np.allclose(got, value, rtol=1e-6, atol=1e-9, equal_nan=True))


def _agrees(got: np.ndarray, value) -> bool:
    """`got` is what `value` is: NaN for NaN, inf for inf, else close."""
    value = np.asarray(value, dtype=np.float64)
    with np.errstate(all="ignore"):
        return got.shape == value.shape and bool(np.allclose(got, value, rtol=1e-6, atol=1e-9, equal_nan=True))


def softmax_cross_entropy(got, part, logits, expected, other=None, other_expected=None, mistakes=(),
                          **_) -> str | None:
    """`part`: "loss" (`got` a number) or "grad_logits". `other`: the other half of what the
    student returned (the gradient for the loss, the loss for the gradient), with the right value
    of it, `other_expected`: a mistake is named only where it gives both halves as they came back.
    `mistakes`: (loss, grad_logits, name in SOFTMAX_MISTAKES) of each way of computing it that
    breaks on large logits, on this case: the grader's models, or what they gave on a public case
    (softmax_mistakes.json, written by `checks build`); their code is not released, as its last
    steps are the answer."""
    batch = np.shape(logits)[0]
    array, other_array = _floats(got), _floats(other)
    if array is not None:
        at = 0 if part == "loss" else 1
        found = []
        for mistake in mistakes:
            if not _same(array.reshape(()) if part == "loss" and array.size == 1 else array, mistake[at], expected):
                continue
            if other_array is not None and other_expected is not None and not _agrees(
                    other_array.reshape(()) if at == 1 and other_array.size == 1 else other_array, mistake[1 - at]):
                continue
            if SOFTMAX_MISTAKES[mistake[2]] not in found:
                found.append(SOFTMAX_MISTAKES[mistake[2]])
        if found:
            return " Or: ".join(found)
    if part == "loss":
        return first_match(got, [
            (expected * batch, "the loss is summed over the batch: average it (divide by B)"),
            (-expected, "the sign is flipped: the loss is MINUS the mean log-probability of the label"),
        ])
    return first_match(got, [
        (np.asarray(expected) * batch, "grad_logits was not divided by B: the loss is a mean, so "
                                       "every row of its gradient carries a factor 1/B"),
        (np.asarray(expected) / batch, "grad_logits was divided by B twice"),
    ]) or _shape(got, expected, "grad_logits")


def _flat(X):
    X = np.asarray(X, dtype=np.float64)
    return X.reshape(X.shape[0], -1)


def forward(got, params, X, expected, **_) -> str | None:
    no_relu = (_flat(X) @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]
    return first_match(got, [
        (no_relu, "no ReLU: the second layer must be applied to ReLU(X @ W1 + b1), not to X @ W1 + b1"),
        (np.asarray(expected) - params["b2"], "b2 was not added"),
        (np.maximum(expected, 0), "a ReLU was applied to the logits: the last layer has none"),
    ])


def grads_without_relu(params, X, grad_logits) -> dict[str, np.ndarray]:
    """The parameters' gradients of the MLP with its ReLU left out, backward from grad_logits: what
    a backward that forgets the ReLU's mask returns (torch autograd, in the grader)."""
    import torch

    t = {key: torch.tensor(np.asarray(value, dtype=np.float64), requires_grad=True) for key, value in params.items()}
    logits = (torch.tensor(_flat(X)) @ t["W1"] + t["b1"]) @ t["W2"] + t["b2"]
    (logits * torch.tensor(np.asarray(grad_logits, dtype=np.float64))).sum().backward()
    return {key: tensor.grad.numpy() for key, tensor in t.items()}


def grads_relu_mask_at_zero(params, X, grad_logits) -> dict[str, np.ndarray]:
    """The first layer's gradients from a backward whose ReLU mask is (pre >= 0): it lets the
    gradient through where the ReLU's input is exactly 0, where torch.relu passes none. Torch's
    autograd of a `where(pre >= 0, ...)` makes them, in the grader: no answer is written out here."""
    import torch

    t = {key: torch.tensor(np.asarray(value, dtype=np.float64), requires_grad=True) for key, value in params.items()}
    pre = torch.tensor(_flat(X)) @ t["W1"] + t["b1"]
    logits = torch.where(pre >= 0, pre, torch.zeros_like(pre)) @ t["W2"] + t["b2"]
    (logits * torch.tensor(np.asarray(grad_logits, dtype=np.float64))).sum().backward()
    return {key: t[key].grad.numpy() for key in ("W1", "b1")}


def _unless_right(value, expected):
    """`value`, a mistake's result, or None where the mistake gives the right answer on this case
    (a ReLU mask at 0 on inputs that are never 0): such a mistake cannot explain a wrong one."""
    if value is None or is_close(value, expected, rtol=1e-7, atol=1e-9):
        return None
    return value


def backward(got, key, expected, batch, without_relu=None, mask_at_zero=None, **_) -> str | None:
    """`without_relu`: grads_without_relu(...)[key] for the case; `mask_at_zero`:
    grads_relu_mask_at_zero(...)[key] (W1 and b1 only)."""
    hint = _shape(got, expected, f"grad {key}")
    if hint:
        return hint
    candidates = [(_unless_right(np.asarray(expected).T, expected), f"grad {key} is transposed")]
    if key in ("W1", "b1"):
        candidates.append((_unless_right(without_relu, expected),
                           "the ReLU's gradient is missing: multiply by (pre-activation > 0) "
                           "on the way back through the ReLU"))
        candidates.append((_unless_right(mask_at_zero, expected),
                           "the ReLU's mask lets the gradient through where its input is exactly 0 "
                           "(pre >= 0, or x < 0 blocked): torch.relu passes none there, so use (pre > 0)"))
    if key.startswith("b"):
        candidates.append((np.asarray(expected) / batch, f"grad {key} is a mean over the batch: it must be the sum"))
    return first_match(got, candidates)


def sgd_update(got, params, grads, lr, key, **_) -> str | None:
    return first_match(got, [(np.asarray(params[key]) + lr * np.asarray(grads[key]),
                              "the step goes uphill: theta - lr * grad, not theta + lr * grad")])


# ---- torch_mlp.py ------------------------------------------------------------------------------

def mlp(got, part, state=None, x=None, expected_shape=None, **_) -> str | None:
    """`part`: "out" (the logits, for `state` and `x`) or "state_shape" (a state_dict entry's shape)."""
    if part == "state_shape":
        if tuple(got) == tuple(reversed(expected_shape)):
            return "nn.Linear(in_features, out_features) stores its weight as (out, in): check the argument order"
        return None
    w = {k: np.asarray(v, dtype=np.float64) for k, v in state.items()}
    linear = (_flat(x) @ w["fc1.weight"].T + w["fc1.bias"]) @ w["fc2.weight"].T + w["fc2.bias"]
    return first_match(got, [(linear, "there is no ReLU between fc1 and fc2")], rtol=1e-4, atol=1e-5)


def mlp_raised(raised, device, dtype_name, d_in, **_) -> str | None:
    message = raised.message.lower()
    if device == "meta" and ("device" in message or "meta" in message):
        return ("on the meta device this usually means forward creates a tensor on a fixed device "
                "(torch.zeros(...), torch.tensor(...), .to('cpu'), .numpy()): make new tensors with "
                "device=x.device, or avoid them")
    if dtype_name == "float64" and ("dtype" in message or ("type" in message and "float" in message)):
        return ("with a float64 model, the input and every tensor forward creates must stay float64: "
                "do not call .float() or hard-code a dtype")
    if "shape" in message and d_in != 784:
        return "is 784 hard-coded somewhere? Use d_in, or torch.flatten(x, 1)"
    return None


def count_parameters(got, every=None, with_buffers=None, state_total=None, tensors=None, counted_twice=None,
                     **_) -> str | None:
    """Each keyword: what a count with that mistake gives for the case's model (None: cannot happen)."""
    return first_match(got, [
        (every, "frozen parameters (requires_grad=False) were counted: count the trainable ones only"),
        (with_buffers, "buffers such as BatchNorm's running statistics were counted: count "
                       "model.parameters(), not the state_dict"),
        (state_total, "buffers such as BatchNorm's running statistics were counted: count "
                      "model.parameters(), not the state_dict"),
        (tensors, "that is the number of parameter TENSORS: add up p.numel() instead"),
        (counted_twice, "a layer used twice was counted twice: its parameters are shared, count them once "
                        "(model.parameters() lists each parameter once)"),
    ])


# ---- training.py -------------------------------------------------------------------------------

SGD_MISTAKES = {
    "decay_subtracted": "weight decay was subtracted from the gradient: torch.optim.SGD uses grad + weight_decay * p",
    "decay_after_momentum": "weight decay was added after the momentum buffer: add weight_decay * p to the "
                            "gradient first, then update the buffer with that",
    "dampening": "the momentum buffer is damped (buf = momentum * buf + (1 - momentum) * grad): torch.optim.SGD "
                 "uses buf = momentum * buf + grad, starting from buf = grad on the first step",
    "dampening_after_first": "the momentum buffer is damped (buf = momentum * buf + (1 - momentum) * grad): "
                             "torch.optim.SGD (no dampening) uses buf = momentum * buf + grad",
    "nesterov": "that is Nesterov momentum: the course's SGD steps by the buffer itself",
    "no_momentum": "momentum is ignored: keep one buffer per parameter, buf = momentum * buf + grad",
    "no_weight_decay": "weight_decay is ignored: add weight_decay * p to the gradient",
    "decay_in_place": "step() added weight decay to p.grad in place (p.grad.add_(...)): build a new tensor, "
                      "g = p.grad + weight_decay * p, and leave .grad as backward left it",
    "buffer_aliases_grad": "the momentum buffer IS the .grad tensor (no clone): zero_grad(set_to_none=False) "
                           "and the next backward change it, and the buffer's update changes .grad: store a clone",
}
# a step that was right until .grad held what the previous step left in it (no zero_grad between)
SGD_GRAD_KEPT = ("step() changed p.grad in place: after a backward() with no zero_grad() before it, .grad "
                 "holds the sum of both gradients as backward left them, so a change step() made to .grad "
                 "carries into the next step. Build new tensors (g = p.grad + wd * p) and keep a clone as "
                 "the momentum buffer")


def sgd_variants(momentum, weight_decay) -> list[str]:
    """The SGD_MISTAKES that give a different trajectory with these settings (in order)."""
    decay = ("decay_subtracted", "decay_after_momentum", "no_weight_decay", "decay_in_place")
    moment = ("decay_after_momentum", "dampening", "dampening_after_first", "nesterov", "no_momentum",
              "buffer_aliases_grad")
    return [v for v in SGD_MISTAKES if not (v in decay and not weight_decay) and not (v in moment and not momentum)]


def sgd(got, init, variants, **_) -> str | None:
    """`got`: the trajectory (each step's parameters); `variants`: {mistake: its trajectory}, for
    sgd_variants' mistakes (a function of the mistake's name is called only when needed)."""
    if all(np.array_equal(np.asarray(p), a) for step in got for p, a in zip(step, init)):
        return ("the parameters never changed: step() must update them in place (p.add_, p.sub_ or "
                "p.data) under torch.no_grad(), and __init__ should keep list(params), since params may be a "
                "generator that runs out after one pass")
    for name, trajectory in variants.items():
        trajectory = trajectory(name) if callable(trajectory) else trajectory
        if all(is_close(p, e, rtol=1e-9, atol=1e-12) for step, ref in zip(got, trajectory) for p, e in zip(step, ref)):
            return SGD_MISTAKES[name]
    return None


def steps_per_epoch(got, n, batch_size, drop_last, **_) -> str | None:
    if isinstance(got, float):
        return "a float came back: use integer arithmetic (// and a ceiling), the count is an int"
    if not drop_last and got == n // batch_size and n % batch_size:
        return "rounded down: without drop_last the last, partial batch is one more step"
    if not drop_last and got == n // batch_size + 1 and n % batch_size == 0:
        return ("n // batch_size + 1 is one step too many when batch_size divides n (or n is 0): round up "
                "with (n + batch_size - 1) // batch_size")
    if drop_last and got == -(-n // batch_size):
        return "with drop_last=True the last, partial batch is dropped: round down"
    return None


def _loop_mistake(events, batches, device):
    """What is wrong with the order of the calls in the student's loop, if anything."""
    steps, zeros = events.count("step"), events.count("zero_grad")
    forwards = [e for e in events if e.startswith("forward:")]
    kind = str(device).split(":")[0]
    if any(e != f"forward:{kind}" for e in forwards):
        return f"the batches were not moved to the device: x.to(device), y.to(device) (the model is on {device})"
    if steps != batches:
        return f"optimizer.step() ran {steps} times for {batches} batches: one step per batch"
    if zeros == 0:
        return ("optimizer.zero_grad() is never called: every batch's gradients are added to the previous "
                "ones'. Call it once per batch, before loss.backward()")
    first_step, first_backward = events.index("step"), events.index("backward") if "backward" in events else None
    if first_backward is None or first_step < first_backward:
        return "optimizer.step() ran before loss.backward(): each step used stale (or no) gradients"
    for b, event in enumerate(events):
        if event == "backward" and "step" in events[b:]:
            s = events.index("step", b)
            if "zero_grad" in events[b:s]:
                return "zero_grad() ran between backward() and step(): the step saw no gradients"
    return None


def train_epoch(got, batches, device="cpu", events=None, losses=None, sizes=None, **_) -> str | None:
    """`got`: the returned mean loss (with `losses`, each batch's, and `sizes`), or anything when only
    the loop's `events` (its calls, in order, where the check recorded them) are to be read."""
    hint = None
    if losses is not None:
        losses = [float(v) for v in losses]
        weighted = sum(v * n for v, n in zip(losses, sizes)) / sum(sizes)
        hint = first_match(got, [
            (sum(losses), "that is the SUM of the batch losses: divide by the number of batches"),
            (losses[-1], "that is the last batch's loss only: average over all batches"),
            (weighted if sizes[-1] != sizes[0] else None,
             "that weighs each batch by its size: return the plain mean of the batch losses"),
            (losses[0], "that is the first batch's loss only: average over all batches"),
        ], rtol=1e-5, atol=1e-7)
    return hint or (None if events is None else _loop_mistake(list(events), batches, device))


def evaluate(got, correct, n, batch_size, calls=(), **_) -> str | None:
    batches = -(-n // batch_size)
    hint = first_match(got, [
        (correct, "that is the number of correct predictions: divide by the number of examples"),
        (correct / n * 100, "that is a percentage: return a fraction in [0, 1]"),
        (correct / batches, "divided by the number of batches: divide by the number of examples"),
        (correct / (batches * batch_size) if n % batch_size else None,
         "divided by batches * batch_size, but the last batch is smaller: count the examples (y.numel())"),
    ], rtol=1e-6, atol=1e-6)
    if hint is None and any(c["training"] for c in calls):
        hint = "the model ran in train mode (its dropout was active): call model.eval() first"
    return hint


# ---- the tables --------------------------------------------------------------------------------

DIAGNOSES: dict[str, Callable[..., str | None]] = {
    "numpy_mlp.linear_forward": linear_forward,
    "numpy_mlp.linear_backward": linear_backward,
    "numpy_mlp.softmax_cross_entropy": softmax_cross_entropy,
    "numpy_mlp.forward": forward,
    "numpy_mlp.backward": backward,
    "numpy_mlp.sgd_update": sgd_update,
    "torch_mlp.MLP": mlp,
    "torch_mlp.count_parameters": count_parameters,
    "training.SGD": sgd,
    "training.steps_per_epoch": steps_per_epoch,
    "training.train_epoch": train_epoch,
    "training.evaluate": evaluate,
}

RAISED: dict[str, Callable[..., str | None]] = {
    "torch_mlp.MLP": mlp_raised,
}


# The `diagnose` for one case of a question: given what came back, the likely mistake or None (an
# entry that breaks on an odd value says nothing); and call_or_fail's `mistake`, given what raised.
diagnosis = diagnosis_table(DIAGNOSES)
raised_hint = diagnosis_table(RAISED, missing_ok=True)
