"""Public checks for 02_autograd: a few cases per question, answers computed by PyTorch.

Run them with `checks test 02_autograd`. Passing them is a good sign, not a guarantee: the grader
runs many more cases (every broadcast pattern, 0-d tensors, batched matmul, random graphs over
every op, 1,500-op chains ...). Here the engine checks use YOUR rules.py, so fix the rules first;
the grader checks the engine with correct rules, so a wrong rule costs only its own question.
"""

import numpy as np
import pytest
import torch

from checks.suite import call_or_fail, expect_close, expect_equal, fail, question

import public_drivers
from diagnoses import EXPLICIT_STACK, mistakes, note, raised_hint, shape_hint  # the same table as the grader's

NO_TORCH = ("torch",)


def t64(x, requires_grad=False):
    return torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=requires_grad)


def torch_vjp(fn, inputs, grad):
    """PyTorch's gradients of (fn(*inputs) * grad).sum() with respect to every input."""
    tensors = [t64(x, requires_grad=True) for x in inputs]
    return [g.numpy() for g in torch.autograd.grad(fn(*tensors), tensors, t64(grad))]


def check_rule(student, qid, got, expected, **case):
    """A tuple with one gradient per input, each of its input's shape and close to PyTorch's; where it
    is not, the likely mistake from the table the grader reads too (diagnoses.py)."""
    if not isinstance(got, (tuple, list)) or len(got) != len(expected):
        fail(f"{student.last_call} returned {type(got).__name__}; expected a tuple of {len(expected)} "
             f"gradient(s), one per input, e.g. (grad_a,) or (grad_a, grad_b).")
    known = mistakes(qid, expected=expected, **case)
    for k, (name, item, want) in enumerate(zip("ab", got, expected)):
        expect_close(item, want, subject=f"{student.last_call}: grad for {name}", alternatives=known.get(k, ()),
                     shape_hint=shape_hint(qid, k, expected=expected, **case), note=note(qid, **case) or "")


rng = np.random.default_rng(2024)


# ---- rules.py ---------------------------------------------------------------------------------

@question("rules.sum_to_shape", points=4, block_imports=NO_TORCH)
@pytest.mark.parametrize("grad_shape, shape", [((2, 3), (3,)), ((2, 3), (2, 1)), ((4, 2, 3), ())], ids=repr)
def test_sum_to_shape(student, grad_shape, shape):
    grad = rng.standard_normal(grad_shape)
    expected = t64(grad).sum_to_size(shape).numpy()
    case = dict(grad=grad, shape=shape, expected=expected)
    expect_close(student.rules.sum_to_shape(grad, shape), expected, shape_hint=shape_hint("rules.sum_to_shape", **case),
                 alternatives=mistakes("rules.sum_to_shape", **case)[0])


PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 1))]


def _binary(student, op, a_shape, b_shape):
    a, b = rng.standard_normal(a_shape), rng.uniform(0.5, 2.0, b_shape)
    grad = rng.standard_normal(np.broadcast_shapes(a_shape, b_shape))
    fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
    got = getattr(student.rules, f"{op}_backward")(grad, a, b)
    check_rule(student, f"rules.{op}_backward", got, torch_vjp(fn, [a, b], grad), op=op, a=a, b=b, grad=grad)


@question("rules.add_backward", points=2, block_imports=NO_TORCH)
@pytest.mark.parametrize("a_shape, b_shape", PAIRS, ids=repr)
def test_add_backward(student, a_shape, b_shape):
    _binary(student, "add", a_shape, b_shape)


@question("rules.sub_backward", points=2, block_imports=NO_TORCH)
@pytest.mark.parametrize("a_shape, b_shape", PAIRS, ids=repr)
def test_sub_backward(student, a_shape, b_shape):
    _binary(student, "sub", a_shape, b_shape)


@question("rules.mul_backward", points=3, block_imports=NO_TORCH)
@pytest.mark.parametrize("a_shape, b_shape", PAIRS, ids=repr)
def test_mul_backward(student, a_shape, b_shape):
    _binary(student, "mul", a_shape, b_shape)


@question("rules.div_backward", points=3, block_imports=NO_TORCH)
@pytest.mark.parametrize("a_shape, b_shape", PAIRS, ids=repr)
def test_div_backward(student, a_shape, b_shape):
    _binary(student, "div", a_shape, b_shape)


def _unary(student, op):
    a = rng.uniform(0.5, 2.0, (2, 3)) * (1 if op == "log" else rng.choice([-1.0, 1.0], (2, 3)))
    if op == "relu":
        a[0, 0] = 0.0   # PyTorch: the gradient of relu at exactly 0 is 0
    grad = rng.standard_normal((2, 3))
    fn = {"neg": torch.neg, "exp": torch.exp, "log": torch.log, "relu": torch.relu, "tanh": torch.tanh,
          "sigmoid": torch.sigmoid}[op]
    got = getattr(student.rules, f"{op}_backward")(grad, a)
    check_rule(student, f"rules.{op}_backward", got, torch_vjp(fn, [a], grad), op=op, a=a, grad=grad)


@question("rules.neg_backward", points=1, block_imports=NO_TORCH)
def test_neg_backward(student):
    _unary(student, "neg")


@question("rules.exp_backward", points=2, block_imports=NO_TORCH)
def test_exp_backward(student):
    _unary(student, "exp")


@question("rules.log_backward", points=2, block_imports=NO_TORCH)
def test_log_backward(student):
    _unary(student, "log")


@question("rules.relu_backward", points=2, block_imports=NO_TORCH)
def test_relu_backward(student):
    _unary(student, "relu")


@question("rules.tanh_backward", points=2, block_imports=NO_TORCH)
def test_tanh_backward(student):
    _unary(student, "tanh")


@question("rules.sigmoid_backward", points=2, block_imports=NO_TORCH)
def test_sigmoid_backward(student):
    _unary(student, "sigmoid")


@question("rules.pow_backward", points=4, block_imports=NO_TORCH)
@pytest.mark.parametrize("p", [2, 3, 0.5, -1])
def test_pow_backward(student, p):
    a, grad = rng.uniform(0.5, 2.0, 4), rng.standard_normal(4)
    check_rule(student, "rules.pow_backward", student.rules.pow_backward(grad, a, p),
               torch_vjp(lambda x: x ** p, [a], grad), a=a, p=p, grad=grad)


@question("rules.matmul_backward", points=7, block_imports=NO_TORCH)
@pytest.mark.parametrize("a_shape, b_shape", [((2, 3), (3, 4)), ((3,), (3, 4)), ((5, 2, 3), (3, 4))], ids=repr)
def test_matmul_backward(student, a_shape, b_shape):
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    grad = rng.standard_normal(tuple(torch.matmul(t64(a), t64(b)).shape))
    got = student.rules.matmul_backward(grad, a, b)
    check_rule(student, "rules.matmul_backward", got, torch_vjp(torch.matmul, [a, b], grad), a=a, b=b, grad=grad)


REDUCTIONS = [(None, False), (1, False), ((0, 2), True)]


def _reduction(student, op, axis, keepdims):
    a = rng.standard_normal((2, 3, 4))

    def fn(x):
        return getattr(x, op)() if axis is None else getattr(x, op)(dim=axis, keepdim=keepdims)

    grad = rng.standard_normal(tuple(fn(t64(a)).shape))
    qid, case = f"rules.{op}_backward", dict(op=op, a=a, axis=axis, keepdims=keepdims, grad=grad)
    got = call_or_fail(lambda: getattr(student.rules, f"{op}_backward")(grad, a, axis=axis, keepdims=keepdims),
                       mistake=raised_hint(qid, **case))
    check_rule(student, qid, got, torch_vjp(fn, [a], grad), **case)


@question("rules.sum_backward", points=4, block_imports=NO_TORCH)
@pytest.mark.parametrize("axis, keepdims", REDUCTIONS, ids=repr)
def test_sum_backward(student, axis, keepdims):
    _reduction(student, "sum", axis, keepdims)


@question("rules.mean_backward", points=4, block_imports=NO_TORCH)
@pytest.mark.parametrize("axis, keepdims", REDUCTIONS, ids=repr)
def test_mean_backward(student, axis, keepdims):
    _reduction(student, "mean", axis, keepdims)


def _view(student, rule, forward, *args, **case):
    """`case`: the view's own arguments, by name, for the table of likely mistakes."""
    a = rng.standard_normal((2, 3, 4))
    grad = rng.standard_normal(tuple(forward(t64(a)).shape))
    qid, case = f"rules.{rule}", dict(a=a, grad=grad, **case)
    got = call_or_fail(lambda: getattr(student.rules, rule)(grad, a, *args), mistake=raised_hint(qid, **case))
    check_rule(student, qid, got, torch_vjp(forward, [a], grad), **case)


@question("rules.reshape_backward", points=2, block_imports=NO_TORCH)
def test_reshape_backward(student):
    _view(student, "reshape_backward", lambda x: x.reshape(4, -1), (4, -1), shape=(4, -1))


@question("rules.transpose_backward", points=2, block_imports=NO_TORCH)
def test_transpose_backward(student):
    _view(student, "transpose_backward", lambda x: x.transpose(0, 2), 0, 2, dim0=0, dim1=2)


@question("rules.permute_backward", points=3, block_imports=NO_TORCH)
def test_permute_backward(student):
    _view(student, "permute_backward", lambda x: x.permute(2, 0, 1), (2, 0, 1), dims=(2, 0, 1))


@question("rules.expand_backward", points=4, block_imports=NO_TORCH)
@pytest.mark.parametrize("a_shape, shape", [((3,), (2, 3)), ((3, 1), (3, 3)), ((1, 3), (2, 3, -1))], ids=repr)
def test_expand_backward(student, a_shape, shape):
    a = rng.standard_normal(a_shape)
    grad = rng.standard_normal(tuple(t64(a).expand(*shape).shape))
    got = student.rules.expand_backward(grad, a, shape)
    check_rule(student, "rules.expand_backward", got, torch_vjp(lambda x: x.expand(*shape), [a], grad), a=a, grad=grad,
               shape=shape)


@question("rules.getitem_backward", points=4, block_imports=NO_TORCH)
@pytest.mark.parametrize("index", [1, (slice(None), slice(0, 3, 2)), np.array([0, 2, 0])], ids=repr)
def test_getitem_backward(student, index):
    a = rng.standard_normal((3, 4))
    torch_index = torch.as_tensor(index) if isinstance(index, np.ndarray) else index
    grad = rng.standard_normal(tuple(t64(a)[torch_index].shape))
    got = student.rules.getitem_backward(grad, a, index)
    check_rule(student, "rules.getitem_backward", got, torch_vjp(lambda x: x[torch_index], [a], grad), a=a,
               grad=grad, index=index)


# ---- engine.py --------------------------------------------------------------------------------

@question("engine.tensor_basics", points=2, block_imports=NO_TORCH)
def test_tensor_basics(student):
    data = [[1, 2, 3], [4, 5, 6]]
    got = student.run(public_drivers.construct, data, True)
    want = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    expect_equal(got["dtype"], "float64")
    expect_close(got["data"], want.detach().numpy())
    expect_equal(got["shape"], tuple(want.shape))
    expect_equal(got["requires_grad"], want.requires_grad)
    if got["grad"] is not None:
        fail("a new Tensor must have .grad None")


@question("engine.ops_forward", points=4, block_imports=NO_TORCH)
def test_ops_forward(student):
    a, b = rng.standard_normal((2, 3)), rng.uniform(0.5, 2.0, 3)
    got = student.run(public_drivers.forward_ops, a, b)
    x, y = t64(a), t64(b)
    want = {"x + y": x + y, "x - y": x - y, "x * y": x * y, "x / y": x / y, "2.0 - x": 2.0 - x,
            "1.0 / y": 1.0 / y, "-x": -x, "x ** 2": x ** 2, "x @ y": x @ y, "y.exp()": y.exp(),
            "y.log()": y.log(), "x.relu()": x.relu(), "x.tanh()": x.tanh(), "x.sigmoid()": x.sigmoid(),
            "x.sum()": x.sum(), "x.sum(axis=0)": x.sum(dim=0), "x.mean(axis=1, keepdims=True)": x.mean(1, keepdim=True)}
    for name, expected in want.items():
        have = np.asarray(got[name])
        if have.shape != tuple(expected.shape) or not np.allclose(have, expected.numpy()):
            reduced = ("sum(" in name or "mean(" in name) and "keepdims=True" not in name
            hint = shape_hint("engine.ops_forward", want_shape=tuple(expected.shape),
                              reduction_without_keepdims=reduced)(have.shape)
            fail(f"{name} with x of shape (2, 3) and y of shape (3,): .data is {have!r}; "
                 f"expected {expected.numpy()!r}." + (f" Likely mistake: {hint}" if hint else ""))


@question("engine.backward_graphs", points=3, block_imports=NO_TORCH)
def test_quiz_graph(student):
    got = student.run(public_drivers.quiz_graph, 2.0, 3.0)
    a, b = t64(2.0, True), t64(3.0, True)
    c = a * b
    loss = (c + a) ** 2
    loss.backward()
    expect_close(got["L"], loss.item())
    expect_close(got["a.grad"], a.grad.numpy())
    expect_close(got["b.grad"], b.grad.numpy())


@question("engine.backward_graphs", points=2, block_imports=NO_TORCH)
def test_diamond(student):
    a = rng.standard_normal(3)
    at = t64(a, True)
    p = at.exp()
    (p + p * 2.0).sum().backward()
    expect_close(student.run(public_drivers.diamond, a), at.grad.numpy(),
                 note=note("engine.backward_graphs", reused=["p = a.exp()"]))


@question("engine.backward_graphs", points=2, block_imports=NO_TORCH)
def test_broadcast_bias(student):
    x, w, b = rng.standard_normal((5, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)
    got = student.run(public_drivers.broadcast_bias, x, w, b)
    wt, bt = t64(w, True), t64(b, True)
    ((t64(x) @ wt + bt).tanh()).mean().backward()
    expect_close(got["w.grad"], wt.grad.numpy())
    expect_close(got["b.grad"], bt.grad.numpy())


@question("engine.accumulation", points=3, block_imports=NO_TORCH)
def test_accumulation(student):
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    got = student.run(public_drivers.two_passes, a, b)
    at, bt = t64(a, True), t64(b, True)
    (at * bt).sum().backward()
    expect_close(got["first"], at.grad.numpy())
    second_alone = 2 * a  # the gradient of (a * a).sum() alone: what a .grad that is overwritten holds
    (at * at).sum().backward()
    expect_close(got["second"], at.grad.numpy(),
                 alternatives=mistakes("engine.accumulation", second_alone=[second_alone])[0])


@question("engine.retain_graph", points=3, block_imports=NO_TORCH)
@pytest.mark.parametrize("retain", [False, True])
def test_retain_graph(student, retain):
    got = student.run(public_drivers.backward_twice, rng.standard_normal(3), retain)
    if retain and got is not None:
        fail(f"after L.backward(retain_graph=True) a second L.backward() raised {got}; it must work.")
    if not retain and got != "RuntimeError":
        fail(f"a second L.backward() without retain_graph=True {'raised ' + got if got else 'did not raise'}; "
             "expected RuntimeError (the graph is freed after the first backward).")


@question("engine.backward_args", points=2, block_imports=NO_TORCH)
def test_non_scalar_backward(student):
    got = student.run(public_drivers.non_scalar_backward, rng.standard_normal((2, 3)))
    if got != "RuntimeError":
        fail(f"(a * 2.0).backward() on a (2, 3) tensor {'raised ' + got if got else 'did not raise'}; expected "
             "RuntimeError: without a grad argument, backward() needs a one-element tensor.")


@question("engine.leaf_and_grad_fn", points=3, block_imports=NO_TORCH)
def test_leaf_and_retain_grad(student):
    got = student.run(public_drivers.quiz_graph, 2.0, 3.0)
    expect_equal(got["a.is_leaf"], True)
    expect_equal(got["c.is_leaf"], False)
    expect_equal(got["c.grad_fn is None"], False)
    if got["c.grad"] is not None:
        fail("c = a * b: after backward its .grad is not None; expected None. Likely mistake: "
             + note("engine.leaf_and_grad_fn", name="c", made_by_an_op=True))
    a = rng.standard_normal(3)
    got = student.run(public_drivers.retained_and_zeroed, a)
    at = t64(a, True)
    x = at * 3.0
    x.retain_grad()
    ((x * x).sum() + at.exp().sum()).backward()
    expect_close(got["x.grad"], x.grad.numpy())
    if got["y.grad"] is not None:
        fail("y = a.exp() is not a leaf and did not call retain_grad(): its .grad must stay None.")


@question("engine.no_grad_detach", points=3, block_imports=NO_TORCH)
def test_no_grad_and_detach(student):
    a = rng.standard_normal(3)
    got = student.run(public_drivers.no_grad_and_detach, a)
    at = t64(a, True)
    with torch.no_grad():
        inside = at * 2.0
    after = at * 2.0
    detached = after.detach()
    for name, t in (("inside", inside), ("after", after), ("detached", detached)):
        if tuple(got[name]) != (t.requires_grad, t.grad_fn is None):
            fail(f"{name}: (requires_grad, grad_fn is None) is {tuple(got[name])}; expected "
                 f"{(t.requires_grad, t.grad_fn is None)}. Inside no_grad() nothing is recorded; detach() "
                 "returns a tensor without history that does not require grad.")


@question("engine.zero_grad", points=2, block_imports=NO_TORCH)
def test_zero_grad(student):
    a = rng.standard_normal(3)
    got = student.run(public_drivers.retained_and_zeroed, a)
    at = t64(a, True)
    at.exp().sum().backward()
    optimizer = torch.optim.SGD([at], lr=0.0)
    optimizer.zero_grad(set_to_none=False)
    expect_close(got["a.grad after zero_grad(set_to_none=False)"], at.grad.numpy())
    if got["a.grad after zero_grad()"] is not None:
        fail("zero_grad([a]) (set_to_none=True by default) must set a.grad to None.")


@question("engine.views", points=4, block_imports=NO_TORCH)
def test_views(student):
    x = rng.standard_normal((2, 3, 4))
    got = student.run(public_drivers.views, x)
    xt = t64(x, True)
    out = xt.permute(1, 2, 0).reshape(3, 8).T[::3, 1].expand(2, 3)
    (out * torch.arange(6.0, dtype=torch.float64).reshape(2, 3)).sum().backward()
    expect_close(got["out"], out.detach().numpy())
    if got["x.grad"] is None:
        fail(f"x.grad is None after backward through views. {note('engine.views')}")
    expect_close(got["x.grad"], xt.grad.numpy(), note=note("engine.views"))


@question("engine.deep_chain", points=3, block_imports=NO_TORCH, timeout=60.0, cap_stack=True)
def test_deep_chain(student):
    a, n = rng.standard_normal(3), 1_500
    got = call_or_fail(lambda: student.run(public_drivers.long_chain, a, n),
                       text=f"x = Tensor(a, requires_grad=True); {n:,} ops in a row; x.sum().backward()",
                       mistake=raised_hint("engine.deep_chain", limit=1_000))
    if got["limit raised"]:
        fail(f"backward raised Python's recursion limit; the grader holds it at 1000. {EXPLICIT_STACK}")
    x0 = t64(a, True)
    x = x0
    for k in range(n):
        x = x * 1.001 if k % 2 == 0 else x + 0.01
    x.sum().backward()
    expect_close(got["x0.grad"], x0.grad.numpy())
