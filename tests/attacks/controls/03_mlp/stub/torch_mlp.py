"""The same MLP as numpy_mlp.py, written as a PyTorch nn.Module: autograd does the backward."""

import torch
from torch import nn


class MLP(nn.Module):
    """linear (fc1) -> ReLU -> linear (fc2).

    Takes (B, 1, 28, 28) images or (B, d_in) vectors and returns logits (B, d_out). Works on
    whatever device (and dtype) the module was moved to with .to(...).
    """

    def __init__(self, d_in=784, d_hidden=128, d_out=10):
        super().__init__()
        raise NotImplementedError('MLP.__init__: two nn.Linear children named fc1 (d_in -> d_hidden) and fc2 (d_hidden -> d_out)')

    def forward(self, x):
        raise NotImplementedError('MLP.forward: flatten everything but the batch dimension, then fc1, ReLU, fc2')


def count_parameters(model):
    """Number of trainable scalars in `model` (parameters with requires_grad=True)."""
    raise NotImplementedError('count_parameters: add up p.numel() over model.parameters(), skipping frozen ones')
