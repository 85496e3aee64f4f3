"""Run a suite under plain pytest, one submission per process, for authors debugging a suite:

    python -m pytest autograder/01_tensors -p checks.suites.standalone --submission solutions/01_tensors

The same plugin and sandbox as `checks grade`, without the warm parent (and without its speed:
benchmarks/grade_throughput.py uses this as the fresh-process-per-submission baseline).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.course.assignment import find_course_root, load_assignment
from checks.sandbox.supervisor import Limits, Zygote, prepare_parent
from checks.course.submissions import read_submission


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("checks")
    group.addoption("--submission", type=Path, help="the submission folder or zip to run the suite against")
    group.addoption("--assignment", help="assignment name (default: the suite folder's name)")
    group.addoption("--public", action="store_true", help="the public suite: the student's own files throughout")


def pytest_configure(config: pytest.Config) -> None:
    submission_path = config.getoption("--submission")
    if submission_path is None:
        return
    from checks.suites.plugin import ChecksPlugin

    first = Path(config.args[0].split("::")[0]).resolve() if config.args else Path.cwd()
    suite_dir = first if first.is_dir() else first.parent
    name = config.getoption("--assignment") or suite_dir.name
    assignment = load_assignment(find_course_root(suite_dir), name)
    submission = read_submission(submission_path)
    prepare_parent()
    zygote = Zygote(imports=assignment.sandbox_imports, withhold=assignment.zygote_sets)  # before collection: no suite module is imported yet
    config.add_cleanup(zygote.close)
    files = {**submission.files, **assignment.course_files()}
    public = config.getoption("--public")
    config.pluginmanager.register(ChecksPlugin(assignment, files, zygote, use_references=not public, limits=Limits()),
                                  "checks-submission")
