"""The wall time a submission's code may take: per question and per submission, set in the
assignment's assignment.toml (`question_seconds`, `submission_seconds`).

Only time spent waiting on the submission's sandbox counts (the grader's own work is not the
student's cost). A call is given at most what is left of both; once either runs out, the calls
after it fail at once, reported as a time limit in the question's feedback, and the grading
loop records the questions not yet run as not run (grading/session.py): scored 0, never a
grader failure.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from typing import Iterator


class TimeBudget:
    """One submission's account of time spent in its sandbox, by question and in all."""

    def __init__(self, question_seconds: float = math.inf, submission_seconds: float = math.inf) -> None:
        """The assignment's budgets (course/assignment.py holds their defaults); none by default."""
        self.question_seconds = question_seconds
        self.submission_seconds = submission_seconds
        self.spent: dict[str, float] = {}  # by question
        self.total = 0.0
        self._since: float | None = None  # when the wait being charged now began

    def left(self, qid: str) -> float:
        """Seconds the question `qid` may still take: the least of its own budget and the submission's."""
        running = 0.0 if self._since is None else time.monotonic() - self._since
        return max(0.0, min(self.question_seconds - self.spent.get(qid, 0.0),
                            self.submission_seconds - self.total) - running)

    def limit(self, qid: str, per_call: float) -> float:
        """How long the next wait on the sandbox may last."""
        return max(0.001, min(per_call, self.left(qid)))

    @contextmanager
    def spending(self, qid: str) -> Iterator[None]:
        """Charge the wall time of the block to `qid` and to the submission."""
        if self._since is not None:  # nested: the outer block charges it all
            yield
            return
        self._since = time.monotonic()
        try:
            yield
        finally:
            elapsed = time.monotonic() - self._since  # moved on past what was not counted
            self._since = None
            self.spent[qid] = self.spent.get(qid, 0.0) + elapsed
            self.total += elapsed

    @contextmanager
    def not_counting(self) -> Iterator[None]:
        """Leave the block's time out of the charge running now: the grader's own waits (a worker
        forked, or the zygote still importing torch) are not the student's cost."""
        started = time.monotonic()
        try:
            yield
        finally:
            if self._since is not None:
                self._since += time.monotonic() - started

    @property
    def submission_ran_out(self) -> bool:
        return self.total >= self.submission_seconds

    def ran_out(self, qid: str) -> str:
        """Why `qid` may run nothing more ("" while time is left): the feedback's time limit."""
        if self.submission_ran_out:
            return self.submission_message()
        if self.spent.get(qid, 0.0) >= self.question_seconds:
            return (f"time limit: this question used up its time budget of {self.question_seconds:g} s; "
                    "the calls after it were not run")
        return ""

    def submission_message(self) -> str:
        return (f"time limit: the submission used up its time budget of {self.submission_seconds:g} s; "
                "the checks after it were not run")

    def not_run_message(self) -> str:
        """The feedback of a check never started because the submission's budget ran out."""
        return (f"not run: the submission's time budget of {self.submission_seconds:g} s ran out before this "
                "check (time limit); it scores 0")
