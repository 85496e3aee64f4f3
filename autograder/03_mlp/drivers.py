"""Sandbox drivers for torch_mlp.py and training.py.

Models, optimizers and loaders cannot cross the sandbox boundary, so these functions build them
inside the sandbox from plain data (sizes, state_dicts as NumPy arrays, seeds), call the
student's code and return plain data: numbers, strings, lists and dicts of NumPy arrays.

The grader imports this module too: the builders here (`make_loader`, `counting_model`,
`sgd_loss`, `Probe`) are shared with the references, so both sides see identical models and
batches. Student modules are imported inside the drivers only, never at module level.
"""

from collections import OrderedDict

import numpy as np
import torch
from torch import nn


def _tf32_off():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def _tensors(state, dtype=None):
    return {key: torch.tensor(np.asarray(value), dtype=dtype) for key, value in state.items()}


def _array(tensor):
    return tensor.detach().cpu().numpy().copy()


def make_loader(X, Y, batch_size, shuffle_seed=None):
    """A DataLoader over (X, Y); shuffled by its own seeded generator when shuffle_seed is given."""
    dataset = torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y))
    if shuffle_seed is None:
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)
    generator = torch.Generator().manual_seed(shuffle_seed)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator)


# ------------------------------------------------------------------------ torch_mlp.MLP

def mlp_structure(sizes):
    """Build MLP(*sizes) (MLP() when sizes is None) and describe its children and state_dict."""
    import torch_mlp

    model = torch_mlp.MLP() if sizes is None else torch_mlp.MLP(*sizes)
    if not isinstance(model, nn.Module):
        raise TypeError(f"MLP(...) built a {type(model).__name__}, not an nn.Module")
    return {
        "children": {name: type(child).__name__ for name, child in model.named_children()},
        "linear": {name: isinstance(child, nn.Linear) for name, child in model.named_children()},
        "state": {key: tuple(value.shape) for key, value in model.state_dict().items()},
    }


def mlp_forward_backward(sizes, state, x, grad_out, device, dtype_name):
    """MLP(*sizes) with `state` loaded, moved to (device, dtype); forward x, backward grad_out.

    On the meta device (no values) only the output's shape, dtype and device come back.
    """
    import torch_mlp

    _tf32_off()
    dtype = getattr(torch, dtype_name)
    model = torch_mlp.MLP(*sizes).to(dtype=dtype)
    try:
        model.load_state_dict(_tensors(state, dtype))
    except RuntimeError as error:
        raise RuntimeError(f"the reference state_dict does not load into your MLP "
                           f"(it has fc1.weight, fc1.bias, fc2.weight, fc2.bias): {error}") from None
    model.to(device)
    xt = torch.tensor(x, dtype=dtype, device=device, requires_grad=True)
    out = model(xt)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"forward returned a {type(out).__name__}, not a tensor")
    info = {"shape": tuple(out.shape), "dtype": str(out.dtype), "device": str(out.device)}
    if torch.device(device).type == "meta":
        return info
    (out * torch.tensor(grad_out, dtype=dtype, device=device)).sum().backward()
    info["out"] = _array(out)
    info["grad_x"] = None if xt.grad is None else _array(xt.grad)
    info["grads"] = {name: None if p.grad is None else _array(p.grad)
                     for name, p in model.named_parameters()}
    return info


# ------------------------------------------------------------------------ count_parameters

def counting_model(spec):
    """A model for count_parameters, built the same way in the sandbox and in the grader.

    spec: {"layers": [(d_in, d_out, bias), ...], "batchnorm": bool, "tied": bool,
           "freeze": [parameter names]}
    """
    # CPU's generator alone: torch.manual_seed also seeds (or queues a seed for) every accelerator,
    # formatting the caller's stack each time, which cost more than building the model
    torch.default_generator.manual_seed(0)
    modules = []
    for i, (d_in, d_out, bias) in enumerate(spec["layers"]):
        if i:
            modules.append(nn.ReLU())
        modules.append(nn.Linear(d_in, d_out, bias=bias))
    if spec.get("batchnorm"):
        modules.append(nn.BatchNorm1d(spec["layers"][-1][1]))
    if spec.get("tied"):
        modules += [nn.ReLU(), modules[-1]]  # the same layer twice: one set of parameters
    model = nn.Sequential(*modules)
    for name, p in model.named_parameters():
        if name in spec.get("freeze", ()):
            p.requires_grad_(False)
    return model


def count_parameters_of(spec):
    import torch_mlp

    return torch_mlp.count_parameters(counting_model(spec))


# ------------------------------------------------------------------------ training.SGD

# torch.optim is off limits for training.SGD. The verdict comes from behaviour, not from a guard
# in this process (which student code could switch off): the SGD checks hand training.SGD
# parameters that are not leaves of the autograd graph (clones of the leaves, whose .grad the
# driver sets from torch.autograd.grad, as backward would on a leaf). The update the curriculum
# asks for works on them as on leaves; every torch.optim optimizer refuses them ("can't optimize a
# non-leaf Tensor"), so an SGD that hands them to torch.optim fails every case, whatever it did
# to the patches below; one that makes them retain their grad (which torch.optim accepts) is
# seen by the grader in what comes back ("leaves"). Those patches stay, for a clear message only: before the student's code
# runs, the driver
#   1. refuses an SGD class that IS or inherits from torch.optim.Optimizer (an alias or subclass);
#   2. replaces Optimizer.__init__ on the class object and the module-level kernels of
#      torch.optim.sgd (_single_tensor_sgd, _multi_tensor_sgd, _fused_sgd), each recording its use.
_TORCH_OPTIM_USED = []


class TorchOptimForbidden(RuntimeError):
    pass


def _forbid_torch_optim(student_class):
    import importlib

    sgd_module = importlib.import_module("torch.optim.sgd")  # torch.optim deletes its `sgd` attribute
    if isinstance(student_class, type) and issubclass(student_class, torch.optim.Optimizer):
        raise TypeError("training.SGD is (or inherits from) torch.optim's optimizer: "
                        "write the update yourself, without torch.optim")
    if getattr(torch.optim.Optimizer.__init__, "_checks_forbidden", False):
        return

    def forbid(what):
        def blocked(*args, **kwargs):
            _TORCH_OPTIM_USED.append(what)
            raise TorchOptimForbidden(f"{what} was used: training.SGD must not use torch.optim")

        blocked._checks_forbidden = True
        return blocked

    for name in ("_single_tensor_sgd", "_multi_tensor_sgd", "_fused_sgd"):
        if hasattr(sgd_module, name):
            setattr(sgd_module, name, forbid(f"torch.optim.sgd.{name}"))
    torch.optim.Optimizer.__init__ = forbid("torch.optim.Optimizer")  # last: it marks the job done


def sgd_loss(params, targets):
    """The loss whose gradients drive the SGD checks: sum of 0.5 * ||p - t||^2 (grad = p - t)."""
    return sum(0.5 * ((p - torch.tensor(t, dtype=p.dtype)) ** 2).sum() for p, t in zip(params, targets))


def _no_torch_optim(run):
    """Report a use of torch.optim even when the student's code swallowed our exception."""
    def wrapped(*args, **kwargs):
        try:
            return run(*args, **kwargs)
        except TorchOptimForbidden:
            raise
        except Exception as error:
            if _TORCH_OPTIM_USED:
                raise RuntimeError(f"training.SGD used {_TORCH_OPTIM_USED[0]}, which is off limits "
                                   f"(then: {type(error).__name__}: {error})") from None
            raise
    wrapped.__name__ = run.__name__
    wrapped.__doc__ = run.__doc__
    return wrapped


def sgd_run(init, targets, lr, momentum, weight_decay, set_to_none, as_generator=False, idle=(), accumulate=False):
    """Run the canonical loop with the student's SGD for len(targets) steps.

    init: list of arrays (the parameters); targets[k]: arrays for step k; `idle` lists the
    indices of parameters left out of the loss (their .grad stays None); `accumulate`: zero_grad
    only before every other backward, so the odd steps see .grad as the previous step left it.
    Returns the parameters after every step and any use of torch.optim: evidence only. Whether
    step() changed .grad in place is judged in the grader, from the trajectory of an accumulating
    loop (behaviour), never by a comparison made here that student code could replace.
    """
    import training

    _forbid_torch_optim(training.SGD)
    return _no_torch_optim(_sgd_run)(training, init, targets, lr, momentum, weight_decay, set_to_none,
                                     as_generator, idle, accumulate)


def non_leaf_params(init):
    """Parameters for training.SGD that torch.optim refuses: clones (not leaves) of float64 leaves."""
    return [torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=True).clone() for a in init]


def backward_into(loss, params):
    """What loss.backward() does to leaves' .grad, done to `params` (non-leaves): set, or added in
    place to the gradient already there."""
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, g in zip(params, grads):
            if p.grad is None:
                p.grad = g
            else:
                p.grad.add_(g)


def _sgd_run(training, init, targets, lr, momentum, weight_decay, set_to_none, as_generator, idle, accumulate):
    params = non_leaf_params(init)
    trained = [p for i, p in enumerate(params) if i not in idle]
    optimizer = training.SGD((p for p in params) if as_generator else params, lr=lr,
                             momentum=momentum, weight_decay=weight_decay)
    trajectory = []
    for k, step_targets in enumerate(targets):
        if not (accumulate and k % 2):
            optimizer.zero_grad(set_to_none=set_to_none)
        backward_into(sgd_loss(trained, [t for i, t in enumerate(step_targets) if i not in idle]), trained)
        optimizer.step()
        trajectory.append([_array(p) for p in params])
    return {"trajectory": trajectory, "torch_optim": list(_TORCH_OPTIM_USED),
            "leaves": [bool(p.is_leaf or p.retains_grad) for p in params]}


def sgd_zero_grad(init, set_to_none):
    """Give every parameter a gradient, then call zero_grad (default argument when set_to_none
    is None). Returns each .grad afterwards (None or an array)."""
    import training

    _forbid_torch_optim(training.SGD)
    return _no_torch_optim(_sgd_zero_grad)(training, init, set_to_none)


def _sgd_zero_grad(training, init, set_to_none):
    params = non_leaf_params(init)
    optimizer = training.SGD(params, lr=0.1)
    backward_into(sum(((p + 1.0) ** 3).sum() for p in params), params)
    if set_to_none is None:
        optimizer.zero_grad()
    else:
        optimizer.zero_grad(set_to_none=set_to_none)
    return {"grads": [None if p.grad is None else _array(p.grad) for p in params],
            "torch_optim": list(_TORCH_OPTIM_USED), "leaves": [bool(p.is_leaf or p.retains_grad) for p in params]}


# ------------------------------------------------------------------------ training.train_epoch

class _RecordingSGD(torch.optim.SGD):
    """torch.optim.SGD itself (a real torch.optim.Optimizer, as the curriculum says train_epoch is
    handed: code that checks isinstance(optimizer, torch.optim.Optimizer) sees one) that also logs
    its zero_grad/step calls and the parameters after every step."""

    def __init__(self, params, model, events, **options):
        super().__init__(params, **options)
        self.recorded_model = model
        self.events = events
        self.snapshots = []

    def zero_grad(self, set_to_none=True):
        self.events.append("zero_grad")
        super().zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        self.events.append("step")
        result = super().step(closure)
        self.snapshots.append({k: _array(v) for k, v in self.recorded_model.state_dict().items()})
        return result


class _RecordingLoss(nn.Module):
    def __init__(self, events):
        super().__init__()
        self.events = events
        self.inner = nn.CrossEntropyLoss()

    def forward(self, logits, target):
        self.events.append("loss")
        loss = self.inner(logits, target)
        if loss.requires_grad:
            loss.register_hook(lambda grad: self.events.append("backward"))
        return loss


def course_mlp(d_in, d_hidden, d_out):
    """The network train_epoch is trained on: flatten, fc1, ReLU, fc2, made of torch's own modules
    (the parameters named as the course's MLP names them). Never the student's torch_mlp.py (a
    mistake there would cost train_epoch too) nor the reference (its code would be in the sandbox)."""
    return nn.Sequential(OrderedDict(flatten=nn.Flatten(), fc1=nn.Linear(d_in, d_hidden), relu=nn.ReLU(),
                                     fc2=nn.Linear(d_hidden, d_out)))


def train_epoch_run(sizes, state, X, Y, batch_size, shuffle_seed, lr, momentum, device):
    """training.train_epoch on course_mlp with a torch.optim.SGD that records its calls.

    Returns what train_epoch returned, the parameters after every optimizer step, and the order
    of events (zero_grad, forward:<device>, loss, backward, step) for the feedback.
    """
    import training

    _tf32_off()
    model = course_mlp(*sizes)
    model.load_state_dict(_tensors(state, torch.float32))
    model.to(device)
    events = []
    model.register_forward_pre_hook(lambda module, inputs: events.append(f"forward:{inputs[0].device.type}"))
    optimizer = _RecordingSGD(model.parameters(), model, events, lr=lr, momentum=momentum)
    loader = make_loader(X, Y, batch_size, shuffle_seed)
    returned = training.train_epoch(model, loader, optimizer, _RecordingLoss(events), torch.device(device))
    if isinstance(returned, torch.Tensor):
        returned = {"tensor": _array(returned), "requires_grad": returned.requires_grad}
    return {"returned": returned, "snapshots": optimizer.snapshots, "events": events}


# ------------------------------------------------------------------------ training.evaluate

class Probe(nn.Module):
    """A small classifier with dropout that records the mode and grad mode of every forward.

    The record is for the feedback's words only: it lives in an object student code is handed.
    With `trap`, the verdict comes from behaviour instead: in train mode the probe's logits are
    negated (every prediction changes, so the accuracy shows the mode), and each forward adds
    to a leaf tensor that requires grad in place, which torch's autograd refuses, in C, unless
    gradients are off (no_grad or inference_mode): a graph-building evaluation raises.
    """

    def __init__(self, d_in, d_hidden, d_out, trap=False):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(d_hidden, d_out)
        self.calls = []
        self.trap = trap
        self.seen = torch.zeros((), requires_grad=True) if trap else None  # not in the state_dict

    def forward(self, x):
        self.calls.append({"training": self.training, "grad": torch.is_grad_enabled(),
                           "device": x.device.type})
        out = self.fc2(self.drop(torch.relu(self.fc1(x))))
        if self.trap:
            self.seen.add_(1.0)  # RuntimeError while gradients are enabled: the graph it would build
            if self.training:
                out = -out
        return out


GRAD_TRAP = "a leaf Variable that requires grad is being used in an in-place operation"


def evaluate_run(sizes, state, X, Y, batch_size, start_training, device, trap=False):
    """training.evaluate on a Probe in the given mode; reports accuracy and what the probe saw."""
    import training

    _tf32_off()
    model = Probe(*sizes, trap=trap)
    model.load_state_dict(_tensors(state, torch.float32))
    model.to(device)
    model.train(start_training)
    returned = training.evaluate(model, make_loader(X, Y, batch_size), torch.device(device))
    if isinstance(returned, torch.Tensor):
        returned = {"tensor": _array(returned)}
    return {"returned": returned, "calls": model.calls, "training_after": model.training,
            "layers_training_after": [module.training for module in model.modules() if module is not model]}
