"""Hidden checks for rules.py: every VJP against torch.autograd.grad in float64.

Each case draws its inputs and a random (never all-ones) upstream gradient from a generator
seeded by the case itself, asks PyTorch for the vector-Jacobian product in this process, and
compares it with what the student's rule returns in the sandbox (where torch cannot be imported).
The inputs, PyTorch's answer and what known mistakes would return instead do not depend on the
submission: each case's `reference` makes them once, when the suite is collected (@cases), and
every submission of a batch shares them. No autograd then runs in a grading process: on a machine
with a GPU, one forked after autograd ran (here, at collection) cannot run it again.
Rules are pure functions of their arguments, so each test sends its cases' calls to the sandbox at
once (send_ahead).
"""

import functools

import numpy as np
import pytest
import torch

from checks.suite import call_or_fail, case_rng, cases, fail, question, question_defaults

import drivers
from helpers import check_array, negative_axes_hint, shape_text, t64, vjp

# rules.py must work without torch: every question of this file blocks it in the sandbox.
pytestmark = question_defaults(block_imports=("torch",))

# ----------------------------------------------------------------------------- sampling

def normal(rng, shape, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale, dtype=np.float64)


def positive(rng, shape, low=0.3, high=3.0):
    return np.asarray(rng.uniform(low, high, shape), dtype=np.float64)


def away_from_zero(rng, shape, low=0.3, high=2.5):
    signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return np.asarray(signs * rng.uniform(low, high, shape), dtype=np.float64)


def upstream(rng, shape):
    """A random upstream gradient: never all ones, so a rule that ignores it is caught."""
    return normal(rng, shape) + 0.5


# ----------------------------------------------------------------------------- result checks

def gradient_tuple(got, count, call):
    """The rule's result as a list of `count` items, or a failure saying what came back."""
    if isinstance(got, (np.ndarray, np.generic, float)):
        fail(f"{call} returned a bare array; return a tuple with one gradient per input, "
             f"e.g. {'(grad_a,)' if count == 1 else '(grad_a, grad_b)'}.")
    if not isinstance(got, (tuple, list)):
        fail(f"{call} returned {type(got).__name__} {got!r:.60}; expected a tuple of {count} gradient"
             f"{'s' if count > 1 else ''}.")
    if len(got) != count:
        fail(f"{call} returned a tuple of {len(got)} items; expected {count}: one gradient per array input.")
    return list(got)


def unbroadcast_hint(name, input_shape, grad_shape):
    def hint(got_shape):
        got_shape = tuple(got_shape)
        if got_shape == tuple(grad_shape) and got_shape != tuple(input_shape):
            return (f"grad for {name} has the broadcast shape {shape_text(got_shape)} but {name} has shape "
                    f"{shape_text(input_shape)}: sum over the broadcast dimensions (sum_to_shape) so that "
                    f"each gradient has its input's shape.")
        return f"each gradient must have exactly its input's shape ({name}: {shape_text(input_shape)})."
    return hint


def compare_rule(got, call, names, inputs, grad, expected, alternatives=None, extra_hint=None):
    """Check every gradient a rule returned against PyTorch's."""
    items = gradient_tuple(got, len(expected), call)
    for k, (item, want) in enumerate(zip(items, expected)):
        name = names[k]
        check_array(item, want, f"grad_{name}", call,
                    shape_hint=unbroadcast_hint(name, np.shape(inputs[k]), np.shape(grad)),
                    alternatives=(alternatives or {}).get(k, ()), note=extra_hint or "")


def describe_call(fn, names, inputs, grad, extra=""):
    parts = ", ".join(f"{n} of shape {shape_text(np.shape(x))}" for n, x in zip(names, inputs))
    return f"{fn}(grad, {', '.join(names)}{extra}) with {parts} and grad of shape {shape_text(np.shape(grad))}"


def ones_alternative(fn, inputs, grad, k):
    """What a rule that ignored the upstream gradient (used ones) would return for input k."""
    return (vjp(fn, inputs, np.ones(np.shape(grad)))[k],
            "this is the answer for an upstream grad of all ones: multiply the local derivative "
            "by grad (the chain rule).")


# ----------------------------------------------------------------------------- sum_to_shape

SUM_TO_SHAPE = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((2, 3), (1, 3)),
    ((2, 3), (2, 1)),
    ((2, 3), ()),
    ((4, 2, 3), (2, 1)),
    ((4, 2, 3), (1, 1, 3)),
    ((5,), (1,)),
    ((2, 3, 4), (3, 1)),
    ((), ()),
    ((3, 1, 4), (1, 4)),
    ((2, 5), [5]),
    ((3, 3), (3,)),        # equal sizes on different axes: a rule that matches axes by size
    ((3, 3), (3, 1)),      # sums the wrong one
    ((2, 2, 2), (2, 1)),
]


def sum_to_shape_reference(grad_shape, shape):
    """The case's grad, PyTorch's sum_to_size of it, and the known mistakes."""
    grad = normal(case_rng("sum_to_shape", grad_shape, tuple(shape)), grad_shape)
    want = t64(grad).sum_to_size(tuple(shape)).numpy()
    return grad, want, list(left_aligned_mistake(grad, tuple(shape), want))


def left_aligned_mistake(grad, shape, want):
    """What lining `shape` up with grad's FIRST axes gives (as finding the kept axes by their sizes
    does when sizes repeat), where that differs from the right answer."""
    summed = grad.sum(axis=tuple(range(len(shape), grad.ndim)))
    for k, size in enumerate(shape):
        if size == 1 and summed.shape[k] != 1:
            summed = summed.sum(axis=k, keepdims=True)
    if summed.shape == want.shape and not np.allclose(summed, want):
        yield summed, ("this sums the wrong axes: broadcasting lines shapes up from the LAST axis, so the axes "
                       "to sum away are grad's leading ones. Choose them by position, not by size: with equal "
                       "sizes on different axes, a size says nothing about which axis it is.")


@question("rules.sum_to_shape", points=4)
@cases("grad_shape, shape", SUM_TO_SHAPE, ids=lambda s: shape_text(s), reference=sum_to_shape_reference,
       send_ahead=True)
def test_sum_to_shape(student, grad_shape, shape, reference):
    grad, want, mistakes = reference
    call = f"sum_to_shape(grad, {shape!r}) with grad of shape {shape_text(grad_shape)}"
    got = call_or_fail(lambda: student.rules.sum_to_shape(grad, shape), text=call)

    def hint(got_shape):
        if tuple(got_shape) == tuple(grad_shape):
            return "nothing was summed: add up grad over the leading dimensions and the size-1 dimensions of shape."
        if len(got_shape) != len(shape):
            return "the result must have exactly len(shape) dimensions: keep the size-1 ones (keepdims)."
        return None

    check_array(got, want, "the result", call, shape_hint=hint, alternatives=mistakes)


# ----------------------------------------------------------------------------- binary elementwise

BROADCAST_PAIRS = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    ((4, 1, 3), (2, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((1,), (5,)),
    ((2, 1, 3), (2, 4, 3)),
    ((3, 3), (3,)),
    ((3, 1), (3, 3)),
]

BINARY = {
    "add": (lambda a, b: a + b, normal, normal),
    "sub": (lambda a, b: a - b, normal, normal),
    "mul": (lambda a, b: a * b, normal, normal),
    "div": (lambda a, b: a / b, normal, away_from_zero),
}


def binary_reference(op, a_shape, b_shape):
    """The case's inputs a, b and grad, PyTorch's VJP [grad_a, grad_b], and the known mistakes."""
    fn, sample_a, sample_b = BINARY[op]
    rng = case_rng(op, a_shape, b_shape)
    a, b = sample_a(rng, a_shape), sample_b(rng, b_shape)
    grad = upstream(rng, np.broadcast_shapes(a_shape, b_shape))
    expected = vjp(fn, [a, b], grad)
    return a, b, grad, expected, {k: list(binary_mistakes(op, a_shape, b_shape, a, b, grad, expected, k))
                                  for k in (0, 1)}


def binary_mistakes(op, a_shape, b_shape, a, b, grad, expected, k):
    """What a rule with a known mistake returns for grad k, and the sentence that names it."""
    yield ones_alternative(BINARY[op][0], [a, b], grad, k)
    if np.shape(grad) != (a_shape, b_shape)[k]:   # input k was broadcast: its gradient before sum_to_shape
        stretched = [np.broadcast_to(x, np.shape(grad)).copy() if j == k else x for j, x in enumerate((a, b))]
        unreduced = vjp(BINARY[op][0], stretched, grad)[k]
        yield from left_aligned_mistake(unreduced, (a_shape, b_shape)[k], expected[k])
    if a_shape == b_shape:
        yield (expected[1 - k], f"this is the gradient for {'ba'[k]}: the two results look swapped.")
    if op == "div":
        product = vjp(lambda x, y: x * y, [a, b], grad)
        yield ((product[0], "this is grad * b: d(a/b)/da = 1 / b.") if k == 0 else
               (product[1], "this is grad * a: d(a/b)/db = -a / b**2."))


def binary_references(a_shape, b_shape):
    """binary_reference of every op: the op is a pytest parameter, which @cases does not see."""
    return {op: binary_reference(op, a_shape, b_shape) for op in BINARY}


def _check_binary(student, op, a_shape, b_shape, a, b, grad, expected, mistakes):
    call = describe_call(f"{op}_backward", "ab", [a, b], grad)
    hint = (f"Note: a {shape_text(a_shape)} and b {shape_text(b_shape)} broadcast to {shape_text(grad.shape)} here; "
            "bring each gradient back to its own input's shape (sum_to_shape)." if a_shape != b_shape else None)
    got = call_or_fail(lambda: getattr(student.rules, f"{op}_backward")(grad, a, b), text=call, note=hint)
    compare_rule(got, call, "ab", [a, b], grad, expected, mistakes)


@question("rules.{op}_backward", points={"add": 2, "sub": 2, "mul": 3, "div": 3})
@pytest.mark.parametrize("op", BINARY)
@cases("a_shape, b_shape", BROADCAST_PAIRS, ids=shape_text, reference=binary_references, send_ahead=True)
def test_binary_backward(student, op, a_shape, b_shape, reference):
    _check_binary(student, op, a_shape, b_shape, *reference[op])


# ----------------------------------------------------------------------------- unary elementwise

UNARY_SHAPES = [(), (5,), (2, 3), (2, 1, 4)]

UNARY = {
    "neg": (lambda a: -a, normal),
    "exp": (torch.exp, normal),
    "log": (torch.log, positive),
    "relu": (torch.relu, away_from_zero),
    "tanh": (torch.tanh, lambda rng, shape: normal(rng, shape, 1.5)),
    "sigmoid": (torch.sigmoid, lambda rng, shape: normal(rng, shape, 2.0)),
}

UNARY_MISTAKES = {
    "exp": [(lambda a, g: g * a, "this is grad * a: the derivative of exp(a) is exp(a).")],
    "log": [(lambda a, g: g * a, "this is grad * a: the derivative of log(a) is 1 / a."),
            (lambda a, g: g * torch.log(a), "this is grad * log(a): the derivative of log(a) is 1 / a.")],
    "tanh": [(lambda a, g: g * (1 - torch.tanh(a)), "the derivative of tanh(a) is 1 - tanh(a)**2 (squared)."),
             (lambda a, g: g * (1 - a ** 2), "the derivative is 1 - tanh(a)**2, with tanh(a), not a.")],
    "sigmoid": [(lambda a, g: g * torch.sigmoid(a), "the derivative of sigmoid is s * (1 - s), not s."),
                (lambda a, g: g * (1 - torch.sigmoid(a)), "the derivative of sigmoid is s * (1 - s), not 1 - s."),
                (lambda a, g: g * a * (1 - a), "the derivative is s * (1 - s) with s = sigmoid(a), not a.")],
    "relu": [(lambda a, g: g * (a >= 0), "at a == 0 PyTorch's relu gradient is 0: let grad through only "
                                          "where a > 0 (strictly).")],
}


def unary_reference(op, a, grad):
    """The case's input a and grad, PyTorch's VJP [grad_a], and the known mistakes."""
    return a, grad, vjp(UNARY[op][0], [a], grad), {0: list(unary_mistakes(op, a, grad))}


def unary_mistakes(op, a, grad):
    """What a rule with a known mistake returns, and the sentence that names it."""
    yield ones_alternative(UNARY[op][0], [a], grad, 0)
    for formula, sentence in UNARY_MISTAKES.get(op, ()):
        yield formula(t64(a), t64(grad)).numpy(), sentence


def _check_unary(student, op, a, grad, expected, mistakes):
    call = describe_call(f"{op}_backward", "a", [a], grad)
    got = call_or_fail(lambda: getattr(student.rules, f"{op}_backward")(grad, a), text=call)
    compare_rule(got, call, "a", [a], grad, expected, mistakes)


def _unary_case(op, shape):
    rng = case_rng(op, shape)
    a = UNARY[op][1](rng, shape)
    return unary_reference(op, a, upstream(rng, shape))


def unary_references(shape):
    """_unary_case of every op: the op is a pytest parameter, which @cases does not see."""
    return {op: _unary_case(op, shape) for op in UNARY}


@question("rules.{op}_backward", points={"neg": 1, "exp": 2, "log": 2, "tanh": 2, "sigmoid": 2, "relu": 1})
@pytest.mark.parametrize("op", UNARY)
@cases("shape", UNARY_SHAPES, ids=shape_text, reference=unary_references, send_ahead=True)
def test_unary_backward(student, op, shape, reference):
    _check_unary(student, op, *reference[op])


def relu_at_zero_reference(shape):
    rng = case_rng("relu0", shape)
    a = away_from_zero(rng, shape)
    a.reshape(-1)[::2] = 0.0   # PyTorch's convention at the kink: the gradient at exactly 0 is 0
    return unary_reference("relu", a, upstream(rng, shape))


@question("rules.relu_backward", points=1)
@cases("shape", [(6,), (2, 3)], ids=shape_text, reference=relu_at_zero_reference, send_ahead=True)
def test_relu_backward_at_zero(student, shape, reference):
    _check_unary(student, "relu", *reference)


# ----------------------------------------------------------------------------- pow

POW_CASES = [
    ((3,), 2, "any"),
    ((2, 3), 3, "any"),
    ((), 2, "any"),
    ((2, 3), 1, "any"),
    ((4,), 0, "nonzero"),
    ((4,), 0, "zeros"),          # p == 0 at a == 0: p * a**(p - 1) is 0 * inf = nan there; PyTorch gives 0
    ((4,), 0.5, "positive"),
    ((2, 2), -1, "nonzero"),
    ((3,), -2.5, "positive"),
    ((2, 3), 1.5, "positive"),
    ((5,), 2, "zeros"),
    ((5,), 3, "zeros"),
]


def pow_reference(shape, p, domain):
    """The case's input a and grad, and PyTorch's VJP of a ** p: [grad_a]."""
    rng = case_rng("pow", shape, p, domain)
    if domain == "positive":
        a = positive(rng, shape, 0.4, 2.5)
    elif domain == "any":
        a = normal(rng, shape)
    else:
        a = away_from_zero(rng, shape, 0.4, 2.0)
        if domain == "zeros":
            a[::2] = 0.0   # at a == 0 with p >= 1 the derivative is finite: PyTorch gives p * 0**(p-1)
    grad = upstream(rng, shape)
    return a, grad, vjp(lambda x: x ** p, [a], grad), {0: list(pow_mistakes(a, p, grad))}


def pow_mistakes(a, p, grad):
    """What a rule with a known mistake returns, and the sentence that names it."""
    at, gt = t64(a), t64(grad)
    yield ones_alternative(lambda x: x ** p, [a], grad, 0)
    yield (gt * at ** (p - 1)).numpy(), "the factor p is missing: d(a**p)/da = p * a**(p - 1)."
    yield (gt * p * at ** p).numpy(), "the exponent should be p - 1: d(a**p)/da = p * a**(p - 1)."
    yield (gt * (p - 1) * at ** (p - 1)).numpy(), "the factor is p, not p - 1: d(a**p)/da = p * a**(p - 1)."


@question("rules.pow_backward", points=4)
@cases("shape, p, domain", POW_CASES, ids=lambda x: shape_text(x) if isinstance(x, tuple) else repr(x),
       reference=pow_reference, send_ahead=True)
def test_pow_backward(student, shape, p, domain, reference):
    a, grad, expected, mistakes = reference
    call = describe_call("pow_backward", "a", [a], grad, extra=f", p={p!r}")
    got = call_or_fail(lambda: student.rules.pow_backward(grad, a, p), text=call)
    extra = None
    if domain == "zeros":
        extra = ("Where a == 0 and p == 0 the derivative is 0, as in PyTorch (a ** 0 is constant): p * a**(p - 1) "
                 "gives 0 * inf = nan there, so treat p == 0 apart." if p == 0 else
                 "Where a == 0 (and p >= 1) the derivative p * a**(p - 1) is finite: avoid dividing by a.")
    compare_rule(got, call, "a", [a], grad, expected, mistakes, extra_hint=extra)


# ----------------------------------------------------------------------------- matmul

MATMUL_CASES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((3, 3), (3, 3)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (4, 3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 4, 3), (3,)),
    ((1, 2, 3), (4, 3, 5)),
    ((3, 1, 2, 3), (3, 3, 2)),   # batch dims of equal sizes: one leading, one stretched
]


def matmul_reference(a_shape, b_shape):
    """The case's inputs a, b and grad, PyTorch's VJP [grad_a, grad_b], and the known mistakes."""
    rng = case_rng("matmul", a_shape, b_shape)
    a, b = normal(rng, a_shape), normal(rng, b_shape)
    out_shape = tuple(torch.matmul(t64(a), t64(b)).shape)
    grad = upstream(rng, out_shape)
    expected = vjp(torch.matmul, [a, b], grad)
    return a, b, grad, expected, {k: list(matmul_mistakes(a, b, grad, expected, k)) for k in (0, 1)}


def matmul_mistakes(a, b, grad, expected, k):
    """What a rule with a known mistake returns for grad k, and the sentence that names it."""
    yield ones_alternative(torch.matmul, [a, b], grad, k)
    if expected[k].ndim >= 2:
        transposed = np.swapaxes(expected[k], -1, -2)
        sentence = ("this is the transpose of the right gradient: grad_a = grad @ b^T and grad_b = a^T @ grad "
                    "(transpose the last two axes only).")
        yield transposed, sentence
        yield transposed.reshape(expected[k].shape), sentence.replace(
            "right gradient:", "right gradient, reshaped to the input's shape:")


@question("rules.matmul_backward", points=7)
@cases("a_shape, b_shape", MATMUL_CASES, ids=shape_text, reference=matmul_reference, send_ahead=True)
def test_matmul_backward(student, a_shape, b_shape, reference):
    a, b, grad, expected, mistakes = reference

    call = describe_call("matmul_backward", "ab", [a, b], grad)
    hint = ("Note: a 1-D operand acts as a row (a) or a column (b) whose extra axis is dropped, and batch "
            "dimensions broadcast: sum the gradient over the batch dimensions its input does not have or has as 1."
            if len(a_shape) != 2 or len(b_shape) != 2 else None)
    got = call_or_fail(lambda: student.rules.matmul_backward(grad, a, b), text=call, note=hint)
    items = gradient_tuple(got, 2, call)
    for k, name in enumerate("ab"):
        want = np.shape(expected[k])

        def hint(got_shape, want=want, name=name):
            if len(want) >= 2 and tuple(got_shape) == tuple(want[:-2]) + (want[-1], want[-2]):
                return ("it has the transposed shape: grad_a = grad @ b^T and grad_b = a^T @ grad, "
                        "transposing only the last two axes.")
            return (f"grad_{name} must have {name}'s shape {shape_text(want)}: sum over the batch dimensions "
                    "that broadcasting added or stretched, and give a 1-D operand a 1-D gradient.")

        check_array(items[k], expected[k], f"grad_{name}", call, shape_hint=hint, alternatives=mistakes[k])


# ----------------------------------------------------------------------------- sum and mean

REDUCE_CASES = [
    ((2, 3), None, False),
    ((2, 3), None, True),
    ((2, 3, 4), 1, False),
    ((2, 3, 4), 1, True),
    ((2, 3, 4), -1, False),
    ((2, 3, 4), -2, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), (0, -1), True),
    ((5,), 0, False),
    ((), None, False),
    ((3, 1, 2), (1,), False),
    ((2, 3, 4), (-3, 1), False),
    ((3, 3), 0, False),          # equal sizes on different axes: a rule that finds the reduced
    ((3, 1, 3), -1, False),      # axes by matching sizes puts them back in the wrong place
    ((2, 2, 2), (0, 2), False),
]


def reduction(op, axis, keepdims, divide_by=1):
    """x.<op>(axis, keepdims) in torch (optionally divided by a constant)."""
    def fn(x):
        out = getattr(x, op)(dim=axis, keepdim=keepdims) if axis is not None or keepdims else getattr(x, op)()
        return out / divide_by
    return fn


def reduce_reference(op, shape, axis, keepdims):
    """The case's input a and grad, PyTorch's VJP of a.<op>(axis, keepdims) [grad_a], and the known
    mistakes."""
    rng = case_rng(op, shape, axis, keepdims)
    a = normal(rng, shape)
    fn = reduction(op, axis, keepdims)
    grad = upstream(rng, tuple(fn(t64(a)).shape))
    return a, grad, vjp(fn, [a], grad), list(reduce_mistakes(op, axis, keepdims, a, grad))


def reduce_mistakes(op, axis, keepdims, a, grad):
    """What a rule with a known mistake returns, and the sentence that names it."""
    yield ones_alternative(reduction(op, axis, keepdims), [a], grad, 0)
    if op == "mean":
        yield (vjp(reduction("sum", axis, keepdims), [a], grad)[0],
               "this is the sum's gradient: divide by the number of elements each mean averaged.")
        yield (vjp(reduction("sum", axis, keepdims, divide_by=np.size(a)), [a], grad)[0],
               "this divides by a.size: divide by the number of elements in the reduced axes only.")
    else:
        yield (vjp(reduction("mean", axis, keepdims), [a], grad)[0],
               "this is the mean's gradient: the gradient of a sum is grad copied (broadcast) to "
               "every summed element, with no division.")
    if not keepdims and axis is not None:
        left, shape = list(np.shape(grad)), np.shape(a)
        by_size = [left.pop(0) if left and left[0] == n else 1 for n in shape]
        if not left:
            scale = 1 if op == "sum" else np.size(a) // max(np.size(grad), 1)
            yield (np.broadcast_to(np.reshape(grad, by_size), shape) / scale,
                   "the reduced axes were put back where the sizes match, not where they were: with equal "
                   "sizes on different axes that is the wrong place. Put each reduced axis back at its own "
                   "position (np.expand_dims(grad, axes), with negative axes made positive).")


def _check_reduce(student, op, shape, axis, keepdims, a, grad, expected, mistakes):
    call = describe_call(f"{op}_backward", "a", [a], grad, extra=f", axis={axis!r}, keepdims={keepdims!r}")
    negative = negative_axes_hint(axis)

    def raised_hint(error):
        if isinstance(axis, int) and error.is_a(TypeError):
            return ("axis is a plain int here. As in PyTorch and NumPy, axis may be an int, a "
                    "tuple of ints or None: turn an int into a one-element tuple before using it as a tuple.")
        return negative(error) if negative else None

    got = call_or_fail(lambda: getattr(student.rules, f"{op}_backward")(grad, a, axis=axis, keepdims=keepdims),
                       text=call, mistake=raised_hint)

    def hint(got_shape):
        return f"grad_a must have a's shape {shape_text(shape)}: put back the reduced axes and broadcast grad."

    items = gradient_tuple(got, 1, call)
    check_array(items[0], expected[0], "grad_a", call, shape_hint=hint, alternatives=mistakes)


@question("rules.sum_backward", points=4)
@cases("shape, axis, keepdims", REDUCE_CASES, ids=repr, reference=functools.partial(reduce_reference, "sum"),
       send_ahead=True)
def test_sum_backward(student, shape, axis, keepdims, reference):
    _check_reduce(student, "sum", shape, axis, keepdims, *reference)


@question("rules.mean_backward", points=4)
@cases("shape, axis, keepdims", REDUCE_CASES, ids=repr, reference=functools.partial(reduce_reference, "mean"),
       send_ahead=True)
def test_mean_backward(student, shape, axis, keepdims, reference):
    _check_reduce(student, "mean", shape, axis, keepdims, *reference)


# ----------------------------------------------------------------------------- view operations
# The backward of 01's views. Every list has shapes with equal sizes on different axes, where a
# gradient moved back along the wrong axes has the right shape and only its values give it away.

def _view_case(key, a_shape, forward):
    """The case's input a and grad, and PyTorch's VJP [grad_a] of forward(a); `key` seeds them."""
    rng = case_rng(*key)
    a = normal(rng, a_shape)
    out_shape = tuple(forward(t64(a)).shape)
    grad = upstream(rng, out_shape)
    return a, grad, vjp(forward, [a], grad)


def _check_view(student, fn, a, grad, expected, extra_args, extra_text, *, shape_hint, alternatives=(),
                axes=(), call=None):
    call = call or describe_call(fn, "a", [a], grad, extra=extra_text)
    got = call_or_fail(lambda: getattr(student.rules, fn)(grad, a, *extra_args), text=call,
                       mistake=negative_axes_hint(*axes))
    items = gradient_tuple(got, 1, call)
    check_array(items[0], expected[0], "grad_a", call, shape_hint=shape_hint, alternatives=alternatives)


RESHAPE_CASES = [
    ((2, 3), (3, 2)),
    ((2, 3), (6,)),
    ((2, 3, 4), (4, -1)),
    ((6,), (1, 2, 3)),
    ((), (1, 1)),
    ((3, 3), (9,)),
    ((2, 2, 2), (4, -1)),
    ((1, 4), (2, -1, 1)),
]


def reshape_reference(a_shape, shape):
    return _view_case(("reshape", a_shape, shape), a_shape, lambda x: x.reshape(shape))


@question("rules.reshape_backward", points=2)
@cases("a_shape, shape", RESHAPE_CASES, ids=shape_text, reference=reshape_reference, send_ahead=True)
def test_reshape_backward(student, a_shape, shape, reference):
    a, grad, expected = reference

    def hint(got_shape):
        if tuple(got_shape) == grad.shape:
            return (f"grad_a has the output's shape {shape_text(grad.shape)}: reshape grad back to a's shape "
                    f"{shape_text(a_shape)} (`shape` is where the forward went, not where it came from).")
        return f"grad_a must have a's shape {shape_text(a_shape)}: reshape grad to np.shape(a)."

    _check_view(student, "reshape_backward", a, grad, expected, (shape,), f", shape={shape!r}", shape_hint=hint)


TRANSPOSE_CASES = [
    ((2, 3), 0, 1),
    ((2, 3, 4), 0, 2),
    ((2, 3, 4), -1, 0),
    ((2, 3, 4), 1, -1),
    ((3, 3), 1, 0),
    ((2, 2, 3), 0, 1),       # equal sizes: the wrong pair gives the right shape
    ((3, 2, 2), 1, 0),
    ((4,), 0, 0),
    ((2, 3, 3), 0, -2),
]


def transpose_reference(a_shape, dim0, dim1):
    return _view_case(("transpose", a_shape, dim0, dim1), a_shape, lambda x: x.transpose(dim0, dim1))


def _usual_pairs(ndim):
    """The pairs of axes a transpose is most often mistaken for: the last two, and the first two."""
    return ((ndim - 2, ndim - 1), (0, 1)) if ndim >= 2 else ()


def _wrong_pairs(grad, a_shape, dim0, dim1):
    """What swapping another pair of grad's axes gives, where it has a's shape, named."""
    n = len(a_shape)
    for pair in _usual_pairs(n):
        if set(pair) != {dim0 % n, dim1 % n}:
            wrong = np.swapaxes(grad, *pair)
            if wrong.shape == tuple(a_shape):
                yield wrong, (f"this swaps axes {pair[0]} and {pair[1]} of grad; the forward swapped dims "
                              f"{dim0} and {dim1}: swap that same pair back (np.swapaxes(grad, dim0, dim1)).")


@question("rules.transpose_backward", points=2)
@cases("a_shape, dim0, dim1", TRANSPOSE_CASES, ids=lambda x: shape_text(x) if isinstance(x, tuple) else repr(x),
       reference=transpose_reference, send_ahead=True)
def test_transpose_backward(student, a_shape, dim0, dim1, reference):
    a, grad, expected = reference

    def hint(got_shape):
        if tuple(got_shape) == grad.shape:
            return (f"grad_a has the output's shape {shape_text(grad.shape)}: swap dims {dim0} and {dim1} of grad "
                    "back to a's layout.")
        for pair in _usual_pairs(len(a_shape)):
            if np.swapaxes(grad, *pair).shape == tuple(got_shape):
                return (f"this swaps axes {pair[0]} and {pair[1]} of grad; the forward swapped dims {dim0} and "
                        f"{dim1}: swap that same pair back (np.swapaxes(grad, dim0, dim1)).")
        return (f"grad_a must have a's shape {shape_text(a_shape)}: swap the pair the forward swapped "
                f"(dims {dim0} and {dim1}), and only that pair.")

    _check_view(student, "transpose_backward", a, grad, expected, (dim0, dim1), f", dim0={dim0}, dim1={dim1}",
                shape_hint=hint, alternatives=list(_wrong_pairs(grad, a_shape, dim0, dim1)),
                axes=(dim0, dim1))


PERMUTE_CASES = [
    ((2, 3), (1, 0)),
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4), (1, 2, 0)),
    ((3, 3, 3), (1, 2, 0)),       # equal sizes: dims instead of its inverse gives the right shape
    ((2, 2, 2), (2, 0, 1)),
    ((2, 3, 4), (-1, 0, 1)),
    ((2, 3, 4, 5), (3, 1, 0, 2)),
    ((4,), (0,)),
    ((2, 3, 4), (0, 1, 2)),
]


def permute_reference(a_shape, dims):
    return _view_case(("permute", a_shape, dims), a_shape, lambda x: x.permute(*dims))


@question("rules.permute_backward", points=3)
@cases("a_shape, dims", PERMUTE_CASES, ids=shape_text, reference=permute_reference, send_ahead=True)
def test_permute_backward(student, a_shape, dims, reference):
    a, grad, expected = reference
    n = len(a_shape)
    again = np.transpose(grad, [d % n for d in dims])
    sentence = (f"this applies the permutation {dims} to grad again; grad needs the INVERSE permutation "
                "(out's axis k came from a's axis dims[k]: np.argsort(dims) sends it back).")

    def hint(got_shape):
        if tuple(got_shape) == again.shape:
            return sentence
        if tuple(got_shape) == grad.shape:
            return f"grad_a has the output's shape {shape_text(grad.shape)}: permute grad back to a's layout."
        return f"grad_a must have a's shape {shape_text(a_shape)}: apply the inverse permutation to grad."

    _check_view(student, "permute_backward", a, grad, expected, (dims,), f", dims={dims!r}", shape_hint=hint,
                alternatives=[(again, sentence)], axes=(dims,))


EXPAND_CASES = [
    ((3,), (2, 3)),
    ((2, 1), (2, 4)),
    ((1, 3), (3, 3)),            # equal sizes: summing the axis whose size matches is wrong here
    ((3, 1), (3, 3)),
    ((3,), (3, 3)),
    ((1,), (5,)),
    ((), (2, 3)),
    ((2, 1, 3), (4, 2, 3, 3)),
    ((3, 1), (-1, 4)),
    ((1, 1), (2, 3, 3)),
    ((2, 3), (2, 3)),
]


def expand_reference(a_shape, shape):
    return _view_case(("expand", a_shape, shape), a_shape, lambda x: x.expand(*shape))


def _one_copy(grad, a_shape):
    """What taking one copy's gradient (instead of summing over the copies) gives."""
    lead = grad.ndim - len(a_shape)
    index = (0,) * lead + tuple(slice(0, 1) if n == 1 else slice(None) for n in a_shape)
    return grad[index].reshape(a_shape)


@question("rules.expand_backward", points=4)
@cases("a_shape, shape", EXPAND_CASES, ids=shape_text, reference=expand_reference, send_ahead=True)
def test_expand_backward(student, a_shape, shape, reference):
    a, grad, expected = reference
    lead = grad.ndim - len(a_shape)

    def hint(got_shape):
        got_shape = tuple(got_shape)
        if got_shape == grad.shape:
            return ("nothing was summed: each element of a was copied along the new leading dims and the dims "
                    "where a has size 1; its gradient is the SUM over all its copies.")
        if lead and got_shape == (1,) * lead + tuple(a_shape):
            return (f"the {lead} new leading dim{'s' if lead > 1 else ''} must go: sum over them without "
                    "keepdims (a has fewer dims than the output).")
        if got_shape == tuple(n for n in a_shape if n != 1) or len(got_shape) < len(a_shape):
            return "keep a's size-1 dims: sum over the stretched dims with keepdims=True."
        return f"grad_a must have a's shape {shape_text(a_shape)}."

    copy = (_one_copy(grad, a_shape), "this is the gradient of one copy only: an element of a stretched "
            "over k copies receives the SUM of the k gradients.")
    _check_view(student, "expand_backward", a, grad, expected, (shape,), f", shape={shape!r}", shape_hint=hint,
                alternatives=[copy] if copy[0].shape == tuple(a_shape) else [])


GETITEM_CASES = [
    ((5,), 2),
    ((4, 3), 1),
    ((2, 3), (-1, -2)),
    ((4, 3), (slice(1, None), slice(None, None, 2))),
    ((7,), slice(1, None, 3)),
    ((2, 3, 4), (Ellipsis, 1)),
    ((3, 4), (None, slice(None), 2)),
    ((5,), np.array([0, 0, 3, 0])),                     # repeated indices accumulate
    ((4, 3), (np.array([0, 2, 2]), slice(1, 3))),
    ((3, 3), (np.array([0, 1, 1]), np.array([2, 2, 2]))),
    ((4, 3), np.array([[0, 1], [1, 1]])),
    ((3, 4), (slice(None), np.array([3, 3, 0]))),
]


def _torch_index(index):
    """The same index for a torch tensor: integer arrays as tensors."""
    convert = (lambda item: torch.as_tensor(item) if isinstance(item, np.ndarray) else item)
    return tuple(convert(item) for item in index) if isinstance(index, tuple) else convert(index)


def getitem_reference(a_shape, index):
    a, grad, expected = _view_case(("getitem", a_shape, drivers.index_text(index)), a_shape, lambda x: x[_torch_index(index)])
    overwritten = np.zeros(a_shape)
    overwritten[index] = grad   # what `out[index] = grad` (or `+=`) leaves where an index repeats
    return a, grad, expected, overwritten


@question("rules.getitem_backward", points=4)
@cases("a_shape, index", GETITEM_CASES, ids=[f"{shape_text(s)}[{drivers.index_text(i)}]" for s, i in GETITEM_CASES],
       reference=getitem_reference, send_ahead=True)
def test_getitem_backward(student, a_shape, index, reference):
    a, grad, expected, overwritten = reference
    sentence = ("an index that appears several times picked the same element several times, and it must "
                "receive the SUM of their gradients: `out[index] = grad` (and `out[index] += grad`) keep only "
                "one. Add with np.add.at(out, index, grad).")

    def hint(got_shape):
        if tuple(got_shape) == grad.shape:
            return (f"grad_a has the output's shape {shape_text(grad.shape)}: start from zeros of a's shape "
                    f"{shape_text(a_shape)} and put grad in at the indexed places.")
        return f"grad_a must have a's shape {shape_text(a_shape)}: zeros of a's shape, with grad added in."

    call = (f"getitem_backward(grad, a, index) for out = a[{drivers.index_text(index)}], with a of shape "
            f"{shape_text(a_shape)} and grad of shape {shape_text(grad.shape)}")
    _check_view(student, "getitem_backward", a, grad, expected, (index,), "", shape_hint=hint,
                alternatives=[(overwritten, sentence)], call=call)
