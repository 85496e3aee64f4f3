"""Which functions of a released file are still the stub: nothing written in them yet.

`checks build` turns each solution region into `raise NotImplementedError("<function>: <hint>")`
(authoring/build.py), naming the function it stands in, and records in the release's marker the
functions each file leaves to write (`[stubs]`), so that a student's copy knows them anywhere.
A file is untouched while every one of them still raises its stub's NotImplementedError: `checks
pack` then says that nothing is implemented yet.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence


def stub_functions(source: str) -> list[str] | None:
    """The functions (`name`, or `Class.method`) whose own body raises the stub's NotImplementedError,
    one naming that function; None when `source` is not Python that parses."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: list[str] = []
    _walk(tree.body, [], found)
    return found


def untouched(source: str, stubs: Sequence[str] | None) -> bool:
    """Whether nothing is implemented in this file yet. `stubs`: the functions the release left to
    write (the marker's record); each must still be the stub. Without a record, a file is untouched
    when it still has a stub and every function of its own with a public name (no leading `_`)
    is one: the helpers a course gives have private names."""
    still = stub_functions(source)
    if not still:
        return False
    if stubs:
        return set(stubs) <= set(still)
    return all(name in still for name in _public_functions(source))


def _walk(body: Iterable[ast.stmt], outer: list[str], found: list[str]) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            _walk(node.body, [*outer, node.name], found)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = ".".join([*outer, node.name])
            if any(_is_stub_raise(statement, name) for statement in _own_statements(node)):
                found.append(name)
            _walk(node.body, [*outer, node.name], found)


def _own_statements(function: ast.AST) -> Iterable[ast.AST]:
    """The statements of a function, nested blocks included, nested functions and classes not."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _is_stub_raise(node: ast.AST, name: str) -> bool:
    """`raise NotImplementedError("<name>: ...")`, as `checks build` writes it."""
    if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
        return False
    call = node.exc
    if not (isinstance(call.func, ast.Name) and call.func.id == "NotImplementedError" and len(call.args) == 1):
        return False
    message = call.args[0]
    return isinstance(message, ast.Constant) and isinstance(message.value, str) and message.value.startswith(f"{name}:")


def _public_functions(source: str) -> list[str]:
    names: list[str] = []

    def walk(body: Iterable[ast.stmt], outer: list[str]) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                walk(node.body, [*outer, node.name])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                names.append(".".join([*outer, node.name]))

    walk(ast.parse(source).body, [])
    return names
