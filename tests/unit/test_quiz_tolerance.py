"""A quiz key's tolerance (course/tolerance.py): significant digits as PrairieLearn counts them, or
rtol/atol; refused where it cannot apply; shown to students in `checks test`'s answer form, in the
release's quiz.toml and in the feedback of a wrong answer."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from checks.course.assignment import CourseError, QuizItem, load_assignment, marker_text
from checks.course.release import blank_quiz, quiz_notes
from checks.course.tolerance import Tolerance
from checks.suites.quiz import check_answers, grade_quiz

TWO_DIGITS = Tolerance(digits=2)


def test_significant_digits_accept_what_rounds_to_the_key_and_nothing_further():
    # the issue's student: -0.693 against a key written as -0.69, asked to 2 decimals' worth of digits
    assert TWO_DIGITS.accepts(-0.693, -0.69) and TWO_DIGITS.accepts(-0.69, -0.6931471805599453)
    assert TWO_DIGITS.accepts(-0.6931, -0.6931471805599453) and TWO_DIGITS.accepts(-0.695, -0.69)
    assert not TWO_DIGITS.accepts(-0.70, -0.6931471805599453) and not TWO_DIGITS.accepts(0.69, -0.69)
    assert Tolerance(digits=3).accepts(2.30, math.log(10)) and not Tolerance(digits=3).accepts(2.31, math.log(10))
    assert Tolerance(digits=1).accepts(1240, 1000) and not Tolerance(digits=2).accepts(1240, 1000)
    # the default stays strict: the same student loses the point where no tolerance is declared
    assert not Tolerance().accepts(-0.693, -0.69) and Tolerance().accepts(0.1 + 0.2, 0.3)


def test_rtol_and_atol_read_as_math_isclose_does():
    assert Tolerance(rtol=0.01, atol=0).accepts(1.01, 1.0) and not Tolerance(rtol=0.01, atol=0).accepts(1.02, 1.0)
    assert Tolerance(rtol=0, atol=0.5).accepts(0.4, 0.0) and not Tolerance(rtol=0, atol=0.5).accepts(0.6, 0.0)
    assert not Tolerance(rtol=0.5, atol=0.5).accepts(math.inf, 1.0) and not Tolerance(digits=2).accepts(math.nan, 1.0)


@settings(max_examples=300, deadline=None)
@given(key=st.floats(min_value=1e-6, max_value=1e9) | st.floats(min_value=-1e9, max_value=-1e-6),
       digits=st.integers(min_value=1, max_value=6))
def test_the_key_rounded_to_its_digits_counts_and_one_and_a_half_units_off_does_not(key, digits):
    tolerance = Tolerance(digits=digits)
    unit = 2 * tolerance.half_unit(key)
    rounded = float(f"{key:.{digits - 1}e}")
    assert tolerance.accepts(rounded, key)
    assert not tolerance.accepts(key + 1.5 * unit, key) and not tolerance.accepts(key - 1.5 * unit, key)


def _course(make_course, quiz: str):
    return make_course({"autograder/toy/assignment.toml": 'files = ["good.py"]\n' + quiz,
                        "solutions/toy/good.py": "x = 1\n"})


@pytest.mark.parametrize("table, message", [
    ("answer = true\npoints = 1\ndigits = 2", "[quiz.q] has a true/false answer: digits applies to numbers only"),
    ("answer = 1.5\npoints = 1\ndigits = 2\nrtol = 0.1", "[quiz.q]: give either digits or rtol/atol, not both"),
    ("answer = 0\npoints = 1\ndigits = 2", "[quiz.q]: a key of 0 has no significant digits; give atol instead"),
    ("answer = 1.5\npoints = 1\ndigits = 0", "`digits` in [quiz.q] must be a whole number of significant digits from 1 to 15"),
    ("answer = 1.5\npoints = 1\ndigits = 2.5", "`digits` in [quiz.q] must be a whole number of significant digits from 1 to 15"),
    ("answer = 1.5\npoints = 1\nrtol = -0.1", "`rtol` in [quiz.q] must be a tolerance of 0 or more"),
])
def test_a_tolerance_that_cannot_apply_is_refused_naming_the_key(make_course, table, message):
    root = _course(make_course, f"[quiz.q]\n{table}\n")
    with pytest.raises(CourseError) as raised:
        load_assignment(root, "toy")
    assert message in str(raised.value) and "assignment.toml" in str(raised.value)


def test_students_are_told_the_tolerance_in_the_release_the_answer_form_and_the_feedback(make_course):
    root = _course(make_course, "[quiz.log_half]\nanswer = -0.6931471805599453\npoints = 2\ndigits = 2\n"
                                "[quiz.count]\nanswer = 6\npoints = 1\n[quiz.sure]\nanswer = true\npoints = 1\n")
    assignment = load_assignment(root, "toy")
    blank = blank_quiz("# ln(1/2)?\nlog_half = -0.69\ncount = 6\nsure = true\n", quiz_notes(assignment.quiz))
    assert blank == ('# ln(1/2)?\nlog_half = ""  # a number, counted to 2 significant digits\ncount = ""\n'
                     'sure = ""\n')
    marker = marker_text(assignment)
    assert 'log_half = "to 2 significant digits"' in marker and "sure" not in marker.split("[quiz_tolerance]")[1]
    tolerances = {"log_half": "to 2 significant digits"}
    forms, _ = check_answers({"log_half": "number", "count": "number", "sure": "true or false"},
                             b"log_half = -0.693\ncount = 6\nsure = true\n", tolerances)
    assert [form.note for form in forms] == ["answered (counted to 2 significant digits)",
                                             "answered (number)",
                                             "answered (true or false)"]
    right, wrong = (grade_quiz((QuizItem("log_half", -0.6931471805599453, 2.0, Tolerance(digits=2)),),
                               {"quiz.toml": answer}) for answer in (b"log_half = -0.693\n", b"log_half = -0.70\n"))
    assert right[0].score == 2.0 and right[0].feedback == "Correct."
    assert wrong[0].score == 0.0
    assert wrong[0].feedback == "log_half = -0.7 is not the right answer (answers count to 2 significant digits of the key)."


def test_without_a_declared_tolerance_nothing_more_is_said():
    root_items = (QuizItem("count", 6, 1.0),)
    (wrong,) = grade_quiz(root_items, {"quiz.toml": b"count = 7\n"})
    assert wrong.feedback == "count = 7 is not the right answer."
    assert quiz_notes(root_items) == {}
