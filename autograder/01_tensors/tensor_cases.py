"""Inputs for the 01_tensors hidden suite: hand-picked edge cases plus seeded random ones.

Only inputs live here. Whether an input is valid, and what the answer is, is decided by PyTorch
inside each test. Layouts are produced by real PyTorch operations (permute, slicing with steps,
expand) so that they are layouts a student could meet in practice.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

SIZES = (0, 1, 1, 2, 2, 3, 3, 4, 5)          # size 0 and 1 on purpose, often
NONZERO_SIZES = (1, 1, 2, 2, 3, 3, 4, 5)


def show(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array<{value.dtype},{value.size}>"
    if isinstance(value, list):
        return "[" + ",".join(show(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ",".join(show(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, np.integer):
        return f"np.{type(value).__name__}({int(value)})"
    return repr(value)


def params(rows, tag: str):
    """pytest.param rows with short readable ids (`tag` numbers the seeded ones)."""
    out, seen = [], set()
    for n, row in enumerate(rows):
        name = f"{tag}{n}-" + "-".join(show(v) for v in row)
        name = name if len(name) <= 90 else name[:87] + "..."
        while name in seen:
            name += "'"
        seen.add(name)
        out.append(pytest.param(*row, id=name))
    return out


def as_list(values):
    return [int(v) for v in values]


def as_numpy_ints(values):
    return tuple(np.int64(v) for v in values)


def random_shape(rng: random.Random, max_ndim=4, sizes=SIZES) -> tuple[int, ...]:
    return tuple(rng.choice(sizes) for _ in range(rng.randint(0, max_ndim)))


def random_layout(rng: random.Random, max_ndim=4, sizes=SIZES, kinds=None):
    """(shape, strides, storage_offset) of a tensor built by a typical PyTorch operation."""
    shape = random_shape(rng, max_ndim, sizes)
    kind = rng.choice(kinds or ("contiguous", "permuted", "sliced", "expanded", "sliced_permuted",
                                "arbitrary"))
    ndim = len(shape)
    if kind == "arbitrary":
        return shape, tuple(rng.choice((0, 1, 2, 3, 5, 7, 12, 20)) for _ in shape), rng.randint(0, 9)
    if kind == "expanded":
        t = torch.empty([1 if rng.random() < 0.5 else s for s in shape]).expand(shape)
        return tuple(t.shape), tuple(t.stride()), t.storage_offset()
    if kind in ("sliced", "sliced_permuted"):
        steps = [rng.choice((1, 1, 2, 3)) for _ in shape]
        starts = [rng.randint(0, 2) for _ in shape]
        base = torch.empty([st + s * step for s, step, st in zip(shape, steps, starts)])
        t = base[tuple(slice(st, st + s * step, step) for s, step, st in zip(shape, steps, starts))]
    else:
        t = torch.empty(shape)
    if kind in ("permuted", "sliced_permuted"):
        order = list(range(ndim))
        rng.shuffle(order)
        t = t.permute(order)
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def contiguous(shape):
    return tuple(torch.empty(shape).stride())


# ---- strides.py -------------------------------------------------------------------------------

def numel_cases():
    rng = random.Random(1101)
    rows = [(s,) for s in [(), (0,), (1,), (7,), (2, 3), (4, 1, 5), (2, 0, 3), (0, 0), (1, 1, 1, 1),
                           (7, 11, 13), (3, 0), (1,) * 6]]
    rows += [([2, 3, 4],), (as_numpy_ints((2, 5)),), ((-1,),), ((2, -3),)]
    rows += [(random_shape(rng, 5),) for _ in range(22)]
    return params(rows, "n")


def contiguous_strides_cases():
    rng = random.Random(1102)
    rows = [(s,) for s in [(), (0,), (1,), (5,), (2, 3), (3, 2), (2, 3, 4), (4, 1, 5), (2, 0, 3),
                           (0, 3), (3, 0), (0, 0, 2), (1, 1, 1), (6, 1), (1, 6), (2, 2, 2, 2, 2)]]
    rows += [([4, 3, 2],), (as_numpy_ints((3, 5, 2)),), ((-2,),), ((3, -1, 2),)]
    rows += [(random_shape(rng, 5),) for _ in range(24)]
    return params(rows, "c")


def offset_cases():
    """(index, strides, storage_offset or None for 'use the default', keyword?)."""
    rng = random.Random(1103)
    rows = [((), (), None, False), ((), (), 7, False), ((1, 2), (3, 1), None, False),
            ((1, 2), (1, 2), None, False), ((0, 0, 0), (12, 4, 1), 5, True),
            ((2, 1), (0, 4), 3, False), ((1, 0, 3), (20, 5, 1), 11, True), ((4,), (3,), 2, False)]
    rows += [([1, 2], [3, 1], 4, False), (as_numpy_ints((1, 3)), as_numpy_ints((5, 1)), np.int64(2), True)]
    # Lengths that disagree: must be a ValueError, never a silent zip.
    rows += [((1, 2), (3,), None, False), ((1,), (3, 1), None, False), ((), (1,), 4, True),
             ((0, 1, 2), (6, 2), 0, False)]
    for _ in range(26):
        shape, strides, storage_offset = random_layout(rng, 4, NONZERO_SIZES)
        index = tuple(rng.randrange(s) for s in shape)
        mode = rng.choice(("default", "positional", "keyword"))
        rows.append((index, strides, None if mode == "default" else storage_offset + rng.randint(0, 5),
                     mode == "keyword"))
    return params(rows, "o")


def unravel_cases():
    rng = random.Random(1104)
    rows = [(0, ()), (5, (2, 3)), (0, (2, 3)), (3, (2, 3)), (2, (3, 1)), (23, (2, 3, 4)),
            (13, (2, 3, 4)), (0, (1, 1, 1)), (4, (5,)), (7, (1, 8, 1)), (59, (3, 4, 5)),
            (6, [2, 4]), (np.int64(7), as_numpy_ints((3, 3)))]
    # Out of range: the first past the end is the classic off-by-one.
    rows += [(6, (2, 3)), (24, (2, 3, 4)), (100, (4, 5)), (1, ()), (0, (0,)), (0, (2, 0, 3)),
             (1, (1,)), (5, (5,))]
    for _ in range(26):
        shape = random_shape(rng, 4, NONZERO_SIZES)
        total = int(np.prod(shape))
        rows.append((rng.choice((0, total - 1, rng.randrange(total))), shape))
    return params(rows, "u")


def transpose_cases():
    rng = random.Random(1105)
    rows = [((2, 3), (3, 1), 0, 1), ((2, 3), (3, 1), 1, 0), ((2, 3, 4), (12, 4, 1), 0, 2),
            ((2, 3, 4), (12, 4, 1), -1, 0), ((2, 3, 4), (12, 4, 1), 1, 1), ((2, 3, 4), (12, 4, 1), -3, -2),
            ((), (), 0, 0), ((), (), -1, 0), ((4, 1, 3), (3, 3, 1), 0, 1), ((3, 4), (0, 1), 0, 1),
            ((2, 0, 5), (5, 5, 1), 0, 2), ((5,), (2,), 0, -1),
            ([2, 3, 4], [1, 2, 6], 0, 2), (as_numpy_ints((3, 2)), as_numpy_ints((1, 3)), np.int64(0), np.int64(1))]
    # Refused by PyTorch: dims out of range, or a layout that cannot exist.
    rows += [((2, 3), (3, 1), 0, 2), ((2, 3), (3, 1), -3, 0), ((), (), 1, 0), ((4,), (1,), 0, 1),
             ((2, 3), (1,), 0, 1), ((2, 3), (3, 1, 1), 0, 1), ((2, -3), (3, 1), 0, 1), ((2, 3), (3, -1), 0, 1)]
    for _ in range(26):
        shape, strides, _ = random_layout(rng, 5)
        n = max(len(shape), 1)
        rows.append((shape, strides, rng.randrange(-n, n), rng.randrange(-n, n)))
    return params(rows, "t")


def permute_cases():
    rng = random.Random(1106)
    rows = [((2, 3), (3, 1), (1, 0)), ((2, 3, 4), (12, 4, 1), (2, 0, 1)), ((2, 3, 4), (12, 4, 1), (1, 2, 0)),
            ((2, 3, 4), (12, 4, 1), (0, 1, 2)), ((2, 3, 4), (12, 4, 1), (-1, -3, -2)), ((), (), ()),
            ((5,), (1,), (0,)), ((5,), (1,), (-1,)), ((2, 1, 3), (3, 3, 1), (2, 1, 0)),
            ((2, 3, 4, 5), (60, 20, 5, 1), (3, 1, 0, 2)), ((3, 4), (0, 1), (1, 0)), ((2, 0, 3), (3, 3, 1), (1, 2, 0)),
            ([3, 4, 5], [20, 5, 1], [2, 0, 1]), (as_numpy_ints((4, 6)), as_numpy_ints((1, 4)), as_numpy_ints((1, 0)))]
    # Not a permutation: repeats (also via a negative alias), wrong length, out of range.
    rows += [((2, 3), (3, 1), (0, 0)), ((2, 3), (3, 1), (1, -1)), ((2, 3, 4), (12, 4, 1), (0, 1)),
             ((2, 3), (3, 1), (0, 1, 2)), ((2, 3), (3, 1), (0, 2)), ((2, 3), (3, 1), (-3, 0)),
             ((), (), (0,)), ((2, 3, 4), (12, 4, 1), (2, 2, 0)), ((2, 3), (3,), (1, 0))]
    for _ in range(26):
        shape, strides, _ = random_layout(rng, 5)
        order = list(range(len(shape)))
        rng.shuffle(order)
        order = [d - len(shape) if rng.random() < 0.3 else d for d in order]
        rows.append((shape, strides, tuple(order)))
    return params(rows, "p")


def is_contiguous_cases():
    rng = random.Random(1107)
    rows = [((), ()), ((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3), (4, 1)), ((2, 3), (3, 2)),
            ((2, 1, 3), (3, 7, 1)), ((2, 1, 3), (3, 0, 1)), ((1, 1), (5, 9)), ((1,), (0,)), ((3,), (0,)),
            ((3,), (1,)), ((3,), (2,)), ((2, 0), (5, 5)), ((0,), (7,)), ((4, 3), (0, 1)), ((3, 4), (4, 1)),
            ((3, 1, 4, 1), (4, 100, 1, 0)), ((2, 3, 4), (12, 4, 1)), ((2, 3, 4), (12, 1, 3)),
            ((2, 3, 4), (24, 4, 1)), ((6, 1), (1, 1)), ((1, 6), (1, 1)), ((1, 6), (6, 1)),
            ([2, 3], [3, 1]), (as_numpy_ints((4, 5)), as_numpy_ints((5, 1)))]
    rows += [((2, 3), (3,)), ((2,), (1, 1)), ((2, -1), (1, 1)), ((2, 3), (-3, 1))]
    for _ in range(28):
        shape, strides, _ = random_layout(rng, 4)
        rows.append((shape, strides))
    # Contiguous tensors with random strides on their size-1 dims: still contiguous.
    for _ in range(6):
        shape = tuple(rng.choice((1, 1, 2, 3, 4)) for _ in range(rng.randint(2, 4)))
        strides = tuple(rng.choice((0, 1, 5, 99)) if s == 1 else c for s, c in zip(shape, contiguous(shape)))
        rows.append((shape, strides))
    return params(rows, "i")


def _factor_shape(rng: random.Random, total: int) -> list[int]:
    """A random shape with `total` elements (with some size-1 dims sprinkled in)."""
    dims, left = [], total
    while left > 1 and len(dims) < 4:
        choices = [d for d in range(2, left + 1) if left % d == 0]
        d = rng.choice(choices)
        dims.append(d)
        left //= d
    if left > 1:
        dims.append(left)
    for _ in range(rng.choice((0, 0, 1))):
        dims.insert(rng.randint(0, len(dims)), 1)
    rng.shuffle(dims)
    return dims


def view_cases():
    rng = random.Random(1108)
    c = contiguous
    rows = [
        ((2, 3), (3, 1), (6,)), ((2, 3), (3, 1), (3, 2)), ((2, 3), (3, 1), (-1,)), ((2, 3), (3, 1), (1, 6)),
        ((2, 3), (3, 1), (6, 1)), ((2, 3), (3, 1), (2, 3)), ((2, 3, 4), c((2, 3, 4)), (6, -1)),
        ((2, 3, 4), c((2, 3, 4)), (2, 12)), ((2, 3, 4), c((2, 3, 4)), (4, 3, 2)), ((24,), (1,), (2, -1, 4)),
        ((), (), ()), ((), (), (1,)), ((), (), (-1,)), ((), (), (1, 1)), ((1, 1), (1, 1), ()),
        # transposed: only splits of a single dim and size-1 insertions are views
        ((3, 2), (1, 3), (3, 2, 1)), ((3, 2), (1, 3), (3, 1, 2)), ((3, 2), (1, 3), (1, 3, 2)),
        ((4, 6), (1, 4), (2, 2, 6)), ((4, 6), (1, 4), (4, 3, 2)),
        # sliced rows: merging dims that are not adjacent in memory is refused
        ((2, 3), (6, 1), (2, 3, 1)), ((2, 3), (6, 1), (3, 2)), ((4, 3), (6, 2), (2, 2, 3)),
        ((3, 4), (12, 1), (3, 2, 2)), ((2, 2, 3), (12, 3, 1), (2, 6)), ((2, 2, 3), (12, 3, 1), (4, 3)),
        # size-1 dims never break a block, whatever their stride
        ((2, 1, 3), (3, 99, 1), (6,)), ((3, 1, 4), (4, 0, 1), (12,)), ((2, 1), (1, 7), (2,)),
        ((2, 1, 3), (3, 1, 1), (3, 2)), ((1, 4), (9, 1), (2, 2)), ((3, 1, 2), (2, 5, 1), (6, 1)),
        # expanded (stride 0)
        ((4,), (0,), (2, 2)), ((2, 3), (0, 1), (3, 2)), ((2, 3), (1, 0), (2, 3, 1)), ((2, 3), (0, 0), (6,)),
        # empty tensors: any strides, any view with the same (zero) element count
        ((0, 3), (3, 1), (-1,)), ((0, 3), (3, 1), (3, 0)), ((0, 3), (1, 10), (0, 3)), ((2, 0), (1, 1), (0, 5, 1)),
        # lists and NumPy ints are accepted
        ([2, 3], [3, 1], [3, 2]), (as_numpy_ints((4, 2)), as_numpy_ints((2, 1)), as_numpy_ints((8,))),
        # refused: wrong element count, two -1, bad size, ambiguous -1, incompatible strides
        ((2, 3), (3, 1), (7,)), ((2, 3), (3, 1), (4, -1)), ((2, 3), (3, 1), (-1, -1)), ((2, 3), (3, 1), (-2, -3)),
        ((2, 3), (3, 1), (2, 0)), ((2, 3), (3, 1), (0, -1)), ((0, 3), (3, 1), (0, -1)), ((0, 3), (3, 1), (-1, 0)),
        ((), (), (2,)), ((0, 3), (3, 1), (5,)), ((2, 0), (1, 1), (3,)), ((3, 2), (1, 3), (6,)), ((3, 2), (1, 3), (2, 3)), ((2, 3), (1, 2), (-1,)),
        ((2, 3), (0, 1), (6,)), ((4, 3), (6, 2), (12,)), ((2, 3), (3,), (6,)),
    ]
    for _ in range(30):
        shape, strides, _ = random_layout(rng, 4, (1, 2, 2, 3, 4),
                                          kinds=("contiguous", "contiguous", "permuted", "sliced", "expanded",
                                                 "sliced_permuted"))
        total = int(np.prod(shape))
        new = _factor_shape(rng, total)
        if rng.random() < 0.3 and new:
            new[rng.randrange(len(new))] = -1
        rows.append((shape, strides, tuple(new)))
    return params(rows, "v")


GATHER_DTYPES = (np.float32, np.float64, np.int64, np.int32, np.int8, np.uint8, np.float16, np.bool_,
                 np.complex64)


def _storage(rng: random.Random, n: int, dtype) -> np.ndarray:
    values = np.array([rng.randint(0, 99) for _ in range(n)])
    if dtype is np.bool_:
        return (values % 3 == 0).astype(np.bool_)
    return values.astype(dtype)


def gather_cases():
    """(storage, shape, strides, storage_offset or None for the default)."""
    rng = random.Random(1109)
    s = lambda n, dtype=np.float64: _storage(rng, n, dtype)  # noqa: E731
    rows = [
        (s(6), (2, 3), (3, 1), None), (s(6), (3, 2), (1, 3), None), (s(10), (2, 2), (3, 1), 1),
        (s(8, np.int32), (4,), (2,), None), (s(5, np.int64), (), (), 3), (s(1, np.float32), (), (), 0),
        (s(4), (3, 2), (1, 0), 1), (s(3, np.uint8), (2, 3), (0, 1), None), (s(12, np.bool_), (2, 2, 3), (6, 3, 1), 0),
        (s(4), (0, 3), (3, 1), None), (s(4), (2, 0), (1, 1), 10), (s(0), (0,), (1,), None),
        (s(9, np.float16), (3, 3), (1, 3), 0), (s(7, np.complex64), (2, 2), (2, 1), 2),
        (s(20), (2, 1, 3), (7, 100, 2), 4),
        (s(6), [2, 3], [3, 1], 0), (s(9, np.int32), as_numpy_ints((2, 2)), as_numpy_ints((4, 1)), np.int64(1)),
        # refused: reaches past the end (by one, the classic), negative offset or stride, bad layout
        (s(6), (2, 3), (3, 1), 1), (s(6), (7,), (1,), None), (s(5), (), (), 5), (s(0), (), (), None),
        (s(10), (2, 2), (5, 1), 5), (s(6), (2,), (1,), -1), (s(6), (2,), (-1,), 2),
        (s(6), (2, 3), (3,), None), (s(6), (2, -1), (1, 1), None),
    ]
    for _ in range(28):
        shape, strides, storage_offset = random_layout(rng, 4, (0, 1, 2, 2, 3, 4))
        need = storage_offset + sum((n - 1) * st for n, st in zip(shape, strides)) + 1 if 0 not in shape else 1
        size = need + rng.choice((0, 0, 1, 3)) - (1 if rng.random() < 0.1 else 0)  # sometimes one short
        rows.append((s(max(size, 0), rng.choice(GATHER_DTYPES)), shape, strides,
                     storage_offset if storage_offset or rng.random() < 0.5 else None))
    return params(rows, "g")


# ---- broadcasting.py --------------------------------------------------------------------------

def _compatible_shapes(rng: random.Random, count: int):
    out_shape = random_shape(rng, 4)
    shapes = []
    for _ in range(count):
        keep = rng.randint(0, len(out_shape))
        tail = out_shape[len(out_shape) - keep:]
        shapes.append(tuple(1 if rng.random() < 0.35 else size for size in tail))
    return shapes


def broadcast_shape_cases():
    rng = random.Random(1110)
    rows = [(), ((),), ((2, 3),), ((2, 1), (3,)), ((1, 3), (2, 1)), ((64, 1), (768,)), ((5, 1, 4), (3, 1)),
            ((2, 3), (3,), (4, 1, 1)), ((), (2, 2)), ((1,), ()), ((0,), (1,)), ((1, 0), (3, 1)), ((0, 1), (0, 5)),
            ((1, 1, 1), (1,)), ((8, 1, 6, 1), (7, 1, 5)), ((3, 1), (1, 3), (1, 1, 1)),
            ([2, 1], [1, 4]), (as_numpy_ints((3, 1)), as_numpy_ints((1, 2)))]
    # Refused: a clash anywhere, also only against a third shape, and size 0 against size 3.
    rows += [((3,), (4,)), ((2, 3), (3, 2)), ((2, 1), (3, 1)), ((0,), (3,)), ((2, 3), (3,), (2,)),
             ((4, 1, 3), (2, 3)), ((1, 2), (2, 1), (3, 3)), ((-1,), (3,)), ((2,), (-1,))]
    for _ in range(24):
        shapes = _compatible_shapes(rng, rng.randint(1, 3))
        if rng.random() < 0.25:  # break one size so that it clashes
            victim = rng.randrange(len(shapes))
            if shapes[victim]:
                dims = list(shapes[victim])
                k = rng.randrange(len(dims))
                dims[k] = dims[k] + rng.choice((2, 3))
                shapes[victim] = tuple(dims)
        rows.append(tuple(shapes))
    return params([(tuple(r),) for r in rows], "b")


def broadcast_strides_cases():
    rng = random.Random(1111)
    rows = [((3,), (1,), (2, 3)), ((2, 1), (1, 1), (2, 4)), ((1, 3), (3, 1), (4, 3)), ((), (), (2, 3)),
            ((), (), ()), ((2, 3), (3, 1), (2, 3)), ((2, 3), (1, 2), (5, 2, 3)), ((1,), (1,), (0,)),
            ((0,), (1,), (2, 0)), ((1, 3), (3, 1), (0, 3)), ((3, 1), (5, 2), (2, 3, 4)), ((4, 1), (1, 4), (4, 1)),
            ((2, 1, 3), (3, 3, 1), (7, 2, 5, 3)), ((1, 1), (9, 9), (3, 3)), ((2, 3), (0, 1), (4, 2, 3)),
            ([3, 1], [1, 1], [3, 2]), (as_numpy_ints((1, 2)), as_numpy_ints((2, 1)), as_numpy_ints((3, 2)))]
    # Refused: fewer dims, a non-1 size that differs (also 0 vs 3), bad layouts.
    rows += [((2, 3), (3, 1), (3,)), ((3,), (1,), (4,)), ((2, 3), (3, 1), (3, 3)), ((0,), (1,), (3,)),
             ((2, 1), (1, 1), (3, 4)), ((2, 3), (3,), (2, 3)), ((2,), (-1,), (2,))]
    for _ in range(28):
        shape, strides, _ = random_layout(rng, 3)
        lead = tuple(rng.choice(SIZES) for _ in range(rng.randint(0, 2)))
        target = lead + tuple(rng.choice((2, 3, 4, 0)) if s == 1 and rng.random() < 0.7 else s for s in shape)
        if rng.random() < 0.15 and target:
            k = rng.randrange(len(target))
            target = target[:k] + (target[k] + 2,) + target[k + 1:]
        rows.append((shape, strides, target))
    return params(rows, "s")


def broadcast_index_cases():
    rng = random.Random(1112)
    rows = [((1, 2), (2, 3), (3,)), ((1, 2), (2, 3), (2, 1)), ((1, 2), (2, 3), (1, 3)), ((1, 2), (2, 3), ()),
            ((1, 2), (2, 3), (2, 3)), ((), (), ()), ((3, 0, 1), (4, 2, 5), (2, 1)), ((3, 1, 4), (4, 2, 5), (1, 2, 1)),
            ((0, 0, 0), (1, 1, 1), (1,)), ((2, 1, 0, 3), (3, 2, 1, 4), (2, 1, 1, 4)), ((5,), (6,), (1,)),
            ([1, 1], [2, 2], [2]), (as_numpy_ints((2, 3)), as_numpy_ints((3, 4)), as_numpy_ints((3, 1)))]
    # Refused: shape does not broadcast to out_shape, index out of range, wrong index length.
    rows += [((1, 2), (2, 3), (2,)), ((0, 0), (2, 3), (3, 3)), ((0, 0), (2, 3), (1, 2, 3)), ((2, 0), (2, 3), (3,)),
             ((1, 3), (2, 3), (3,)), ((1,), (2, 3), (3,)), ((0,), (0,), ()), ((0, 1, 2), (2, 3), (3,))]
    for _ in range(28):
        out_shape = random_shape(rng, 4, NONZERO_SIZES)
        keep = rng.randint(0, len(out_shape))
        shape = tuple(1 if rng.random() < 0.4 else size for size in out_shape[len(out_shape) - keep:])
        out_index = tuple(rng.randrange(size) for size in out_shape)
        if rng.random() < 0.12 and shape:
            k = rng.randrange(len(shape))
            shape = shape[:k] + (shape[k] + 2,) + shape[k + 1:]
        rows.append((out_index, out_shape, shape))
    return params(rows, "x")


# ---- boundaries: what each question's cases cover (@cases(boundaries=...), @question(kinks=...)) ----

def _sizes(value) -> list[int]:
    """A shape, strides or index as ints (whatever the case holds: tuple, list, NumPy ints)."""
    return [int(v) for v in value]


def _kinds(*values) -> bool:
    """Whether some value is a list or holds NumPy integers: the other integer types the course accepts."""
    return any(isinstance(v, list) or isinstance(v, np.integer)
               or (isinstance(v, tuple) and any(isinstance(i, np.integer) for i in v)) for v in values)


def _numel(shape) -> int:
    return int(np.prod(_sizes(shape))) if shape is not None else 0


SHAPE_BOUNDARIES = {
    "size-0 dim": lambda shape, **_: 0 in _sizes(shape),
    "size-1 dim": lambda shape, **_: 1 in _sizes(shape),
    "no dims ()": lambda shape, **_: len(shape) == 0,
    "a list or NumPy ints": lambda shape, **_: _kinds(shape),
    "a negative size (refused)": lambda shape, **_: any(s < 0 for s in _sizes(shape)),
}

OFFSET_BOUNDARIES = {
    "no dims ()": lambda index, **_: len(index) == 0,
    "a storage_offset": lambda storage_offset, **_: storage_offset is not None and int(storage_offset) != 0,
    "lengths disagree (refused)": lambda index, strides, **_: len(index) != len(strides),
    "a zero stride": lambda strides, **_: 0 in _sizes(strides),
    "a list or NumPy ints": lambda index, strides, storage_offset, **_: _kinds(index, strides, storage_offset),
}

UNRAVEL_BOUNDARIES = {
    "flat == numel, the first out of range": lambda flat, shape, **_: _numel(shape) > 0 and flat == _numel(shape),
    "flat 0": lambda flat, **_: flat == 0,
    "the last element": lambda flat, shape, **_: flat == _numel(shape) - 1 >= 0,
    "two dims above 1 (row- vs column-major)": lambda shape, **_: sum(s > 1 for s in _sizes(shape)) >= 2,
    "unequal dims above 1": lambda shape, **_: len({s for s in _sizes(shape) if s > 1}) >= 2,
    "size-1 dim": lambda shape, **_: 1 in _sizes(shape),
    "size-0 dim": lambda shape, **_: 0 in _sizes(shape),
    "no dims ()": lambda shape, **_: len(shape) == 0,
}


def _wrapped(dim, ndim):
    dim, ndim = int(dim), max(ndim, 1)
    return dim + ndim if -ndim <= dim < 0 else dim


TRANSPOSE_BOUNDARIES = {
    "a negative dim": lambda dim0, dim1, **_: int(dim0) < 0 or int(dim1) < 0,
    "dim0 == dim1": lambda dim0, dim1, shape, **_: _wrapped(dim0, len(shape)) == _wrapped(dim1, len(shape)),
    "equal sizes swapped": lambda shape, dim0, dim1, **_: (
        len(shape) > 1 and _wrapped(dim0, len(shape)) != _wrapped(dim1, len(shape))
        and all(0 <= _wrapped(d, len(shape)) < len(shape) for d in (dim0, dim1))
        and _sizes(shape)[_wrapped(dim0, len(shape))] == _sizes(shape)[_wrapped(dim1, len(shape))]),
    "no dims ()": lambda shape, **_: len(shape) == 0,
    "a dim out of range (refused)": lambda shape, dim0, dim1, **_: any(
        not -max(len(shape), 1) <= int(d) < max(len(shape), 1) for d in (dim0, dim1)),
}

PERMUTE_BOUNDARIES = {
    "negative dims": lambda dims, **_: any(int(d) < 0 for d in dims),
    "a repeated dim (refused)": lambda shape, dims, **_: len({_wrapped(d, len(shape)) for d in dims}) < len(dims),
    "the identity": lambda shape, dims, **_: len(shape) > 0 and _sizes(dims) == list(range(len(shape))),
    "no dims ()": lambda shape, **_: len(shape) == 0,
    "wrong length (refused)": lambda shape, dims, **_: len(dims) != len(shape),
}


def _odd_size1_stride(shape, strides, **_) -> bool:
    """A size-1 dim whose stride is not what a contiguous tensor would have."""
    sizes, steps = _sizes(shape), _sizes(strides)
    if len(sizes) != len(steps) or any(s < 0 for s in sizes):
        return False
    expected = contiguous(sizes)
    return any(s == 1 and st != e for s, st, e in zip(sizes, steps, expected))


IS_CONTIGUOUS_BOUNDARIES = {
    "a size-1 dim with any stride": _odd_size1_stride,
    "an empty tensor": lambda shape, **_: 0 in _sizes(shape),
    "a zero stride": lambda strides, **_: 0 in _sizes(strides),
    "no dims ()": lambda shape, **_: len(shape) == 0,
}

VIEW_BOUNDARIES = {
    "-1 to infer": lambda new_shape, **_: -1 in _sizes(new_shape),
    "a size-1 dim with any stride": _odd_size1_stride,
    "size-0 dim": lambda shape, **_: 0 in _sizes(shape),
    "a zero stride": lambda strides, **_: 0 in _sizes(strides),
    "no dims ()": lambda shape, **_: len(shape) == 0,
}

GATHER_BOUNDARIES = {
    "a storage_offset": lambda storage_offset, **_: storage_offset is not None and int(storage_offset) != 0,
    "integer storage": lambda storage, **_: storage.dtype.kind in "iu",
    "bool or complex storage": lambda storage, **_: storage.dtype.kind in "bc",
    "a zero stride": lambda strides, **_: 0 in _sizes(strides),
    "size-0 dim": lambda shape, **_: 0 in _sizes(shape),
    "no dims ()": lambda shape, **_: len(shape) == 0,
}


def _aligned(shape, out_shape):
    """Pairs (size, its output size) of the dims `shape` shares with `out_shape`, aligned right."""
    sizes, out = _sizes(shape), _sizes(out_shape)
    return list(zip(sizes[::-1], out[::-1]))


BROADCAST_SHAPE_BOUNDARIES = {
    "a size-1 dim stretched": lambda shapes, **_: any(
        1 in _sizes(a) and any(x == 1 and y > 1 for x, y in _aligned(a, b)) for a in shapes for b in shapes),
    "different numbers of dims": lambda shapes, **_: len({len(s) for s in shapes}) > 1,
    "size 0 against 1": lambda shapes, **_: any(
        (x, y) == (1, 0) for a in shapes for b in shapes for x, y in _aligned(a, b)),
    "no shapes, or one": lambda shapes, **_: len(shapes) <= 1,
    "three shapes": lambda shapes, **_: len(shapes) >= 3,
}

BROADCAST_STRIDES_BOUNDARIES = {
    "a size-1 dim stretched": lambda shape, target_shape, **_: any(
        x == 1 and y != 1 for x, y in _aligned(shape, target_shape)),
    "new leading dims": lambda shape, target_shape, **_: len(target_shape) > len(shape),
    "size-0 target": lambda target_shape, **_: 0 in _sizes(target_shape),
    "no dims ()": lambda shape, **_: len(shape) == 0,
}

BROADCAST_INDEX_BOUNDARIES = {
    "a size-1 dim stretched": lambda out_shape, shape, **_: any(
        x == 1 and y > 1 for x, y in _aligned(shape, out_shape)),
    "new leading dims": lambda out_shape, shape, **_: len(out_shape) > len(shape),
    "no dims ()": lambda shape, **_: len(shape) == 0,
}
