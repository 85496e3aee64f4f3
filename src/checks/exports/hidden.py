"""The files of an assignment that a grader elsewhere needs, and nothing an author keeps back.

Every export ships the same course tree: autograder/<name>/ without mutants.toml (the hidden
suite and assignment.toml), the course-provided files of the release, and only those reference
files the suite grades other questions with (`use_reference`), under references/<name>/, never
solutions/. Paths are relative to the exported course root, so `checks --course ROOT` grades.
"""

from __future__ import annotations

import ast
from pathlib import Path

from checks.course.assignment import REFERENCES_DIR, Assignment, CourseError

MUTANTS_FILE = "mutants.toml"
SKIPPED_PARTS = {"__pycache__", ".pytest_cache"}


def hidden_files(assignment: Assignment) -> dict[str, Path]:
    """Course-relative path -> the file on disk, for everything an exported grader of `assignment` needs."""
    if not (assignment.autograder_dir / "assignment.toml").is_file():
        raise CourseError(f"{assignment.name} has no hidden suite: {assignment.autograder_dir}/assignment.toml is missing")
    chosen: dict[str, Path] = {}
    for path in sorted(assignment.autograder_dir.rglob("*")):
        relative = path.relative_to(assignment.autograder_dir)
        if path.is_file() and relative.name != MUTANTS_FILE and not SKIPPED_PARTS & set(relative.parts):
            chosen[f"autograder/{assignment.name}/{relative.as_posix()}"] = path
    for name in assignment.provided:
        chosen[f"assignments/{assignment.name}/{name}"] = _existing(assignment.release_dir / name)
    for name in referenced_files(assignment.autograder_dir):
        chosen[f"{REFERENCES_DIR}/{assignment.name}/{name}"] = _existing(assignment.solution_dir / name)
    for name in public_modules(assignment.autograder_dir):
        chosen[f"assignments/{assignment.name}/tests/{name}.py"] = _existing(assignment.public_tests_dir / f"{name}.py")
    return chosen


def public_modules(suite_dir: Path) -> list[str]:
    """The public checks' modules a suite loads with `public_module(__file__, "name")` (the diagnosis
    table it shares with them): released, so shipping them gives nothing away."""
    names: set[str] = set()
    for path in sorted(suite_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "public_module":
                if len(node.args) != 2 or not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                    raise CourseError(f"{path}:{node.lineno}: write public_module(__file__, \"name\") with the name as a "
                                      "string, for an export to know which module to ship")
                names.add(node.args[1].value)
    return sorted(names)


def referenced_files(suite_dir: Path) -> list[str]:
    """The reference files a suite grades with: every `use_reference=("a.py", ...)` written in it."""
    names: set[str] = set()
    for path in sorted(suite_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.keyword) and node.arg == "use_reference":
                names.update(_string_constants(node.value, path))
    return sorted(names)


def _string_constants(node: ast.expr, path: Path) -> list[str]:
    if isinstance(node, ast.Constant) and node.value is None:
        return []
    if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                       for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    raise CourseError(f"{path}:{node.lineno}: use_reference must be written as a tuple of file names "
                      "(such as (\"rules.py\",)) for an export to know which reference files to ship")


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise CourseError(f"{path} is missing: the exported grader needs it")
    return path
