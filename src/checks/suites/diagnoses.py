"""A failure's diagnosis: the likely mistake a suite named in its message, read back out of it.

Suites name a student's likely mistake in their failure messages with one phrase, "Likely mistake:"
(api._failed writes it for every `diagnose`, `shape_hint` and `alternatives`; suites that build a
message themselves write it too). Staff analytics count the class's mistakes per question
(reports/analytics.py), so the diagnosis is read back here from each failed case's message, in one
place, and kept with the question's result (QuestionResult.diagnoses) and in the gradebook.

A diagnosis may quote the case (\"the storage offset (3) was not added\"): `mistake_key` drops the
numbers, so that one mistake made on different cases counts once.
"""

from __future__ import annotations

import re

MARKER = "Likely mistake:"
MAX_DIAGNOSES = 8  # distinct diagnoses kept per question: the rest add nothing a TA reads
MAX_DIAGNOSIS_CHARS = 300
# what scoring._with_count appends to the line of a failure that stands for others alike
_ALIKE = re.compile(r"\s*\(\d+ more cases? failed the same way\)\s*$")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)


def diagnosis_of(message: str) -> str | None:
    """The likely mistake a failure message names (the rest of the line after "Likely mistake:"),
    or None when it names none."""
    at = message.find(MARKER)
    if at < 0:
        return None
    line = message[at + len(MARKER):].split("\n", 1)[0]
    text = _ALIKE.sub("", line).strip()
    if not text:
        return None
    return text if len(text) <= MAX_DIAGNOSIS_CHARS else text[: MAX_DIAGNOSIS_CHARS - 3] + "..."


def diagnoses_of(messages: list[str]) -> list[str]:
    """The distinct diagnoses of a question's failure messages, in the order they first appear,
    one per mistake (mistake_key), at most MAX_DIAGNOSES."""
    found: dict[str, str] = {}
    for message in messages:
        text = diagnosis_of(message)
        if text is not None and len(found) < MAX_DIAGNOSES:
            found.setdefault(mistake_key(text), text)
    return list(found.values())


def mistake_key(text: str) -> str:
    """What two diagnoses of the same mistake share: the text with its numbers as '#', lowercased,
    blanks collapsed."""
    return " ".join(_NUMBER.sub("#", text).lower().split())
