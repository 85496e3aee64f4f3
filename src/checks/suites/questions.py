"""The questions a suite declares, read from its source without running it.

`checks test ASSIGNMENT QUESTION` and `%checks test QUESTION` check the ids they are given before
anything starts (the sandbox, torch): `@question("strides.offset", ...)` is read as written, and
`@question("rules.{op}_backward", points={"add": 2, ...})` as one question per key of `points`.
A suite whose ids are not all literal in its source is not listed (None); its questions are then
known once it has run.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path


def declared_questions(suite_dir: Path) -> list[str] | None:
    """Every question id the `test_*.py` files of `suite_dir` declare, in their order; None when one
    cannot be read from the source alone (an id built at run time, say)."""
    found: list[str] = []
    for path in sorted(suite_dir.glob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_question_call(node):
                ids = _ids_of(node)
                if ids is None:
                    return None
                found += [qid for qid in ids if qid not in found]
    return found


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
