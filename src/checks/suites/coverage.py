"""Which boundary values each question's cases are at, read from a collected suite.

A case generator declares the boundaries its cases cover (`@cases(boundaries=...)`, each a
predicate asked of every case) and a question the kinks it must cover (`@question(kinks=...)`):
the values where plausible implementations differ. `checks verify` prints the coverage per
question and fails a question with a kink no case is at. Nothing here runs student code: the
suite is only collected (`collect_coverage`, in a process of its own), as `checks verify` asks.

    python -m pytest autograder/03_mlp --collect-only -p checks.suites.coverage --checks-coverage out.json
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import pytest

from checks.suites import api


@dataclass
class Coverage:
    """One question's kinks and the boundaries its cases are at (boundary -> how many cases)."""

    qid: str
    kinks: list[str] = field(default_factory=list)
    covered: dict[str, int] = field(default_factory=dict)
    unmet: list[str] = field(default_factory=list)  # declared by a @covers mark, and no parameter set is at it

    @property
    def missing(self) -> list[str]:
        """The kinks no case of the question is at."""
        return [kink for kink in self.kinks if kink not in self.covered]

    @property
    def holds(self) -> bool:
        return not self.missing and not self.unmet

    def describe(self) -> str:
        """One line: each boundary covered with its count (a kink marked so), then what is missing."""
        shown = [f"{name}{' (kink)' if name in self.kinks else ''}: {count}" for name, count in self.covered.items()]
        text = "; ".join(shown) if shown else "no boundary declared"
        if self.missing:
            text += f"; NO case at the kink{'s' if len(self.missing) > 1 else ''} {', '.join(self.missing)}"
        if self.unmet:
            text += f"; declared but no case at {', '.join(self.unmet)}"
        return text


def coverage_of(items: Iterable[pytest.Item]) -> dict[str, Coverage]:
    """Per question id, in suite order: its kinks (every test's @question) and its covered
    boundaries (every @cases of its tests, summed over the tests and their pytest parameters, and
    every @covers mark, asked of each parameter set)."""
    found: dict[str, Coverage] = {}
    marked: dict[str, set[str]] = {}  # qid -> the boundaries its @covers marks declare
    for item in items:
        options = api.question_options(item)
        if options is None:
            continue
        coverage = found.setdefault(options["qid"], Coverage(options["qid"]))
        coverage.kinks += [kink for kink in options["kinks"] if kink not in coverage.kinks]
        declared: dict[str, list[str]] = getattr(getattr(item, "function", None), "checks_boundaries", {})
        for name, labels in declared.items():
            coverage.covered[name] = coverage.covered.get(name, 0) + len(labels)
        params = getattr(getattr(item, "callspec", None), "params", {})
        for mark in item.iter_markers(api.COVERS_MARK):
            for name, at in mark.args[0].items():
                marked.setdefault(options["qid"], set()).add(name)
                if at(**params):
                    coverage.covered[name] = coverage.covered.get(name, 0) + 1
    for qid, names in marked.items():
        found[qid].unmet = sorted(name for name in names if name not in found[qid].covered)
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("checks").addoption("--checks-coverage", type=Path, default=None,
                                        help="write each question's boundary coverage to this JSON file")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{api.QUESTION_MARK}: the question a test belongs to")
    config.addinivalue_line("markers", f"{api.DEFAULTS_MARK}: options for every question of a file")
    config.addinivalue_line("markers", f"{api.COVERS_MARK}: the boundaries a parametrized test covers")
    config.addinivalue_line("markers", "cuda: needs a CUDA device")


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("--checks-coverage")
    if path is None:
        return
    errors = [f"{report.nodeid or 'the suite'}: {report.longreprtext[-800:]}" for report in _failed_collections]
    try:
        coverage = {qid: {"kinks": c.kinks, "covered": c.covered, "unmet": c.unmet}
                    for qid, c in coverage_of(session.items).items()}
    except pytest.UsageError as error:
        errors.append(str(error))
        coverage = {}
    path.write_text(json.dumps({"coverage": coverage, "errors": errors}), encoding="utf-8")


_failed_collections: list[pytest.CollectReport] = []  # this process collects one suite


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _failed_collections.append(report)


def read_coverage(path: Path) -> tuple[dict[str, Coverage], list[str]]:
    """What `--checks-coverage` wrote: the coverage per question, and the suite's collection errors."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return ({qid: Coverage(qid, list(entry["kinks"]), dict(entry["covered"]), list(entry["unmet"]))
             for qid, entry in data["coverage"].items()},
            list(data["errors"]))
