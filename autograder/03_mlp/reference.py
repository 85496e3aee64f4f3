"""Grader-side helpers for the 03_mlp suite: devices, tolerances, reference models, readable
feedback. Nothing here runs in the sandbox; every expected value is computed by PyTorch."""

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


