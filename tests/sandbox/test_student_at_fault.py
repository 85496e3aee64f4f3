"""What is the student's fault stays the student's: a reply their code forged on the worker's
socket, or a failure whose suite-side `diagnose` raised, costs the question with feedback and is
never reported as a grader error."""

from __future__ import annotations

import textwrap

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources

SUITE = """
    from checks.suite import expect_equal, question

    def broken_diagnosis(got):
        return f"off by {1 / 0}"  # the suite's own bug

    @question("work.forged", points=40)
    def test_forged(student):
        expect_equal(student.work.forged(), 1)

    @question("work.value", points=60)
    def test_value(student):
        expect_equal(student.work.value(), 3, diagnose=broken_diagnosis)
"""

FORGER = '''
import gc, json, socket, struct

def forged():
    """A reply of its own on the worker's socket, in the worker's framing: an array whose bytes are not there."""
    sock = next(o for o in gc.get_objects() if isinstance(o, socket.socket) and o.fileno() >= 0)
    tree = json.dumps({"a": {"dtype": "int64", "shape": [], "at": 0}}).encode()
    frames = [b'{"status": "returned"}', struct.pack("!Q", len(tree)) + tree]
    sock.sendall(b"".join(struct.pack("!Q", len(frame)) + frame for frame in frames))
    return 1

def value():
    return 3
'''

OFF_BY_ONE = "def forged():\n    return 1\n\ndef value():\n    return 2\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    for relative, text in {"autograder/blame/assignment.toml": 'files = ["work.py"]\n',
                           "autograder/blame/test_blame.py": SUITE, "subs/forger/work.py": FORGER,
                           "subs/off_by_one/work.py": OFF_BY_ONE}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(textwrap.dedent(text))
    sources = [Source.from_path(root / "subs" / name) for name in ("forger", "off_by_one")]
    return {r.name: r for r in grade_sources(load_assignment(root, "blame"), sources, jobs=2)}


def test_a_forged_reply_costs_its_question_not_a_grader_error(results):
    result = results["forger"]
    assert not result.error, result.error
    forged, value = result.question("work.forged"), result.question("work.value")
    assert forged.score == 0 and "forged() returned an unsupported type: malformed array" in forged.feedback
    assert value.passed  # the calls after it were answered by a fresh worker


def test_a_diagnose_that_raises_leaves_the_students_failure_standing(results):
    result = results["off_by_one"]
    assert not result.error, result.error
    assert result.question("work.forged").passed
    value = result.question("work.value")
    assert value.score == 0 and "value() returned 2; expected 3." in value.feedback
    assert "Likely mistake" not in value.feedback and "ZeroDivisionError" not in value.feedback
