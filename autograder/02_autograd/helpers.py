"""Grader-side helpers for the 02_autograd suite: PyTorch references, comparisons, feedback.

Everything here runs in the grader process. Reference values always come from PyTorch in float64.
"""

import zlib

import numpy as np
import torch

from checks.suite import StudentFault, StudentRaised, fail

import drivers

RTOL = 1e-7
ATOL = 1e-9

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def rng_for(*key):
    """A NumPy generator seeded from a stable hash of `key` (same data on every run)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def shape_text(shape):
    shape = tuple(int(s) for s in shape)
    return "()" if not shape else f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def t64(array, requires_grad=False):
    return torch.tensor(np.asarray(array, dtype=np.float64), dtype=torch.float64, requires_grad=requires_grad)


def vjp(fn, inputs, grad, wrt=None):
    """PyTorch's vector-Jacobian product: grads of <fn(*inputs), grad> w.r.t. inputs[k] in wrt."""
    wrt = range(len(inputs)) if wrt is None else wrt
    tensors = [t64(x, requires_grad=k in wrt) for k, x in enumerate(inputs)]
    out = fn(*tensors)
    grads = torch.autograd.grad(out, [tensors[k] for k in wrt], t64(grad), allow_unused=True)
    return [np.zeros(np.shape(inputs[k])) if g is None else g.detach().numpy().copy()
            for k, g in zip(wrt, grads)]


# ----------------------------------------------------------------------------- comparisons

def as_float_array(got, label):
    """`got` as a numeric ndarray, or a failure that says what it was instead."""
    if isinstance(got, np.ndarray) and got.dtype.kind in "biuf":
        return got
    if isinstance(got, (float, int, np.floating, np.integer)) and not isinstance(got, (bool, np.bool_)):
        return np.asarray(got)
    if isinstance(got, str) and got.startswith("<"):
        fail(f"{label} is an object of type {got[1:-1]}; expected a NumPy float64 array.")
    if got is None:
        fail(f"{label} is None; expected a NumPy float64 array.")
    fail(f"{label} is {type(got).__name__} {got!r:.80}; expected a NumPy float64 array.")
    raise AssertionError  # unreachable


def difference_text(have, want):
    """Where and by how much two same-shape arrays differ."""
    have = have.astype(np.float64)
    bad = ~np.isclose(have, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    error = np.array(np.abs(have - want), dtype=np.float64)
    error[np.isnan(error)] = np.inf
    where = np.unravel_index(int(np.argmax(np.where(bad, error, -1.0))), want.shape) if want.ndim else ()
    index = list(map(int, where))
    text = (f"{int(bad.sum())} of {want.size} values differ; max abs error {float(error[where]):.3g}"
            f"{f' at {index}' if index else ''} (got {have[where].item():.6g}, expected {want[where].item():.6g})")
    if np.isnan(have).any() and not np.isnan(want).any():
        text += "; some values are NaN"
    return text + "."


def close(have, want):
    return have.shape == want.shape and np.allclose(have.astype(np.float64), want, rtol=RTOL, atol=ATOL,
                                                    equal_nan=True)


def check_array(got, want, label, context, shape_hint=None, alternatives=(), extra_hint=None):
    """Fail unless `got` is an array close to `want` (same shape).

    `label` names the value ("grad_b", "a.grad"), `context` says what was run. `alternatives` is
    a list of (array, sentence): when `got` matches one of them, the sentence names the mistake.
    `shape_hint(got_shape)` may explain a wrong shape. `extra_hint` is added to value failures.
    """
    have = as_float_array(got, f"{context}: {label}")
    want = np.asarray(want, dtype=np.float64)
    if have.shape != want.shape:
        message = f"{context}: {label} has shape {shape_text(have.shape)}, expected {shape_text(want.shape)}."
        hint = shape_hint(have.shape) if shape_hint is not None else None
        fail(message + (f" Likely mistake: {hint}" if hint else ""))
    if close(have, want):
        if have.dtype != np.float64:
            fail(f"{context}: {label} has dtype {have.dtype}; expected float64.")
        return
    message = f"{context}: {label} differs from PyTorch's: {difference_text(have, want)}"
    if np.abs(want).max(initial=0.0) > ATOL and close(have, -want):
        fail(f"{message} Likely mistake: the values have the opposite sign; check the sign of the derivative.")
    for candidate, sentence in alternatives:
        candidate = np.asarray(candidate, dtype=np.float64)
        if np.abs(want).max(initial=0.0) > ATOL and close(have, candidate) and not close(candidate, want):
            fail(f"{message} Likely mistake: {sentence}")
    if have.dtype != np.float64:
        fail(f"{message} It came back as {have.dtype}: keep everything in float64.")
    fail(message + (f" {extra_hint}" if extra_hint else ""))


def run_or_fail(student, context, driver, *args, **kwargs):
    """student.run(driver, ...), with the scenario named in the feedback if the student's code fails."""
    try:
        return student.run(driver, *args, **kwargs)
    except StudentFault as error:
        fail(f"{context}\n{error.outcome}")
    raise AssertionError  # unreachable


def call_or_fail(student, call_text, module, name, *args, hint=None, **kwargs):
    """student.<module>.<name>(...), described as `call_text` in the feedback if it fails
    (with `hint` added when the student's code raised)."""
    try:
        return getattr(getattr(student, module), name)(*args, **kwargs)
    except StudentFault as error:
        extra = f"\n{hint}" if hint and isinstance(error, StudentRaised) else ""
        fail(f"{call_text} {error.outcome}{extra}")
    raise AssertionError  # unreachable


# ----------------------------------------------------------------------------- programs in torch

def torch_values(program):
    """The program evaluated by PyTorch on float64 leaves (requires_grad as the program says)."""
    return drivers.evaluate(program, lambda spec: t64(spec["data"], requires_grad=spec["requires_grad"]))


def torch_backward(program, output, weights=None):
    """What drivers.backward_program must report: (loss, [leaf grad or None])."""
    values = torch_values(program)
    loss = values[output]
    if weights is not None:
        loss = (loss * t64(weights)).sum()
    loss.backward()
    grads = [None if v.grad is None else v.grad.numpy().copy() for v in values[:len(program["leaves"])]]
    return loss.detach().numpy().copy(), grads


def leaf(name, data, requires_grad=True):
    return {"name": name, "data": np.asarray(data, dtype=np.float64), "requires_grad": requires_grad}


def v(index):
    return ("v", index)


def c(number):
    return ("c", number)


def reused_values(program):
    """Names of values used as an operand by more than one step (or twice by one step)."""
    uses = {}
    for step in program["steps"]:
        for operand in step[1:]:
            if isinstance(operand, tuple) and len(operand) == 2 and operand[0] == "v":
                uses[operand[1]] = uses.get(operand[1], 0) + 1
    return [drivers.value_name(program, k) for k, n in sorted(uses.items()) if n > 1]


def check_leaf_grads(got_grads, want_grads, program, context, alternatives=None, extra_hint=None):
    """Compare the leaves' .grad with PyTorch's: None where PyTorch has None, else close arrays."""
    if not isinstance(got_grads, (list, tuple)) or len(got_grads) != len(want_grads):
        fail(f"{context}: the driver could not read the leaves' gradients (got {got_grads!r:.100}).")
    for k, (got, want) in enumerate(zip(got_grads, want_grads)):
        spec = program["leaves"][k]
        name = spec["name"]
        if want is None:
            if got is not None:
                why = ("it does not require grad" if not spec["requires_grad"]
                       else "the output does not depend on it")
                fail(f"{context}: {name}.grad should still be None ({why}), but it is "
                     f"{'an array' if isinstance(got, np.ndarray) else got}.")
            continue
        if got is None:
            fail(f"{context}: {name}.grad is None; expected the gradient of shape {shape_text(want.shape)}. "
                 "Leaves that require grad must receive their gradient in .grad.")
        leaf_shape = np.shape(spec["data"])

        def shape_hint(got_shape, leaf_shape=leaf_shape, name=name):
            if tuple(got_shape) != tuple(leaf_shape):
                return (f"{name}.grad must have {name}'s own shape {shape_text(leaf_shape)}; "
                        "sum the gradient over the dimensions that broadcasting added.")
            return None

        check_array(got, want, f"{name}.grad", context, shape_hint=shape_hint,
                    alternatives=(alternatives or {}).get(k, ()), extra_hint=extra_hint)
