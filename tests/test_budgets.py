"""What a submission consumes is bounded and its own (DESIGN.md, "The trust boundary"; issue 29,
section 2): wall time per question and per submission, the memory of all its processes, its temp
space, what comes back to the grader, and the grader's own scratch space, which no student process
can pre-plant. Each budget is set small in a throwaway course's assignment.toml; where the level
matters, each test runs at every isolation level this machine has."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from checks.course.assignment import CourseError, load_assignment
from checks.grading.session import Source, grade_sources
from checks.sandbox import jail

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
ROOT = os.geteuid() == 0


def grade(root: Path, level: str, submissions: dict[str, dict[str, str]], name: str = "toy") -> dict:
    """{submission name: SubmissionResult}, graded side by side (two jobs) at `level`."""
    sources = [Source.from_files(sub, {path: textwrap.dedent(text).encode() for path, text in files.items()})
               for sub, files in submissions.items()]
    results = grade_sources(load_assignment(root, name), sources, jobs=2, isolation=jail.choose(level))
    return {result.name: result for result in results}


# ---------------------------------------------------------------- wall time, per question and per submission

TIMED = {
    "autograder/toy/assignment.toml": """
        files = ["m.py"]
        question_seconds = 1.5
        submission_seconds = 3.5
    """,
    "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("a.slow", points=1, timeout=10)
        def test_slow(student):
            for _ in range(3):
                expect_equal(student.m.nap(0.9), 1)

        @question("b.quick", points=1)
        def test_quick(student):
            expect_equal(student.m.nap(0), 1)

        @question("c.slow", points=1, timeout=10)
        def test_slow_again(student):
            expect_equal(student.m.nap(1.2), 1)

        @question("d.slow", points=1, timeout=10)
        def test_slow_once_more(student):
            expect_equal(student.m.nap(1.2), 1)

        @question("e.last", points=1)
        def test_last(student):
            expect_equal(student.m.nap(0), 1)
    """,
}
NAPPER = {"m.py": "import time\ndef nap(seconds):\n    time.sleep(seconds)\n    return 1\n"}


@pytest.mark.parametrize("level", LEVELS)
def test_a_question_and_a_submission_stop_at_their_time_budgets(level, make_course):
    result = grade(make_course(TIMED), level, {"napper": NAPPER})["napper"]
    assert not result.error
    slow = result.question("a.slow")  # 0.9 + 0.9 > 1.5: the second call is stopped, the third not run
    assert slow.score == 0 and "time limit: this question used up its time budget of 1.5 s" in slow.feedback
    assert result.question("b.quick").passed
    # a: 1.5, c: 1.2, d: runs out at 3.5 s in all; e is never started
    assert result.question("c.slow").passed
    assert "time limit: the submission used up its time budget of 3.5 s" in result.question("d.slow").feedback
    last = result.question("e.last")
    assert last.score == 0 and "not run: the submission's time budget of 3.5 s ran out" in last.feedback
    assert any("time budget of 3.5 s (time limit)" in warning for warning in result.warnings)


def test_the_budgets_are_checked_with_clear_errors(make_course):
    root = make_course({"autograder/toy/assignment.toml": """
        question_seconds = 0
        submission_seconds = "long"
        temp_mib = 1.5
        submission_memory_mib = -1
    """})
    with pytest.raises(CourseError) as error:
        load_assignment(root, "toy")
    message = str(error.value)
    assert "`question_seconds` must be a number of seconds greater than 0, not the number 0" in message
    assert "`submission_seconds` must be a number of seconds greater than 0, not the string 'long'" in message
    assert "`temp_mib` must be a whole number of MiB, 1 or more" in message
    assert "`submission_memory_mib` must be a whole number of MiB" in message
    defaults = load_assignment(make_course({"autograder/toy/assignment.toml": "files = []\n"}), "toy")
    assert defaults.question_seconds > 0 and defaults.submission_seconds >= defaults.question_seconds
