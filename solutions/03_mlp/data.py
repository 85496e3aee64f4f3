"""The data for 03_mlp: scikit-learn's handwritten digits, shaped like MNIST.

scikit-learn ships 1,797 digits of 8x8 pixels (grey levels 0..16) inside the package, so nothing
is downloaded. We scale them to [0, 1] and resize them to 1x28x28 with bilinear interpolation, so
that the same MLP (784 inputs) works on them as on MNIST. This file is provided by the course:
you do not need to change it.
"""

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

IMAGE_SIZE = 28
NUM_CLASSES = 10


def load_tensors(size=IMAGE_SIZE):
    """All digits as (images, labels): float32 (N, 1, size, size) in [0, 1] and int64 (N,)."""
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
    # Bilinear interpolation only averages neighbours, so the values stay in [0, 1]; the clamp
    # just guards against rounding.
    images = images.clamp(0.0, 1.0)
    labels = torch.tensor(digits.target, dtype=torch.int64)
    return images, labels


def train_test_split(test_fraction=0.2, seed=0):
    """A fixed random split: ((train_images, train_labels), (test_images, test_labels))."""
    images, labels = load_tensors()
    order = torch.from_numpy(np.random.default_rng(seed).permutation(len(labels)))
    n_test = int(round(len(labels) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train]), (images[test], labels[test])


def get_loaders(batch_size=64, seed=0, test_fraction=0.2, test_batch_size=256):
    """(train_loader, test_loader) over the digits.

    The training loader shuffles with its own generator seeded by `seed`, so two runs with the
    same seed see the same batches in the same order. The test loader does not shuffle.
    """
    (x_train, y_train), (x_test, y_test) = train_test_split(test_fraction)
    generator = torch.Generator().manual_seed(seed)
    train_loader = DataLoader(
        TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=True, generator=generator
    )
    test_loader = DataLoader(
        TensorDataset(x_test, y_test), batch_size=test_batch_size, shuffle=False
    )
    return train_loader, test_loader


if __name__ == "__main__":
    train_loader, test_loader = get_loaders()
    images, labels = next(iter(train_loader))
    print(f"{len(train_loader.dataset)} training and {len(test_loader.dataset)} test images")
    print(f"one batch: images {tuple(images.shape)} {images.dtype}, labels {tuple(labels.shape)}")
    print(f"pixel range [{images.min().item():.2f}, {images.max().item():.2f}]")
