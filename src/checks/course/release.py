"""What a student is handed, made from the reference: each solution region replaced by a
NotImplementedError carrying its hint, the quiz's answers blanked. The release (`checks build`)
and the exports that ship stubs (otter) both make them here.
"""

from __future__ import annotations

import re
from pathlib import Path

from checks.course.assignment import QUIZ_FILE, QuizItem
from checks.course.solution_regions import Region, split_regions

DEF = re.compile(r"^(?P<indent>[ \t]*)(?:async\s+)?(?:def|class)\s+(?P<name>\w+)")
QUIZ_ANSWER = re.compile(r"^(?P<key>[A-Za-z0-9_\-]+)\s*=.*$")
IGNORED = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}

def strip_solutions(source: str, filename: str = "<source>") -> str:
    """Replace every solution region with a NotImplementedError carrying the region's hint."""
    out: list[str] = []
    for part in split_regions(source, filename):
        if isinstance(part, Region):
            where = _enclosing_name(out, len(part.indent))
            hint = part.hint or "not implemented yet"
            out.append(f"{part.indent}raise NotImplementedError({f'{where}: {hint}'!r})\n")
        else:
            out.append(part[1])
    return "".join(out)


def _enclosing_name(lines: list[str], indent: int) -> str:
    """`function`, or `Class.method` for a method: the name a student looks for."""
    names: list[str] = []
    for line in reversed(lines):
        match = DEF.match(line)
        if match and len(match["indent"]) < indent:
            names.insert(0, match["name"])
            indent = len(match["indent"])
            if indent == 0:
                break
    return ".".join(names) or "this part"


def blank_quiz(text: str, notes: dict[str, str] | None = None) -> str:
    """Keep the questions (comments), empty every answer; `notes`: a comment after a key's empty
    answer (how close a numeric answer must be, where the author set it)."""
    notes = notes or {}

    def blank(match: re.Match) -> str:
        note = notes.get(match["key"])
        return f'{match["key"]} = ""' + (f"  # {note}" if note else "")
    return "".join(QUIZ_ANSWER.sub(blank, line) for line in text.splitlines(keepends=True))


def quiz_notes(quiz: tuple[QuizItem, ...]) -> dict[str, str]:
    """What the release's quiz.toml says beside an answer: the tolerance an author declared."""
    return {item.key: f"a number, counted {item.tolerance.describe()}" for item in quiz
            if not isinstance(item.answer, bool) and item.tolerance.declared}


def stub_files(solution_dir: Path, *, leave_out: Path | None = None,
               quiz_notes: dict[str, str] | None = None) -> dict[str, bytes]:
    """The release's files made from solutions/<name> (every file but `leave_out`, the lesson
    source, and caches): .py files stripped of their solutions, the quiz blanked, the rest as is."""
    files: dict[str, bytes] = {}
    for path in sorted(solution_dir.rglob("*")):
        relative = path.relative_to(solution_dir)
        if path.is_dir() or IGNORED.intersection(relative.parts) or path == leave_out:
            continue
        name = relative.as_posix()
        if path.suffix == ".py":
            files[name] = strip_solutions(path.read_text(encoding="utf-8"), name).encode()
        elif name == QUIZ_FILE:
            files[name] = blank_quiz(path.read_text(encoding="utf-8"), quiz_notes).encode()
        else:
            files[name] = path.read_bytes()
    return files
