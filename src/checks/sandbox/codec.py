"""The only format in which values leave the sandbox: plain data as JSON, arrays' bytes beside it.

`encode` runs inside the sandbox (untrusted) and `decode` in the grader. The grader trusts
nothing about the bytes: `decode` rebuilds only None, bool, int, float, str, NumPy scalars and
arrays of numeric or bool dtype, lists, tuples, str-keyed dicts, slices of ints, Ellipsis and
tensors-as-arrays, with limits on size and depth. Nothing is unpickled or evaluated.

A payload is the JSON tree's length (8 bytes), the tree, then the arrays' raw bytes: each array
in the tree names its dtype, shape and where its bytes start. Raw, because base64 inside JSON
cost a third of the grading time of 03_mlp's returned weights and gradients (megabytes a
submission) on both sides.
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
import operator
import struct
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 32
# values in all (an array is one): decoding is the grader's work, counted against the question but
# at Python's pace (a million items took seconds); plain data a check reads is far smaller
MAX_ITEMS = 100_000

# dtypes that may cross the boundary, by name: numeric and bool only (no object, str or void
# arrays), each in our byte order
DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128")
# torch dtypes NumPy has no exact twin for travel as float32 and keep their name
_WIDENED_TORCH_DTYPES = {"torch.bfloat16": "float32"}


@functools.cache
def allowed_dtypes() -> dict[str, "np.dtype"]:
    """DTYPE_NAMES as NumPy's dtypes, looked up (and back, see _dtype_names) once: NumPy works out
    a dtype from its name, or its name, in a microsecond or two each time. NumPy is imported only
    here and where an array is decoded: a sandbox worker whose question withholds NumPy never
    loads it (and can return no array of it)."""
    import numpy as np

    return {name: np.dtype(name) for name in DTYPE_NAMES}


@functools.cache
def _dtype_names() -> dict["np.dtype", str]:
    return {dtype: name for name, dtype in allowed_dtypes().items()}


TREE_LENGTH = struct.Struct("!Q")


class UnsupportedType(TypeError):
    """A value that is not plain data (raised on either side of the boundary)."""


class TooLarge(UnsupportedType):
    """Plain data, but more of it than may cross (MAX_ITEMS, MAX_DEPTH, MAX_PAYLOAD_BYTES); its
    message begins with TOO_LARGE, which is how the grader tells it from another type's refusal."""

    def __init__(self, detail: str) -> None:
        super().__init__(TOO_LARGE + detail)


TOO_LARGE = "too large: "


@dataclass(frozen=True)
class TensorData:
    """A tensor that crossed the boundary: its values (None on the meta device) and metadata."""

    array: "np.ndarray | None"
    dtype: str  # torch's name, e.g. "torch.float32"
    device: str  # e.g. "cpu", "cuda:0", "meta"
    shape: tuple[int, ...]
    requires_grad: bool

    def __repr__(self) -> str:
        return f"tensor(shape={self.shape}, dtype={self.dtype}, device={self.device})"


# ---------------------------------------------------------------- encoding (inside the sandbox)

def encode(value: Any) -> bytes:
    """Plain data to a payload; raises UnsupportedType naming the first offending value."""
    refuse_too_large(value)
    buffers = _Buffers()
    payload = pack(_to_json(value, 0, buffers), buffers.parts)
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise TooLarge(f"{len(payload) / 2**20:.1f} MiB encoded "
                       f"(at most {MAX_PAYLOAD_BYTES // 2**20} MiB can come back)")
    return payload


def refuse_too_large(value: Any) -> None:
    """Raise TooLarge, before any encoding, for a value that `decode` would refuse for its size:
    more than MAX_ITEMS values, nesting deeper than MAX_DEPTH, or more than MAX_PAYLOAD_BYTES of
    text and array data. Its work is bounded by the limits, not by the value (a tuple of millions
    is refused from its len). Only exact lists, tuples and dicts are looked into, by len and
    iteration, C code no submission can replace; anything else is `_to_json`'s to refuse or take."""
    ndarray = getattr(_loaded("numpy", "ndarray"), "ndarray", None)
    tensor = getattr(_loaded("torch", "Tensor"), "Tensor", None)
    count, size, stack = 1, 0, [(value, 0)]  # values seen (as decode counts them), bytes, to look into
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind in (list, tuple, dict):
            count += len(node)
            if len(node) > MAX_ITEMS:
                raise TooLarge(f"a {kind.__name__} of {len(node):,} items (at most {MAX_ITEMS:,} values can come back)")
            if count > MAX_ITEMS:
                raise TooLarge(f"more than {MAX_ITEMS:,} values in all (each item of a list, tuple or dict counts, "
                               "an array as one)")
            if depth >= MAX_DEPTH and len(node):
                raise TooLarge(f"a value nested deeper than {MAX_DEPTH} levels")
            if kind is dict:
                size += sum(len(key) for key in node if type(key) is str)
                stack.extend((item, depth + 1) for item in node.values())
            else:
                stack.extend((item, depth + 1) for item in node)
        elif kind is str:
            size += len(node)
        elif ndarray is not None and kind is ndarray:
            size += node.nbytes
        elif tensor is not None and kind is tensor:
            size += tensor.numel(node) * tensor.element_size(node)
        if size > MAX_PAYLOAD_BYTES:
            raise TooLarge(f"{size / 2**20:.1f} MiB of text and array data (at most {MAX_PAYLOAD_BYTES // 2**20} MiB "
                           "can come back)")


def pack(tree: Any, buffers: list[bytes]) -> bytes:
    """The payload of a JSON tree whose arrays' bytes are `buffers`, one after the other."""
    text = json.dumps(tree, allow_nan=True, separators=(",", ":")).encode()
    return b"".join([TREE_LENGTH.pack(len(text)), text, *buffers])


class _Buffers:
    """The arrays' bytes of one payload, in order, and where the next one starts."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, data: bytes) -> int:
        """Append `data`; where it starts."""
        self.parts.append(data)
        self.size += len(data)
        return self.size - len(data)


def _to_json(value: Any, depth: int, buffers: _Buffers) -> Any:
    if depth > MAX_DEPTH:
        raise UnsupportedType(f"nesting deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return {"f": repr(value)} if not math.isfinite(value) else value
    if kind in (list, tuple):
        items = [_to_json(item, depth + 1, buffers) for item in value]
        return items if kind is list else {"t": items}
    if kind is slice:  # an index, as a stand-in's caller passes it (stand_ins.py)
        try:
            return {"sl": [None if part is None else operator.index(part)
                           for part in (value.start, value.stop, value.step)]}
        except TypeError:
            raise UnsupportedType("a slice whose start, stop or step is not an integer") from None
    if value is Ellipsis:
        return {"E": None}
    if kind is dict:
        if not all(type(key) is str for key in value):
            raise UnsupportedType("a dict with keys that are not str")
        return {"d": {key: _to_json(item, depth + 1, buffers) for key, item in value.items()}}
    np = _loaded("numpy", "ndarray")  # not loaded: the value holds no array of it
    if np is not None and isinstance(value, np.generic) and kind.__module__ == "numpy":
        return {"s": _array_json(np.asarray(value), buffers)}
    if np is not None and kind is np.ndarray:
        return {"a": _array_json(value, buffers)}
    torch_json = _tensor_json(value, buffers)
    if torch_json is not None:
        return torch_json
    raise UnsupportedType(f"{kind.__module__}.{kind.__qualname__}")


def _array_json(array: "np.ndarray", buffers: _Buffers) -> dict:
    name = _dtype_names().get(array.dtype)
    if name is None:  # not allowed, or not in our byte order
        name = array.dtype.name
        if name not in DTYPE_NAMES:
            raise UnsupportedType(f"an array of dtype {array.dtype}")
        array = array.astype(allowed_dtypes()[name])
    return {"dtype": name, "shape": list(array.shape), "at": buffers.add(array.tobytes())}  # C order


def _tensor_bytes_json(tensor: Any, buffers: _Buffers) -> dict:
    """A CPU tensor's values as _array_json writes them, where NumPy is not loaded."""
    name = str(tensor.dtype).removeprefix("torch.")
    if name not in DTYPE_NAMES:
        raise UnsupportedType(f"a tensor of dtype {tensor.dtype}")
    contiguous = tensor.contiguous()
    data = ctypes.string_at(contiguous.data_ptr(), contiguous.numel() * contiguous.element_size()) \
        if contiguous.numel() else b""
    return {"dtype": name, "shape": list(contiguous.shape), "at": buffers.add(data)}


def _loaded(name: str, attribute: str) -> Any:
    """The module `name` where it is loaded and is what it says (it has `attribute`), else None: a
    "numpy" in sys.modules may be an empty folder imported as a namespace package (the jail hides
    a withheld package's files) or a student's module of that name."""
    module = sys.modules.get(name)
    return module if hasattr(module, attribute) else None


def _tensor_json(value: Any, buffers: _Buffers) -> dict | None:
    torch = _loaded("torch", "Tensor")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    tensor = torch.Tensor.detach(value)
    dtype_name = str(tensor.dtype)
    device = str(tensor.device)
    array = None
    if tensor.device.type != "meta":
        host = tensor.cpu()
        if dtype_name in _WIDENED_TORCH_DTYPES:
            host = host.float()
        host = host.resolve_conj().resolve_neg()
        array = _array_json(host.numpy(), buffers) if "numpy" in sys.modules else _tensor_bytes_json(host, buffers)
    return {"T": {"array": array, "dtype": dtype_name, "device": device,
                  "shape": list(tensor.shape), "requires_grad": bool(value.requires_grad)}}


# ---------------------------------------------------------------- decoding (in the grader)

def decode(payload: bytes) -> Any:
    """Rebuild plain data from untrusted bytes, or raise UnsupportedType saying why not."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise UnsupportedType(f"a value of {len(payload) // 2**20} MiB (the limit is {MAX_PAYLOAD_BYTES // 2**20} MiB)")
    if len(payload) < TREE_LENGTH.size:
        raise UnsupportedType("malformed payload (too short)")
    (length,) = TREE_LENGTH.unpack_from(payload)
    if length > len(payload) - TREE_LENGTH.size:
        raise UnsupportedType("malformed payload (its tree is longer than the payload)")
    try:
        # a str skips json's encoding detection
        tree = json.loads(payload[TREE_LENGTH.size:TREE_LENGTH.size + length].decode())
    except (ValueError, RecursionError) as error:
        raise UnsupportedType(f"malformed payload ({error.__class__.__name__})") from None
    buffers = memoryview(payload)[TREE_LENGTH.size + length:]
    budget = [MAX_ITEMS]
    try:
        return _from_json(tree, 0, budget, buffers)
    except UnsupportedType:
        raise
    except (ValueError, TypeError, AttributeError, KeyError, OverflowError, MemoryError, RecursionError) as error:
        # a forged payload that slipped past the checks below: refused all the same, never a grader error
        raise UnsupportedType(f"malformed payload ({error.__class__.__name__})") from None


def _from_json(node: Any, depth: int, budget: list[int], buffers: memoryview) -> Any:
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        raise UnsupportedType("a value nested too deeply or with too many items")
    kind = type(node)
    if node is None or kind in (bool, int, float, str):
        return node
    if kind is list:
        return [_from_json(item, depth + 1, budget, buffers) for item in node]
    if kind is not dict or len(node) != 1:
        raise UnsupportedType("malformed payload")
    (tag, body), = node.items()
    if tag == "t" and type(body) is list:
        return tuple(_from_json(item, depth + 1, budget, buffers) for item in body)
    if tag == "d" and type(body) is dict:
        return {key: _from_json(item, depth + 1, budget, buffers) for key, item in body.items()}
    if tag == "sl" and type(body) is list and len(body) == 3:
        if not all(part is None or type(part) is int for part in body):
            raise UnsupportedType("malformed slice")
        return slice(*body)
    if tag == "E" and body is None:
        return Ellipsis
    if tag == "f" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "a" and type(body) is dict:
        return _array_from_json(body, buffers)
    if tag == "s" and type(body) is dict:
        return _array_from_json(body, buffers)[()]
    if tag == "T" and type(body) is dict:
        return _tensor_from_json(body, buffers)
    raise UnsupportedType("malformed payload")


def _array_from_json(body: dict, buffers: memoryview) -> "np.ndarray":
    import numpy as np

    name, shape, at = body.get("dtype"), body.get("shape"), body.get("at")
    dtype = allowed_dtypes().get(name) if type(name) is str else None
    if dtype is None:  # never object, str, void or datetime arrays, whatever their size
        raise UnsupportedType(f"an array of dtype {str(name)[:40]!r}")
    if type(at) is not int or not _is_shape(shape):
        raise UnsupportedType("malformed array")
    if math.prod(size for size in shape if size) * dtype.itemsize > sys.maxsize:  # np.intp's largest
        raise UnsupportedType("malformed array (a shape too large to exist, even empty)")
    size = math.prod(shape) * dtype.itemsize
    if not 0 <= at <= len(buffers) - size:
        raise UnsupportedType("malformed array (its bytes are not in the payload)")
    return np.frombuffer(buffers[at:at + size], dtype=dtype).reshape(shape).copy()


def _tensor_from_json(body: dict, buffers: memoryview) -> TensorData:
    shape, dtype, device = body.get("shape"), body.get("dtype"), body.get("device")
    if not _is_shape(shape) or type(dtype) is not str or type(device) is not str:
        raise UnsupportedType("malformed tensor")
    if body.get("array") is not None and type(body["array"]) is not dict:
        raise UnsupportedType("malformed tensor (its values are not an array)")
    array = None if body.get("array") is None else _array_from_json(body["array"], buffers)
    if array is not None and list(array.shape) != shape:
        raise UnsupportedType("malformed tensor (values do not match its shape)")
    return TensorData(array, dtype[:40], device[:40], tuple(shape), body.get("requires_grad") is True)


def _is_shape(shape: Any) -> bool:
    return (type(shape) is list and len(shape) <= 64
            and all(type(size) is int and 0 <= size < 2**40 for size in shape))
