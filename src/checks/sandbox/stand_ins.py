"""Modules a question's code may call but never hold: the grader answers each call from outside.

A question that grades one part of a submission beside a working copy of another (02_autograd's
engine beside the reference rules) must not put that copy's code where the student's code runs:
it could be read and carried out. Instead the worker holds a stand-in module of the same name
whose functions send their arguments to the grader (plain data, in the codec's format, untrusted)
and return its answer; the real module runs here, in the grader's process. Inputs are capped, so
that an answer costs the grader little, and what the real function raises goes back as a builtin
exception type and its message, never a traceback of the reference.
"""

from __future__ import annotations

import builtins
import math
import types
from typing import Any

from checks.sandbox import codec

# The checks that use stand-ins pass small arrays, and the grader's work for an answer must stay
# small whatever a student sends: what an answer may cost is bounded before it is computed (the
# values given, any shape or count among them, what they broadcast to, and the outer product of
# any two, which bounds a matmul's), and what it took is counted in the reply's time (supervisor.py)
MAX_ELEMENTS = 1 << 16  # values in all the arrays of a call; each number given; an array they broadcast to
MAX_PAIR = 1 << 22  # the sizes of any two arrays of a call, multiplied
MESSAGE_CHARS = 500


class StandIns:
    """The real modules behind a worker's stand-ins, by module name, and the functions each offers."""

    def __init__(self, modules: dict[str, types.ModuleType]) -> None:
        self.modules = modules
        self.functions = {name: tuple(sorted(attribute for attribute, value in vars(module).items()
                                             if not attribute.startswith("_") and isinstance(value, types.FunctionType)
                                             and value.__module__ == module.__name__))
                          for name, module in modules.items()}

    def to_wire(self) -> dict[str, list[str]]:
        """What the worker needs to build the stand-ins: each module's function names."""
        return {name: list(functions) for name, functions in self.functions.items()}

    def answer(self, module: Any, name: Any, payload: bytes) -> dict:
        """The answer to one call (a stand-in's `module.name(*args, **kwargs)`, arguments in
        `payload`): {"value": ...} or {"raised": (builtin exception name, message)}."""
        if type(module) is not str or type(name) is not str or name not in self.functions.get(module, ()):
            return _raised("AttributeError", f"module {str(module)[:60]!r} has no function {str(name)[:60]!r} here")
        try:
            args, kwargs = _arguments(codec.decode(payload))
        except codec.UnsupportedType as error:
            return _raised("TypeError", f"{module}.{name}() was given {error}")
        too_much = _too_much([*args, *kwargs.values()])
        if too_much:
            return _raised("ValueError", f"{module}.{name}() was given {too_much}; the checks that answer "
                                         f"{module} take small inputs")
        try:
            return {"value": getattr(self.modules[module], name)(*args, **kwargs)}
        except Exception as error:  # noqa: BLE001 - the reference's refusal of these inputs is the answer
            return _raised(_builtin_name(error), _message(error))


def _arguments(decoded: Any) -> tuple[list, dict]:
    if (type(decoded) is not list or len(decoded) != 2 or type(decoded[0]) is not list
            or type(decoded[1]) is not dict):
        raise codec.UnsupportedType("malformed arguments")
    return decoded[0], decoded[1]


def _too_much(values: list) -> str:
    """What makes a call too costly to answer ("" where nothing does): see MAX_ELEMENTS, MAX_PAIR."""
    shapes, numbers, stack = [], [], list(values)
    while stack:
        value = stack.pop()
        shape = getattr(value, "shape", None)
        if type(shape) is tuple:
            shapes.append(shape)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
            if type(value) is tuple and value and all(type(item) is int for item in value):
                numbers.append(abs(math.prod(value)))  # a shape, or an index that could be one
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif type(value) is int:
            numbers.append(abs(value))
        elif type(value) is slice:
            numbers += [abs(part) for part in (value.start, value.stop, value.step) if type(part) is int]
    sizes = sorted((math.prod(shape) for shape in shapes), reverse=True)
    if sum(sizes) > MAX_ELEMENTS:
        return f"{sum(sizes):,} values (at most {MAX_ELEMENTS:,})"
    if numbers and max(numbers) > MAX_ELEMENTS:
        return f"the number {max(numbers):,} (at most {MAX_ELEMENTS:,})"
    if len(sizes) > 1 and sizes[0] * sizes[1] > MAX_PAIR:
        return f"arrays of {sizes[0]:,} and {sizes[1]:,} values (their product at most {MAX_PAIR:,})"
    broadcast = _broadcast_size(shapes)
    if broadcast > MAX_ELEMENTS:
        return f"arrays that broadcast to {broadcast:,} values (at most {MAX_ELEMENTS:,})"
    return ""


def _broadcast_size(shapes: list[tuple]) -> int:
    """The size of what these shapes broadcast to, each dim the largest given (NumPy's rule where
    they agree; an upper bound where they do not, which the reference refuses anyway)."""
    width = max((len(shape) for shape in shapes), default=0)
    dims = [1] * width
    for shape in shapes:
        offset = width - len(shape)
        for position, size in enumerate(shape, start=offset):
            dims[position] = max(dims[position], size)
    return math.prod(dims)


def _builtin_name(error: BaseException) -> str:
    """The nearest builtin exception type: a reference's own types stay in the grader."""
    for kind in type(error).__mro__:
        if kind.__module__ == "builtins" and issubclass(kind, Exception):
            return kind.__name__
    return "RuntimeError"


def _message(error: BaseException) -> str:
    try:
        return str(error)[:MESSAGE_CHARS]
    except Exception:  # noqa: BLE001
        return type(error).__name__


def _raised(kind: str, message: str) -> dict:
    return {"raised": (kind, message)}


def exception_type(name: Any) -> type[Exception]:
    """The builtin exception type an answer names (RuntimeError for anything else): used inside
    the sandbox, where the answer is trusted but nothing but builtins is raised from it."""
    kind = getattr(builtins, name, None) if type(name) is str else None
    return kind if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError
