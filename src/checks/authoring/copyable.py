"""Copyable answers in released files: lines of a solution region that reach students anyway.

A release (assignments/, the student export, a notebook, an export's student side) must hold no
implementation of a graded function, not even in a helper such as a table of likely mistakes.
Two measures, each on code with comments, docstrings and layout gone:

- a *line* of a solution region with at least LINE_TOKENS tokens, found as it is in a released file;
- a *run* of RUN_LINES consecutive solution-region lines (RUN_TOKENS tokens at least, together)
  found in a released file with every name renamed in order of first use (`a, b` for `size,
  step`), so that a copy with other variable names is still found.

Lines the lesson teaches on purpose (the five-line training loop a README shows) are named in an
allow list by the caller, never by lowering the measures.
"""

from __future__ import annotations

import builtins
import io
import json
import keyword
import tokenize
from dataclasses import dataclass
from pathlib import Path

from checks.course.solution_regions import Region, split_regions

LINE_TOKENS = 10
RUN_LINES = 3
RUN_TOKENS = 18
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER, tokenize.ENCODING}
_KEPT_NAMES = set(keyword.kwlist) | set(dir(builtins))


@dataclass(frozen=True)
class Copy:
    file: str  # the released file, relative to its release
    line: int  # where the copy starts there (1-based; a notebook's lines counted through its code cells)
    text: str  # the normalised code found
    source: str  # the solution file it comes from

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text!r} (from the solution regions of {self.source})"


def _tokens(line: str) -> list[tuple[int, str]] | None:
    """The significant tokens of one physical line, or None where it does not tokenize alone."""
    try:
        return [(tok.type, tok.string) for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline)
                if tok.type not in _SKIPPED]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def _plain(tokens: list[tuple[int, str]]) -> str:
    return " ".join(text for _, text in tokens)


def _renamed(lines: list[list[tuple[int, str]]]) -> str:
    """The lines with every name but keywords, builtins and attributes renamed by first use."""
    names: dict[str, str] = {}
    out = []
    for tokens in lines:
        words, after_dot = [], False
        for kind, text in tokens:
            if kind == tokenize.NAME and text not in _KEPT_NAMES and not after_dot:
                text = names.setdefault(text, f"v{len(names)}")
            words.append(text)
            after_dot = text == "."
        out.append(" ".join(words))
    return " / ".join(out)


def _code_lines(text: str) -> list[tuple[int, list[tuple[int, str]]]]:
    """(line number, tokens) of each line that holds code, docstring-only lines dropped."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = _tokens(line)
        if tokens and not (len(tokens) == 1 and tokens[0][0] == tokenize.STRING):
            out.append((number, tokens))
    return out


def solution_code(solution_dir: Path) -> dict[str, list[list[tuple[int, str]]]]:
    """Each solution file's regions, as lists of tokenised code lines (one list per region)."""
    found: dict[str, list[list[tuple[int, str]]]] = {}
    for path in sorted(solution_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        name = path.relative_to(solution_dir).as_posix()
        for part in split_regions(path.read_text(encoding="utf-8"), name):
            if isinstance(part, Region):
                lines = [tokens for _, tokens in _code_lines("".join(part.body))]
                if lines:
                    found.setdefault(name, []).append(lines)
    return found


def released_text(name: str, data: bytes) -> str | None:
    """The code a released file shows: a notebook's code cells, a text file as it is; None for binaries."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if name.endswith(".ipynb"):
        try:
            cells = json.loads(text).get("cells", [])
        except (ValueError, AttributeError):
            return text
        return "\n".join("".join(cell.get("source", "")) if isinstance(cell.get("source"), list)
                         else str(cell.get("source", "")) for cell in cells)
    return text


def copyable(solution_dir: Path, released: dict[str, bytes], *, allowed: set[str] = frozenset()) -> list[Copy]:
    """Every copy of solution-region code in `released` (file name -> bytes), as `Copy`s; a normalised
    text in `allowed` (as `Copy.text` shows it) is taught on purpose and not reported."""
    lines: dict[str, str] = {}
    runs: dict[str, str] = {}
    for source, regions in solution_code(solution_dir).items():
        for region in regions:
            for tokens in region:
                if len(tokens) >= LINE_TOKENS:
                    lines.setdefault(_plain(tokens), source)
            for k in range(len(region) - RUN_LINES + 1):
                window = region[k:k + RUN_LINES]
                if sum(len(t) for t in window) >= RUN_TOKENS:
                    runs.setdefault(_renamed(window), source)
    found: list[Copy] = []
    for name, data in sorted(released.items()):
        text = released_text(name, data)
        if text is None:
            continue
        code = _code_lines(text)
        for number, tokens in code:
            plain = _plain(tokens)
            if plain in lines and plain not in allowed:
                found.append(Copy(name, number, plain, lines[plain]))
        for k in range(len(code) - RUN_LINES + 1):
            window = code[k:k + RUN_LINES]
            renamed = _renamed([tokens for _, tokens in window])
            if renamed in runs and renamed not in allowed:
                found.append(Copy(name, window[0][0], renamed, runs[renamed]))
    return found
