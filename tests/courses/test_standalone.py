"""The author's debugging run (`python -m pytest autograder/<name> -p checks.suites.standalone
--submission ...`) fails exactly the tests whose cases fail: a test made with @cases once said
"passed" whatever its cases scored, so the stubs of 01_tensors read as "12 passed"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _standalone(submission: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "checks.suites.standalone",
                           str(REPO / "autograder" / "01_tensors"), "--submission", str(submission)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_the_stubs_fail_every_test_with_how_many_cases_failed() -> None:
    run = _standalone(REPO / "assignments" / "01_tensors")
    assert run.returncode == 1, run.stdout[-2000:]
    assert "12 failed" in run.stdout and " passed" not in run.stdout.splitlines()[-1]
    assert "FAILED autograder/01_tensors/test_strides.py::test_numel - " in run.stdout
    assert "cases failed; the first, " in run.stdout


def test_a_mutant_fails_its_own_test_only(tmp_path: Path) -> None:
    submission = tmp_path / "mutant"
    submission.mkdir()
    for path in (REPO / "solutions" / "01_tensors").iterdir():
        if path.is_file():
            (submission / path.name).write_bytes(path.read_bytes())
    strides = submission / "strides.py"
    strides.write_text(strides.read_text().replace("count *= size", "count *= max(size, 1)"))
    run = _standalone(submission)
    assert run.returncode == 1, run.stdout[-2000:]
    failed = [line for line in run.stdout.splitlines() if line.startswith("FAILED ")]
    assert len(failed) == 1 and "test_strides.py::test_numel - " in failed[0], failed
    assert "1 failed, 11 passed" in run.stdout
