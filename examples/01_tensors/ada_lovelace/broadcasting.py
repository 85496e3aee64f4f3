"""Broadcasting, computed column by column from the right."""

from itertools import zip_longest


def _ints(values, name):
    out = tuple(int(v) for v in values)
    if any(out[i] != values[i] for i in range(len(out))):
        raise ValueError(f"{name} should hold integers")
    return out


def broadcast_shape(*shapes):
    shapes = [_ints(s, "shape") for s in shapes]
    if any(d < 0 for s in shapes for d in s):
        raise ValueError("negative size")
    out = []
    for column in zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        sizes = {d for d in column if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"sizes {sorted(sizes)} cannot be broadcast together")
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))


def broadcast_strides(shape, strides, target_shape):
    shape, strides, target = _ints(shape, "shape"), _ints(strides, "strides"), _ints(target_shape, "target")
    if len(shape) != len(strides) or min(shape + strides, default=0) < 0:
        raise ValueError("invalid layout")
    if len(target) < len(shape):
        raise ValueError("cannot expand to fewer dims")
    out = [0] * len(target)
    for k in range(1, len(shape) + 1):
        have, want = shape[-k], target[-k]
        if have == want:
            out[-k] = strides[-k]
        elif have != 1 or want < 0:
            raise ValueError(f"cannot expand size {have} to {want}")
    return tuple(out)


def broadcast_index(out_index, out_shape, shape):
    out_index, out_shape, shape = _ints(out_index, "out_index"), _ints(out_shape, "out_shape"), _ints(shape, "shape")
    if len(out_index) != len(out_shape) or not all(0 <= i < d for i, d in zip(out_index, out_shape)):
        raise ValueError("out_index is not an index of out_shape")
    if len(shape) > len(out_shape) or min(shape, default=0) < 0:
        raise ValueError("shape cannot broadcast to out_shape")
    tail = out_shape[len(out_shape) - len(shape):]
    index = out_index[len(out_shape) - len(shape):]
    if any(d not in (1, t) for d, t in zip(shape, tail)):
        raise ValueError(f"{shape} does not broadcast to {out_shape}")
    return tuple(0 if d == 1 else i for d, i in zip(shape, index))
