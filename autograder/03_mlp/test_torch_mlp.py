"""Hidden checks for torch_mlp.py: the module's structure, its forward and backward against a
reference nn.Module loaded with the same state_dict on every device, and count_parameters.

PyTorch's answers are computed when the suite is collected, once for every submission of a batch
(@cases(reference=...), per_device), but on a cuda device, which is used at run time only, and
the gradients where a GPU is present (see checks.suite.precomputed).
Each case of a @cases test makes one call in the sandbox, so each test sends its cases' calls at once
(send_ahead): they run in the same order as one by one."""

import pytest
import torch

import drivers
from checks.suite import (call_or_fail, case_rng, cases, covers, expect_close, expect_equal, fail, name_call, per_device,
                          question)
from reference import DEVICES, RefMLP, diagnoses, diagnosis, load_ref, mlp_state, tolerance


# ------------------------------------------------------------------------ structure

def _state_shapes(sizes):
    """The shapes in the reference MLP's state_dict."""
    reference = RefMLP() if sizes is None else RefMLP(*sizes)
    return {key: tuple(value.shape) for key, value in reference.state_dict().items()}


@question("torch_mlp.MLP", points=3)
@cases("sizes", [None, (20, 7, 3), (5, 3, 2)], ids=["default", "20-7-3", "5-3-2"], reference=_state_shapes,
       send_ahead=True)
def test_mlp_structure(student, sizes, reference):
    expected_state = reference
    call = "MLP()" if sizes is None else f"MLP{sizes}"
    got = call_or_fail(lambda: student.run(drivers.mlp_structure, sizes), text=call)
    for name in ("fc1", "fc2"):
        if name not in got["children"]:
            fail(f"{call} has children {sorted(got['children']) or 'none'}; expected two nn.Linear "
                 "children named fc1 and fc2 (self.fc1 = nn.Linear(...)).")
        if not got["linear"][name]:
            fail(f"{call}.{name} is a {got['children'][name]}; expected an nn.Linear.")
    if sorted(got["state"]) != sorted(expected_state):
        fail(f"{call}.state_dict() has keys {sorted(got['state'])}; expected {sorted(expected_state)}.")
    for key, shape in expected_state.items():
        if tuple(got["state"][key]) != shape:
            hint = diagnosis("torch_mlp.MLP", part="state_shape", expected_shape=shape)(tuple(got["state"][key]))
            fail(f"{call}.state_dict()[{key!r}] has shape {tuple(got['state'][key])}; expected {shape}."
                 + (f" Likely mistake: {hint}." if hint else ""))


# ------------------------------------------------------------------------ forward and backward

INPUTS = {
    # name: (sizes, batch, input shape after the batch dim)
    "flat": ((20, 7, 3), 5, (20,)),
    "image": ((784, 32, 10), 4, (1, 28, 28)),
    "one": ((6, 4, 2), 1, (6,)),  # a batch of 1: a squeeze drops the batch dimension with it
}
DTYPE_NAMES = ["float32", "float64"]


def _draw(sizes, batch, shape):
    """The state_dict, the input x and the gradient grad_out of the output for one input form."""
    rng = case_rng(12, batch, *shape)
    x = rng.uniform(-1.0, 1.0, size=(batch, *shape))
    return mlp_state(sizes, seed=11), x, rng.normal(size=(batch, sizes[2]))


DRAWN = {form: _draw(*spec) for form, spec in INPUTS.items()}


def _forward_backward(form, dtype_name, device):
    """The reference MLP's output, x's gradient and every parameter's, for (out * grad_out).sum()."""
    sizes = INPUTS[form][0]
    state, x, grad_out = DRAWN[form]
    dtype = getattr(torch, dtype_name)
    reference = load_ref(RefMLP, sizes, state, device, dtype)
    xt = torch.tensor(x, dtype=dtype, device=device, requires_grad=True)
    out = reference(xt)
    (out * torch.tensor(grad_out, dtype=dtype, device=device)).sum().backward()
    return {"out": out.detach().cpu().numpy(), "grad_x": xt.grad.cpu().numpy(),
            "grads": {name: p.grad.cpu().numpy() for name, p in reference.named_parameters()}}


FORWARD_BACKWARD = per_device(_forward_backward, [(form, dtype_name) for form in INPUTS for dtype_name in DTYPE_NAMES],
                              backward=True)


@question("torch_mlp.MLP", points=9, kinks=("batch of 1", "image input (B, 1, 28, 28)", "float64 model"))
@covers({"batch of 1": lambda form, **_: INPUTS[form][1] == 1,
         "image input (B, 1, 28, 28)": lambda form, **_: len(INPUTS[form][2]) == 3,
         "float64 model": lambda dtype_name, **_: dtype_name == "float64",
         "a second device (meta or cuda)": lambda device, **_: device != "cpu"})
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("form", sorted(INPUTS))
def test_mlp_forward_backward(student, device, dtype_name, form):
    sizes, batch, shape = INPUTS[form]
    state, x, grad_out = DRAWN[form]
    dtype = getattr(torch, dtype_name)
    call = f"MLP{sizes} loaded with a state_dict, .to({device!r}, torch.{dtype_name}), forward on x of shape {x.shape}"

    got = call_or_fail(lambda: student.run(drivers.mlp_forward_backward, sizes, state, x, grad_out, device, dtype_name),
                       text=call, mistake=diagnoses.raised_hint("torch_mlp.MLP", device=device, dtype_name=dtype_name,
                                                                d_in=sizes[0]))

    expected_shape = (batch, sizes[2])
    if tuple(got["shape"]) != expected_shape:
        fail(f"{call}: the output has shape {tuple(got['shape'])}; expected {expected_shape} "
             "(flatten everything but the batch dimension: torch.flatten(x, 1)).")
    if torch.device(got["device"]).type != torch.device(device).type:
        fail(f"{call}: the output is on {got['device']}; expected {device} (the model's device).")
    if got["dtype"] != str(dtype):
        fail(f"{call}: the output has dtype {got['dtype']}; expected {dtype} (the model's dtype).")
    if device == "meta":
        return

    rtol, atol = tolerance(device, dtype_name)
    expected = FORWARD_BACKWARD(form, dtype_name, device=device)

    expect_close(got["out"], expected["out"], rtol=rtol, atol=atol, what="logits",
                 diagnose=diagnosis("torch_mlp.MLP", part="out", state=state, x=x))
    name_call(f"{call}, then backward of (out * g).sum(): the gradient w.r.t. x")
    expect_close(got["grad_x"], expected["grad_x"], rtol=rtol, atol=atol, what="entries of x.grad")
    for name, grad in expected["grads"].items():
        name_call(f"{call}, then backward of (out * g).sum(): {name}.grad")
        if name not in got["grads"]:
            fail(f"{call}: the model has no parameter {name}.")
        expect_close(got["grads"][name], grad, rtol=rtol, atol=atol, what=f"entries of {name}.grad")


# ------------------------------------------------------------------------ count_parameters

COUNT_SPECS = {
    "mlp": {"layers": [(784, 128, True), (128, 10, True)]},
    "fc1_frozen": {"layers": [(784, 128, True), (128, 10, True)], "freeze": ["0.weight", "0.bias"]},
    "bias_frozen": {"layers": [(30, 20, True), (20, 5, True)], "freeze": ["2.bias"]},
    "no_bias": {"layers": [(12, 8, False), (8, 4, True), (4, 2, False)], "freeze": ["2.weight"]},
    "batchnorm": {"layers": [(16, 8, True)], "batchnorm": True, "freeze": ["1.bias"]},
    "tied": {"layers": [(9, 9, True), (9, 9, True)], "tied": True},
    "all_frozen": {"layers": [(5, 4, True)], "freeze": ["0.weight", "0.bias"]},
}


def _words(spec):
    layers = ", ".join(f"Linear({i}, {o}{'' if bias else ', bias=False'})" for i, o, bias in spec["layers"])
    text = f"a Sequential of {layers}"
    if spec.get("batchnorm"):
        text += " and a BatchNorm1d"
    if spec.get("tied"):
        text += ", with the last Linear used a second time"
    if spec.get("freeze"):
        text += f"; frozen: {', '.join(spec['freeze'])}"
    return text


def _counts(case):
    """The count for the model of `case`, built as in the sandbox, and what the usual mistakes give."""
    model = drivers.counting_model(COUNT_SPECS[case])
    return {
        "expected": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "every": sum(p.numel() for p in model.parameters()),
        "with_buffers": sum(v.numel() for v in model.state_dict().values() if v.is_floating_point()),
        "state_total": sum(v.numel() for v in model.state_dict().values()),
        "tensors": sum(1 for p in model.parameters() if p.requires_grad),
        "per_layer": sum(p.numel() for layer in model for p in layer.parameters() if p.requires_grad),
    }


@question("torch_mlp.count_parameters", points=5,
          kinks=("a frozen parameter", "buffers (BatchNorm)", "a layer used twice", "all frozen (count 0)"))
@cases("case", sorted(COUNT_SPECS), reference=_counts, send_ahead=True, boundaries={
    "a frozen parameter": lambda case: bool(COUNT_SPECS[case].get("freeze")),
    "buffers (BatchNorm)": lambda case: bool(COUNT_SPECS[case].get("batchnorm")),
    "a layer used twice": lambda case: bool(COUNT_SPECS[case].get("tied")),
    "all frozen (count 0)": lambda case: case == "all_frozen",
    "a layer without bias": lambda case: any(not bias for _, _, bias in COUNT_SPECS[case]["layers"])})
def test_count_parameters(student, case, reference):
    spec = COUNT_SPECS[case]
    got = call_or_fail(lambda: student.run(drivers.count_parameters_of, spec),
                       text=f"count_parameters({_words(spec)})")

    diagnose = diagnosis("torch_mlp.count_parameters", every=reference["every"],
                         with_buffers=reference["with_buffers"], state_total=reference["state_total"],
                         tensors=reference["tensors"], counted_twice=reference["per_layer"] if case == "tied" else None)
    expect_equal(got, int(reference["expected"]), diagnose=diagnose)
