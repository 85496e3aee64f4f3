import json
import math

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
    json.dumps({"a": {"dtype": "object", "shape": [1], "b64": ""}}).encode(),
    json.dumps({"a": {"dtype": "float64", "shape": [3], "b64": "AAAA"}}).encode(),  # size mismatch
    json.dumps({"x": 1}).encode(),  # unknown tag
    json.dumps({"a": 1, "t": 2}).encode(),
    b"[" * 100 + b"]" * 100,  # deeper than allowed
    json.dumps({"T": {"array": None, "shape": [-1], "dtype": "x", "device": "cpu"}}).encode(),
])
def test_malformed_payloads_are_refused_not_trusted(payload):
    with pytest.raises(UnsupportedType):
        decode(payload)


def test_oversized_payloads_are_refused(monkeypatch):
    monkeypatch.setattr(codec, "MAX_PAYLOAD_BYTES", 100)
    with pytest.raises(UnsupportedType, match="limit"):
        decode(encode(list(range(100))))
