"""References worked out once, before the grading processes fork, and the grids of cases they are for.

A hidden suite's module-level values and `@cases(reference=...)` are computed when the suite is
collected, once per batch, before a grading process is forked per submission. A reference that
runs autograd may run there only where torch sees no GPU: the first backward() in a process counts
the GPUs (initialising the CUDA driver) and starts an autograd thread per GPU, after which every
process forked from it fails on backward(). `precomputed` and `per_device` do the safe thing on
either machine; `Packed` pickles a big argument for the sandbox once, there; `grid` lays out the
cases of stacked parametrize decorators for one `@cases`.
"""

from __future__ import annotations

import itertools
import pickle
from typing import Any, Callable, Hashable, Iterable, Sequence

from checks.sandbox.zygote import cuda_available

__all__ = ["Packed", "autograd_before_fork", "grid", "per_device", "precomputed"]


def autograd_before_fork() -> bool:
    """Whether a reference may run autograd before the fork: only where torch sees no GPU (asked of
    NVML, which initialises nothing)."""
    return not cuda_available()


def precomputed(compute: Callable[..., Any], keys: Iterable[Sequence[Hashable]], *,
                backward: bool) -> Callable[..., Any]:
    """A lookup(*key) of compute(*key), a PyTorch reference. Every key's value is computed now (at
    collection, once for every submission of a batch); with `backward=True` (compute runs autograd)
    only where autograd_before_fork() says it may, else in the grading process when first asked."""
    values = {tuple(key): compute(*key) for key in keys} if not backward or autograd_before_fork() else {}

    def lookup(*key: Hashable) -> Any:
        if key not in values:
            values[key] = compute(*key)
        return values[key]
    return lookup


def per_device(compute: Callable[..., Any], keys: Iterable[Sequence[Hashable]], *,
               backward: bool) -> Callable[..., Any]:
    """A lookup(*key, device=...) of compute(*key, device=...): the CPU's values as precomputed()
    gives them; another device's (cuda) computed in the grading process when first asked, as CUDA
    must not be touched before it forks."""
    on_cpu = precomputed(lambda *key: compute(*key, device="cpu"), keys, backward=backward)
    elsewhere = precomputed(lambda device, *key: compute(*key, device=device), (), backward=backward)

    def lookup(*key: Hashable, device: str) -> Any:
        return on_cpu(*key) if device == "cpu" else elsewhere(device, *key)
    return lookup


class Packed:
    """A big argument of the sandbox's calls (02's deep chains and their answers), pickled once
    where it is made: at collection, for a module-level value. Every grading process then sends
    those bytes as they are instead of pickling the value again, and never reads its thousands of
    objects (each read writes a reference count, and so copies its page from the collected
    session). The sandbox gets the value itself. Read it in the grader as `.value`."""

    __slots__ = ("value", "data")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def __reduce__(self) -> tuple[Callable[[bytes], Any], tuple[bytes]]:
        return pickle.loads, (self.data,)


def grid(*axes: tuple[str, Iterable[Any]]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(argnames, rows) for @cases from axes given as ("names", values), as stacked parametrize
    decorators would give them: every combination, the FIRST axis varying slowest (the order of
    decorators read from the function upwards). A value of an axis with several names is a tuple."""
    axes = tuple((spec, list(values)) for spec, values in axes)
    names = [name.strip() for spec, _ in axes for name in spec.split(",")]
    rows = []
    for combination in itertools.product(*(values for _, values in axes)):
        row: list[Any] = []
        for (spec, _), value in zip(axes, combination):
            row.extend(value if "," in spec else (value,))
        rows.append(tuple(row))
    return names, rows
