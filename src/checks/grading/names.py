"""Each submission's name in a batch: its folder in the output folder and its row in the gradebook.

A submission's own name (its folder name or zip stem, the name of the folder that wraps it, or
the student's name in an LMS's bulk download: course/submissions.Found) comes from a student and
is data: mended where it is read, and made here a name no other submission and none of the
grader's own files can take. A name that another submission's equals once mended (b'\\xff' and a
literal `\\xff`), or but for case or Unicode normalisation (one folder on macOS or Windows), a
name of the grader's own files (gradebook.csv, a temp file: any `.name`, checks-...; and
`Points Possible`, the CSV's line of maxima), or one too long for a folder gets a short digest of
the submission's path added (and, in a bulk download, of which student's files it is). So it is
graded apart, under the same name on every run of the same command, with a warning that says so.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Sequence

from checks.config.errors import UsageError
from checks.course.submissions import Found
from checks.reports.analytics import ANALYTICS_JSON, MISTAKES_CSV
from checks.reports.gradebook import DB_FILE, LOCK_FILE
from checks.reports.regrade import REGRADE_CSV
from checks.reports.html import REPORT_FILE
from checks.reports.render import FEEDBACK_FILE, FEEDBACK_HTML_FILE, GRADEBOOK_FILE, POINTS_POSSIBLE, RESULTS_FILE

# the grader's own files in the output folder (a submission's folder sits beside them), and the
# label of gradebook.csv's line of maxima (a student of that name would read as it)
RESERVED_NAMES = {"", ".", "..", GRADEBOOK_FILE, REPORT_FILE, DB_FILE, f"{DB_FILE}-wal", f"{DB_FILE}-shm",
                  f"{DB_FILE}-journal", LOCK_FILE, RESULTS_FILE, FEEDBACK_FILE, FEEDBACK_HTML_FILE, POINTS_POSSIBLE,
                  ANALYTICS_JSON, MISTAKES_CSV, REGRADE_CSV}
# the grader's temp files (.results.json.*.tmp), and its sandbox's folders (checks-zygote-*)
RESERVED_PREFIXES = (".", "checks-")
MAX_NAME_BYTES = 200  # of a submission's folder: NAME_MAX is 255, and the digest needs room


@dataclass(frozen=True)
class BatchName:
    name: str  # in the gradebook, the output folder and every file written
    note: str = ""  # why it is not the submission's own name: a warning in its feedback and on the terminal


def as_found(path: Path | Found) -> Found:
    """A path named on the command line, as a Found under its own name."""
    return path if isinstance(path, Found) else Found(path)


def _identity(found: Found) -> bytes:
    """What tells one submission apart from every other: its path, and which student's files of a
    bulk download it is (a digest of it is the same on every run of the same command)."""
    path = os.fsencode(os.path.abspath(found.path))  # "." has a name too; links keep their own
    return path if not found.members else path + b"\0" + b"\0".join(os.fsencode(e) for e, _ in found.members)


def batch_names(paths: Sequence[Path | Found], held: Collection[str] = ()) -> list[BatchName]:
    """The name of each submission in a batch: distinct, whatever the students named them (see the
    module's docstring). Of names that clash, one the gradebook already `held` keeps it, else the
    first by path. Raises UsageError only for a path given twice (a TA's typo, not a student)."""
    found = [as_found(path) for path in paths]
    identities = [_identity(item) for item in found]
    twice = sorted({item.describe() for item, key in zip(found, identities) if identities.count(key) > 1})
    if twice:
        raise UsageError(f"{', '.join(twice)} given more than once: name each submission once")
    own = [item.name for item in found]
    notes = [_own_problem(name) for name in own]
    groups: dict[str, list[int]] = defaultdict(list)
    for k, name in enumerate(own):
        if not notes[k]:
            groups[_key(name)].append(k)
    for members in groups.values():  # one keeps its name, the same on every run
        members.sort(key=lambda k: (own[k] not in held, identities[k]))
        for k in members[1:]:
            notes[k] = (f"another submission ({own[members[0]]}) has the same name once names that are not UTF-8 "
                        "are mended, or but for case or Unicode normalisation")
    taken = {_key(name) for name, note in zip(own, notes) if not note}
    named = []
    for identity, name, note in zip(identities, own, notes):
        if not note:
            named.append(BatchName(name))
            continue
        new = _apart(name, identity, taken)
        taken.add(_key(new))
        named.append(BatchName(new, f"submitted as {name}: graded as {new}, since {note}"))
    return named


def _key(name: str) -> str:
    """What two names share when one folder on some file system would hold both (macOS, Windows)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def _own_problem(name: str) -> str:
    """Why a submission may not have its own name as its folder, or ""."""
    key = _key(name)
    if key in {_key(reserved) for reserved in RESERVED_NAMES} or key.startswith(RESERVED_PREFIXES):
        return "that name is kept for the grader's own files"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return "the name is too long for a folder"
    return ""


def _apart(name: str, identity: bytes, taken: set[str]) -> str:
    """`name`, shortened, made no reserved name, with a digest of its `identity`: no name in `taken`."""
    if _key(name).startswith(RESERVED_PREFIXES) or _key(name) in {_key(r) for r in RESERVED_NAMES}:
        name = "_" + name
    stem = name.encode("utf-8")[:MAX_NAME_BYTES - 20].decode("utf-8", errors="ignore")
    digest = hashlib.sha256(identity).hexdigest()
    for size in (8, 16, 64):
        new = f"{stem}~{digest[:size]}"
        if _key(new) not in taken:
            return new
    count = 2
    while _key(f"{stem}~{digest[:8]}~{count}") in taken:  # names planted to collide with every digest
        count += 1
    return f"{stem}~{digest[:8]}~{count}"
