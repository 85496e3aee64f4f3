import functools
import math
import re
import sys

import numpy as np
import pytest
import torch

from checks.sandbox import codec
from checks.sandbox.codec import TensorData, UnsupportedType, decode, encode


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, "text", (1, 2), [1, (2, 3)], {"a": [1.0]}, (), np.int64(7), np.float32(0.5),
    np.bool_(True), np.arange(6, dtype=np.int32).reshape(2, 3), np.zeros((0, 3)), np.array(True),
])
def test_plain_values_round_trip(value):
    back = decode(encode(value))
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape and np.array_equal(back, value)
    else:
        assert type(back) is type(value) and back == value


def test_non_finite_floats_round_trip():
    back = decode(encode([math.inf, -math.inf, math.nan]))
    assert back[0] == math.inf and back[1] == -math.inf and math.isnan(back[2])


def test_tensors_come_back_as_arrays_with_dtype_and_device():
    back = decode(encode(torch.arange(4.0, requires_grad=True)))
    assert isinstance(back, TensorData)
    assert back.dtype == "torch.float32" and back.device == "cpu" and back.shape == (4,) and back.requires_grad
    assert np.array_equal(back.array, np.arange(4.0, dtype=np.float32))


def test_meta_tensors_carry_no_values():
    back = decode(encode(torch.empty(2, 3, device="meta")))
    assert back.array is None and back.device == "meta" and back.shape == (2, 3)


class AlwaysEqual:
    def __eq__(self, other):
        return True


class TupleSubclass(tuple):
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [AlwaysEqual(), TupleSubclass((1, 2)), {1: 2}, np.array(["a"]),
                                   np.array([object()]), lambda: 1, {"k": AlwaysEqual()}])
def test_anything_else_is_refused_when_encoding(value):
    with pytest.raises(UnsupportedType):
        encode(value)


@pytest.mark.parametrize("payload", [
    b"not json",
    b"",
    codec.TREE_LENGTH.pack(100) + b"{}",  # a tree longer than the payload
    codec.pack({"a": {"dtype": "object", "shape": [1], "at": 0}}, [bytes(8)]),
    codec.pack({"a": {"dtype": "float64", "shape": [3], "at": 0}}, [bytes(8)]),  # fewer bytes than its shape
    codec.pack({"x": 1}, []),  # unknown tag
    codec.pack({"a": 1, "t": 2}, []),
    codec.TREE_LENGTH.pack(200) + b"[" * 100 + b"]" * 100,  # deeper than allowed
    codec.pack({"T": {"array": None, "shape": [-1], "dtype": "x", "device": "cpu"}}, []),
])
def test_malformed_payloads_are_refused_not_trusted(payload):
    with pytest.raises(UnsupportedType):
        decode(payload)


def test_arrays_of_either_byte_order_or_layout_and_several_in_one_payload_round_trip():
    values = {"big": np.arange(5, dtype=">f8"), "little": np.arange(3, dtype="<i4"), "empty": np.zeros((0, 2)),
              "transposed": np.arange(6.0).reshape(2, 3).T, "big_strided": np.arange(10, dtype=">i4")[::3],
              "t": torch.ones(2, 2, dtype=torch.float64), "scalar": np.float32(1.5)}
    back = decode(encode(values))
    for key in ("big", "little", "empty", "transposed", "big_strided"):
        assert np.array_equal(back[key], values[key]) and back[key].shape == values[key].shape
        assert back[key].dtype.name == values[key].dtype.name and back[key].dtype.isnative
    assert np.array_equal(back["t"].array, np.ones((2, 2))) and back["scalar"] == np.float32(1.5)


def test_oversized_payloads_are_refused(monkeypatch):
    monkeypatch.setattr(codec, "MAX_PAYLOAD_BYTES", 100)
    with pytest.raises(UnsupportedType, match="limit"):  # in the grader, whatever the sandbox's encode did
        decode(codec.pack(list(range(100)), []))
    with pytest.raises(codec.TooLarge, match="at most 0 MiB can come back"):  # and in the sandbox, before sending
        encode(list(range(100)))


# what the sandbox refuses to send, from the value's size alone (issue 43): a value the grader would
# refuse is said so at once, whatever it costs to encode, and never reaches the grader
TOO_LARGE = {
    "a tuple of millions": (tuple(range(3_000_000)), "a tuple of 3,000,000 items (at most 100,000 values"),
    "a list of millions": ([0.5] * 6_000_000, "a list of 6,000,000 items"),
    "a dict of many keys": ({str(i): [i] * 3 for i in range(400_000)}, "a dict of 400,000 items"),
    "many small lists": ([[i, [i]] for i in range(40_000)], "more than 100,000 values in all"),
    "a list that holds itself": ((lambda v: v.append(v) or v)([]), "nested deeper than 32 levels"),
    "a deep nest": (functools.reduce(lambda inner, _: [inner], range(200_000), 0), "nested deeper than 32 levels"),
    "a long str": ("y" * (30 << 20), "30.0 MiB of text and array data (at most 16 MiB"),
    "arrays that add up": ([np.zeros(2**20)] * 3, "24.0 MiB of text and array data"),
    "a tensor": (torch.zeros(5 * 2**20), "20.0 MiB of text and array data"),
    "text that grows when encoded": ("\x00" * (4 << 20), "MiB encoded (at most 16 MiB"),
}


@pytest.mark.parametrize("value, words", TOO_LARGE.values(), ids=TOO_LARGE.keys())
def test_a_value_too_large_is_refused_before_it_is_encoded(value, words):
    with pytest.raises(codec.TooLarge, match=re.escape(words)) as refused:
        encode(value)
    assert str(refused.value).startswith(codec.TOO_LARGE)


def test_the_size_check_runs_no_code_of_the_value():
    class Exploding(list):  # not plain data: the check does not look into it (encode then refuses its type)
        def __iter__(self):
            raise AssertionError("iterated")

        def __len__(self):
            raise AssertionError("measured")

    codec.refuse_too_large([Exploding([1, 2])] * 10)
    with pytest.raises(UnsupportedType, match="Exploding"):
        encode([Exploding([1, 2])])


def test_a_value_at_the_cap_still_crosses():
    value = [[1] * 998 for _ in range(codec.MAX_ITEMS // 1000)]  # each list and each item count, as decode counts
    assert decode(encode(value)) == value
    with pytest.raises(codec.TooLarge):
        encode(value + [[1] * 1000])


# what a student's code can write to the worker's socket in place of an honest reply: each must
# be refused as UnsupportedType (the student's fault), never escape as another exception
FORGED = {
    "bytes past the payload's end": {"a": {"dtype": "float64", "shape": [1], "at": 0}},
    "bytes before its start": {"a": {"dtype": "float64", "shape": [1], "at": -8}},
    "where as text": {"a": {"dtype": "float64", "shape": [1], "at": "0"}},
    "where as a bool": {"a": {"dtype": "float64", "shape": [1], "at": True}},
    "tensor values as a list": {"T": {"array": [1, 2], "dtype": "torch.float32", "device": "cpu", "shape": [2]}},
    "tensor values as a string": {"T": {"array": "AAAA", "dtype": "torch.float32", "device": "cpu", "shape": [1]}},
    "an empty shape too large to exist": {"a": {"dtype": "float64", "shape": [2**39, 2**39, 0], "at": 0}},
    "a scalar of such a shape": {"s": {"dtype": "complex128", "shape": [2**39, 2**20, 0], "at": 0}},
    "shape as a dict": {"a": {"dtype": "float64", "shape": {"0": 1}, "at": 0}},
    "dict with a list as its body": {"d": [1, 2]},
    "non-finite float tag with a number": {"f": 1.5},
}


@pytest.mark.parametrize("payload", FORGED.values(), ids=FORGED.keys())
def test_forged_payloads_are_refused_as_unsupported(payload):
    with pytest.raises(UnsupportedType):
        decode(codec.pack(payload, [bytes(4)]))


@pytest.mark.parametrize("dtype, data", [("<U1", "a".encode("utf-32-le")), ("S4", b"abcd"), ("V8", bytes(8)),
                                         ("datetime64[s]", bytes(8)), ("object", bytes(8))],
                         ids=["str", "bytes", "void", "datetime", "object"])
def test_only_numeric_and_bool_dtypes_cross_even_at_the_right_size(dtype, data):
    assert np.dtype(dtype).itemsize == len(data)  # refused for its dtype, not its size
    for tag in ("a", "s"):
        with pytest.raises(UnsupportedType, match="dtype"):
            decode(codec.pack({tag: {"dtype": dtype, "shape": [1] if tag == "a" else [], "at": 0}}, [data]))


def test_a_numpy_or_torch_in_sys_modules_that_is_not_the_package_breaks_no_encoding(monkeypatch):
    """At bwrap a withheld package's folder is empty: code that removes the import blocker imports
    it as a namespace package, and a student may plant a module of that name. Encoding stays the
    codec's (a value or UnsupportedType), never an AttributeError that kills the worker."""
    import types

    for name in ("numpy", "torch"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    assert codec.decode(codec.encode([False, 1.5, ("a", None)])) == [False, 1.5, ("a", None)]
    with pytest.raises(codec.UnsupportedType):
        codec.encode(object())
