"""Grader-side helpers for the 03_mlp suite: devices, tolerances, reference models, readable
feedback. Nothing here runs in the sandbox; every expected value is computed by PyTorch."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from checks.suite import fail, grading_devices, public_module

# The likely mistakes: one table, read by the public checks too (assignments/03_mlp/tests/diagnoses.py).
diagnoses = public_module(__file__, "diagnoses")
diagnosis = diagnoses.diagnosis

torch.backends.cuda.matmul.allow_tf32 = False  # references in full float32 precision
torch.backends.cudnn.allow_tf32 = False

# Every device the grading machine offers (checks.suite.grading_devices): cpu always, cuda where
# present (and not turned off with `checks grade --device cpu`), else meta, which holds no values
# but fails on a tensor created on the wrong device in the student's forward. Either way two
# devices run, so CPU and GPU machines grade the same number of cases.
DEVICES = [pytest.param(d, marks=pytest.mark.cuda) if d == "cuda" else d for d in grading_devices()]
# devices that hold values (training and evaluation need real numbers)
VALUE_DEVICES = [d for d in DEVICES if d != "meta"]

# What a suite module computes when it is imported is computed once per batch, before the grading
# processes fork (the session's collection), but a reference that calls backward() may run there
# only where torch sees no GPU (asked of NVML, which initialises nothing): the first backward() in
# a process counts the GPUs, which initialises the CUDA driver, and starts one autograd thread
# per GPU, after which every process forked from it fails on backward() ("Unable to handle
# autograd's threading in combination with fork-based multiprocessing").
BACKWARD_BEFORE_FORK = not torch.cuda.is_available()


def precomputed(compute, keys, *, backward):
    """A lookup(*key) of compute(*key), a PyTorch reference. The keys' values are computed now,
    once for every submission of a batch; a `backward` reference's only where no GPU is present
    (BACKWARD_BEFORE_FORK), else in the grading process, when first asked."""
    values = {key: compute(*key) for key in keys} if BACKWARD_BEFORE_FORK or not backward else {}

    def lookup(*key):
        if key not in values:
            values[key] = compute(*key)
        return values[key]
    return lookup


def per_device(compute, keys, *, backward):
    """A lookup(*key, device=...) of compute(*key, device=...): the CPU's values precomputed as
    precomputed() does; another device's (cuda) computed in the grading process, when first
    asked, as CUDA must not be touched before it forks."""
    on_cpu = precomputed(lambda *key: compute(*key, device="cpu"), keys, backward=backward)
    elsewhere = precomputed(lambda device, *key: compute(*key, device=device), (), backward=backward)

    def lookup(*key, device):
        return on_cpu(*key) if device == "cpu" else elsewhere(device, *key)
    return lookup


def grid(*axes):
    """(argnames, rows) for @cases from axes given as ("names", values), as stacked parametrize
    decorators would give them: every combination, the FIRST axis varying slowest (the order of
    decorators read from the function upwards). A value of an axis with several names is a tuple."""
    names = [name.strip() for spec, _ in axes for name in spec.split(",")]
    rows = []
    for combination in itertools.product(*(values for _, values in axes)):
        row = []
        for (spec, _), value in zip(axes, combination):
            row.extend(value if "," in spec else (value,))
        rows.append(tuple(row))
    return names, rows


# (rtol, atol) per (device type, dtype)
TOLERANCES = {
    ("cpu", "float32"): (1e-5, 1e-6),
    ("cpu", "float64"): (1e-10, 1e-12),
    ("cuda", "float32"): (1e-4, 1e-5),
    ("cuda", "float64"): (1e-9, 1e-11),
}


def tolerance(device, dtype_name):
    return TOLERANCES[(torch.device(device).type, dtype_name)]


def number(got, what):
    """A Python float from a returned number (int, float, NumPy scalar or size-1 array)."""
    if isinstance(got, bool) or got is None:
        fail(f"{what}: got {got!r}; expected a number.")
    if isinstance(got, (int, float, np.generic)):
        return float(got)
    if isinstance(got, np.ndarray) and got.size == 1 and got.dtype.kind in "iuf":
        return float(got.reshape(()))
    shape = f" of shape {tuple(got.shape)}" if hasattr(got, "shape") else ""
    fail(f"{what}: got a {type(got).__name__}{shape}; expected a single number.")
    raise AssertionError  # unreachable


class RefMLP(nn.Module):
    """The reference network: fc1 -> ReLU -> fc2."""

    def __init__(self, d_in=784, d_hidden=128, d_out=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


def mlp_state(sizes, seed):
    """A state_dict (NumPy float64 arrays) for an MLP of these sizes, drawn by PyTorch."""
    torch.manual_seed(seed)
    model = RefMLP(*sizes).double()
    return {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}


def load_ref(cls, sizes, state, device, dtype):
    model = cls(*sizes).to(dtype=dtype)
    model.load_state_dict({k: torch.tensor(v, dtype=dtype) for k, v in state.items()})
    return model.to(device)


