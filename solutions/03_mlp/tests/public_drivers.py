"""Helpers the public checks run next to your code (models cannot be passed around as data, so
these build them, call your functions and hand back plain numbers and arrays)."""

import numpy as np


def forward_logits(params, X):
    import numpy_mlp

    logits, _ = numpy_mlp.forward(params, X)
    return np.asarray(logits)


def forward_then_backward(params, X, grad_logits):
    import numpy_mlp

    logits, cache = numpy_mlp.forward(params, X)
    grads = numpy_mlp.backward(params, cache, grad_logits)
    return np.asarray(logits), {key: np.asarray(value) for key, value in grads.items()}


def mlp_run(sizes, state, x, grad_out):
    """MLP(*sizes) with `state` loaded: output and parameter gradients of (out * grad_out).sum()."""
    import torch
    import torch_mlp

    model = torch_mlp.MLP(*sizes).double()
    model.load_state_dict({key: torch.tensor(value) for key, value in state.items()})
    out = model(torch.tensor(x))
    (out * torch.tensor(grad_out)).sum().backward()
    return {
        "keys": sorted(model.state_dict()),
        "out": out.detach().numpy(),
        "grads": {name: p.grad.numpy() for name, p in model.named_parameters()},
    }


def count_frozen(d_in, d_hidden, d_out):
    """count_parameters on an MLP-shaped model whose first layer is frozen."""
    import torch
    import torch_mlp

    model = torch.nn.Sequential(torch.nn.Linear(d_in, d_hidden), torch.nn.ReLU(), torch.nn.Linear(d_hidden, d_out))
    model[0].requires_grad_(False)
    return torch_mlp.count_parameters(model)


def sgd_steps(init, grads, lr, momentum, weight_decay):
    """Your SGD for len(grads) steps with the given gradients; the parameters after each step."""
    import torch
    import training

    params = [torch.tensor(a, requires_grad=True) for a in init]
    optimizer = training.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    trajectory = []
    for step_grads in grads:
        optimizer.zero_grad()
        for p, g in zip(params, step_grads):
            p.grad = torch.tensor(g)
        optimizer.step()
        trajectory.append([p.detach().numpy().copy() for p in params])
    optimizer.zero_grad()
    return {"trajectory": trajectory, "grads_after_zero_grad": [p.grad is None for p in params]}


def _sequential(state):
    """An MLP-shaped nn.Sequential (20 -> 16 -> 4) with the given weights."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model.load_state_dict({key: torch.tensor(value, dtype=torch.float32) for key, value in state.items()})
    return model


def _loader(X, Y, batch_size):
    import torch

    dataset = torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y))
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size)


def train_once(state, X, Y, batch_size, lr):
    """One train_epoch with torch.optim.SGD; the loss it returned and the weights afterwards."""
    import torch
    import training

    model = _sequential(state)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    loss = training.train_epoch(model, _loader(X, Y, batch_size), optimizer, torch.nn.CrossEntropyLoss(),
                                torch.device("cpu"))
    return {"loss": loss, "state": {key: value.numpy() for key, value in model.state_dict().items()}}


def evaluate_once(state, X, Y, batch_size):
    """evaluate on a model in train mode: the accuracy and the mode it was left in."""
    import torch
    import training

    model = _sequential(state)
    model.train()
    accuracy = training.evaluate(model, _loader(X, Y, batch_size), torch.device("cpu"))
    return {"accuracy": accuracy, "training_after": model.training}
