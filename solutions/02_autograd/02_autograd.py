# %% [markdown]
# # 02 · Autograd: backward rules and a reverse-mode engine
#
# PyTorch records every operation on a tensor that requires grad into a graph, and
# `loss.backward()` walks that graph from the loss back to the leaves, applying the chain rule
# at each node. In this assignment you build that machinery in plain NumPy: first the backward
# rule of each op (`rules.py`), then a small define-by-run engine (`engine.py`) that records a
# graph as you compute and fills `.grad`. `rules.py` and `engine.py` may not use torch: writing
# the rules by hand is the point. This notebook uses torch only to show you the answers.
#
# **How to work.** Open `rules.py` and `engine.py` in JupyterLab's editor beside this notebook;
# every `raise NotImplementedError(...)` marks what to write, and its message is a hint. Save,
# then run a cell again: `%autoreload 2` picks up your edit without restarting the kernel. The
# last cell, `%checks test`, runs the public checks on this folder in a sandbox (nothing your
# code does can stop the notebook); `%checks test rules.add_backward` runs one question's.

# %%
# %load_ext autoreload
# %autoreload 2
# %load_ext checks
import numpy as np
import torch

import engine
import rules


def yours(function, *args, **kwargs):
    """Your function's answer; while it is still the stub (or raises), say so and go on."""
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        return "not yet"
    except Exception as error:  # your code raised: show it, keep the notebook going
        return f"raised {type(error).__name__}: {error}"


def torch_vjp(f, grad, *arrays):
    """What autograd gives: the gradient of sum(grad * f(*arrays)) for each array, as NumPy."""
    inputs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    f(*inputs).backward(torch.as_tensor(grad, dtype=torch.float64))
    return tuple(t.grad.numpy() for t in inputs)


rng = np.random.default_rng(0)
a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
g = rng.standard_normal((2, 3))

# %% [markdown]
# ## Vector-Jacobian products
#
# Inside a bigger computation that ends in a scalar loss $L$, an op `out = f(a, b)` receives
# `grad` $= \partial L / \partial\,\mathrm{out}$ (the shape of `out`) and must return
# $\partial L/\partial a$ and $\partial L/\partial b$: by the chain rule, `grad` times the op's
# Jacobian, a **vector-Jacobian product**. For elementwise ops the Jacobian is diagonal, so the
# VJP is `grad` times the local derivative, entry by entry; you never build the Jacobian. Two
# habits catch most mistakes: every rule multiplies by `grad`, and every gradient has exactly
# the shape of its input.
#
# ## rules.sum_to_shape
#
# When `a` of shape (2, 3) meets `b` of shape (3,), NumPy broadcasts `b` across the rows: each
# entry of `b` is used twice, so its gradient is the *sum* of the two gradients that reach it.
# `sum_to_shape(grad, shape)` sums over the broadcast dimensions (new leading ones, and those
# where `shape` has size 1) back down to `shape`. Every binary rule below needs it.
# Check it alone: `%checks test rules.sum_to_shape`.

# %%
print("torch:", torch.ones(2, 3, dtype=torch.float64).sum(0).numpy())
print("yours:", yours(rules.sum_to_shape, np.ones((2, 3)), (3,)))

# %% [markdown]
# ## rules.add_backward, rules.sub_backward
#
# `a + b` passes `grad` to both inputs unchanged; `a - b` passes `grad` and `-grad`. With
# broadcasting, each is then summed down to its input's shape: here `b`'s gradient has shape (3,).
# (`%checks test rules.add_backward`, `%checks test rules.sub_backward`)

# %%
print("torch:", torch_vjp(lambda x, y: x + y, g, a, b)[1], torch_vjp(lambda x, y: x - y, g, a, b)[1])
print("yours:", yours(lambda: rules.add_backward(g, a, b)[1]), yours(lambda: rules.sub_backward(g, a, b)[1]))

# %% [markdown]
# ## rules.mul_backward, rules.div_backward
#
# For `a * b` the local derivatives are `b` and `a`: the VJPs are `grad * b` and `grad * a`.
# For `a / b` they are `1/b` and `-a/b**2`. (`%checks test rules.mul_backward`, `rules.div_backward`)

# %%
print("torch:", torch_vjp(lambda x, y: x * y, g, a, b)[1], torch_vjp(lambda x, y: x / y, g, a, b)[1])
print("yours:", yours(lambda: rules.mul_backward(g, a, b)[1]), yours(lambda: rules.div_backward(g, a, b)[1]))

# %% [markdown]
# ## rules.neg_backward, exp_backward, log_backward
#
# One input each: `-a` gives `-grad`; `exp(a)` gives `grad * exp(a)`; `log(a)` gives `grad / a`.
# (`%checks test rules.neg_backward`, `rules.exp_backward`, `rules.log_backward`)

# %%
pos = np.abs(a) + 0.5
print("torch:", torch_vjp(torch.log, g, pos)[0][0])
print("yours:", yours(lambda: rules.log_backward(g, pos)[0][0]), yours(lambda: rules.exp_backward(g, a)[0].shape))

# %% [markdown]
# ## rules.relu_backward, tanh_backward, sigmoid_backward
#
# `relu` passes `grad` where `a > 0` and 0 elsewhere; at exactly `a == 0` PyTorch uses 0, and so
# do we. $\tanh' = 1 - \tanh^2$ and $\sigma' = \sigma(1 - \sigma)$.
# (`%checks test rules.relu_backward`, `rules.tanh_backward`, `rules.sigmoid_backward`)

# %%
z = np.array([-1.0, 0.0, 2.0])
print("torch:", torch_vjp(torch.relu, np.ones(3), z)[0], torch_vjp(torch.sigmoid, np.ones(3), z)[0])
print("yours:", yours(rules.relu_backward, np.ones(3), z), yours(rules.sigmoid_backward, np.ones(3), z))

# %% [markdown]
# ## rules.pow_backward
#
# `a ** p` for a Python number `p` has derivative `p * a ** (p - 1)` (and 0 when `p == 0`); it
# returns a one-element tuple `(grad_a,)`. (`%checks test rules.pow_backward`)

# %%
print("torch:", torch_vjp(lambda x: x ** 3, g, a)[0][0])
print("yours:", yours(lambda: rules.pow_backward(g, a, 3)[0][0]))

# %% [markdown]
# ## rules.matmul_backward
#
# For 2-D `out = a @ b`: `grad_a = grad @ b.T` and `grad_b = a.T @ grad`. Writing down the shapes
# alone tells you where each transpose goes. `torch.matmul` also takes 1-D operands and batches
# with broadcast batch dimensions: sum those back down as for any broadcast.
# (`%checks test rules.matmul_backward`)

# %%
m, n = rng.standard_normal((4, 2, 3)), rng.standard_normal((3, 5))
gm = rng.standard_normal((4, 2, 5))
print("torch:", [x.shape for x in torch_vjp(torch.matmul, gm, m, n)])
print("yours:", yours(lambda: [x.shape for x in rules.matmul_backward(gm, m, n)]))

# %% [markdown]
# ## rules.sum_backward, rules.mean_backward
#
# A sum copies `grad` back to every element it added up (`mean` also divides by how many). With
# `keepdims=False` the summed axes are gone from `grad`: put them back (size 1) before broadcasting.
# (`%checks test rules.sum_backward`, `rules.mean_backward`)

# %%
gs = rng.standard_normal(3)
print("torch:", torch_vjp(lambda x: x.mean(0), gs, a)[0])
print("yours:", yours(lambda: rules.mean_backward(gs, a, axis=0)[0]))

# %% [markdown]
# ## The engine: engine.tensor_basics, engine.ops_forward
#
# `engine.Tensor(data, requires_grad=False)` holds a float64 array in `.data`, with `.grad`
# (None at first), `.is_leaf`, `.grad_fn`, `.shape` and `.item()`. Each operation (`+ - * /`, `**`,
# `@`, `.exp()`, `.relu()`, `.sum()` ...) computes its result with NumPy and, when some input
# requires grad and recording is on, records a node: the rule to call on the way back and the
# inputs to send gradients to. (`%checks test engine.tensor_basics`, `engine.ops_forward`)

# %%
print("torch:", torch.tensor([[1.0, 2.0]], requires_grad=True).relu().sum().item())
print("yours:", yours(lambda: engine.Tensor([[1.0, 2.0]], requires_grad=True).relu().sum().item()))

# %% [markdown]
# ## engine.backward_graphs
#
# `backward()` visits the graph in reverse topological order, so that every node has received
# the gradients of all its uses before it passes its own on. A tensor used twice gets the sum over
# both paths. In the quiz's graph, $c = ab$, $d = c + a$, $L = d^2$, `a` feeds both `c` and `d`.
# (`%checks test engine.backward_graphs`)

# %%
ta, tb = torch.tensor(2.0, requires_grad=True), torch.tensor(3.0, requires_grad=True)
((ta * tb + ta) ** 2).backward()
print("torch: b.grad =", tb.grad.item())


def engine_b_grad():
    ea, eb = engine.Tensor(2.0, requires_grad=True), engine.Tensor(3.0, requires_grad=True)
    ((ea * eb + ea) ** 2).backward()
    return eb.grad


print("yours: b.grad =", yours(engine_b_grad))

# %% [markdown]
# ## engine.accumulation, engine.retain_graph, engine.backward_args
#
# Leaves **accumulate**: a second `backward()` adds to `.grad` (zero it between steps). A second
# backward through the same graph needs `retain_graph=True` the first time, otherwise it raises
# RuntimeError. `grad` defaults to 1 only for a one-element result; a bigger one needs an explicit
# `grad`, and so does nothing that does not require grad (RuntimeError).
# (`%checks test engine.accumulation`, `engine.retain_graph`, `engine.backward_args`)

# %%
w = torch.tensor(1.0, requires_grad=True)
(w * 3).backward()
(w * 3).backward()
print("torch: after two backward() calls w.grad =", w.grad.item())

# %% [markdown]
# ## engine.leaf_and_grad_fn, engine.no_grad_detach, engine.zero_grad
#
# A tensor you create is a leaf (`grad_fn` is None); a result of a recorded op is not, and keeps
# no `.grad` unless you call `.retain_grad()`. Inside `with engine.no_grad():` nothing is recorded;
# `.detach()` gives the same data with no history. `zero_grad(tensors, set_to_none=True)` resets
# each `.grad`. (`%checks test engine.leaf_and_grad_fn`, `engine.no_grad_detach`, `engine.zero_grad`)

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    y = x * 2
print("torch:", x.is_leaf, (x * 2).is_leaf, y.requires_grad, x.detach().requires_grad)

# %% [markdown]
# ## engine.deep_chain
#
# A chain of 10,000 ops is deeper than Python's recursion limit: walk the graph with your own
# stack, not with recursion. (`%checks test engine.deep_chain`)

# %% [markdown]
# ## Quiz
#
# Answer in `quiz.toml` after each `=`: a number, or `true` / `false`. `%checks test` below says
# whether each answer is there and of the right kind; whether it is right is marked when graded.
#
# - **a_grad**: for $c = ab$, $d = c + a$, $L = d^2$ at $a = 2$, $b = 3$, what is `a.grad`? Remember
#   that `a` feeds both `c` and `d` (the torch cell above computes `b.grad`; work out `a.grad` by hand).
# - **leaf_accumulates**: true or false, a leaf tensor accumulates its gradient in `.grad`.
# - **backward_chain_rule**: true or false, `backward()` computes gradients by the chain rule.

# %% [markdown]
# ## Everything at once
#
# A row per question and quiz answer, then the first failures of each failing question.
# `checks test 02_autograd` in a terminal prints the same; `checks pack 02_autograd` writes the
# zip you upload.

# %%
# %checks test
