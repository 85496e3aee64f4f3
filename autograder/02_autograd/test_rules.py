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

from checks.suite import Later, call_or_fail, case_rng, cases, fail, question, question_defaults

import drivers
from helpers import check_array, diagnoses, shape_text, t64, vjp

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


def compare_rule(got, call, qid, case, expected, mistakes):
    """Check every gradient a rule returned against PyTorch's, the likely mistakes named from the
    table (`mistakes`: what each known mistake returns, computed with the case's reference)."""
    items = gradient_tuple(got, len(expected), call)
    note = Later(lambda: diagnoses.note(qid, **case) or "")
    for k, (item, want) in enumerate(zip(items, expected)):
        check_array(item, want, f"grad_{'ab'[k]}", call, shape_hint=diagnoses.shape_hint(qid, k, **case),
                    alternatives=mistakes.get(k, ()), note=note)


def describe_call(fn, names, inputs, grad, extra=""):
    """The call as the student would write it, with its arrays' shapes: made only if shown."""
    def text():
        parts = ", ".join(f"{n} of shape {shape_text(np.shape(x))}" for n, x in zip(names, inputs))
        return f"{fn}(grad, {', '.join(names)}{extra}) with {parts} and grad of shape {shape_text(np.shape(grad))}"
    return Later(text)


# ----------------------------------------------------------------------------- boundaries
# What each case list covers (@cases(boundaries=...)), and the kinks each question must cover
# (@question(kinks=...)): `checks verify 02_autograd` prints them per question.

def _dims(shape):
    return [int(size) for size in shape]


def _equal_sizes(*shapes, **named):
    """Two axes of one shape with the same size above 1: a rule that finds an axis by its size errs."""
    shapes = (*shapes, *named.values())
    return any(len({s for s in _dims(shape) if s > 1}) < sum(s > 1 for s in _dims(shape)) for shape in shapes)


def _stretched(small, big):
    """A size-1 dim of `small` stretched in `big` (aligned right)."""
    return any(x == 1 and y != 1 for x, y in zip(_dims(small)[::-1], _dims(big)[::-1]))


EQUAL_SIZES = "equal sizes on different axes"
STRETCHED = "a size-1 dim stretched"
LEADING = "new leading dims"
ZERO_D = "a 0-d array"
NEGATIVE = "a negative axis"


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
    """The case's grad, PyTorch's sum_to_size of it, and what the known mistakes return."""
    grad = normal(case_rng("sum_to_shape", grad_shape, tuple(shape)), grad_shape)
    want = t64(grad).sum_to_size(tuple(shape)).numpy()
    return grad, want, diagnoses.mistakes("rules.sum_to_shape", grad=grad, shape=shape, expected=want)


@question("rules.sum_to_shape", points=4, kinks=(EQUAL_SIZES, STRETCHED, LEADING))
@cases("grad_shape, shape", SUM_TO_SHAPE, ids=lambda s: shape_text(s), reference=sum_to_shape_reference,
       send_ahead=True, boundaries={
           EQUAL_SIZES: lambda grad_shape, shape: _equal_sizes(grad_shape),
           STRETCHED: lambda grad_shape, shape: _stretched(shape, grad_shape),
           LEADING: lambda grad_shape, shape: len(grad_shape) > len(shape),
           ZERO_D: lambda grad_shape, shape: len(shape) == 0})
def test_sum_to_shape(student, grad_shape, shape, reference):
    grad, want, mistakes = reference
    call = f"sum_to_shape(grad, {shape!r}) with grad of shape {shape_text(grad_shape)}"
    got = call_or_fail(lambda: student.rules.sum_to_shape(grad, shape), text=call)
    check_array(got, want, "the result", call, alternatives=mistakes[0],
                shape_hint=diagnoses.shape_hint("rules.sum_to_shape", grad=grad, shape=shape))


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

BINARY = {  # how each op's inputs are drawn
    "add": (normal, normal),
    "sub": (normal, normal),
    "mul": (normal, normal),
    "div": (normal, away_from_zero),
}


def binary_reference(op, a_shape, b_shape):
    """The case's inputs a, b and grad, PyTorch's VJP [grad_a, grad_b], and what the known mistakes return."""
    sample_a, sample_b = BINARY[op]
    rng = case_rng(op, a_shape, b_shape)
    a, b = sample_a(rng, a_shape), sample_b(rng, b_shape)
    grad = upstream(rng, np.broadcast_shapes(a_shape, b_shape))
    expected = vjp(diagnoses.BINARY[op], [a, b], grad)
    return a, b, grad, expected, diagnoses.mistakes(f"rules.{op}_backward", op=op, a=a, b=b, grad=grad,
                                                    expected=expected)


def binary_references(a_shape, b_shape):
    """binary_reference of every op: the op is a pytest parameter, which @cases does not see."""
    return {op: binary_reference(op, a_shape, b_shape) for op in BINARY}


def _check_binary(student, op, a, b, grad, expected, mistakes):
    qid, case = f"rules.{op}_backward", dict(a=a, b=b, grad=grad)
    call = describe_call(f"{op}_backward", "ab", [a, b], grad)
    got = call_or_fail(lambda: getattr(student.rules, f"{op}_backward")(grad, a, b), text=call,
                       note=Later(lambda: diagnoses.note(qid, **case) or ""))
    compare_rule(got, call, qid, case, expected, mistakes)


@question("rules.{op}_backward", points={"add": 2, "sub": 2, "mul": 3, "div": 3}, kinks=(STRETCHED, LEADING, ZERO_D))
@pytest.mark.parametrize("op", BINARY)
@cases("a_shape, b_shape", BROADCAST_PAIRS, ids=shape_text, reference=binary_references, send_ahead=True,
       boundaries={STRETCHED: lambda a_shape, b_shape: _stretched(a_shape, b_shape) or _stretched(b_shape, a_shape),
                   LEADING: lambda a_shape, b_shape: len(a_shape) != len(b_shape),
                   ZERO_D: lambda a_shape, b_shape: not a_shape or not b_shape,
                   EQUAL_SIZES: _equal_sizes})
def test_binary_backward(student, op, a_shape, b_shape, reference):
    _check_binary(student, op, *reference[op])


# ----------------------------------------------------------------------------- unary elementwise

UNARY_SHAPES = [(), (5,), (2, 3), (2, 1, 4)]

UNARY = {  # how each op's input is drawn
    "neg": normal,
    "exp": normal,
    "log": positive,
    "relu": away_from_zero,
    "tanh": lambda rng, shape: normal(rng, shape, 1.5),
    "sigmoid": lambda rng, shape: normal(rng, shape, 2.0),
}

def unary_reference(op, a, grad):
    """The case's input a and grad, PyTorch's VJP [grad_a], and what the known mistakes return."""
    return a, grad, vjp(diagnoses.UNARY[op], [a], grad), diagnoses.mistakes(f"rules.{op}_backward", op=op, a=a,
                                                                             grad=grad)


def _check_unary(student, op, a, grad, expected, mistakes):
    call = describe_call(f"{op}_backward", "a", [a], grad)
    got = call_or_fail(lambda: getattr(student.rules, f"{op}_backward")(grad, a), text=call)
    compare_rule(got, call, f"rules.{op}_backward", dict(a=a, grad=grad), expected, mistakes)


def _unary_case(op, shape):
    rng = case_rng(op, shape)
    a = UNARY[op](rng, shape)
    return unary_reference(op, a, upstream(rng, shape))


def unary_references(shape):
    """_unary_case of every op: the op is a pytest parameter, which @cases does not see."""
    return {op: _unary_case(op, shape) for op in UNARY}


AT_ZERO = "input exactly 0"


@question("rules.{op}_backward", points={"neg": 1, "exp": 2, "log": 2, "tanh": 2, "sigmoid": 2, "relu": 1},
          kinks={"relu": (AT_ZERO,)})
@pytest.mark.parametrize("op", UNARY)
@cases("shape", UNARY_SHAPES, ids=shape_text, reference=unary_references, send_ahead=True,
       boundaries={ZERO_D: lambda shape: shape == (), "a size-1 dim": lambda shape: 1 in shape})
def test_unary_backward(student, op, shape, reference):
    _check_unary(student, op, *reference[op])


def _relu_at_zero_input(shape):
    rng = case_rng("relu0", shape)
    a = away_from_zero(rng, shape)
    a.reshape(-1)[::2] = 0.0   # PyTorch's convention at the kink: the gradient at exactly 0 is 0
    return rng, a


def relu_at_zero_reference(shape):
    rng, a = _relu_at_zero_input(shape)
    return unary_reference("relu", a, upstream(rng, shape))


@question("rules.relu_backward", points=1, kinks=(AT_ZERO,))
@cases("shape", [(6,), (2, 3)], ids=shape_text, reference=relu_at_zero_reference, send_ahead=True,
       boundaries={AT_ZERO: lambda shape: bool((_relu_at_zero_input(shape)[1] == 0).any())})
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
    return a, grad, vjp(lambda x: x ** p, [a], grad), diagnoses.mistakes("rules.pow_backward", a=a, p=p, grad=grad)


@question("rules.pow_backward", points=4, kinks=("p == 0 at a == 0", "a == 0 with p >= 1"))
@cases("shape, p, domain", POW_CASES, ids=lambda x: shape_text(x) if isinstance(x, tuple) else repr(x),
       reference=pow_reference, send_ahead=True, boundaries={
           "p == 0 at a == 0": lambda shape, p, domain: p == 0 and domain == "zeros",
           "a == 0 with p >= 1": lambda shape, p, domain: p >= 1 and domain == "zeros",
           "a negative p": lambda shape, p, domain: p < 0,
           "a fractional p": lambda shape, p, domain: p != int(p),
           ZERO_D: lambda shape, p, domain: shape == ()})
def test_pow_backward(student, shape, p, domain, reference):
    a, grad, expected, mistakes = reference
    call = describe_call("pow_backward", "a", [a], grad, extra=f", p={p!r}")
    got = call_or_fail(lambda: student.rules.pow_backward(grad, a, p), text=call)
    compare_rule(got, call, "rules.pow_backward", dict(a=a, p=p, grad=grad), expected, mistakes)


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
    return a, b, grad, expected, diagnoses.mistakes("rules.matmul_backward", a=a, b=b, grad=grad, expected=expected)


@question("rules.matmul_backward", points=7, kinks=("a 1-D operand", "broadcast batch dims", EQUAL_SIZES))
@cases("a_shape, b_shape", MATMUL_CASES, ids=shape_text, reference=matmul_reference, send_ahead=True, boundaries={
    "a 1-D operand": lambda a_shape, b_shape: len(a_shape) == 1 or len(b_shape) == 1,
    "broadcast batch dims": lambda a_shape, b_shape: min(len(a_shape), len(b_shape)) >= 2 and (
        _dims(a_shape[:-2]) != _dims(b_shape[:-2])),
    EQUAL_SIZES: _equal_sizes,
    "square matrices": lambda a_shape, b_shape: len(a_shape) == 2 and a_shape == b_shape and a_shape[0] == a_shape[1]})
def test_matmul_backward(student, a_shape, b_shape, reference):
    a, b, grad, expected, mistakes = reference

    case = dict(a=a, b=b, grad=grad, expected=expected)
    call = describe_call("matmul_backward", "ab", [a, b], grad)
    got = call_or_fail(lambda: student.rules.matmul_backward(grad, a, b), text=call,
                       note=diagnoses.note("rules.matmul_backward", **case))
    items = gradient_tuple(got, 2, call)
    for k, name in enumerate("ab"):
        check_array(items[k], expected[k], f"grad_{name}", call, alternatives=mistakes[k],
                    shape_hint=diagnoses.shape_hint("rules.matmul_backward", k, **case))


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


def reduction(op, axis, keepdims):
    """x.<op>(axis, keepdims) in torch."""
    def fn(x):
        return getattr(x, op)(dim=axis, keepdim=keepdims) if axis is not None or keepdims else getattr(x, op)()
    return fn


def reduce_reference(op, shape, axis, keepdims):
    """The case's input a and grad, PyTorch's VJP of a.<op>(axis, keepdims) [grad_a], and the known
    mistakes."""
    rng = case_rng(op, shape, axis, keepdims)
    a = normal(rng, shape)
    fn = reduction(op, axis, keepdims)
    grad = upstream(rng, tuple(fn(t64(a)).shape))
    return a, grad, vjp(fn, [a], grad), diagnoses.mistakes(f"rules.{op}_backward", op=op, a=a, axis=axis,
                                                            keepdims=keepdims, grad=grad)


def _check_reduce(student, op, shape, axis, keepdims, a, grad, expected, mistakes):
    call = describe_call(f"{op}_backward", "a", [a], grad, extra=f", axis={axis!r}, keepdims={keepdims!r}")
    qid, case = f"rules.{op}_backward", dict(a=a, axis=axis, keepdims=keepdims, grad=grad)
    got = call_or_fail(lambda: getattr(student.rules, f"{op}_backward")(grad, a, axis=axis, keepdims=keepdims),
                       text=call, mistake=diagnoses.raised_hint(qid, **case))
    items = gradient_tuple(got, 1, call)
    check_array(items[0], expected[0], "grad_a", call, shape_hint=diagnoses.shape_hint(qid, **case),
                alternatives=mistakes[0])


REDUCE_BOUNDARIES = {
    NEGATIVE: lambda shape, axis, keepdims: any(a < 0 for a in (axis if isinstance(axis, tuple) else [axis])
                                               if a is not None),
    "keepdims": lambda shape, axis, keepdims: keepdims,
    "axis None": lambda shape, axis, keepdims: axis is None,
    "a tuple of axes": lambda shape, axis, keepdims: isinstance(axis, tuple),
    EQUAL_SIZES: lambda shape, axis, keepdims: _equal_sizes(shape),
    ZERO_D: lambda shape, axis, keepdims: shape == (),
}
REDUCE_KINKS = (NEGATIVE, "keepdims", EQUAL_SIZES)


@question("rules.sum_backward", points=4, kinks=REDUCE_KINKS)
@cases("shape, axis, keepdims", REDUCE_CASES, ids=repr, reference=functools.partial(reduce_reference, "sum"),
       send_ahead=True, boundaries=REDUCE_BOUNDARIES)
def test_sum_backward(student, shape, axis, keepdims, reference):
    _check_reduce(student, "sum", shape, axis, keepdims, *reference)


@question("rules.mean_backward", points=4, kinks=REDUCE_KINKS)
@cases("shape, axis, keepdims", REDUCE_CASES, ids=repr, reference=functools.partial(reduce_reference, "mean"),
       send_ahead=True, boundaries=REDUCE_BOUNDARIES)
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


def _check_view(student, fn, a, grad, expected, extra_args, extra_text, case, call=None):
    """One view rule's case; the table's `case` holds the view's own arguments."""
    qid, case = f"rules.{fn}", dict(a=a, grad=grad, **case)
    call = call or describe_call(fn, "a", [a], grad, extra=extra_text)
    got = call_or_fail(lambda: getattr(student.rules, fn)(grad, a, *extra_args), text=call,
                       mistake=diagnoses.raised_hint(qid, **case))
    items = gradient_tuple(got, 1, call)
    check_array(items[0], expected[0], "grad_a", call, shape_hint=diagnoses.shape_hint(qid, **case),
                alternatives=_read_lazily(qid, case))


def _read_lazily(qid, case):
    """What the known mistakes return, computed only when a check fails and reads them (NumPy only)."""
    yield from diagnoses.mistakes(qid, **case).get(0, ())


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


@question("rules.reshape_backward", points=2, kinks=("-1 to infer",))
@cases("a_shape, shape", RESHAPE_CASES, ids=shape_text, reference=reshape_reference, send_ahead=True, boundaries={
    "-1 to infer": lambda a_shape, shape: -1 in shape, ZERO_D: lambda a_shape, shape: a_shape == (),
    EQUAL_SIZES: lambda a_shape, shape: _equal_sizes(a_shape)})
def test_reshape_backward(student, a_shape, shape, reference):
    a, grad, expected = reference
    _check_view(student, "reshape_backward", a, grad, expected, (shape,), f", shape={shape!r}", {"shape": shape})


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


@question("rules.transpose_backward", points=2, kinks=(NEGATIVE, EQUAL_SIZES))
@cases("a_shape, dim0, dim1", TRANSPOSE_CASES, ids=lambda x: shape_text(x) if isinstance(x, tuple) else repr(x),
       reference=transpose_reference, send_ahead=True, boundaries={
           NEGATIVE: lambda a_shape, dim0, dim1: dim0 < 0 or dim1 < 0,
           EQUAL_SIZES: lambda a_shape, dim0, dim1: _equal_sizes(a_shape),
           "dim0 == dim1": lambda a_shape, dim0, dim1: dim0 % len(a_shape) == dim1 % len(a_shape)})
def test_transpose_backward(student, a_shape, dim0, dim1, reference):
    a, grad, expected = reference
    _check_view(student, "transpose_backward", a, grad, expected, (dim0, dim1), f", dim0={dim0}, dim1={dim1}",
                {"dim0": dim0, "dim1": dim1})


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


@question("rules.permute_backward", points=3, kinks=(NEGATIVE, EQUAL_SIZES))
@cases("a_shape, dims", PERMUTE_CASES, ids=shape_text, reference=permute_reference, send_ahead=True, boundaries={
    NEGATIVE: lambda a_shape, dims: any(d < 0 for d in dims), EQUAL_SIZES: lambda a_shape, dims: _equal_sizes(a_shape),
    "the identity": lambda a_shape, dims: list(dims) == list(range(len(a_shape)))})
def test_permute_backward(student, a_shape, dims, reference):
    a, grad, expected = reference
    _check_view(student, "permute_backward", a, grad, expected, (dims,), f", dims={dims!r}", {"dims": dims})


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


@question("rules.expand_backward", points=4, kinks=(STRETCHED, LEADING, EQUAL_SIZES))
@cases("a_shape, shape", EXPAND_CASES, ids=shape_text, reference=expand_reference, send_ahead=True, boundaries={
    STRETCHED: lambda a_shape, shape: any(x == 1 and y not in (1, -1) for x, y in zip(a_shape[::-1], shape[::-1])),
    LEADING: lambda a_shape, shape: len(shape) > len(a_shape), EQUAL_SIZES: lambda a_shape, shape: _equal_sizes(shape),
    "-1 keeps a size": lambda a_shape, shape: -1 in shape, ZERO_D: lambda a_shape, shape: a_shape == ()})
def test_expand_backward(student, a_shape, shape, reference):
    a, grad, expected = reference
    _check_view(student, "expand_backward", a, grad, expected, (shape,), f", shape={shape!r}", {"shape": shape})


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
    return _view_case(("getitem", a_shape, drivers.index_text(index)), a_shape, lambda x: x[_torch_index(index)])


def _index_items(index):
    return index if isinstance(index, tuple) else (index,)


@question("rules.getitem_backward", points=4, kinks=("repeated indices", "a negative index"))
@cases("a_shape, index", GETITEM_CASES, ids=[f"{shape_text(s)}[{drivers.index_text(i)}]" for s, i in GETITEM_CASES],
       reference=getitem_reference, send_ahead=True, boundaries={
           "repeated indices": lambda a_shape, index: any(
               isinstance(i, np.ndarray) and len(np.unique(i)) < i.size for i in _index_items(index)),
           "a negative index": lambda a_shape, index: any(isinstance(i, int) and i < 0 for i in _index_items(index)),
           "a slice with a step": lambda a_shape, index: any(isinstance(i, slice) and (i.step or 1) != 1
                                                             for i in _index_items(index)),
           "None or Ellipsis": lambda a_shape, index: any(i is None or i is Ellipsis for i in _index_items(index))})
def test_getitem_backward(student, a_shape, index, reference):
    a, grad, expected = reference
    call = (f"getitem_backward(grad, a, index) for out = a[{drivers.index_text(index)}], with a of shape "
            f"{shape_text(a_shape)} and grad of shape {shape_text(grad.shape)}")
    _check_view(student, "getitem_backward", a, grad, expected, (index,), "", {"index": index}, call=call)
