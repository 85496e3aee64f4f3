"""The grader's work on a value a student returns is bounded and counted (issue 43): the codec
accepts at most codec.MAX_ITEMS values, describing one for feedback reads only as much of it as the
line shows, and reading it is the question's time. A huge value costs its own question, at most
what the question's budget says, and the submission's other questions are graded. At every
isolation level this machine has."""

from __future__ import annotations

import time

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.sandbox import codec, jail
from checks.sandbox.supervisor import WorkerConfig, Zygote
from checks.suites import describe
from checks.suites.budgets import TimeBudget
from checks.suites.student import (MAX_HANGS, QuestionSandbox, ReturnTooLarge, Student, StudentCrashed,
                                   SubmissionWorkers)

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]

SUITE = {
    "autograder/huge/assignment.toml": 'files = ["work.py"]\nquestion_seconds = 3\n',
    "autograder/huge/test_huge.py": """
        from checks.suite import question, expect_equal

        @question("work.many", points=10)
        def test_many(student):
            expect_equal(student.work.many(), 1)

        @question("work.slow_to_read", points=10)
        def test_slow_to_read(student):
            expect_equal(student.work.slow_to_read(), 1)

        @question("work.other", points=10)
        def test_other(student):
            expect_equal(student.work.other(), 2)
    """,
    "assignments/huge/.keep": "",
}

WORK = f'''
import numpy as np

def many():
    """More items than the codec accepts."""
    return [[1] * 1000 for _ in range({codec.MAX_ITEMS // 1000 + 1})]

def slow_to_read():
    return np.zeros(300_000)

def other():
    return 2
'''

SLOW_READ_SECONDS = 4.0  # past the question's budget of 3 s


@pytest.mark.parametrize("level", LEVELS)
def test_a_huge_value_costs_only_its_question_and_its_reading_is_counted(make_course, monkeypatch, level):
    root = make_course({**SUITE, "subs/hoarder/work.py": WORK})
    decode = codec.decode

    def slow_decode(payload):  # as slow as a huge value is to read; in the grading process, forked from here
        if len(payload) > 2_000_000:
            time.sleep(SLOW_READ_SECONDS)
        return decode(payload)

    monkeypatch.setattr(codec, "decode", slow_decode)
    [result] = grade_sources(load_assignment(root, "huge"), [Source.from_path(root / "subs/hoarder")], jobs=1,
                             isolation=jail.choose(level))
    assert not result.error, result.error
    many, slow, other = (result.question(name) for name in ("work.many", "work.slow_to_read", "work.other"))
    # refused as too big, or out of time encoding it on a busy machine: its own question either way
    assert many.score == 0 and "returned a value too large: more than 100,000 values" in many.feedback, many.feedback
    assert slow.score == 0 and "too large to read within the time limit" in slow.feedback, slow.feedback
    assert other.passed, other.feedback


class Counted:
    """An item that counts how often it is described."""

    seen = 0

    def __repr__(self) -> str:
        Counted.seen += 1
        return "c"


def test_describing_a_value_reads_only_what_the_line_shows():
    Counted.seen = 0
    value = {"rows": [[Counted() for _ in range(1000)] for _ in range(100)], "text": "x" * 10_000_000}
    line = describe.summarize(value)
    assert len(line) <= describe.MAX_SUMMARY and line.startswith("{'rows': [[c, c")
    assert Counted.seen <= describe.MAX_SUMMARY


def test_the_codec_refuses_more_items_than_its_cap():
    value = [[1] * 1000 for _ in range(codec.MAX_ITEMS // 1000 + 1)]
    with pytest.raises(codec.TooLarge, match="more than 100,000 values"):  # the sandbox does not send it
        codec.encode(value)
    with pytest.raises(codec.UnsupportedType, match="too many items"):  # and the grader would not take it
        codec.decode(codec.pack(value, []))
    assert codec.decode(codec.encode([1] * (codec.MAX_ITEMS // 2))) == [1] * (codec.MAX_ITEMS // 2)


# ---- the sandbox refuses a value too large from its size alone, and says so in a line ------------

HOARDER = b'''
import os

def huge():
    return tuple(range(3_000_000))

def pid():
    return os.getpid()

def crash():
    os._exit(3)
'''


@pytest.fixture(scope="module", params=LEVELS)
def zygote(request):
    with Zygote(jail.choose(request.param)) as warm:
        yield warm


def _student(zygote: Zygote, budget: TimeBudget | None = None, workers: SubmissionWorkers | None = None) -> Student:
    sandbox = QuestionSandbox(workers or SubmissionWorkers(zygote), WorkerConfig(files={"hoarder.py": HOARDER}),
                              timeout=30, budget=budget, qid="q")
    return Student(sandbox, frozenset({"hoarder"}))


def test_a_value_too_large_is_the_students_fault_in_one_line_and_not_sent_again(zygote):
    student = _student(zygote)
    worker = student.hoarder.pid()
    for _ in range(MAX_HANGS):
        with pytest.raises(ReturnTooLarge) as refused:
            student.hoarder.huge()
        assert str(refused.value) == ("huge() returned a value too large: a tuple of 3,000,000 items (at most "
                                      "100,000 values can come back); return smaller, plain values")
        assert student.hoarder.pid() == worker  # its own refusal, in a worker fit for the next call
    with pytest.raises(ReturnTooLarge, match=f"was not run: {MAX_HANGS} earlier calls like it returned values too "
                                             "large: a tuple of 3,000,000 items"):
        student.hoarder.huge()  # not run again in this question: each would cost the grader as much
    assert student.hoarder.pid() == worker  # the others still are


class SlowToReplace(SubmissionWorkers):
    """Workers whose replacement, after a crash, takes a while to start."""

    def fresh(self, config: WorkerConfig):
        time.sleep(REPLACING_SECONDS)
        return super().fresh(config)


REPLACING_SECONDS = 1.0


def test_replacing_a_worker_the_students_code_crashed_is_the_questions_time(zygote):
    budget = TimeBudget()
    student = _student(zygote, budget, SlowToReplace(zygote))
    student.hoarder.pid()  # the first worker is the grader's wait, not counted
    with pytest.raises(StudentCrashed):
        student.hoarder.crash()
    before = budget.spent["q"]
    student.hoarder.pid()  # in a fresh worker, which took REPLACING_SECONDS to start
    assert budget.spent["q"] - before >= REPLACING_SECONDS
