"""The likely mistakes of 02_autograd: one table, read by the public checks and the hidden suite alike.

Each entry of DIAGNOSES says, for one question, what known mistakes look like in a case:

- `mistakes(**case)`: what a rule or engine with each mistake would return, computed from the
  case's inputs, with the sentence that names it ({input index: [(value, sentence), ...]}),
  for expect_close's `alternatives`;
- `shape(got_shape, **case)`: why an answer of this shape is likely wrong, for its `shape_hint`;
- `raised(raised, **case)`: the likely mistake when the student's code raised, for call_or_fail;
- `note(**case)`: a sentence that helps whatever went wrong in the case.

The values a mistake gives are computed by PyTorch from the case's inputs (a rule that ignored
the upstream gradient returns the gradient for a gradient of ones, say): they are only ever
compared with a wrong answer, never used as the answer. They need torch, which runs here in the
grader: rules.py and engine.py never see it.

    check(got, expected, alternatives=mistakes("rules.exp_backward", a=a, grad=grad, expected=expected)[0])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

Mistakes = dict[int, list[tuple[Any, str]]]


def shape_text(shape) -> str:
    """A shape the way Python prints a tuple: (), (3,), (2, 3)."""
    shape = tuple(int(s) for s in shape)
    return "()" if not shape else f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def _t64(array) -> torch.Tensor:
    return torch.tensor(np.asarray(array, dtype=np.float64), dtype=torch.float64)


def _vjp(fn, inputs, grad, k):
    """PyTorch's gradient of <fn(*inputs), grad> with respect to inputs[k]: what a rule given `grad`
    returns for input k (zeros where the output does not depend on it)."""
    tensors = [_t64(x).requires_grad_(j == k) for j, x in enumerate(inputs)]
    (got,) = torch.autograd.grad(fn(*tensors), [tensors[k]], _t64(grad), allow_unused=True)
    return np.zeros(np.shape(inputs[k])) if got is None else got.numpy().copy()


def _ignored_upstream(fn, inputs, grad, k):
    """What a rule that ignored the upstream gradient (used ones) returns for input k."""
    return (_vjp(fn, inputs, np.ones(np.shape(grad)), k),
            "this is the answer for an upstream grad of all ones: multiply the local derivative "
            "by grad (the chain rule).")


# ---- rules.py: sum_to_shape and broadcasting ----------------------------------------------------

def _left_aligned(grad, shape, want):
    """What lining `shape` up with grad's FIRST axes gives (as finding the kept axes by their sizes
    does when sizes repeat), where that differs from the right answer."""
    # PyTorch's own gradient of that wrong broadcast: `shape` padded with 1s on the RIGHT, expanded
    padded = tuple(shape) + (1,) * (grad.ndim - len(shape))
    if len(padded) != grad.ndim or any(p not in (1, g) for p, g in zip(padded, grad.shape)):
        return
    x = torch.zeros(padded, dtype=torch.float64, requires_grad=True)
    (summed,) = torch.autograd.grad(x.expand(grad.shape), [x], _t64(grad))
    summed = summed.numpy().reshape(tuple(shape))
    if summed.shape == want.shape and not np.allclose(summed, want):
        yield summed, ("this sums the wrong axes: broadcasting lines shapes up from the LAST axis, so the axes "
                       "to sum away are grad's leading ones. Choose them by position, not by size: with equal "
                       "sizes on different axes, a size says nothing about which axis it is.")


def sum_to_shape_mistakes(grad, shape, expected, **_) -> Mistakes:
    return {0: list(_left_aligned(np.asarray(grad), tuple(shape), np.asarray(expected)))}


def sum_to_shape_shape(got_shape, grad, shape, **_) -> str | None:
    if tuple(got_shape) == np.shape(grad):
        return "nothing was summed: add up grad over the leading dimensions and the size-1 dimensions of shape."
    if len(got_shape) != len(shape):
        return "the result must have exactly len(shape) dimensions: keep the size-1 ones (keepdims)."
    return None


def unbroadcast_shape(got_shape, k, a, grad, b=None, **_) -> str:
    """Every rule's gradient k must have input k's shape; the broadcast shape is the usual slip."""
    name, input_shape = "ab"[k], np.shape((a, b)[k])
    if tuple(got_shape) == np.shape(grad) and tuple(got_shape) != input_shape:
        return (f"grad for {name} has the broadcast shape {shape_text(got_shape)} but {name} has shape "
                f"{shape_text(input_shape)}: sum over the broadcast dimensions (sum_to_shape) so that "
                f"each gradient has its input's shape.")
    return f"each gradient must have exactly its input's shape ({name}: {shape_text(input_shape)})."


# ---- rules.py: elementwise ----------------------------------------------------------------------

BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b}


def binary_mistakes(op, a, b, grad, expected, **_) -> Mistakes:
    """What a binary rule with a known mistake returns for each gradient."""
    found: Mistakes = {}
    for k in (0, 1):
        found[k] = [_ignored_upstream(BINARY[op], [a, b], grad, k)]
        if np.shape(grad) != np.shape((a, b)[k]):  # input k was broadcast: its gradient before sum_to_shape
            stretched = [np.broadcast_to(x, np.shape(grad)).copy() if j == k else x for j, x in enumerate((a, b))]
            found[k] += _left_aligned(_vjp(BINARY[op], stretched, grad, k), np.shape((a, b)[k]), expected[k])
        if np.shape(a) == np.shape(b):
            found[k].append((expected[1 - k], f"this is the gradient for {'ba'[k]}: the two results look swapped."))
        if op == "div":
            product = _vjp(lambda x, y: x * y, [a, b], grad, k)
            found[k].append((product, "this is grad * b: d(a/b)/da = 1 / b.") if k == 0 else
                            (product, "this is grad * a: d(a/b)/db = -a / b**2."))
    return found


def binary_note(a, b, grad, **_) -> str | None:
    if np.shape(a) == np.shape(b):
        return None
    return (f"Note: a {shape_text(np.shape(a))} and b {shape_text(np.shape(b))} broadcast to "
            f"{shape_text(np.shape(grad))} here; bring each gradient back to its own input's shape (sum_to_shape).")


UNARY = {"neg": lambda a: -a, "exp": torch.exp, "log": torch.log, "relu": torch.relu, "tanh": torch.tanh,
         "sigmoid": torch.sigmoid}

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


def unary_mistakes(op, a, grad, **_) -> Mistakes:
    """What a unary rule with a known mistake returns."""
    found = [_ignored_upstream(UNARY[op], [a], grad, 0)]
    found += [(formula(_t64(a), _t64(grad)).numpy(), sentence) for formula, sentence in UNARY_MISTAKES.get(op, ())]
    return {0: found}


def pow_mistakes(a, p, grad, **_) -> Mistakes:
    at, gt = _t64(a), _t64(grad)
    found = [_ignored_upstream(lambda x: x ** p, [a], grad, 0),
             ((gt * at ** (p - 1)).numpy(), "the factor p is missing: d(a**p)/da = p * a**(p - 1)."),
             ((gt * p * at ** p).numpy(), "the exponent should be p - 1: d(a**p)/da = p * a**(p - 1)."),
             ((gt * (p - 1) * at ** (p - 1)).numpy(), "the factor is p, not p - 1: d(a**p)/da = p * a**(p - 1).")]
    if np.any(np.asarray(a) == 0):  # the ways a formula breaks at a == 0, run on this very a (NumPy's nan)
        a64, g64 = np.asarray(a, dtype=np.float64), np.asarray(grad, dtype=np.float64)
        with np.errstate(all="ignore"):
            if p == 0:
                found.append((g64 * p * a64 ** (p - 1),
                              "where a == 0 and p == 0, p * a**(p - 1) gives 0 * inf = nan; the derivative of the "
                              "constant a ** 0 is 0, as in PyTorch: treat p == 0 apart."))
            found.append((g64 * p * a64 ** p / a64, "p * a**p / a divides 0 by 0 where a == 0: compute "
                                                    "p * a**(p - 1), which is finite there for p >= 1."))
    return {0: found}


def pow_note(a, p, **_) -> str | None:
    """What PyTorch does at this case's zeros: a fact about the case, not a guess at a mistake."""
    if not np.any(np.asarray(a) == 0):
        return None
    if p == 0:
        return "a has zeros here, where PyTorch's derivative is 0 (a ** 0 is constant)."
    return (f"a has zeros here, where PyTorch's derivative is p * 0**(p - 1) = {p * 0.0 ** (p - 1):g}." if p >= 1
            else "a has zeros here, where PyTorch's derivative is infinite.")


# ---- rules.py: matmul ---------------------------------------------------------------------------

def matmul_mistakes(a, b, grad, expected, **_) -> Mistakes:
    found: Mistakes = {}
    for k in (0, 1):
        found[k] = [_ignored_upstream(torch.matmul, [a, b], grad, k)]
        if np.ndim(expected[k]) >= 2:
            transposed = np.swapaxes(expected[k], -1, -2)
            sentence = ("this is the transpose of the right gradient: grad_a = grad @ b^T and grad_b = a^T @ grad "
                        "(transpose the last two axes only).")
            found[k].append((transposed, sentence))
            found[k].append((transposed.reshape(np.shape(expected[k])), sentence.replace(
                "right gradient:", "right gradient, reshaped to the input's shape:")))
    return found


def matmul_shape(got_shape, k, expected, **_) -> str:
    want, name = np.shape(expected[k]), "ab"[k]
    if len(want) >= 2 and tuple(got_shape) == tuple(want[:-2]) + (want[-1], want[-2]):
        return ("it has the transposed shape: grad_a = grad @ b^T and grad_b = a^T @ grad, "
                "transposing only the last two axes.")
    return (f"grad_{name} must have {name}'s shape {shape_text(want)}: sum over the batch dimensions "
            "that broadcasting added or stretched, and give a 1-D operand a 1-D gradient.")


def matmul_note(a, b, **_) -> str | None:
    if np.ndim(a) == 2 and np.ndim(b) == 2:
        return None
    return ("Note: a 1-D operand acts as a row (a) or a column (b) whose extra axis is dropped, and batch "
            "dimensions broadcast: sum the gradient over the batch dimensions its input does not have or has as 1.")


# ---- rules.py: sum and mean ---------------------------------------------------------------------

def _reduction(op, axis, keepdims, divide_by=1):
    def fn(x):
        out = getattr(x, op)(dim=axis, keepdim=keepdims) if axis is not None or keepdims else getattr(x, op)()
        return out / divide_by
    return fn


def reduce_mistakes(op, a, axis, keepdims, grad, **_) -> Mistakes:
    found = [_ignored_upstream(_reduction(op, axis, keepdims), [a], grad, 0)]
    if op == "mean":
        found.append((_vjp(_reduction("sum", axis, keepdims), [a], grad, 0),
                      "this is the sum's gradient: divide by the number of elements each mean averaged."))
        found.append((_vjp(_reduction("sum", axis, keepdims, divide_by=np.size(a)), [a], grad, 0),
                      "this divides by a.size: divide by the number of elements in the reduced axes only."))
    else:
        found.append((_vjp(_reduction("mean", axis, keepdims), [a], grad, 0),
                      "this is the mean's gradient: the gradient of a sum is grad copied (broadcast) to "
                      "every summed element, with no division."))
    if not keepdims and axis is not None:
        left, shape = list(np.shape(grad)), np.shape(a)
        by_size = [left.pop(0) if left and left[0] == n else 1 for n in shape]
        if not left:
            scale = 1 if op == "sum" else np.size(a) // max(np.size(grad), 1)
            found.append((np.broadcast_to(np.reshape(grad, by_size), shape) / scale,
                          "the reduced axes were put back where the sizes match, not where they were: with equal "
                          "sizes on different axes that is the wrong place. Put each reduced axis back at its own "
                          "position (np.expand_dims(grad, axes), with negative axes made positive)."))
    return {0: found}


def reduce_shape(got_shape, a, **_) -> str:
    return f"grad_a must have a's shape {shape_text(np.shape(a))}: put back the reduced axes and broadcast grad."


def _negative_axis(raised, axes) -> str | None:
    """A negative axis used as a position: NumPy raises IndexError (its AxisError is one)."""
    flat = [k for item in axes for k in (item if isinstance(item, (tuple, list)) else (item,))]
    if raised.is_a(IndexError) and any(isinstance(k, (int, np.integer)) and k < 0 for k in flat):
        return ("a negative axis used as a position. Normalise negative axes first "
                "(axis % a.ndim), as PyTorch counts them from the end.")
    return None


def reduce_raised(raised, axis, **_) -> str | None:
    if isinstance(axis, int) and raised.is_a(TypeError):
        return ("axis is a plain int here. As in PyTorch and NumPy, axis may be an int, a "
                "tuple of ints or None: turn an int into a one-element tuple before using it as a tuple.")
    return _negative_axis(raised, (axis,))


# ---- rules.py: views ----------------------------------------------------------------------------

def reshape_shape(got_shape, a, grad, **_) -> str:
    if tuple(got_shape) == np.shape(grad):
        return (f"grad_a has the output's shape {shape_text(np.shape(grad))}: reshape grad back to a's shape "
                f"{shape_text(np.shape(a))} (`shape` is where the forward went, not where it came from).")
    return f"grad_a must have a's shape {shape_text(np.shape(a))}: reshape grad to np.shape(a)."


def _usual_pairs(ndim):
    """The pairs of axes a transpose is most often mistaken for: the last two, and the first two."""
    return ((ndim - 2, ndim - 1), (0, 1)) if ndim >= 2 else ()


def _wrong_pair(pair, dim0, dim1) -> str:
    return (f"this swaps axes {pair[0]} and {pair[1]} of grad; the forward swapped dims {dim0} and {dim1}: "
            "swap that same pair back (np.swapaxes(grad, dim0, dim1)).")


def transpose_mistakes(a, grad, dim0, dim1, **_) -> Mistakes:
    """What swapping another pair of grad's axes gives, where it has a's shape."""
    n, found = np.ndim(a), []
    for pair in _usual_pairs(n):
        if set(pair) != {dim0 % n, dim1 % n}:
            wrong = np.swapaxes(grad, *pair)
            if wrong.shape == np.shape(a):
                found.append((wrong, _wrong_pair(pair, dim0, dim1)))
    return {0: found}


def transpose_shape(got_shape, a, grad, dim0, dim1, **_) -> str:
    if tuple(got_shape) == np.shape(grad):
        return (f"grad_a has the output's shape {shape_text(np.shape(grad))}: swap dims {dim0} and {dim1} of grad "
                "back to a's layout.")
    for pair in _usual_pairs(np.ndim(a)):
        if np.swapaxes(grad, *pair).shape == tuple(got_shape):
            return _wrong_pair(pair, dim0, dim1)
    return (f"grad_a must have a's shape {shape_text(np.shape(a))}: swap the pair the forward swapped "
            f"(dims {dim0} and {dim1}), and only that pair.")


def _permuted_again(grad, dims):
    return np.transpose(grad, [d % len(dims) for d in dims])


def _again(dims) -> str:
    return (f"this applies the permutation {dims} to grad again; grad needs the INVERSE permutation "
            "(out's axis k came from a's axis dims[k]: np.argsort(dims) sends it back).")


def permute_mistakes(grad, dims, **_) -> Mistakes:
    return {0: [(_permuted_again(grad, dims), _again(dims))]}


def permute_shape(got_shape, a, grad, dims, **_) -> str:
    if tuple(got_shape) == _permuted_again(grad, dims).shape:
        return _again(dims)
    if tuple(got_shape) == np.shape(grad):
        return f"grad_a has the output's shape {shape_text(np.shape(grad))}: permute grad back to a's layout."
    return f"grad_a must have a's shape {shape_text(np.shape(a))}: apply the inverse permutation to grad."


def expand_mistakes(a, grad, **_) -> Mistakes:
    """What taking one copy's gradient (instead of summing over the copies) gives."""
    a_shape = np.shape(a)
    lead = np.ndim(grad) - len(a_shape)
    index = (0,) * lead + tuple(slice(0, 1) if n == 1 else slice(None) for n in a_shape)
    one_copy = np.asarray(grad)[index].reshape(a_shape)
    return {0: [(one_copy, "this is the gradient of one copy only: an element of a stretched over k copies "
                           "receives the SUM of the k gradients.")]}


def expand_shape(got_shape, a, grad, **_) -> str:
    got_shape, a_shape = tuple(got_shape), np.shape(a)
    lead = np.ndim(grad) - len(a_shape)
    if got_shape == np.shape(grad):
        return ("nothing was summed: each element of a was copied along the new leading dims and the dims "
                "where a has size 1; its gradient is the SUM over all its copies.")
    if lead and got_shape == (1,) * lead + a_shape:
        return (f"the {lead} new leading dim{'s' if lead > 1 else ''} must go: sum over them without "
                "keepdims (a has fewer dims than the output).")
    if got_shape == tuple(n for n in a_shape if n != 1) or len(got_shape) < len(a_shape):
        return "keep a's size-1 dims: sum over the stretched dims with keepdims=True."
    return f"grad_a must have a's shape {shape_text(a_shape)}."


def getitem_mistakes(a, grad, index, **_) -> Mistakes:
    overwritten = np.zeros(np.shape(a))
    overwritten[index] = grad   # what `out[index] = grad` (or `+=`) leaves where an index repeats
    return {0: [(overwritten, "an index that appears several times picked the same element several times, and it "
                              "must receive the SUM of their gradients: `out[index] = grad` (and `out[index] += "
                              "grad`) keep only one. Add with np.add.at(out, index, grad).")]}


def getitem_shape(got_shape, a, grad, **_) -> str:
    if tuple(got_shape) == np.shape(grad):
        return (f"grad_a has the output's shape {shape_text(np.shape(grad))}: start from zeros of a's shape "
                f"{shape_text(np.shape(a))} and put grad in at the indexed places.")
    return f"grad_a must have a's shape {shape_text(np.shape(a))}: zeros of a's shape, with grad added in."


def transpose_raised(raised, dim0, dim1, **_) -> str | None:
    return _negative_axis(raised, (dim0, dim1))


def permute_raised(raised, dims, **_) -> str | None:
    return _negative_axis(raised, (dims,))


# ---- engine.py ----------------------------------------------------------------------------------

def forward_shape(got_shape, want_shape, reduction_without_keepdims=False, **_) -> str | None:
    """A reduction that came back with its reduced axes still there as size 1 (a habit from
    frameworks whose reductions keep them)."""
    kept = reduction_without_keepdims and len(got_shape) > len(want_shape) and \
        [n for n in got_shape if n != 1] == [n for n in want_shape if n != 1]
    return ("the reduced axes are still there, as size 1: like PyTorch's and NumPy's, .sum() and .mean() "
            "drop them unless keepdims=True." if kept else None)


def backward_note(reused=(), **_) -> str | None:
    """Values used by more than one op: the diamond, where gradients must add up."""
    if not reused:
        return None
    return (f"Here {', '.join(reused)} {'is' if len(reused) == 1 else 'are'} used by more than one op: a "
            "tensor must receive the SUM of the gradients from all of its consumers, and pass its gradient "
            "on only after every consumer has been processed (reverse topological order; mark a node "
            "visited when it is expanded, not when it is pushed).")


def leaf_grad_shape(got_shape, name, leaf_shape, **_) -> str | None:
    """Any engine question: a leaf's .grad of another shape than the leaf's own."""
    if tuple(got_shape) != tuple(leaf_shape):
        return (f"{name}.grad must have {name}'s own shape {shape_text(leaf_shape)}; "
                "sum the gradient over the dimensions that broadcasting added.")
    return None


def kept_grad_note(name, made_by_an_op, **_) -> str:
    """A tensor whose .grad should have stayed None after backward."""
    if made_by_an_op:
        return (f"{name} was made by an op (it is not a leaf) and retain_grad() was not called on "
                "it: only leaves keep .grad; intermediate gradients are passed on, not stored.")
    return f"{name} does not require grad."


def views_note(**_) -> str:
    return ("A view must be a recorded op like any other: its result gets a grad_fn whose rule "
            "(rules.reshape_backward, ...) moves the gradient back to the input's layout.")


def accumulation_mistakes(second_alone, **_) -> Mistakes:
    """`second_alone`: each leaf's gradient from the second backward pass on its own."""
    return {k: [(g, "this is the gradient of the second pass alone: the first pass's gradient was "
                    "overwritten. A leaf must ADD each new gradient into its .grad.")]
            for k, g in enumerate(second_alone) if g is not None}


EXPLICIT_STACK = ("Walk the graph without recursion: a topological order built with an explicit stack (a "
                  "list you push to and pop from), then one loop over it in reverse. A graph can be far deeper "
                  "than any recursion limit.")


def deep_chain_raised(raised, limit=1_000, **_) -> str | None:
    if raised.is_a(RecursionError):
        return f"backward recurses once per node. {EXPLICIT_STACK}"
    if "recursion limit" in raised.message:
        return f"raising the recursion limit, which is held at {limit:,} here. {EXPLICIT_STACK}"
    return None


# ---- the table ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Diagnosis:
    """What known mistakes look like in one question's cases (each part optional, each a function of
    the case's keyword arguments)."""

    mistakes: Callable[..., Mistakes] | None = None
    shape: Callable[..., "str | None"] | None = None
    raised: Callable[..., "str | None"] | None = None
    note: Callable[..., "str | None"] | None = None


_BINARY = Diagnosis(mistakes=binary_mistakes, shape=unbroadcast_shape, note=binary_note)
_UNARY = Diagnosis(mistakes=unary_mistakes, shape=unbroadcast_shape)

DIAGNOSES: dict[str, Diagnosis] = {
    "rules.sum_to_shape": Diagnosis(mistakes=sum_to_shape_mistakes, shape=sum_to_shape_shape),
    **{f"rules.{op}_backward": _BINARY for op in BINARY},
    **{f"rules.{op}_backward": _UNARY for op in UNARY},
    "rules.pow_backward": Diagnosis(mistakes=pow_mistakes, shape=unbroadcast_shape, note=pow_note),
    "rules.matmul_backward": Diagnosis(mistakes=matmul_mistakes, shape=matmul_shape, note=matmul_note),
    "rules.sum_backward": Diagnosis(mistakes=reduce_mistakes, shape=reduce_shape, raised=reduce_raised),
    "rules.mean_backward": Diagnosis(mistakes=reduce_mistakes, shape=reduce_shape, raised=reduce_raised),
    "rules.reshape_backward": Diagnosis(shape=reshape_shape),
    "rules.transpose_backward": Diagnosis(mistakes=transpose_mistakes, shape=transpose_shape,
                                             raised=transpose_raised),
    "rules.permute_backward": Diagnosis(mistakes=permute_mistakes, shape=permute_shape, raised=permute_raised),
    "rules.expand_backward": Diagnosis(mistakes=expand_mistakes, shape=expand_shape),
    "rules.getitem_backward": Diagnosis(mistakes=getitem_mistakes, shape=getitem_shape),
    "engine.ops_forward": Diagnosis(shape=forward_shape),
    "engine.backward_graphs": Diagnosis(note=backward_note),
    "engine.views": Diagnosis(note=views_note),
    "engine.leaf_and_grad_fn": Diagnosis(note=kept_grad_note),
    "engine.accumulation": Diagnosis(mistakes=accumulation_mistakes),
    "engine.deep_chain": Diagnosis(raised=deep_chain_raised),
}


def mistakes(qid: str, **case: Any) -> Mistakes:
    """What each known mistake of question `qid` returns in this case, per input index: the
    `alternatives` of expect_close. Empty where the question models none."""
    entry = DIAGNOSES[qid].mistakes
    return {} if entry is None else entry(**case)


def shape_hint(qid: str, k: int = 0, **case: Any) -> Callable[[tuple[int, ...]], "str | None"]:
    """The `shape_hint` of expect_close for gradient `k` of this case: why a result of that shape is wrong."""
    entry = DIAGNOSES[qid].shape
    return lambda got_shape: None if entry is None else entry(tuple(got_shape), k=k, **case)


def raised_hint(qid: str, **case: Any) -> Callable[[Any], "str | None"]:
    """call_or_fail's `mistake` for this case: the likely mistake, given what the student's code raised."""
    entry = DIAGNOSES[qid].raised
    return lambda raised: None if entry is None else entry(raised, **case)


def note(qid: str, **case: Any) -> str | None:
    """A sentence that helps whatever went wrong in this case, or None."""
    entry = DIAGNOSES[qid].note
    return None if entry is None else entry(**case)
