"""Public checks for 03_mlp: a few cases per question. Run them with `checks test 03_mlp`.

Passing these is a good sign, not a guarantee: the hidden suite checks more cases (other shapes,
float64, every device, momentum with weight decay, ...). Every expected value below is computed
by PyTorch."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import public_drivers
from checks.suite import call_or_fail, expect_close, expect_equal, fail, question
from diagnoses import diagnosis, grads_relu_mask_at_zero, grads_without_relu, sgd_variants  # the likely mistakes: the same table as the grader's


def _t(array, grad=False):
    return torch.tensor(np.asarray(array), dtype=torch.float64, requires_grad=grad)


def _params(d_in, d_hidden, d_out, seed=0):
    rng = np.random.default_rng(seed)
    return {"W1": rng.normal(size=(d_in, d_hidden)) / np.sqrt(d_in), "b1": rng.normal(size=d_hidden) * 0.1,
            "W2": rng.normal(size=(d_hidden, d_out)) / np.sqrt(d_hidden), "b2": rng.normal(size=d_out) * 0.1}


# ------------------------------------------------------------------------ numpy_mlp

@question("numpy_mlp.linear_forward", points=5, block_imports=("torch",))
def test_linear_forward(student):
    rng = np.random.default_rng(1)
    X, W, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
    expected = (_t(X) @ _t(W) + _t(b)).numpy()
    expect_close(student.numpy_mlp.linear_forward(X, W, b), expected,
                 diagnose=diagnosis("numpy_mlp.linear_forward", X=X, W=W, expected=expected))


@question("numpy_mlp.linear_backward", points=8, block_imports=("torch",))
def test_linear_backward(student):
    rng = np.random.default_rng(2)
    X, W, b, grad_Y = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(4, 2))
    Xt, Wt, bt = _t(X, True), _t(W, True), _t(b, True)
    (Xt @ Wt + bt).backward(_t(grad_Y))
    got = student.numpy_mlp.linear_backward(X, W, grad_Y)
    for part, value, expected in zip(("grad_X", "grad_W", "grad_b"), got, (Xt.grad, Wt.grad, bt.grad)):
        expect_close(value, expected.numpy(), what=f"entries of {part}",
                     diagnose=diagnosis("numpy_mlp.linear_backward", part=part, X=X, W=W, grad_Y=grad_Y,
                                        expected=expected.numpy()))


SOFTMAX_SCALES = [1.0, 1000.0]


def softmax_case(scale):
    """The logits and labels of a public case (`checks build` models the likely mistakes on them)."""
    return np.random.default_rng(3).normal(size=(5, 4)) * scale, np.array([0, 3, 1, 1, 2])


def _softmax_mistakes(scale):
    """What the likely mistakes give on this case, as `checks build` computed them: data, no code."""
    table = json.loads((Path(__file__).parent / "softmax_mistakes.json").read_text())
    return [(loss, np.asarray(grad), name) for loss, grad, name in table[f"{scale:g}"]]


@question("numpy_mlp.softmax_cross_entropy", points=10, block_imports=("torch",))
@pytest.mark.parametrize("scale", SOFTMAX_SCALES, ids=["normal", "huge_logits"])
def test_softmax_cross_entropy(student, scale):
    logits, y = softmax_case(scale)
    mistakes = _softmax_mistakes(scale)
    logits_t = _t(logits, True)
    loss_t = F.cross_entropy(logits_t, torch.tensor(y))
    loss_t.backward()
    loss, grad = student.numpy_mlp.softmax_cross_entropy(logits, y)
    expect_close(loss, loss_t.item(), what="loss", diagnose=diagnosis(
        "numpy_mlp.softmax_cross_entropy", part="loss", logits=logits, expected=loss_t.item(), other=grad,
        other_expected=logits_t.grad.numpy(), mistakes=mistakes))
    expect_close(grad, logits_t.grad.numpy(), what="entries of grad_logits", diagnose=diagnosis(
        "numpy_mlp.softmax_cross_entropy", part="grad_logits", logits=logits, expected=logits_t.grad.numpy(),
        other=loss, other_expected=loss_t.item(), mistakes=mistakes))


@question("numpy_mlp.forward", points=6, block_imports=("torch",))
def test_forward_images(student):
    params = _params(784, 8, 10)
    X = np.random.default_rng(4).uniform(size=(3, 1, 28, 28))
    t = {key: _t(value) for key, value in params.items()}
    logits_t = torch.relu(_t(X).reshape(3, -1) @ t["W1"] + t["b1"]) @ t["W2"] + t["b2"]
    logits = call_or_fail(lambda: student.run(public_drivers.forward_logits, params, X),
                          text="forward(params, X of shape (3, 1, 28, 28))")
    expect_close(logits, logits_t.numpy(), what="logits",
                 diagnose=diagnosis("numpy_mlp.forward", params=params, X=X, expected=logits_t.numpy()))


@question("numpy_mlp.backward", points=10, block_imports=("torch",))
def test_backward(student):
    params = _params(6, 5, 3)
    rng = np.random.default_rng(3)  # integer inputs, first-layer weights in halves: 4 ReLU inputs are exactly 0
    params["W1"], params["b1"] = rng.integers(-2, 3, size=(6, 5)) / 2.0, rng.integers(-2, 3, size=5) / 2.0
    X, grad_logits = rng.integers(-2, 3, size=(4, 6)).astype(float), np.random.default_rng(7).normal(size=(4, 3))
    t = {key: _t(value, True) for key, value in params.items()}
    logits_t = torch.relu(_t(X) @ t["W1"] + t["b1"]) @ t["W2"] + t["b2"]
    (logits_t * _t(grad_logits)).sum().backward()
    _, grads = call_or_fail(lambda: student.run(public_drivers.forward_then_backward, params, X, grad_logits),
                            text="backward(params, cache, grad_logits) after forward(params, X)")
    without_relu = grads_without_relu(params, X, grad_logits)
    mask_at_zero = grads_relu_mask_at_zero(params, X, grad_logits)
    for key in params:
        if key not in grads:
            fail(f"backward returned keys {sorted(grads)}; expected {sorted(params)}.")
        expected = t[key].grad.numpy()
        expect_close(grads[key], expected, what=f"entries of grad {key}",
                     diagnose=diagnosis("numpy_mlp.backward", key=key, expected=expected, batch=X.shape[0],
                                        without_relu=without_relu[key], mask_at_zero=mask_at_zero.get(key)))


@question("numpy_mlp.sgd_update", points=4, block_imports=("torch",))
def test_sgd_update(student):
    params, grads = _params(3, 2, 2, seed=8), _params(3, 2, 2, seed=9)
    new = student.numpy_mlp.sgd_update(params, grads, 0.1)
    for key in params:
        expect_close(new[key], (_t(params[key]) - 0.1 * _t(grads[key])).numpy(), what=f"entries of {key}",
                     diagnose=diagnosis("numpy_mlp.sgd_update", params=params, grads=grads, lr=0.1, key=key))


# ------------------------------------------------------------------------ torch_mlp

@question("torch_mlp.MLP", points=12)
def test_mlp_matches_reference(student):
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Flatten(), nn.Linear(784, 16), nn.ReLU(), nn.Linear(16, 10)).double()
    names = {"fc1.weight": "1.weight", "fc1.bias": "1.bias", "fc2.weight": "3.weight", "fc2.bias": "3.bias"}
    state = {name: reference.state_dict()[ref].numpy() for name, ref in names.items()}
    x = torch.rand(2, 1, 28, 28, dtype=torch.float64)
    grad_out = torch.randn(2, 10, dtype=torch.float64)
    out = reference(x)
    (out * grad_out).sum().backward()
    got = call_or_fail(lambda: student.run(public_drivers.mlp_run, (784, 16, 10), state, x.numpy(),
                                           grad_out.numpy()),
                       text="MLP(784, 16, 10) with a state_dict loaded, forward and backward")
    expect_equal(got["keys"], sorted(names))
    expect_close(got["out"], out.detach().numpy(), what="logits",
                 diagnose=diagnosis("torch_mlp.MLP", part="out", state=state, x=x.numpy()))
    for name, ref in names.items():
        expect_close(got["grads"][name], dict(reference.named_parameters())[ref].grad.numpy(),
                     what=f"entries of {name}.grad")


@question("torch_mlp.count_parameters", points=5)
def test_count_parameters_frozen_layer(student):
    model = nn.Sequential(nn.Linear(30, 20), nn.ReLU(), nn.Linear(20, 5))
    model[0].requires_grad_(False)
    expect_equal(call_or_fail(lambda: student.run(public_drivers.count_frozen, 30, 20, 5),
                              text="count_parameters(Linear(30, 20) frozen, ReLU, Linear(20, 5))"),
                 sum(p.numel() for p in model.parameters() if p.requires_grad),
                 diagnose=diagnosis("torch_mlp.count_parameters", every=sum(p.numel() for p in model.parameters()),
                                    tensors=sum(1 for p in model.parameters() if p.requires_grad)))


# ------------------------------------------------------------------------ training

def _torch_sgd(init, grads, lr, momentum, weight_decay, nesterov=False):
    """torch.optim.SGD's parameters after each step, each step's gradients given."""
    params = [_t(a, True) for a in init]
    optimizer = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
    trajectory = []
    for step_grads in grads:
        optimizer.zero_grad()
        for p, g in zip(params, step_grads):
            p.grad = _t(g)
        optimizer.step()
        trajectory.append([p.detach().numpy().copy() for p in params])
    return trajectory


@question("training.SGD", points=14)
@pytest.mark.parametrize("momentum,weight_decay", [(0.0, 0.0), (0.9, 0.1)])
def test_sgd_matches_torch(student, momentum, weight_decay):
    rng = np.random.default_rng(10)
    init = [rng.normal(size=(3, 2)), rng.normal(size=2)]
    grads = [[rng.normal(size=a.shape) for a in init] for _ in range(3)]
    expected = _torch_sgd(init, grads, 0.1, momentum, weight_decay)
    # the mistakes torch.optim.SGD itself can make, for the table to recognise
    variants = {"nesterov": lambda _: _torch_sgd(init, grads, 0.1, momentum, weight_decay, nesterov=True),
                "no_momentum": lambda _: _torch_sgd(init, grads, 0.1, 0.0, weight_decay),
                "no_weight_decay": lambda _: _torch_sgd(init, grads, 0.1, momentum, 0.0)}
    variants = {name: variants[name] for name in sgd_variants(momentum, weight_decay) if name in variants}
    got = call_or_fail(lambda: student.run(public_drivers.sgd_steps, init, grads, 0.1, momentum, weight_decay),
                       text=f"SGD(params, lr=0.1, momentum={momentum}, weight_decay={weight_decay}), 3 steps")
    diagnose = diagnosis("training.SGD", init=init, variants=variants)
    for k, (step, ref) in enumerate(zip(got["trajectory"], expected)):
        for p, e in zip(step, ref):
            expect_close(p, e, what=f"parameter entries after step {k + 1}",
                         diagnose=lambda _: diagnose(got["trajectory"]))
    expect_equal(got["grads_after_zero_grad"], [True, True])


@question("training.steps_per_epoch", points=4)
@pytest.mark.parametrize("n,batch_size,drop_last", [(100, 32, False), (100, 32, True)])
def test_steps_per_epoch(student, n, batch_size, drop_last):
    loader = torch.utils.data.DataLoader(range(n), batch_size=batch_size, drop_last=drop_last)
    expect_equal(student.training.steps_per_epoch(n, batch_size, drop_last=drop_last), len(loader),
                 diagnose=diagnosis("training.steps_per_epoch", n=n, batch_size=batch_size, drop_last=drop_last))


def _train_case():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(40, 20)).astype(np.float32)
    Y = rng.integers(0, 4, size=40).astype(np.int64)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    state = {key: value.numpy().copy() for key, value in model.state_dict().items()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y)),
                                            batch_size=10):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    after = {key: value.numpy().copy() for key, value in model.state_dict().items()}
    with torch.no_grad():
        accuracy = (model(torch.tensor(X)).argmax(1) == torch.tensor(Y)).double().mean().item()
    return X, Y, state, losses, after, accuracy


@question("training.train_epoch", points=10)
def test_train_epoch(student):
    X, Y, state, losses, after, _ = _train_case()
    got = call_or_fail(lambda: student.run(public_drivers.train_once, state, X, Y, 10, 0.1),
                       text="train_epoch(a 20-16-4 MLP, 40 examples in batches of 10, SGD(lr=0.1), ...)")
    expect_close(got["loss"], sum(losses) / len(losses), rtol=1e-5, atol=1e-6, what="mean batch loss",
                 diagnose=diagnosis("training.train_epoch", batches=len(losses), losses=losses,
                                    sizes=[10] * len(losses)))
    for key, value in after.items():
        expect_close(got["state"][key], value, rtol=1e-5, atol=1e-6, what=f"entries of {key} after the epoch")


@question("training.evaluate", points=6)
def test_evaluate(student):
    X, Y, _, _, after, accuracy = _train_case()
    got = call_or_fail(lambda: student.run(public_drivers.evaluate_once, after, X, Y, 16),
                       text="evaluate(a model in train mode, 40 examples in batches of 16, cpu)")
    expect_close(got["accuracy"], accuracy, rtol=1e-6, atol=1e-6, what="accuracy",
                 diagnose=diagnosis("training.evaluate", correct=round(accuracy * len(Y)), n=len(Y), batch_size=16))
    expect_equal(got["training_after"], True)
