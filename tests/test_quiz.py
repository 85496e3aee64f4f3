import pytest

from checks.course.assignment import QuizItem
from checks.suites.quiz import grade_quiz

ITEMS = (QuizItem("numel", 6, 2.0), QuizItem("theta", 1.4, 2.0), QuizItem("accumulates", True, 1.0))


def scores(text: str | None) -> dict[str, float]:
    files = {} if text is None else {"quiz.toml": text.encode()}
    return {q.qid: q.score for q in grade_quiz(ITEMS, files)}


@pytest.mark.parametrize("text", [
    'numel = 6\ntheta = 1.4\naccumulates = true',
    'numel = 6.0\ntheta = "1.4"\naccumulates = "TRUE"',
    'numel = "6"\ntheta = 1.4000001\naccumulates = "true"',
])
def test_accepted_answer_forms(text):
    assert scores(text) == {"quiz.numel": 2.0, "quiz.theta": 2.0, "quiz.accumulates": 1.0}


def test_each_answer_counts_on_its_own():
    assert scores('numel = 5\ntheta = 1.4\naccumulates = "yes"') == {
        "quiz.numel": 0.0, "quiz.theta": 2.0, "quiz.accumulates": 0.0}


def test_tolerance_is_relative_one_in_a_million():
    assert scores("theta = 1.4002")["quiz.theta"] == 0.0


@pytest.mark.parametrize("text, reason", [
    (None, "No quiz.toml"),
    ("numel = = 6", "not valid TOML"),
    ("numel = 6\n" + "x" * 70_000, "limit"),
])
def test_an_unreadable_file_costs_only_the_quiz_and_says_why(text, reason):
    results = grade_quiz(ITEMS, {} if text is None else {"quiz.toml": text.encode()})
    assert all(q.score == 0 and reason in q.feedback for q in results)


def test_empty_or_wrongly_typed_answers_say_what_is_wrong():
    results = {q.qid: q for q in grade_quiz(ITEMS, {"quiz.toml": b'numel = ""\ntheta = true\naccumulates = 1'})}
    assert "No answer" in results["quiz.numel"].feedback
    assert "expected a number" in results["quiz.theta"].feedback
    assert "expected true or false" in results["quiz.accumulates"].feedback


def test_quiz_file_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    grade_quiz(ITEMS, {"quiz.toml": f'numel = "__import__(\'os\').mkdir(\'{marker}\')"'.encode()})
    assert not marker.exists()
