"""Seeded inputs for a suite's cases: the same numbers on every run, on every machine.

A case's inputs are drawn once, when the suite is collected, and must come out the same for every
submission and every regrade, or two students (or two gradings of one) would meet different cases.
Suites seed a NumPy generator from the case itself; `case_rng` is the one way they do it.
"""

from __future__ import annotations

import numbers
import zlib

import numpy as np

__all__ = ["case_rng"]


def case_rng(*key: object) -> np.random.Generator:
    """A NumPy generator seeded by `key`, what names the case: ("matmul", (2, 3), (3, 4)), or 3, 784.

    Whole numbers alone seed it directly, as `np.random.default_rng([3, 784])` would; any other key
    (names, shapes, floats) through a stable hash of its repr (zlib.crc32: Python's own hash() of a
    string changes from one run to the next). Key each case apart, so that two cases never share
    their numbers by accident.
    """
    if key and all(isinstance(part, numbers.Integral) and not isinstance(part, bool) for part in key):
        return np.random.default_rng([int(part) for part in key])
    return np.random.default_rng(zlib.crc32(repr(key).encode()))
