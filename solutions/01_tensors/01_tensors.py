# %% [markdown]
# # 01 · Tensors: strides and broadcasting
#
# A tensor is a block of memory plus a way of reading it: a **shape** (the logical sizes) and
# **strides** (how many *elements* to step in memory to move one place along each dimension).
# `view`, `transpose`, `permute`, `expand` and most slices make a new tensor that shares the
# memory and only changes the strides: no copy, no allocation. In this assignment you write
# that bookkeeping yourself, in `strides.py` and `broadcasting.py`, and check it against PyTorch.
#
# **How to work.** Open `strides.py` and `broadcasting.py` in JupyterLab's editor beside this
# notebook. Every `raise NotImplementedError(...)` marks what you write; its message is a hint.
# Save the file and run the cell again: the notebook picks up your edit without a restart
# (`%autoreload 2` below). `%checks test` (the last cell) runs the course's public checks on
# this folder, and `%checks test strides.offset`, say, one question's: in a sandbox, so nothing
# your code does can stop this notebook. The hidden suite that grades you has many more cases.

# %%
# %load_ext autoreload
# %autoreload 2
# %load_ext checks
import numpy as np
import torch

import broadcasting
import strides


def yours(function, *args, **kwargs):
    """Your function's answer; while it is still the stub (or raises), say so and go on."""
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        return "not started"
    except Exception as error:  # your code raised: show it, keep the notebook going
        return f"raised {type(error).__name__}: {error}"


# %% [markdown]
# ## strides.numel: how many elements
#
# A shape is a tuple of sizes; the tensor holds their product. The empty shape `()` is a
# scalar, one element (the empty product is 1), and any size 0 makes the tensor empty.
#
# Check this question alone: `%checks test strides.numel` in a cell of its own.


# %%
print("torch:", torch.empty(2, 3, 4).numel(), torch.empty(()).numel(), torch.empty(2, 0).numel())
print("yours:", yours(strides.numel, (2, 3, 4)), yours(strides.numel, ()), yours(strides.numel, (2, 0)))

# %% [markdown]
# ## strides.contiguous_strides: row-major layout
#
# A fresh tensor is laid out row-major: the last dimension is adjacent in memory (stride 1),
# and each earlier stride is the product of all the sizes after it, $s_k = \prod_{j>k} d_j$.
# A contiguous (2, 3) tensor has strides (3, 1). PyTorch counts strides in elements, where
# NumPy counts bytes. A size-0 dimension counts as 1 when multiplying.
#
# Check this question alone: `%checks test strides.contiguous_strides` in a cell of its own.


# %%
print("torch:", torch.empty(2, 3).stride(), torch.empty(4, 1, 5).stride(), torch.empty(2, 0, 3).stride())
print("yours:", yours(strides.contiguous_strides, (2, 3)), yours(strides.contiguous_strides, (4, 1, 5)),
      yours(strides.contiguous_strides, (2, 0, 3)))
print("numpy counts bytes:", np.empty((2, 3), dtype=np.float32).strides)

# %% [markdown]
# ## strides.offset: where an element lives
#
# The memory address of element $(i_0, \dots, i_{n-1})$ is a dot product of the index with the
# strides, plus where the view starts: `storage_offset + sum(i_k * s_k)`. In a contiguous
# (2, 3) tensor, element (1, 2) is at 1·3 + 2·1 = 5.
#
# Check this question alone: `%checks test strides.offset` in a cell of its own.


# %%
t = torch.arange(6).view(2, 3)
print("torch: t[1, 2] =", t[1, 2].item(), "(storage element 5); t[1:, 1:] starts at", t[1:, 1:].storage_offset())
print("yours:", yours(strides.offset, (1, 2), (3, 1)), yours(strides.offset, (0, 0), (3, 1), 4))

# %% [markdown]
# ## strides.unravel: from a flat number back to an index
#
# The inverse question: which index is element number `flat` in row-major order? Divide by the
# sizes from the last dimension backwards. A flat number past the end is a `ValueError`.
#
# Check this question alone: `%checks test strides.unravel` in a cell of its own.


# %%
print("torch:", tuple(int(i) for i in torch.unravel_index(torch.tensor(5), (2, 3))))
print("yours:", yours(strides.unravel, 5, (2, 3)), yours(strides.unravel, 6, (2, 3)))

# %% [markdown]
# ## strides.transpose: swap two dimensions, move no data
#
# `t.transpose(0, 1)` swaps two sizes and the two strides with them. The memory does not move,
# so the result is no longer row-major. Dimensions may be negative, Python-style.
#
# Check this question alone: `%checks test strides.transpose` in a cell of its own.


# %%
t = torch.empty(2, 3)
print("torch:", tuple(t.transpose(0, 1).shape), t.transpose(0, 1).stride())
print("yours:", yours(strides.transpose, (2, 3), (3, 1), 0, 1))

# %% [markdown]
# ## strides.permute: any reordering of the dimensions
#
# `permute(dims)` reorders all the dimensions at once; `dims` must name each dimension exactly
# once (otherwise `ValueError`). An image batch (N, C, H, W) becomes (N, H, W, C) this way.
#
# Check this question alone: `%checks test strides.permute` in a cell of its own.


# %%
t = torch.empty(2, 3, 4)
print("torch:", tuple(t.permute(2, 0, 1).shape), t.permute(2, 0, 1).stride())
print("yours:", yours(strides.permute, (2, 3, 4), (12, 4, 1), (2, 0, 1)))

# %% [markdown]
# ## strides.is_contiguous: is this layout row-major?
#
# A layout is contiguous when its strides are the row-major ones for its shape. A dimension of
# size 1 never changes an address, so its stride does not matter; an empty tensor is contiguous.
#
# Check this question alone: `%checks test strides.is_contiguous` in a cell of its own.


# %%
t = torch.empty(2, 3)
print("torch:", t.is_contiguous(), t.t().is_contiguous(), torch.empty(1, 3).as_strided((1, 3), (99, 1)).is_contiguous())
print("yours:", yours(strides.is_contiguous, (2, 3), (3, 1)), yours(strides.is_contiguous, (3, 2), (1, 3)),
      yours(strides.is_contiguous, (1, 3), (99, 1)))

# %% [markdown]
# ## strides.view: a new shape on the same memory
#
# `view` never copies: it only works when the new shape can be read from the existing strides.
# A transposed tensor usually cannot be viewed flat (call `.contiguous()` first, or use
# `reshape`, which copies when it must). One size may be `-1`, inferred from the element count.
# Where PyTorch refuses, your function raises `ValueError`.
#
# Check this question alone: `%checks test strides.view` in a cell of its own.


# %%
t = torch.empty(2, 3, 4)
print("torch:", t.view(6, -1).stride())
try:
    t.transpose(0, 1).view(-1)
except RuntimeError as refusal:
    print("torch refuses:", str(refusal).split(".")[0])
print("yours:", yours(strides.view, (2, 3, 4), (12, 4, 1), (6, -1)), yours(strides.view, (3, 2, 4), (4, 12, 1), (-1,)))

# %% [markdown]
# ## strides.gather: read a strided view out of flat storage
#
# Put it together: given a 1-D storage, a shape, strides and an offset, build the array the view
# shows, as `torch.as_strided` does. A stride of 0 repeats an element without copying it.
#
# Check this question alone: `%checks test strides.gather` in a cell of its own.


# %%
storage = np.arange(10.0)
print("torch:", torch.as_strided(torch.from_numpy(storage), (2, 3), (1, 2), 1).numpy().tolist())
print("yours:", yours(strides.gather, storage, (2, 3), (1, 2), 1))

# %% [markdown]
# ## broadcasting.broadcast_shape: the align-right rule
#
# Shapes of different lengths combine by aligning them from the right. A pair of sizes is
# compatible when they are equal or one is 1; the result takes the larger. (64, 1) with (768,)
# gives (64, 768); (3,) with (4,) is an error. Get it wrong in real code and you get a silent
# outer-product-shaped bug, not a crash.
#
# Check this question alone: `%checks test broadcasting.broadcast_shape` in a cell of its own.


# %%
print("torch:", tuple(torch.broadcast_shapes((64, 1), (768,))), tuple(torch.broadcast_shapes((2, 1, 3), (4, 1))))
print("yours:", yours(broadcasting.broadcast_shape, (64, 1), (768,)), yours(broadcasting.broadcast_shape, (3,), (4,)))

# %% [markdown]
# ## broadcasting.broadcast_strides: stretching costs no memory
#
# `expand` stretches a size-1 dimension by giving it stride 0: every step along it reads the
# same element. New leading dimensions get stride 0 too.
#
# Check this question alone: `%checks test broadcasting.broadcast_strides` in a cell of its own.


# %%
t = torch.empty(3, 1)
print("torch:", t.expand(2, 3, 4).stride())
print("yours:", yours(broadcasting.broadcast_strides, (3, 1), (1, 1), (2, 3, 4)))

# %% [markdown]
# ## broadcasting.broadcast_index: which input element feeds an output element
#
# Element `out_index` of the broadcast result reads the input at the same index, right-aligned,
# with 0 wherever the input's size is 1 (and the extra leading dimensions dropped).
#
# Check this question alone: `%checks test broadcasting.broadcast_index` in a cell of its own.


# %%
a = torch.arange(3).view(3, 1)
out = a.expand(2, 3, 4)
print("torch: out[1, 2, 3] =", out[1, 2, 3].item(), "= a[2, 0]")
print("yours:", yours(broadcasting.broadcast_index, (1, 2, 3), (2, 3, 4), (3, 1)))

# %% [markdown]
# ## Quiz
#
# Open `quiz.toml` and put each answer after the `=` as a plain number, for example
# `broadcast_numel = 12`. Keep the key names; the file is read, never run. The check below
# says whether your answer is there and is a number; whether it is right is marked only when
# you are graded.
#
# **broadcast_numel**: you add a tensor of shape (1, 3) to one of shape (2, 1). The result has
# shape (R, C): how many elements, R × C, does it hold? Work it out with the align-right rule,
# then check it with `torch.broadcast_shapes` if you like.
#
# Check this question alone: `%checks test quiz.broadcast_numel` in a cell of its own.


# %% [markdown]
# ## Everything at once
#
# The whole table: a row per question and quiz answer, then the first failures of each failing
# question. `checks test 01_tensors` in a terminal prints the same. When you are done,
# `checks pack 01_tensors` writes the zip you upload.

# %%
# %checks test
