"""A student notebook as the assignment's files: one answer cell a file.

An answer cell is a code cell whose first line is `%%checks file NAME` (NAME such as strides.py or
quiz.toml); the rest of the cell is that file. The nbgrader and otter exports release notebooks
made of such cells, the `%%checks file` magic runs them in a kernel as modules, and the grader
reads them back here with nbformat: as JSON, never executed. A file whose cell appears twice is
the later cell, as in a kernel that ran the notebook from the top.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from types import ModuleType

from checks.course.caps import MAX_NOTEBOOK_CELLS

ANSWER_LINE = "%%checks file {name}"
_ANSWER = re.compile(r"^%%checks[ \t]+file[ \t]+(?P<name>[^\s]+)[ \t]*$")


class NotANotebook(ValueError):
    """The bytes are not a notebook nbformat can read; str() says why."""


@dataclass
class NotebookAnswers:
    """The files a notebook's answer cells hold, in cell order."""

    files: dict[str, str] = field(default_factory=dict)
    repeated: list[str] = field(default_factory=list)  # names with more than one cell (the last counts)


def answer_cell(name: str, code: str) -> str:
    """The source of the answer cell that holds file `name`."""
    return ANSWER_LINE.format(name=name) + "\n" + code


def parse_answer_cell(source: str) -> tuple[str, str] | None:
    """(file name, code) when `source` is an answer cell, else None. Blank lines before the
    `%%checks file` line are allowed, as IPython allows them before a cell magic."""
    lines = source.lstrip("\n").split("\n", 1)
    match = _ANSWER.match(lines[0].rstrip("\r"))
    if match is None:
        return None
    return match["name"], lines[1] if len(lines) > 1 else ""


def missing_cell_note(name: str, notebook: str) -> str:
    """Why a file is missing from a notebook submission, in the words of its feedback."""
    return (f"{notebook} has no answer cell for {name} (a code cell whose first line is "
            f"`{ANSWER_LINE.format(name=name)}`); put the released cell back")


def _text(source: object) -> str:
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    if not isinstance(source, str):
        raise ValueError("a code cell's source is not text")
    return source


def import_nbformat() -> ModuleType:
    """nbformat, without jsonschema's optional IRI format checker: importing rfc3987_syntax builds
    a grammar for about 3 s, in every grading child, and a notebook's schema checks no IRI."""
    sys.modules.setdefault("rfc3987_syntax", None)  # jsonschema then skips that checker
    import nbformat

    return nbformat


def read_answers(data: bytes) -> NotebookAnswers:
    """The answer cells of a notebook file's bytes; NotANotebook when nbformat cannot read them."""
    nbformat = import_nbformat()  # imported here (or by the grader's parent, once): only notebooks need it

    try:
        text = data.decode("utf-8")
        cells = json.loads(text).get("cells")
        if isinstance(cells, list) and len(cells) > MAX_NOTEBOOK_CELLS:
            raise ValueError(f"it has {len(cells):,} cells, and the grader reads notebooks of at most "
                             f"{MAX_NOTEBOOK_CELLS:,}")
        # an invalid notebook is refused, quietly: nbformat would log the validation error
        notebook = nbformat.reads(text, as_version=4, capture_validation_error={})
        if not isinstance(notebook.get("cells"), list):
            raise ValueError("it has no list of cells")
        sources = [_text(cell["source"]) for cell in notebook.cells if cell.get("cell_type") == "code"]
    except Exception as error:  # anything nbformat or a hostile JSON document throws means: not a notebook
        raise NotANotebook(f"not a notebook nbformat can read ({type(error).__name__}: {str(error)[:200]})") from None
    answers = NotebookAnswers()
    for source in sources:
        parsed = parse_answer_cell(source)
        if parsed is None:
            continue
        name, code = parsed
        if name in answers.files and name not in answers.repeated:
            answers.repeated.append(name)
        answers.files[name] = code
    return answers
