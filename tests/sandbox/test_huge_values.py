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
from checks.suites import describe

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
    assert many.score == 0 and ("too many items" in many.feedback or "time limit" in many.feedback), many.feedback
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
    with pytest.raises(codec.UnsupportedType, match="too many items"):
        codec.decode(codec.encode([[1] * 1000 for _ in range(codec.MAX_ITEMS // 1000 + 1)]))
    assert codec.decode(codec.encode([1] * (codec.MAX_ITEMS // 2))) == [1] * (codec.MAX_ITEMS // 2)
