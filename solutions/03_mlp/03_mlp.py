# %% [markdown]
# # 03 · An MLP: by hand in NumPy, then nn.Module and the training loop
#
# You build the same small network twice: first in NumPy, where you write every gradient
# yourself, then in PyTorch, where autograd writes them for you; then the SGD optimizer, the
# training loop and the evaluation loop that train it on real handwritten digits.
#
#     x (B, 784) --linear--> (B, 128) --ReLU--> (B, 128) --linear--> logits (B, 10)
#
# Images arrive as (B, 1, 28, 28): the network first flattens each into 784 numbers.
#
# **How to work.** Open `numpy_mlp.py`, `torch_mlp.py` and `training.py` in JupyterLab's editor
# beside this notebook; every `raise NotImplementedError(...)` marks what to write, and its
# message is a hint. Save, then run a cell again: `%autoreload 2` picks up your edit without a
# restart. The last cell, `%checks test`, runs the public checks on this folder in a sandbox
# (nothing your code does can stop the notebook); `%checks test training.SGD` runs one question's.
# `numpy_mlp.py` may not use torch: there, the gradients are yours to write.

# %%
# %load_ext autoreload
# %autoreload 2
# %load_ext checks
import numpy as np
import torch
from torch import nn

import numpy_mlp
import torch_mlp
import training


def yours(function, *args, **kwargs):
    """Your function's answer; while it is still the stub (or raises), say so and go on."""
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        return "not started"
    except Exception as error:  # your code raised: show it, keep the notebook going
        return f"raised {type(error).__name__}: {error}"


rng = np.random.default_rng(0)
X, W, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)

# %% [markdown]
# ## numpy_mlp.linear_forward
#
# A linear layer computes $Y = XW + b$ with `X` of shape (B, d_in), `W` of shape (d_in, d_out)
# and `b` of shape (d_out,): the bias is broadcast over the batch. (`nn.Linear` stores its
# weight the other way round, (d_out, d_in), and computes `X @ weight.T + bias`.)
# Check it alone: `%checks test numpy_mlp.linear_forward`.

# %%
print("torch:", (torch.from_numpy(X) @ torch.from_numpy(W) + torch.from_numpy(b)).shape)
print("yours:", yours(lambda: numpy_mlp.linear_forward(X, W, b).shape))

# %% [markdown]
# ## numpy_mlp.linear_backward
#
# Given `grad_Y` $= \partial L/\partial Y$: `grad_X = grad_Y @ W.T` (like `X`),
# `grad_W = X.T @ grad_Y` (like `W`), and `grad_b = grad_Y.sum(axis=0)`: `b` was added to every
# row, so its gradient collects every row. A gradient always has the shape of what it is the
# gradient of. (`%checks test numpy_mlp.linear_backward`)

# %%
Xt, Wt, bt = (torch.tensor(v, requires_grad=True) for v in (X, W, b))
grad_Y = rng.standard_normal((4, 2))
(Xt @ Wt + bt).backward(torch.from_numpy(grad_Y))
print("torch: grad_b =", bt.grad.numpy())
print("yours: grad_b =", yours(lambda: numpy_mlp.linear_backward(X, W, grad_Y)[2]))

# %% [markdown]
# ## numpy_mlp.softmax_cross_entropy
#
# The mean over the batch of $-\log \mathrm{softmax}(\ell)_y$, and its gradient with respect to the
# logits, $(\mathrm{softmax}(\ell) - \mathrm{onehot}(y)) / B$. Naively, `exp(1000)` is `inf` in
# float64; softmax does not change when you subtract the same number from a row, so subtract the
# row's maximum first. (`%checks test numpy_mlp.softmax_cross_entropy`)

# %%
logits, y = np.array([[1000.0, 0.0, -5.0], [1.0, 2.0, 3.0]]), np.array([0, 2])
print("torch:", nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(y)).item())
print("yours:", yours(lambda: numpy_mlp.softmax_cross_entropy(logits, y)[0]))

# %% [markdown]
# ## numpy_mlp.forward
#
# `forward(params, X)` runs linear, ReLU, linear with `params = {"W1", "b1", "W2", "b2"}` on `X`
# of shape (B, d_in) or (B, 1, 28, 28) (flatten it first), and returns the logits and a `cache`
# of what `backward` will need: the ReLU passes the gradient only where its input was positive,
# so keep the pre-activation or the mask. (`%checks test numpy_mlp.forward`)

# %%
params = {"W1": rng.standard_normal((784, 16)) * 0.05, "b1": np.zeros(16),
          "W2": rng.standard_normal((16, 10)) * 0.05, "b2": np.zeros(10)}
images = rng.random((2, 1, 28, 28))
print("yours: logits shape", yours(lambda: numpy_mlp.forward(params, images)[0].shape))

# %% [markdown]
# ## numpy_mlp.backward
#
# `backward(params, cache, grad_logits)` runs the chain rule back through linear, ReLU, linear
# and returns a dict of gradients with the keys of `params`, each of its parameter's shape.
# (`%checks test numpy_mlp.backward`)

# %%
print("yours: gradient keys", yours(lambda: sorted(numpy_mlp.backward(params, numpy_mlp.forward(params, images)[1],
                                                                        np.ones((2, 10))))))

# %% [markdown]
# ## numpy_mlp.sgd_update
#
# One step of gradient descent, $\theta \leftarrow \theta - \eta\, g$, for every parameter; return a
# new dict and leave `params` as it was. (`%checks test numpy_mlp.sgd_update`)

# %%
print("yours:", yours(numpy_mlp.sgd_update, {"w": np.array([2.0])}, {"w": np.array([1.0])}, 0.5))

# %% [markdown]
# ## torch_mlp.MLP
#
# The same network as an `nn.Module`: two `nn.Linear` children named `fc1` and `fc2`, and a
# `forward` that flattens everything but the batch dimension. Autograd writes the whole backward
# pass. It must work on whatever device the module was moved to. (`%checks test torch_mlp.MLP`)

# %%
reference = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
print("torch:", tuple(reference(torch.rand(2, 1, 28, 28)).shape))
print("yours:", yours(lambda: tuple(torch_mlp.MLP()(torch.rand(2, 1, 28, 28)).shape)))

# %% [markdown]
# ## torch_mlp.count_parameters
#
# A linear layer from $d_\mathrm{in}$ to $d_\mathrm{out}$ has $d_\mathrm{out}(d_\mathrm{in} + 1)$
# learnable parameters: the $+1$ is the bias. Count only parameters with `requires_grad=True`.
# (`%checks test torch_mlp.count_parameters`)

# %%
small = nn.Sequential(nn.Linear(10, 4), nn.Linear(4, 2))
print("torch:", sum(p.numel() for p in small.parameters() if p.requires_grad))
print("yours:", yours(torch_mlp.count_parameters, small))

# %% [markdown]
# ## training.SGD
#
# `SGD(params, lr, momentum=0.0, weight_decay=0.0)` makes the same update as `torch.optim.SGD`
# (no dampening, no Nesterov), without using `torch.optim`: add `weight_decay * p` to the
# gradient, keep a velocity buffer `v = momentum * v + g` (the first step starts it at `g`),
# then `p -= lr * v`, in place and without recording a graph. `zero_grad(set_to_none=True)`
# resets each `.grad`. (`%checks test training.SGD`)

# %%
p = nn.Parameter(torch.tensor([1.0]))
p.grad = torch.tensor([0.5])
torch.optim.SGD([p], lr=0.1).step()
print("torch: 1.0 - 0.1 * 0.5 =", p.item())
q = nn.Parameter(torch.tensor([1.0]))
q.grad = torch.tensor([0.5])
print("yours:", yours(lambda: (training.SGD([q], lr=0.1).step(), q.item())[1]))

# %% [markdown]
# ## training.steps_per_epoch
#
# One optimizer step per batch: `ceil(n / batch_size)` batches, or `n // batch_size` with
# `drop_last=True`, which drops the last, short one. (`%checks test training.steps_per_epoch`)

# %%
print("torch:", len(torch.utils.data.DataLoader(range(1000), batch_size=64)))
print("yours:", yours(training.steps_per_epoch, 1000, 64))

# %% [markdown]
# ## training.train_epoch
#
# One pass over the loader in the canonical order: move the batch to the device, `zero_grad`,
# forward, loss, `backward`, `step`. Return the mean of the batch losses (as Python floats,
# `loss.item()`, so that no graph is kept alive). (`%checks test training.train_epoch`)

# %%
model = nn.Linear(4, 2)
loader = [(torch.rand(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]
print("yours: mean loss", yours(training.train_epoch, model, loader, torch.optim.SGD(model.parameters(), lr=0.1),
                                nn.CrossEntropyLoss(), "cpu"))

# %% [markdown]
# ## training.evaluate
#
# Accuracy in [0, 1]: run the model in eval mode under `torch.no_grad()` (no graph), count the
# right predictions (`argmax` over the logits), and put the model back in the mode it had.
# (`%checks test training.evaluate`)
#
# Once `MLP`, `SGD`, `train_epoch` and `evaluate` work, `python train_digits.py` in a terminal
# trains on scikit-learn's 1,797 handwritten digits (resized to 1×28×28, nothing downloaded): the
# reference reaches 96.9 % test accuracy in 5 epochs.

# %%
model.train()
print("yours: accuracy", yours(training.evaluate, model, loader, "cpu"), "; still in training mode:", model.training)

# %% [markdown]
# ## Quiz
#
# Answer in `quiz.toml` after each `=`, as a number. `%checks test` below says whether each answer
# is there and is a number; whether it is right is marked when graded. Work them out by hand; the
# cells above show how to check them with PyTorch.
#
# - **mlp_params**: learnable parameters of 784 → 128 → 10, both layers with biases.
# - **sgd_theta**: plain SGD with learning rate 0.2: a parameter is 2.0 and its gradient 3.0;
#   what is it after one step?
# - **steps_per_epoch**: a loader over N = 10000 examples, batch size 128, `drop_last=False`:
#   how many optimizer steps in one epoch?
# - **loss_uniform**: a classifier over 10 classes gives every class the same logit; what is its
#   cross-entropy loss on one example, to 3 significant digits? (`checks test` shows how close each
#   answer must be.)

# %% [markdown]
# ## Everything at once
#
# A row per question and quiz answer, then the first failures of each failing question.
# `checks test 03_mlp` in a terminal prints the same; `checks pack 03_mlp` writes the zip you upload.

# %%
# %checks test
