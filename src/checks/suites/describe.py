"""Short, readable summaries of values for feedback: what was called and what came back."""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from checks.sandbox.codec import TensorData
from checks.suites.references import Packed

MAX_SUMMARY = 120
MAX_ARGUMENT = 60  # each argument of a call; the call as a whole stays readable
SMALL_ARRAY = 6  # arrays with at most this many elements are shown in full


class Later:
    """Feedback text made only when it is shown (formatted, printed or tested for truth): most
    cases pass, and saying what one ran (each array's shape, a program line by line) can cost more
    than checking it. Give one where a check takes a text: `Later(lambda: describe(program))`."""

    __slots__ = ("_make", "_text")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = str(self._make())
        return self._text

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __bool__(self) -> bool:
        return bool(str(self))

    def __repr__(self) -> str:
        return repr(str(self))


_CALL_THEN_OUTCOME = re.compile(r"^(\w+)\((.*?)\) (raised|returned|crashed|did not|was not|sent back) ")
# how a student fault's account begins (suites/student.py): what happened instead of a value
_FAULT = re.compile(r"(raised|crashed|did not finish|was not run|was stopped|sent back|could not run"
                    r"|returned an unsupported type)\b")


def elide_arguments(message: str, shortest: int = 20) -> str:
    """`f(<long arguments>) raised X` -> `f(...) raised X`: the outcome without the call's details."""
    match = _CALL_THEN_OUTCOME.match(message)
    if match is None or len(match.group(2)) < shortest:
        return message
    return f"{match.group(1)}(...) {match.group(3)} {message[match.end():]}"


def failed_how(message: str) -> str:
    """What a failure says happened, without what was run: cases whose failures give the same
    are alike (one cause, such as a stub or a missing module). `f(<arguments>) raised X` gives
    `f(...) raised X`; a scenario on a line of its own, then a fault (`call_or_fail` with a
    `text`: "While running t = Tensor(...):\nraised ModuleNotFoundError: ..."), gives the fault
    and what follows it. Anything else is its own: a wrong value names the case it is wrong for."""
    _, newline, rest = message.partition("\n")
    if newline and _FAULT.match(rest):
        return rest
    return elide_arguments(message, shortest=0)


def summarize(value: Any, limit: int = MAX_SUMMARY) -> str:
    """A one-line description, short enough for a table cell or a feedback line. Its work is
    bounded by `limit`, not by the value: a container is described only until the line is full
    (a student's value may hold a hundred thousand items), and a long str is cut before repr."""
    parts: list[str] = []
    _Summary(parts, limit + 1).add(value)
    text = "".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Summary:
    """Writes a value's description into `parts` until `room` characters are written, then stops."""

    def __init__(self, parts: list[str], room: int) -> None:
        self.parts = parts
        self.room = room

    def write(self, text: str) -> None:
        self.parts.append(text[: max(self.room, 0)])
        self.room -= len(text)

    def add(self, value: Any) -> None:
        if self.room <= 0:
            return
        if isinstance(value, Packed):
            value = value.value
        if isinstance(value, (tuple, list)):
            opening, closing = ("(", ",)" if len(value) == 1 else ")") if isinstance(value, tuple) else ("[", "]")
            self.write(opening)
            for index, item in enumerate(value):
                if self.room <= 0:
                    return
                if index:
                    self.write(", ")
                self.add(item)
            self.write(closing)
        elif isinstance(value, dict):
            self.write("{")
            for index, (key, item) in enumerate(value.items()):
                if self.room <= 0:
                    return
                self.write((", " if index else "") + _leaf(key, self.room) + ": ")
                self.add(item)
            self.write("}")
        else:
            self.write(_leaf(value, self.room))


def _leaf(value: Any, room: int) -> str:
    """A value that is not a container, described; a str or bytes cut to `room` first."""
    if isinstance(value, (str, bytes)) and len(value) > room:
        return repr(value[:room])
    return _summarize(value)


def summarize_call(name: str, args: tuple, kwargs: dict) -> str:
    parts = ([summarize(arg, MAX_ARGUMENT) for arg in args]
             + [f"{key}={summarize(val, MAX_ARGUMENT)}" for key, val in kwargs.items()])
    return f"{name}({', '.join(parts)})"


def _summarize(value: Any) -> str:
    if isinstance(value, TensorData):
        return repr(value)
    if isinstance(value, np.ndarray):
        if value.size <= SMALL_ARRAY:
            values = " ".join(np.array2string(value, separator=", ", precision=3, suppress_small=True).split())
            return f"array({values}, {value.dtype})"
        return f"array(shape={tuple(value.shape)}, {value.dtype})"
    if isinstance(value, np.generic):
        return f"{value.item()!r} ({value.dtype})"
    if type(value).__module__ == "torch":
        shape, dtype, device = getattr(value, "shape", None), getattr(value, "dtype", ""), getattr(value, "device", "")
        if shape is not None:
            return f"tensor(shape={tuple(shape)}, {dtype}, {device})"
    if isinstance(value, tuple):
        inner = ", ".join(_summarize(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_summarize(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_summarize(item)}" for key, item in value.items()) + "}"
    return repr(value)
