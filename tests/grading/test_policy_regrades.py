"""Regrade requests: a student asks per question with a message (a file they hand in), staff collect
and answer it with an optional manual adjustment, recorded with who and when, kept apart from the
automatic score in the gradebook; the student reads the answer in their feedback."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone

import pytest

from checks import cli
from checks.course.assignment import CourseError
from checks.grading.adjust import check_regrade_requests
from checks.policy.config import load_course
from checks.policy.regrades import (Manual, answer, applied, manual_adjustments, new_request, read_request_file,
                                    record_request, threads, write_request)

NOW = datetime(2030, 7, 1, 12, tzinfo=timezone.utc)
COURSE = {
    "course.toml": 'roster = "roster.csv"\n',
    "roster.csv": "student_id,name,email,submission\ns1,Ann,ann@example.edu,ann\n",
    "assignments/toy/.keep": "",
    "autograder/toy/assignment.toml": 'files = ["good.py"]\n',
    "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("good.add", points=10)
        def test_add(student):
            expect_equal(student.good.add(1, 2), 3)
    """,
    "subs/ann/good.py": "def add(a, b):\n    return a - b\n",
}


def test_a_request_file_round_trips_and_a_forged_one_is_refused(make_course, tmp_path):
    root = make_course(COURSE)
    request = new_request("toy", "s1", "good.add", "=HYPERLINK(\"x\") my add is right", now=NOW)
    path = write_request(request, tmp_path)
    assert read_request_file(path) == request
    with pytest.raises(FileExistsError):
        write_request(request, tmp_path)  # never over an existing file
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "kind": "something else"}))
    with pytest.raises(CourseError, match="is not a regrade request checks wrote"):
        read_request_file(path)
    path.write_text(json.dumps({**data, "message": "edited", "id": "aaaaaaaaaaaa"}))
    assert read_request_file(path).id not in ("aaaaaaaaaaaa", request.id)  # the id is the content's
    with pytest.raises(CourseError, match="say what should be looked at again"):
        new_request("toy", "s1", "good.add", "  ", now=NOW)
    course = load_course(root)
    with pytest.raises(CourseError, match="'s9' is not on the roster"):
        record_request(course, new_request("toy", "s9", "good.add", "please", now=NOW), by="tina", now=NOW)
    assert record_request(course, request, by="tina", now=NOW)
    assert not record_request(course, request, by="tina", now=NOW)  # collected twice: recorded once


def test_regrade_requests_handed_in_are_checked_against_the_assignments_questions(make_course):
    """The check `checks regrade collect` makes, called as the library: every request is read
    against the hidden suite's questions and the quiz's before any is recorded."""
    course = load_course(make_course({**COURSE, "autograder/toy/assignment.toml": 'files = ["good.py"]\n'
                                                  '[quiz.why]\nanswer = 1\npoints = 1\n'}))
    known = [new_request("toy", "s1", qid, "look again", now=NOW) for qid in ("good.add", "quiz.why")]
    check_regrade_requests(course, known)
    with pytest.raises(CourseError, match=r"toy has no question 'good.nope' \(known: good.add, quiz.why\)"):
        check_regrade_requests(course, [*known, new_request("toy", "s1", "good.nope", "look again", now=NOW)])
    check_regrade_requests(course, [new_request("elsewhere", "s1", "a.b", "not this course's", now=NOW)])


def test_answers_are_audited_and_the_latest_counts(make_course):
    course = load_course(make_course(COURSE))
    request = new_request("toy", "s1", "good.add", "please", now=NOW)
    record_request(course, request, by="tina", now=NOW)
    assert threads(course)[0].answer is None
    answer(course, request.id, "No: the check is right.", by="tina", now=NOW)
    answer(course, request.id, "On second look, yes.", points=2, by="ian", now=NOW)
    (thread,) = threads(course)
    assert [(a.reply, a.points, a.by) for a in thread.answers] == [("No: the check is right.", 0.0, "tina"),
                                                                  ("On second look, yes.", 2.0, "ian")]
    assert manual_adjustments(course, "toy") == {"s1": [Manual(2.0, "regrade of good.add: On second look, yes.", "ian",
                                                               "2030-07-01T12:00:00+00:00", "good.add")]}
    with pytest.raises(CourseError, match="no regrade request 'nope'"):
        answer(course, "nope", "x", by="tina", now=NOW)


def test_an_adjustment_keeps_its_question_within_bounds_and_answers_only_its_submission():
    """+2.62 on a full question adds nothing (it gave 102.62 / 100); two requests on one question
    of one submission: the later answer replaces the earlier; one tied to another submission is left out."""
    scores = {"q.full": (4.0, 4.0), "q.half": (1.0, 4.0)}
    manual = [Manual(2.62, "regrade of q.full: yes", "ian", "t", "q.full", "sub1"),
              Manual(5.0, "regrade of q.half: yes", "ian", "t", "q.half"),
              Manual(-9.0, "regrade of q.half: no", "ian", "t", "q.half", "sub1"),
              Manual(1.0, "regrade of q.half: other", "ian", "t", "q.half", "sub2")]
    kept = applied(manual, "sub1", scores)
    assert [item.points for item in kept] == [0.0, 3.0, -4.0]
    assert "kept within 0 to 4 points" in kept[0].reason and "gave +2.62" in kept[0].reason
    assert "gave +5" in kept[1].reason and kept[2].reason.startswith("regrade of q.half: no (the answer gave -9")


def test_a_later_request_on_the_same_question_replaces_the_earlier_adjustment(make_course):
    course = load_course(make_course(COURSE))
    for n, points in enumerate((1, 2)):
        request = new_request("toy", "s1", "good.add", f"please {n}", now=NOW, submission="sub1")
        record_request(course, request, by="s1", now=NOW)
        answer(course, request.id, "yes", points=points, by="ian", now=NOW)
    assert [item.points for item in manual_adjustments(course, "toy")["s1"]] == [2.0]


def test_a_student_asks_staff_answer_and_the_gradebook_keeps_the_adjustment_apart(make_course, capsys):
    root = make_course(COURSE)
    inbox = root / "inbox"
    inbox.mkdir()
    out = root / "grades"
    grade = ["--course", str(root), "grade", "toy", str(root / "subs/ann"), "--out", str(out)]
    assert cli.main(grade) == 0
    assert cli.main(["regrade-request", "toy", "good.add", "--student", "s1", "--message", "add is right?",
                     "--out", str(inbox)]) == 0
    (handed_in,) = inbox.glob("regrade-toy-s1-*.json")
    assert cli.main(["--course", str(root), "regrade-request", "toy", "good.nope", "--student", "s1", "--message", "x",
                     "--out", str(root)]) == 0
    (bad,) = root.glob("regrade-toy-s1-*.json")
    assert cli.main(["--course", str(root), "regrade", "collect", str(bad)]) == 2
    assert "toy has no question 'good.nope' (known: good.add)" in capsys.readouterr().out
    assert cli.main(["--course", str(root), "regrade", "collect", str(handed_in), "--by", "tina"]) == 0
    request_id = read_request_file(handed_in).id
    assert cli.main(["--course", str(root), "regrade", "answer", request_id, "--reply", "Partly right: 4 points back.",
                     "--adjust", "4", "--by", "tina"]) == 0
    capsys.readouterr()
    assert cli.main(grade) == 0  # grades nothing again; applies the answer
    (row,) = [r for r in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())) if r["submission"] == "ann"]
    assert (row["raw"], row["penalty"], row["adjustment"], row["total"]) == ("0.0", "0.0", "4.0", "4.0")
    assert row["reason"] == "staff (tina), +4 points: regrade of good.add: Partly right: 4 points back."
    feedback = (out / "ann/feedback.md").read_text()
    assert "**Score: 4 / 10**" in feedback and "Partly right: 4 points back." in feedback
    assert json.loads((out / "ann/results.json").read_text())["score"] == 4.0
    assert cli.main(["--course", str(root), "regrade", "list", "--open"]) == 0
    assert request_id not in capsys.readouterr().out
