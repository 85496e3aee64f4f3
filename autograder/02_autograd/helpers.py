"""Grader-side helpers for the 02_autograd suite: PyTorch references, comparisons, feedback. The
likely mistakes are named from the table the public checks read too (`diagnoses`).

Everything here runs in the grader process. Reference values always come from PyTorch in float64.
"""

import functools

import numpy as np
import torch

from checks.suite import Later, expect_close, fail, public_module

import drivers

RTOL = 1e-7
ATOL = 1e-9

# The likely mistakes: one table, read by the public checks too (assignments/02_autograd/tests/diagnoses.py).
diagnoses = public_module(__file__, "diagnoses")

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


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

def check_array(got, want, label, context, **options):
    """expect_close in this suite's terms: float64 throughout, PyTorch's tolerance, and the value
    named as `context: label` ("t.data", "a.grad" after what was run)."""
    expect_close(got, want, rtol=RTOL, atol=ATOL, dtype="float64", subject=Later(lambda: f"{context}: {label}"),
                 **options)


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


# the rule the course's engine asks for at each step of a program, and which of the step's parts
# it passes after the upstream gradient: the arrays (an operand: a value, or a number as a 0-d
# array) and then the step's other arguments as the engine got them. Views whose backward an engine
# may build more than one way (.T) are not answered ahead: the sandbox asks for them.
STEP_RULES = {**{op: (f"{op}_backward", 2, 0) for op in drivers.BINARY},
              **{op: (f"{op}_backward", 1, 0) for op in drivers.UNARY},
              "pow": ("pow_backward", 1, 1), "sum": ("sum_backward", 1, 2), "mean": ("mean_backward", 1, 2),
              "reshape": ("reshape_backward", 1, 1), "permute": ("permute_backward", 1, 1),
              "expand": ("expand_backward", 1, 1), "transpose": ("transpose_backward", 1, 2),
              "getitem": ("getitem_backward", 1, 1)}


def program_answers(program, output, grad=None, weights=None, answers=None):
    """What the rules answer, step by step, when an engine runs backward from value `output` (with
    `grad`, or ones; with `weights`, from L = (output * W).sum() as drivers.backward_program does),
    keyed as drivers.answer_key looks them up, computed by PyTorch: each step's upstream gradient in
    one backward, then its vector-Jacobian product at its own inputs. Added to `answers`."""
    answers = {} if answers is None else answers
    values = torch_values(program)
    steps = [(step, k + len(program["leaves"])) for k, step in enumerate(program["steps"])]
    end = output
    if weights is not None:
        weighted = values[output] * t64(weights)
        values += [weighted, weighted.sum()]
        steps += [(("mul", ("v", output), ("c", np.asarray(weights, dtype=np.float64))), len(values) - 2),
                  (("sum", ("v", len(values) - 2), None, False), len(values) - 1)]
        end = len(values) - 1
    if not values[end].requires_grad:
        return answers
    for _, index in steps:
        if values[index].requires_grad:
            values[index].retain_grad()
    try:
        values[end].backward(None if grad is None else t64(grad))
    except RuntimeError:  # as the engine must refuse it (a larger output without grad): nothing to answer
        return answers
    for step, index in steps:
        upstream = values[index].grad
        if step[0] not in STEP_RULES or upstream is None:
            continue
        name, arrays, extras = STEP_RULES[step[0]]
        inputs = [t64(_operand_value(operand, values), requires_grad=True) for operand in step[1:1 + arrays]]
        rest = list(step[1 + arrays:1 + arrays + extras])
        local = drivers.apply_step((step[0], *[("v", k) for k in range(arrays)], *rest), inputs)
        grads = torch.autograd.grad(local, inputs, upstream, allow_unused=True)
        key = drivers.answer_key(name, upstream.numpy(), [t.detach().numpy() for t in inputs] + rest)
        store_answer(answers, key, [torch.zeros_like(t) if g is None else g for t, g in zip(inputs, grads)])
    return answers


def store_answer(answers, key, grads):
    """The grads a call (its drivers.answer_key) is answered with, sealed (drivers.sealed); where
    another call of the same key (its values equal in float32) has another answer, neither is
    kept: the sandbox asks for both."""
    digest = drivers.answer_digest(key)
    lookup, data = digest[:16], drivers.sealed(key, digest, b"".join(g.detach().numpy().astype(np.float64).tobytes()
                                                                      for g in grads))
    places, start = [], 0
    for g in grads:
        places.append((tuple(g.shape), start, start + g.numel()))
        start += g.numel()
    answer = (tuple(places), data)
    if answers.get(lookup, answer) != answer:
        answer = None
    answers[lookup] = answer


def _operand_value(operand, values):
    kind, payload = operand
    return values[payload].detach().numpy() if kind == "v" else np.asarray(payload, dtype=np.float64)


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
        shape_hint = functools.partial(diagnoses.leaf_grad_shape, name=name, leaf_shape=leaf_shape)
        check_array(got, want, f"{name}.grad", context, shape_hint=shape_hint,
                    alternatives=(alternatives or {}).get(k, ()), note=extra_hint or "")
