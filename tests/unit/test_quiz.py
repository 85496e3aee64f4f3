import pytest

from checks.course.assignment import QuizItem
from checks.suites.quiz import check_answers, grade_quiz

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


@pytest.mark.parametrize("answer, says", [
    ("9" * 5000, "an integer of about 5,000 digits, too large"),
    ("-" + "9" * 40000, "an integer of about 40,000 digits, too large"),
    ("nan", "is not the right answer"),
    ("inf", "is not the right answer"),
    ("-inf", "is not the right answer"),
    ("{a = {b = [1, {c = 2}]}}", "expected a number, got a table of 1 key"),
    ("[1, [2, [3]]]", "expected a number, got an array of 2 items"),
    ("1979-05-27T07:32:00Z", "the date/time 1979-05-27T07:32:00+00:00"),
    ("07:32:00", "the date/time 07:32:00"),
    ('"' + "x" * 60_000 + '"', "(60,000 characters)"),
    ('"' + "9" * 5000 + '"', "(5,000 characters) is not the right answer"),
    ("true", "expected a number, got the boolean true"),
])
def test_an_answer_of_any_type_or_size_costs_its_question_only_in_a_few_words(answer, says):
    """Graded or refused, that question alone, never the submission, never a megabyte of repr."""
    results = {q.qid: q for q in grade_quiz(ITEMS, {"quiz.toml": f"numel = {answer}\ntheta = 1.4\n".encode()})}
    assert results["quiz.numel"].score == 0 and says in results["quiz.numel"].feedback
    assert len(results["quiz.numel"].feedback) < 200
    assert results["quiz.theta"].score == 2.0  # its neighbour is graded as ever
    forms = {form.key: form for form in check_answers({"numel": "number", "theta": "number"},
                                                      f"numel = {answer}\n".encode())[0]}
    assert len(forms["numel"].note) < 200


def test_a_key_nested_thousands_deep_costs_its_question_only():
    """Dotted keys make a table 3,000 deep: repr() of it would raise RecursionError."""
    results = {q.qid: q for q in grade_quiz(ITEMS, {"quiz.toml": ("numel" + ".a" * 3000 + " = 1\ntheta = 1.4\n").encode()})}
    assert "got a table of 1 key" in results["quiz.numel"].feedback and results["quiz.theta"].score == 2.0


def test_an_unknown_key_of_any_length_is_shown_short():
    forms, _ = check_answers({"numel": "number"}, ('"' + "k" * 10_000 + '" = 1\n').encode())
    assert [len(form.qid) for form in forms] == [len("quiz.numel"), len("quiz.") + 60]


def test_a_key_too_deep_to_parse_quickly_is_refused_before_parsing():
    """tomllib's time grows with the square of a dotted key's depth: 64 KiB of `a.a.a...` took
    seconds of the grader's own time. Past MAX_QUIZ_NESTING the file is refused, unread."""
    data = ("numel" + ".a" * 30_000 + " = 1\ntheta = 1.4\n").encode()
    results = {q.qid: q for q in grade_quiz(ITEMS, {"quiz.toml": data})}
    assert "dots and brackets" in results["quiz.numel"].feedback and results["quiz.theta"].score == 0
