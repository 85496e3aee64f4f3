"""Student text made inert: every name and byte a student controls is data in every output, shown
as written and never read as markup, a control sequence or a formula (DESIGN.md, "The trust
boundary"). Folder and file names, exception messages, printed output, reprs and quiz answers
reach feedback.md, feedback.html, report.html, the CSV, the gradebook and the terminal.

One module, so that every writer escapes the same way and a gap is fixed once, for all of them.
It is in the course layer because a submission's name is mended where it is read (submissions.py);
the writers (reports, progress, cli) sit above it. HTML itself is escaped by Jinja2's autoescape
and by markdown-it with raw HTML off; what reaches them has been through `visible` here first.
"""

from __future__ import annotations

import re
from typing import Any

# a lone surrogate: what os.fsdecode makes of a byte that is not UTF-8 ('\udcff' for b'\xff'), or
# what a student's own str may hold; no UTF-8 writer (file, terminal, SQLite) accepts one
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls, DEL, C1 controls (ESC, CSI, OSC and the rest start terminal sequences), and the
# bidirectional overrides that reorder what a terminal or a browser shows
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def mend(text: str) -> str:
    """`text` with each lone surrogate written as an escape (b'\\xff' decoded by os.fsdecode shows
    as `\\xff`), so that writing it as UTF-8 cannot raise. Idempotent."""
    if text.isascii():
        return text
    return _SURROGATE.sub(_surrogate_escape, text)


def _surrogate_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def visible(text: str, *, keep: str = "\n\t") -> str:
    """`text` mended, with every control character but those in `keep` written as an escape
    (ESC as `\\x1b`): nothing a terminal, a pager or a browser would act on. keep="" for what must
    stay on one line (a name in a table row or a heading)."""
    text = mend(text)
    return _CONTROL.sub(lambda m: m.group(0) if m.group(0) in keep else _escape(m.group(0)), text)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_tree(value: Any) -> Any:
    """`value` (JSON-like data: dicts, lists, str, numbers) with every str made `visible`."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_tree(key): visible_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_tree(item) for item in value]
    return value


# ---------------------------------------------------------------- Markdown (feedback.md)

# what would turn plain text into markup within a line: code spans, emphasis (not snake_case),
# HTML and autolinks, links and images, entities, table cells, attribute lists (Python-Markdown's
# `{: onclick=...}`); and a backslash that would escape the next character, or end the line (a
# break in CommonMark; Python-Markdown then reads no more structure)
_INLINE_SPECIAL = re.compile(r"[`*<&|{]|\\(?=[!-/:-@\[-`{-~]|\s*$)|\](?=[(\[])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# written as entities, not escaped with a backslash: every Markdown dialect reads an entity as the
# character it names, as text, but not every one honours a backslash before them (Python-Markdown
# leaves `\<` as a backslash and a live tag); a backslash before the others is honoured by all
_ENTITIES = {"<": "&lt;", "&": "&amp;", "|": "&#124;"}
# what would start a block at the beginning of a line: a heading, quote, list, table, fence,
# thematic break or setext underline, a link definition; a number then . or ) starts a list
_BLOCK_START = re.compile(r"^([#>+=|~:\[-]|\d+(?=[.)]))")


def markdown(text: str) -> str:
    """One line of plain text as Markdown that renders as written, within a line, in CommonMark
    (markdown-it) and Python-Markdown alike: no emphasis, code, links, HTML or table cells.
    Newlines and control characters are shown as escapes."""
    return _INLINE_SPECIAL.sub(lambda m: _ENTITIES.get(m.group(0)) or "\\" + m.group(0), visible(text, keep="\t"))


def markdown_line(text: str) -> str:
    """`markdown`, and a line that would start a heading, quote, list, table or fence starts as
    plain text. Leading blanks are dropped: four would start a code block; and trailing ones: two
    end a line with a break."""
    escaped = markdown(text.strip(" \t"))
    match = _BLOCK_START.match(escaped)
    if not match:
        return escaped
    if match.group(0)[0].isdigit():  # "1. x" would start a list: escape its dot
        end = match.end()
        return escaped[:end] + "\\" + escaped[end:]
    return "\\" + escaped


# ---------------------------------------------------------------- CSV

# OWASP's CSV injection list: a cell starting with one of these is a formula to a spreadsheet
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell as a spreadsheet shows it as written: text on one line, and text that would be read
    as a formula behind a single quote (OWASP). Numbers the grader wrote stay numbers."""
    if not isinstance(value, str):
        return value
    text = visible(value, keep="")
    return "'" + text if text.startswith(_FORMULA_START) else text
