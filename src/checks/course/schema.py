"""The keys a course's TOML files may hold, and the one check every such file goes through
(course/assignment.py read_course_toml).

An author's misspelt key or wrong kind of value is an error that names the key and the file,
never a setting silently ignored or a traceback later. Each file's keys are one declarative
table below: a new key is one line.
"""

from __future__ import annotations

import datetime
import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Kind:
    """What a value must be: in words, for the message, and as a test."""

    words: str
    accepts: Callable[[Any], bool]


@dataclass(frozen=True)
class Key:
    """One allowed key. `entries`: the value is a set of tables ([quiz.<key>], [[mutant]]), each
    checked against that schema. `fields`: the value is one table ([gradescope]) with these keys.
    `values`: the value is a table of keys of the author's choosing, each value of this kind."""

    kind: Kind
    required: bool = False
    entries: "Schema | None" = None
    fields: "Schema | None" = None
    values: Kind | None = None
    renamed: str = ""  # an old key, refused with what to write instead: a renamed key is never silently dropped


Schema = Mapping[str, Key]


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _is_list_of_text(value: Any) -> bool:
    return type(value) is list and all(type(item) is str and item for item in value)


TEXT = Kind("a string", lambda value: type(value) is str)
NON_EMPTY_TEXT = Kind("a non-empty string", lambda value: type(value) is str and value != "")
FILE_NAMES = Kind('a list of file names, such as ["strides.py"]', _is_list_of_text)
QUESTION_IDS = Kind('a list of question ids, such as ["engine.deep_chain"]', _is_list_of_text)
MODULE_NAMES = Kind('a list of module names, such as ["torch._dynamo"]', _is_list_of_text)
PACKAGE_NAMES = Kind('a list of top-level package names, such as ["torch"]',
                     lambda value: _is_list_of_text(value) and all(item.isidentifier() for item in value))
BOOLEAN = Kind("true or false", lambda value: type(value) is bool)
POINTS = Kind("a number of points (0 or more)", lambda value: _is_number(value) and value >= 0)
ANSWER = Kind("a number or true/false", lambda value: type(value) is bool or _is_number(value))
SECONDS = Kind("a number of seconds greater than 0", lambda value: _is_number(value) and value > 0)
MEBIBYTES = Kind("a whole number of MiB, 1 or more", lambda value: type(value) is int and value >= 1)
MEBIBYTES_OR_NONE = Kind("a whole number of MiB, 0 for none", lambda value: type(value) is int and value >= 0)
TABLES = Kind("tables, one per entry", lambda value: type(value) is dict)
ARRAY_OF_TABLES = Kind("an array of tables, each under its own [[...]] header", lambda value: type(value) is list)
TABLE = Kind("a table", lambda value: type(value) is dict)
# what Gradescope shows a student of a test in results.json, and when
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
VISIBILITY = Kind(" or ".join(f'"{v}"' for v in VISIBILITIES), lambda value: value in VISIBILITIES)

# course policy (checks.policy reads these, and checks each date's time zone and order there)
DATE_TIME = Kind("a date and time, such as 2030-06-30T23:59:00+02:00",
                 lambda value: type(value) in (datetime.datetime, str))
PERCENT = Kind("a percentage from 0 to 100", lambda value: _is_number(value) and 0 <= value <= 100)
SHOW_HIDDEN = ("at_once", "after_due")  # when students see the hidden checks' results
SHOW_HIDDEN_KIND = Kind(" or ".join(f'"{v}"' for v in SHOW_HIDDEN), lambda value: value in SHOW_HIDDEN)
LATE_KINDS = ("none", "per_day", "per_hour")
LATE_KIND = Kind(" or ".join(f'"{v}"' for v in LATE_KINDS), lambda value: value in LATE_KINDS)
COUNTS = ("last", "best", "last_before_due")  # which of a student's submissions counts
COUNTS_KIND = Kind(" or ".join(f'"{v}"' for v in COUNTS), lambda value: value in COUNTS)

LATE_TABLE: Schema = {
    "kind": Key(LATE_KIND),
    "percent": Key(PERCENT),  # taken per started day or hour late, of the score earned
    "cap": Key(PERCENT),  # the most taken in all
    "close": Key(DATE_TIME),  # the hard close: nothing is accepted after it
}

POLICY_TABLE: Schema = {
    "time_zone": Key(Kind('an IANA time zone name, such as "Europe/Zurich"', lambda value: type(value) is str)),
    "release": Key(DATE_TIME),
    "due": Key(DATE_TIME),
    "counts": Key(COUNTS_KIND),
    "show_hidden": Key(SHOW_HIDDEN_KIND),
    # its old name said the opposite of what `true` did (true showed the results before the due date)
    "hidden_before_due": Key(BOOLEAN, renamed='show_hidden = "after_due" (results wait for the due date) or '
                                             '"at_once" (shown as soon as graded)'),
    "late": Key(TABLE, fields=LATE_TABLE),
}

TOLERANCE = Kind("a tolerance of 0 or more, such as 0.01", lambda value: _is_number(value) and value >= 0)
DIGITS = Kind("a whole number of significant digits from 1 to 15", lambda value: type(value) is int and 1 <= value <= 15)

QUIZ_ENTRY: Schema = {
    "answer": Key(ANSWER, required=True),
    "points": Key(POINTS, required=True),
    # how close a numeric answer must be (course/tolerance.py): rtol and atol, or digits
    "rtol": Key(TOLERANCE),
    "atol": Key(TOLERANCE),
    "digits": Key(DIGITS),
}

GRADESCOPE_TABLE: Schema = {
    "visibility": Key(VISIBILITY),
    "questions": Key(TABLE, values=VISIBILITY),  # question id, or its first part ("quiz"), to a visibility
}

ASSIGNMENT_TOML: Schema = {
    "title": Key(TEXT),
    "files": Key(FILE_NAMES),
    "provided": Key(FILE_NAMES),
    "sandbox_imports": Key(MODULE_NAMES),
    "grader_imports": Key(MODULE_NAMES),
    "block_imports": Key(PACKAGE_NAMES),
    "fresh_worker_per_question": Key(BOOLEAN),
    "question_seconds": Key(SECONDS),
    "submission_seconds": Key(SECONDS),
    "submission_memory_mib": Key(MEBIBYTES),
    "temp_mib": Key(MEBIBYTES_OR_NONE),
    "quiz": Key(TABLES, entries=QUIZ_ENTRY),
    "hidden_only": Key(QUESTION_IDS),  # read by `checks verify`: questions with no public check, on purpose
    "gradescope": Key(TABLE, fields=GRADESCOPE_TABLE),  # read by exports/gradescope.py
    "policy": Key(TABLE, fields=POLICY_TABLE),  # read by policy/config.py: this assignment's dates and late policy
}

MUTANT_ENTRY: Schema = {
    "name": Key(NON_EMPTY_TEXT, required=True),
    "question": Key(NON_EMPTY_TEXT, required=True),
    "file": Key(NON_EMPTY_TEXT, required=True),
    "find": Key(NON_EMPTY_TEXT, required=True),
    "replace": Key(TEXT, required=True),
    # a change that must NOT cost points (a quiz answer inside its key's tolerance, say)
    "keeps_points": Key(BOOLEAN),
}

MUTANTS_TOML: Schema = {
    "mutant": Key(ARRAY_OF_TABLES, entries=MUTANT_ENTRY),
}


def problems(table: Mapping[str, Any], schema: Schema, within: str = "", outer: Schema | None = None) -> list[str]:
    """Every mistake in `table` against `schema`, one sentence each. `within` names the table
    ("[quiz.a_grad]") for keys below the top level; `outer` is the schema of the table around it."""
    where = f" in {within}" if within else ""
    found = []
    for key, value in table.items():
        spec = schema.get(key)
        if spec is None and outer is not None and key in outer:
            found.append(f"`{key}` is read as part of {within}: in TOML a key belongs to the last [table] above "
                         f"it, so move `{key} = ...` above the first [table] of the file")
        elif spec is None:
            close = difflib.get_close_matches(key, list(schema), n=1, cutoff=0.7)
            found.append(f"unknown key `{key}`{where}" + (f" (did you mean `{close[0]}`?)" if close
                                                         else f" (known: {', '.join(schema)})"))
        elif spec.renamed:
            found.append(f"`{key}`{where} is no longer read: write {spec.renamed} instead")
        elif not spec.kind.accepts(value):
            found.append(f"`{key}`{where} must be {spec.kind.words}, not {_describe(value)}")
        elif spec.fields is not None:  # a table within a table is named in full: [policy.late]
            found += problems(value, spec.fields, f"[{within.strip('[]')}.{key}]" if within else f"[{key}]",
                              None if within else schema)
        elif spec.values is not None:
            label = f"[{within.strip('[]')}.{key}]" if within else f"[{key}]"
            found += [f"`{name}` in {label} must be {spec.values.words}, not {_describe(item)}"
                      for name, item in value.items() if not spec.values.accepts(item)]
        elif spec.entries is not None:
            for label, entry in _entries(key, value):
                if type(entry) is not dict:
                    found.append(f"{label} must be a table, not {_describe(entry)}")
                else:
                    found += problems(entry, spec.entries, label, None if within else schema)
    for key, spec in schema.items():
        if spec.required and key not in table:
            found.append(f"{within or 'the file'} has no `{key}` ({spec.kind.words})")
    return found


def _entries(key: str, value: dict | list) -> list[tuple[str, Any]]:
    """Each table of a set, with the header an author would look for: [quiz.a_grad], or the
    n-th [[mutant]] (with its name where it has one)."""
    if type(value) is dict:
        return [(f"[{key}.{name}]", entry) for name, entry in value.items()]
    labelled = []
    for number, entry in enumerate(value, start=1):
        name = entry.get("name") if type(entry) is dict else None
        labelled.append((f"[[{key}]] number {number}" + (f" ({name!r})" if type(name) is str else ""), entry))
    return labelled


def _describe(value: Any) -> str:
    """A value as an author would recognise it in their file."""
    if type(value) is str:
        return f"the string {value!r}"
    if type(value) is bool:
        return f"the boolean {str(value).lower()}"
    if type(value) in (int, float):
        return f"the number {value!r}"
    if type(value) is list:
        return f"the list {_short(value)}"
    if type(value) is dict:
        return "a table"
    return f"the {type(value).__name__} {_short(value)}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
