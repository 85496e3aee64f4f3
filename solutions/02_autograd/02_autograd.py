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
        return "not started"
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
# ## rules.add_backward
#
# `a + b` passes `grad` to both inputs unchanged. With broadcasting, each is then summed down to
# its input's shape: here `b`'s gradient has shape (3,). (`%checks test rules.add_backward`)

# %%
print("torch:", torch_vjp(lambda x, y: x + y, g, a, b)[1])
print("yours:", yours(lambda: rules.add_backward(g, a, b)[1]))

# %% [markdown]
# ## rules.sub_backward
#
# `a - b` passes `grad` to `a` and `-grad` to `b`, each summed down to its shape.
# (`%checks test rules.sub_backward`)

# %%
print("torch:", torch_vjp(lambda x, y: x - y, g, a, b)[1])
print("yours:", yours(lambda: rules.sub_backward(g, a, b)[1]))

# %% [markdown]
# ## rules.mul_backward
#
# For `a * b` the local derivatives are `b` and `a`: the VJPs are `grad * b` and `grad * a`
# (then summed down, as always). (`%checks test rules.mul_backward`)

# %%
print("torch:", torch_vjp(lambda x, y: x * y, g, a, b)[1])
print("yours:", yours(lambda: rules.mul_backward(g, a, b)[1]))

# %% [markdown]
# ## rules.div_backward
#
# For `a / b` the local derivatives are `1/b` and `-a/b**2`. (`%checks test rules.div_backward`)

# %%
print("torch:", torch_vjp(lambda x, y: x / y, g, a, b)[1])
print("yours:", yours(lambda: rules.div_backward(g, a, b)[1]))

# %% [markdown]
# ## rules.neg_backward
#
# The unary ops take one input and return a one-element tuple. `-a` gives `-grad`.
# (`%checks test rules.neg_backward`)

# %%
print("torch:", torch_vjp(torch.neg, g, a)[0][0])
print("yours:", yours(lambda: rules.neg_backward(g, a)[0][0]))

# %% [markdown]
# ## rules.exp_backward
#
# $\frac{d}{da} e^a = e^a$: the VJP is `grad * exp(a)`. (`%checks test rules.exp_backward`)

# %%
print("torch:", torch_vjp(torch.exp, g, a)[0][0])
print("yours:", yours(lambda: rules.exp_backward(g, a)[0][0]))

# %% [markdown]
# ## rules.log_backward
#
# $\frac{d}{da} \log a = 1/a$: the VJP is `grad / a`. (`%checks test rules.log_backward`)

# %%
pos = np.abs(a) + 0.5
print("torch:", torch_vjp(torch.log, g, pos)[0][0])
print("yours:", yours(lambda: rules.log_backward(g, pos)[0][0]))

# %% [markdown]
# ## rules.relu_backward
#
# `relu` passes `grad` where `a > 0` and 0 elsewhere; at exactly `a == 0` PyTorch uses 0, and so
# do we. (`%checks test rules.relu_backward`)

# %%
z = np.array([-1.0, 0.0, 2.0])
print("torch:", torch_vjp(torch.relu, np.ones(3), z)[0])
print("yours:", yours(lambda: rules.relu_backward(np.ones(3), z)[0]))

# %% [markdown]
# ## rules.tanh_backward
#
# $\tanh'(a) = 1 - \tanh^2(a)$. (`%checks test rules.tanh_backward`)

# %%
print("torch:", torch_vjp(torch.tanh, np.ones(3), z)[0])
print("yours:", yours(lambda: rules.tanh_backward(np.ones(3), z)[0]))

# %% [markdown]
# ## rules.sigmoid_backward
#
# $\sigma'(a) = \sigma(a)\,(1 - \sigma(a))$, at most 0.25 (at $a = 0$).
# (`%checks test rules.sigmoid_backward`)

# %%
print("torch:", torch_vjp(torch.sigmoid, np.ones(3), z)[0])
print("yours:", yours(lambda: rules.sigmoid_backward(np.ones(3), z)[0]))

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
# ## rules.sum_backward
#
# A sum copies `grad` back to every element it added up. With `keepdims=False` the summed axes
# are gone from `grad`: put them back (size 1) before broadcasting. `axis` is an int, a tuple of
# ints or None (everything). (`%checks test rules.sum_backward`)

# %%
gs = rng.standard_normal(3)
print("torch:", torch_vjp(lambda x: x.sum(0), gs, a)[0])
print("yours:", yours(lambda: rules.sum_backward(gs, a, axis=0)[0]))

# %% [markdown]
# ## rules.mean_backward
#
# As the sum, divided by how many elements each mean averaged. (`%checks test rules.mean_backward`)

# %%
print("torch:", torch_vjp(lambda x: x.mean(0), gs, a)[0])
print("yours:", yours(lambda: rules.mean_backward(gs, a, axis=0)[0]))

# %% [markdown]
# ## The views: moving the gradient back
#
# In 01 you built views: reshape, transpose, permute and expand change only the shape and
# strides, and indexing picks some elements. None of them computes a new number, so none of their
# backward rules multiplies anything. Each element of `out` is some element of `a`, and its
# gradient goes back to where that element came from. An element of `a` that shows up in `out`
# several times (expand, or an index that repeats) receives the *sum* of those gradients, as a
# tensor used by several ops does. Every rule below returns `(grad_a,)`, shaped like `a`.
#
# ## rules.reshape_backward
#
# `out = a.reshape(shape)` keeps the elements in row-major order, so `grad` only needs the shape
# of `a` back. That is `a`'s shape, not `shape`: `shape` is where the forward pass went, and it may
# hold a -1. (`%checks test rules.reshape_backward`)

# %%
x3 = rng.standard_normal((2, 3, 4))
g3 = rng.standard_normal((4, 6))
print("torch:", torch_vjp(lambda x: x.reshape(4, -1), g3, x3)[0].shape)
print("yours:", yours(lambda: rules.reshape_backward(g3, x3, (4, -1))[0].shape))

# %% [markdown]
# ## rules.transpose_backward
#
# `out = a.transpose(dim0, dim1)` swaps two axes. Swapping the same two axes of `grad` puts every
# gradient back in place (`np.swapaxes`). Take the pair the forward swapped: not always the last
# two, and a negative dim counts from the end. (`%checks test rules.transpose_backward`)

# %%
gt = rng.standard_normal((4, 3, 2))
print("torch:", torch_vjp(lambda x: x.transpose(0, -1), gt, x3)[0][1, 2])
print("yours:", yours(lambda: rules.transpose_backward(gt, x3, 0, -1)[0][1, 2]))

# %% [markdown]
# ## rules.permute_backward
#
# `out = a.permute(dims)` makes `a`'s axis `dims[k]` into `out`'s axis `k`. To go back, `grad`'s
# axis `k` must return to position `dims[k]`. That is the **inverse** permutation,
# `np.argsort(dims)`, and not `dims` again. A swap is its own inverse, so with only two axes you
# cannot tell the two apart. With `(2, 0, 1)` you can: its inverse is `(1, 2, 0)`.
# (`%checks test rules.permute_backward`)

# %%
gp = rng.standard_normal((4, 2, 3))
print("torch:", torch_vjp(lambda x: x.permute(2, 0, 1), gp, x3)[0][1, 2])
print("yours:", yours(lambda: rules.permute_backward(gp, x3, (2, 0, 1))[0][1, 2]))

# %% [markdown]
# ## rules.expand_backward
#
# `out = a.expand(shape)` is the view behind broadcasting (01's `broadcast_strides`: stride 0).
# New leading dims are added, size-1 dims are stretched, and -1 keeps a size. Each element of `a`
# is read once for every copy, so its gradient is the sum over the copies. Sum the new leading
# dims away, and sum the stretched dims with `keepdims=True`, so that `a`'s size-1 dims stay.
# (`%checks test rules.expand_backward`)

# %%
col = rng.standard_normal((3, 1))
ge = rng.standard_normal((2, 3, 4))
print("torch:", torch_vjp(lambda x: x.expand(2, 3, 4), ge, col)[0].ravel())
print("yours:", yours(lambda: rules.expand_backward(ge, col, (2, 3, 4))[0].ravel()))

# %% [markdown]
# ## rules.getitem_backward
#
# `out = a[index]` picks elements. Ints, slices (steps too), None, `...` and integer arrays each
# say where in `a` an element came from. Start from zeros of `a`'s shape and put `grad` in at
# those places. An integer array may name an element twice: `a[[0, 0, 2]]` uses row 0 twice, and
# row 0's gradient is the sum of both. `out[index] = grad` keeps only one of them;
# `np.add.at(out, index, grad)` adds them all, as PyTorch's `index_put_(..., accumulate=True)`
# does. (`%checks test rules.getitem_backward`)

# %%
rows = np.array([0, 0, 2])
gi = rng.standard_normal((3, 2))
print("torch:", torch_vjp(lambda x: x[torch.as_tensor(rows)], gi, a.T)[0][0])
print("yours:", yours(lambda: rules.getitem_backward(gi, a.T, rows)[0][0]))

# %% [markdown]
# ## The engine: engine.tensor_basics
#
# `engine.Tensor(data, requires_grad=False)` holds a float64 copy of `data` in `.data`, with
# `.grad` (None at first), `.is_leaf`, `.grad_fn`, `.shape` and `.item()`.
# (`%checks test engine.tensor_basics`)

# %%
t = torch.tensor([[1, 2]], dtype=torch.float64)
print("torch:", tuple(t.shape), t.dtype, t.grad, t.is_leaf)
print("yours:", yours(lambda: (engine.Tensor([[1, 2]]).shape, engine.Tensor([[1, 2]]).data.dtype,
                               engine.Tensor([[1, 2]]).grad, engine.Tensor([[1, 2]]).is_leaf)))

# %% [markdown]
# ## engine.ops_forward
#
# Each operation (`+ - * /` with a tensor or a number on either side, `**`, `@`, `.exp()`,
# `.relu()`, `.sum()` ...) computes its result with NumPy and, when some input requires grad and
# recording is on, records a node: the rule to call on the way back and the inputs to send
# gradients to. (`%checks test engine.ops_forward`)

# %%
print("torch:", (2 - torch.tensor([[1.0, 2.0]], requires_grad=True)).relu().sum().item())
print("yours:", yours(lambda: (2 - engine.Tensor([[1.0, 2.0]], requires_grad=True)).relu().sum().item()))

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
# ## engine.views
#
# `.reshape(*shape)`, `.transpose(dim0, dim1)`, `.permute(*dims)`, `.T`, `.expand(*sizes)` and
# `t[index]` are ops like any other. Each computes its result with NumPy and records a node whose
# rule is the view rule above. `t.reshape(2, 3)` and `t.reshape((2, 3))` both work in PyTorch, so
# accept both. (`%checks test engine.views`)

# %%
tx = torch.tensor(x3, requires_grad=True)
(tx.permute(1, 2, 0).reshape(3, 8).T[::3, 1] * 2).sum().backward()
print("torch:", tx.grad[1])


def engine_views():
    ex = engine.Tensor(x3, requires_grad=True)
    (ex.permute(1, 2, 0).reshape(3, 8).T[::3, 1] * 2).sum().backward()
    return ex.grad[1]


print("yours:", yours(engine_views))

# %% [markdown]
# ## engine.accumulation
#
# Leaves **accumulate**: a second `backward()` adds to `.grad`, which is why a training loop
# zeroes the gradients before each step. (`%checks test engine.accumulation`)

# %%
w = torch.tensor(1.0, requires_grad=True)
(w * 3).backward()
(w * 3).backward()
print("torch: after two backward() calls w.grad =", w.grad.item())

# %% [markdown]
# ## engine.retain_graph
#
# A backward pass frees what the graph saved for it; a second backward through the same graph
# raises RuntimeError, unless the first was called with `retain_graph=True`.
# (`%checks test engine.retain_graph`)

# %%
v = torch.tensor(1.0, requires_grad=True)
loss = v * v
loss.backward(retain_graph=True)
loss.backward()  # without retain_graph above: RuntimeError
print("torch: two passes through v * v at v = 1, v.grad =", v.grad.item())

# %% [markdown]
# ## engine.backward_args
#
# `grad` defaults to 1 only for a one-element result: a bigger one needs an explicit `grad`
# (RuntimeError otherwise), and so does a tensor that does not require grad.
# (`%checks test engine.backward_args`)

# %%
try:
    (torch.ones(2, requires_grad=True) * 2).backward()
except RuntimeError as refusal:
    print("torch refuses:", refusal)

# %% [markdown]
# ## engine.leaf_and_grad_fn
#
# A tensor you create is a leaf (`grad_fn` is None); the result of a recorded op is not, and keeps
# no `.grad` unless you call `.retain_grad()` on it. (`%checks test engine.leaf_and_grad_fn`)

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
print("torch:", x.is_leaf, x.grad_fn, (x * 2).is_leaf, (x * 2).grad_fn is not None)

# %% [markdown]
# ## engine.no_grad_detach
#
# Inside `with engine.no_grad():` nothing is recorded (results do not require grad, and have no
# `grad_fn`); blocks may nest. `.detach()` gives the same data with no history.
# (`%checks test engine.no_grad_detach`)

# %%
with torch.no_grad():
    y = x * 2
print("torch:", y.requires_grad, y.grad_fn, x.detach().requires_grad)

# %% [markdown]
# ## engine.zero_grad
#
# `zero_grad(tensors, set_to_none=True)` resets each tensor's `.grad`: to None, or to zeros of its
# shape with `set_to_none=False`. (`%checks test engine.zero_grad`)

# %% [markdown]
# ## engine.deep_chain
#
# A chain of 1,500 ops is deeper than Python's default recursion limit of 1,000, so a backward
# that recurses once per node fails. The check holds the limit at 1,000: raising it with
# `sys.setrecursionlimit` is refused, and calls may nest only a few hundred levels deep whatever
# the limit. Walk the graph with your own stack (a list you push to and pop from).
# (`%checks test engine.deep_chain`)

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
