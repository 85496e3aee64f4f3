"""The questions a suite declares, read from its source without running it.

`checks test ASSIGNMENT QUESTION` and `%checks test QUESTION` check the ids they are given before
anything starts (the sandbox, torch): `@question("strides.offset", ...)` is read as written, and
`@question("rules.{op}_backward", points={"add": 2, ...})` as one question per key of `points`.
A suite whose ids are not all literal in its source is not listed (None); its questions are then
known once it has run. Their points are read the same way (declared_points), so that a README's
table of points is generated from the suite rather than written a second time.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path


def declared_questions(suite_dir: Path) -> list[str] | None:
    """Every question id the `test_*.py` files of `suite_dir` declare, in their order; None when one
    cannot be read from the source alone (an id built at run time, say)."""
    calls = _question_calls(suite_dir)
    if calls is None:
        return None
    found: list[str] = []
    for call in calls:
        ids = _ids_of(call)
        if ids is None:
            return None
        found += [qid for qid in ids if qid not in found]
    return found


def declared_points(suite_dir: Path) -> dict[str, float] | None:
    """Each question's points as the `test_*.py` files of `suite_dir` declare them (a question named
    by several test functions is worth their sum), in declaration order; None when an id or its
    points are not literal in the source."""
    calls = _question_calls(suite_dir)
    if calls is None:
        return None
    found: dict[str, float] = {}
    for call in calls:
        ids, points = _ids_of(call), _points_of(call)
        if ids is None or points is None:
            return None
        for qid, value in zip(ids, points if isinstance(points, list) else [points] * len(ids)):
            found[qid] = found.get(qid, 0.0) + value
    return found


def _question_calls(suite_dir: Path) -> list[ast.Call] | None:
    """The `question(...)` calls of the suite's `test_*.py` files, file by file in their order; None
    when a file cannot be read or parsed."""
    calls: list[ast.Call] = []
    for path in sorted(suite_dir.glob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return None
        calls += [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _is_question_call(node)]
    return calls


def _points_of(call: ast.Call) -> float | list[float] | None:
    """The literal `points` of a @question: a number, or for a templated id the values of its mapping."""
    node = next((keyword.value for keyword in call.keywords if keyword.arg == "points"),
                call.args[1] if len(call.args) > 1 else None)
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None
    if isinstance(value, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
        return [float(v) for v in value.values()]
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _is_question_call(node: ast.Call) -> bool:
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name == "question"


def _ids_of(call: ast.Call) -> list[str] | None:
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        return None
    template = call.args[0].value
    fields = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    if not fields:
        return [template]
    points = next((keyword.value for keyword in call.keywords if keyword.arg == "points"), None)
    if len(fields) != 1 or not isinstance(points, ast.Dict):
        return None
    keys = [key.value if isinstance(key, ast.Constant) else None for key in points.keys]
    if not all(isinstance(key, str) for key in keys):
        return None
    return [template.format(**{fields[0]: key}) for key in keys]
