"""The likely mistakes of 01_tensors, for the public checks: looked up, never computed.

diagnoses.json beside this file is written by `checks build` from the grader's models of each
mistake: for each public case, the wrong answers a common mistake gives there and what to say of
each, in the words the grader uses. This module only compares what came back with those values;
it holds no way to compute an answer. A case or a value the table does not list gets no hint.

    expect_equal(got, expected, diagnose=diagnosis("strides.numel", shape=shape, expected=expected))
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

REFUSED = object()  # `got` when the student raised ValueError on an input PyTorch accepts
_REFUSED_DATA = {"refused": True}
_TABLE_FILE = Path(__file__).with_name("diagnoses.json")


def plain(value: Any) -> Any:
    """`value` as JSON data: sequences and arrays as lists, NumPy scalars as Python ones."""
    if value is REFUSED:
        return _REFUSED_DATA
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (tuple, list)) or (hasattr(value, "__len__") and hasattr(value, "__getitem__")):
        return [plain(v) for v in value]
    raise TypeError(f"no plain form for {type(value).__name__}")


def case_key(case: dict[str, Any]) -> str:
    """The table's key for one case: its arguments as canonical JSON."""
    return json.dumps(plain(case), sort_keys=True)


def _fits(pattern: Any, value: Any) -> bool:
    """Whether `value` is the wrong answer `pattern`; None in a pattern is a place not compared (the
    stride of a size-1 dim, which no address depends on)."""
    if pattern is None:
        return True
    if isinstance(pattern, list):
        return isinstance(value, list) and len(value) == len(pattern) and all(map(_fits, pattern, value))
    if isinstance(pattern, bool) or isinstance(value, bool):
        return type(pattern) is type(value) and pattern == value
    return pattern == value


def _load() -> dict[str, dict[str, list]]:
    try:
        return json.loads(_TABLE_FILE.read_text(encoding="utf-8"))["questions"]
    except (OSError, ValueError, KeyError):
        return {}  # no table (a release being built): no hints


_TABLE = _load()


def diagnosis(qid: str, **case: Any) -> Callable[[Any], str | None]:
    """The `diagnose` for one public case of question `qid`: given what came back, the likely mistake
    or None."""
    try:
        mistakes = _TABLE.get(qid, {}).get(case_key(case), [])
    except TypeError:
        mistakes = []

    def named(got: Any) -> str | None:
        try:
            seen = plain(got)
        except Exception:  # noqa: BLE001 - whatever the student returned, a diagnosis never fails a check
            return None
        return next((message for value, message in mistakes if _fits(value, seen)), None)
    return named


def refusal_hint(qid: str, **case: Any) -> str | None:
    """What to say to a student whose function raised ValueError on an input PyTorch accepts."""
    return diagnosis(qid, **case)(REFUSED)
