"""Shared fixtures: the repository's course, and small throwaway courses built in tmp_path.

The tests are grouped by layer (unit, sandbox, grading, courses, interop, server, browser); a
test module may take another's cases and helpers by its name (`from test_hardening import
ATTACKS`), whichever folder it is in.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from checks.course.assignment import list_assignments
from checks.sandbox.supervisor import prepare_parent

prepare_parent()  # before any torch op in this process: we fork graders and sandboxes from it

REPO = Path(__file__).resolve().parents[1]
sys.path[1:1] = sorted(str(folder) for folder in Path(__file__).parent.iterdir()
                       if folder.is_dir() and any(folder.glob("test_*.py")))


def course_assignments(root: Path = REPO) -> list[str]:
    """The assignments of the course at `root`, found as the library finds them (list_assignments):
    a test meant to hold for every assignment takes these, never a list of names, so that one
    `checks new` wrote is held to it too (tests/courses/test_new_assignment.py shows it)."""
    return list_assignments(root)


ASSIGNMENTS = course_assignments()


def each_assignment(marks: dict[str, pytest.MarkDecorator], otherwise: pytest.MarkDecorator) -> list:
    """pytest.param per assignment of the course: those named in `marks` with their mark (the fast
    one a slow test runs by default), every other one, found, with `otherwise`."""
    return [pytest.param(name, marks=marks.get(name, otherwise)) for name in ASSIGNMENTS]


@pytest.fixture
def make_course(tmp_path: Path):
    """Write a one-assignment course: {relative path: source} under tmp_path; returns its root."""

    def make(files: dict[str, str]) -> Path:
        for relative, text in files.items():
            path = tmp_path / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        return tmp_path

    return make


@pytest.fixture(scope="session")
def postgres_cluster():
    """One real PostgreSQL for the session (tests/postgres.py); skips where it is not installed."""
    from postgres import missing_postgres, running_postgres

    reason = missing_postgres()
    if reason:
        pytest.skip(reason)
    with running_postgres() as cluster:
        yield cluster
