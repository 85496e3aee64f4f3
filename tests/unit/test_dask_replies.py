"""The driver believes only what it asked for (executors/replies.py, issue 49): a worker's reply is
filed under the task's own submission, with the assignment's questions and maxima read from the
suite's source; anything else is a grader failure of that submission, never another's grade."""

from __future__ import annotations

import copy

import pytest

from checks.course.assignment import load_assignment
from checks.executors.replies import believed, expected_questions
from checks.suites.scoring import QuestionResult, SubmissionResult

from conftest import REPO

TENSORS = load_assignment(REPO, "01_tensors")
QUESTIONS = expected_questions(TENSORS, public=False)


def honest(name: str = "ada") -> dict:
    questions = [QuestionResult(qid, points / 2, points, "", 1, 2) for qid, points in QUESTIONS.exact.items()]
    return SubmissionResult(name, TENSORS.name, questions).to_dict()


def test_the_suite_s_questions_are_read_from_its_source_without_running_it():
    assert QUESTIONS.complete and sum(QUESTIONS.exact.values()) == 100
    assert QUESTIONS.exact["strides.numel"] == 4 and any(q.startswith("quiz.") for q in QUESTIONS.exact)
    public = expected_questions(TENSORS, public=True)
    assert not any(q.startswith("quiz.") for q in public.exact) and set(public.exact) <= set(QUESTIONS.exact)
    autograd = expected_questions(load_assignment(REPO, "02_autograd"), public=False)
    assert autograd.exact["rules.add_backward"] == 2 and sum(autograd.exact.values()) == 100  # points per {op}


def test_an_honest_reply_is_believed():
    result = believed("ada", TENSORS, honest(), QUESTIONS)
    assert not result.error and result.score == 50


def forged(change) -> dict:
    value = copy.deepcopy(honest())
    change(value)
    return value


@pytest.mark.parametrize("change, says", [
    (lambda v: v.update(name="ben"), "filed as 'ben'"),
    (lambda v: v.update(assignment="02_autograd"), "of '02_autograd'"),
    (lambda v: v["questions"][0].update(score=1000, max_score=1000), "1000 of 1000, where the question is worth"),
    (lambda v: v["questions"][0].update(score=v["questions"][0]["max_score"] + 1), "where the question is worth"),
    (lambda v: v["questions"][0].update(score=float("nan")), "not a number"),
    (lambda v: v["questions"][0].update(score=-3), "not a number from 0"),
    (lambda v: v["questions"].append(dict(v["questions"][0], qid="bonus")), "does not have ('bonus')"),
    (lambda v: v["questions"].append(dict(v["questions"][0])), "twice"),
    (lambda v: v["questions"].pop(3), "leaves out"),
    (lambda v: v["questions"][0].update(surprise=1), "not a result"),
])
def test_a_forged_reply_is_a_grader_error_of_the_task_s_own_submission(change, says):
    result = believed("ada", TENSORS, forged(change), QUESTIONS)
    assert result.name == "ada" and result.assignment == TENSORS.name and not result.questions
    assert says in result.error and "refused" in result.error, result.error


@pytest.mark.parametrize("value", [None, [], "100", {"name": "ada"}])
def test_a_reply_that_is_not_a_result_is_a_grader_error(value):
    result = believed("ada", TENSORS, value, QUESTIONS)
    assert result.name == "ada" and "not a result" in result.error
