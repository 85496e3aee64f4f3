"""Train your MLP on the handwritten digits with your SGD, train_epoch and evaluate.

Run it from this folder once torch_mlp.py and training.py are done:

    python train_digits.py              # 5 epochs on the GPU if there is one, else the CPU
    python train_digits.py --epochs 10 --lr 0.05 --device cpu --seed 1

A correct implementation reaches at least 90% test accuracy within a few epochs.
"""

import argparse
import time

import torch
from torch import nn

import data
import torch_mlp
import training


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    torch.manual_seed(args.seed)  # the same initial weights on every run
    device = torch.device(args.device)
    train_loader, test_loader = data.get_loaders(batch_size=args.batch_size, seed=args.seed)

    model = torch_mlp.MLP().to(device)
    optimizer = training.SGD(
        model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay
    )
    loss_fn = nn.CrossEntropyLoss()
    steps = training.steps_per_epoch(len(train_loader.dataset), args.batch_size)
    print(
        f"{torch_mlp.count_parameters(model)} trainable parameters on {device}; "
        f"{len(train_loader.dataset)} training images, {steps} steps per epoch"
    )

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        train_loss = training.train_epoch(model, train_loader, optimizer, loss_fn, device)
        accuracy = training.evaluate(model, test_loader, device)
        elapsed = time.perf_counter() - start
        print(
            f"epoch {epoch}: train loss {train_loss:.4f}  test accuracy {accuracy:.1%}  "
            f"({elapsed:.1f} s)"
        )


if __name__ == "__main__":
    main()
