"""A fingerprint of what grades an assignment: its hidden suite and the course files it grades with.

Each grade is recorded with it (gradebook.submissions.suite_fingerprint), so that a regrade can say
why a score changed: the hidden suite changed, or the student's files did (their own fingerprint,
grading/batch.fingerprint), or neither. It covers every file under autograder/<name>/ but the
mutants (authors' test material, never used to grade) and caches, the course's provided files, and
the reference files a suite may grade with (solutions/<name>/, the assignment's files).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from checks.course.assignment import Assignment

_LEFT_OUT_DIRS = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
_LEFT_OUT_FILES = {"mutants.toml", ".DS_Store"}


def suite_fingerprint(assignment: Assignment) -> str:
    """sha256 of the hidden suite's files, the provided files and the reference's files, with their
    paths: the same on every machine for the same course, whatever the files' times."""
    digest = hashlib.sha256()
    _add_tree(digest, "autograder", assignment.autograder_dir)
    for name in sorted(assignment.provided):
        _add_file(digest, f"provided/{name}", assignment.release_dir / name)
    for name in sorted(assignment.files):
        _add_file(digest, f"reference/{name}", assignment.reference_dir / name)
    return digest.hexdigest()


def _add_tree(digest: "hashlib._Hash", label: str, root: Path) -> None:
    if not root.is_dir():
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _LEFT_OUT_DIRS)
        for name in sorted(files):
            if name in _LEFT_OUT_FILES or name.endswith((".pyc", ".pyo")):
                continue
            path = Path(folder) / name
            _add_file(digest, f"{label}/{path.relative_to(root).as_posix()}", path)


def _add_file(digest: "hashlib._Hash", label: str, path: Path) -> None:
    try:
        data = path.read_bytes() if path.is_file() else None
    except OSError:
        data = None
    digest.update(os.fsencode(label) + b"\0")
    digest.update(b"-" if data is None else len(data).to_bytes(8, "big") + data)
