"""Training machinery: an SGD optimizer written by hand, and the training and evaluation loops."""

import torch


class SGD:
    """Stochastic gradient descent with momentum and weight decay, as torch.optim.SGD.

    For each parameter p with a gradient g (parameters whose .grad is None are skipped):
        g = g + weight_decay * p                        (only if weight_decay != 0)
        buf = g on the first step, else momentum * buf + g   (only if momentum != 0)
        p = p - lr * buf   (or p - lr * g without momentum)
    No dampening, no Nesterov. torch.optim may not be used.
    """

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        raise NotImplementedError('SGD.__init__: keep list(params) (it may be a generator), the settings, and one momentum buffer per parameter')

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's .grad: to None, or to zeros when set_to_none is False."""
        raise NotImplementedError('SGD.zero_grad: p.grad = None, or zero the existing gradient in place')

    def step(self):
        """Update every parameter that has a gradient. Does not change .grad."""
        raise NotImplementedError('SGD.step: under torch.no_grad(); build new tensors from p.grad instead of changing it in place')


def steps_per_epoch(n, batch_size, drop_last=False):
    """How many batches (optimizer steps) one pass over n examples takes, as a DataLoader counts.

    ValueError for a negative n or a batch_size below 1.
    """
    raise NotImplementedError('steps_per_epoch: a partial last batch counts as a step unless drop_last is True')


def train_epoch(model, loader, optimizer, loss_fn, device):
    """One pass over `loader`; returns the mean of the batch losses (a Python float).

    For each batch: move it to `device`, zero the gradients, forward, loss, backward, step.
    """
    raise NotImplementedError('train_epoch: for x, y in loader: to(device), optimizer.zero_grad(), loss_fn(model(x), y), loss.backward(), optimizer.step()')


def evaluate(model, loader, device):
    """Fraction of examples in `loader` whose argmax logit is the label, in [0, 1].

    Builds no autograd graph, runs the model in eval mode and leaves it in the mode it had.
    """
    raise NotImplementedError('evaluate: remember model.training, call model.eval(), count under torch.no_grad(), then model.train(previous)')
