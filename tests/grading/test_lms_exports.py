"""`checks export canvas` and `checks export moodle`: each LMS's import columns, the final score
(never the raw one), students found by the ids the LMS matches on, grader failures left out, and
no cell a spreadsheet would read as a formula."""

from __future__ import annotations

import csv
import io

from checks import cli
from checks.exports.lms_csv import CANVAS_COLUMNS, MOODLE_COLUMNS, canvas_csv, moodle_csv
from checks.policy.roster import Roster, Student
from checks.reports.gradebook import DB_FILE, Graded, Gradebook
from checks.suites.scoring import LATE, MANUAL, Adjustment, QuestionResult, SubmissionResult

ROSTER = Roster(__file__, {  # type: ignore[arg-type]
    "s1": Student("s1", "Ann Lee", "ann@example.edu", submission="ann", lms_id="101", sis_id="SIS1", login="alee"),
    "s2": Student("s2", "=HYPERLINK(\"http://x\") Bob", "bob@example.edu", submission="bob", lms_id="102"),
    "s3": Student("s3", "Cat", "cat@example.edu", submission="cat"),
})


def result(name: str, score: float, *adjustments: Adjustment, error: str = "", student_id: str = "") -> SubmissionResult:
    return SubmissionResult(name, "toy", [QuestionResult("good.add", score, 10.0, "", 1, 1)], error=error,
                            adjustments=list(adjustments), student_id=student_id)


RESULTS = [
    result("ann", 10.0, Adjustment(LATE, -2.0, "submitted 1 d late: 20 %", "policy", "2030-01-01T00:00:00+00:00")),
    result("bob", 6.0, Adjustment(MANUAL, 1.5, "regrade of good.add: =2+2 yes", "tina", "2030-01-02T00:00:00+00:00")),
    result("cat", 7.0),
    result("dan", 0.0, error="the sandbox could not start"),
]


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_canvas_csv_has_canvas_columns_and_final_scores():
    text, left_out = canvas_csv(RESULTS, ROSTER, "Tensors", "4711")
    rows = parse(text)
    assert rows[0] == [*CANVAS_COLUMNS, "Tensors (4711)"]
    assert rows[1] == ["Points Possible", "", "", "", "", "10.0"]
    assert rows[2] == ["Ann Lee", "101", "SIS1", "alee", "", "8.0"]  # 10 less the 2-point late penalty
    assert rows[3] == ["'=HYPERLINK(\"http://x\") Bob", "102", "", "", "", "7.5"]  # a name is never a formula
    assert len(rows) == 4 and text.endswith("\r\n")
    assert left_out == ["dan: not graded (the grader failed on it)",
                        "cat: no Canvas id (lms_id) or SIS id (sis_id, login) in the roster"]
    assert parse(canvas_csv(RESULTS, ROSTER, "Tensors")[0])[0][-1] == "Tensors"  # no id: Canvas makes a new assignment


def test_a_canvas_download_id_finds_a_student_the_roster_has_no_id_for():
    text, left_out = canvas_csv([result("catname", 9.0, student_id="103")], ROSTER, "Tensors")
    assert parse(text)[2] == ["catname", "103", "", "", "", "9.0"] and left_out == []


def test_moodle_csv_has_moodle_columns_final_scores_and_feedback():
    text, left_out = moodle_csv(RESULTS, ROSTER, "Tensors")
    rows = parse(text)
    assert rows[0] == [*MOODLE_COLUMNS, "Assignment: Tensors", "Feedback: Tensors"]
    assert rows[1] == ["Ann", "Lee", "SIS1", "ann@example.edu", "8.0", "late policy, -2 points: submitted 1 d late: 20 %"]
    assert rows[2][:5] == ["'=HYPERLINK(\"http://x\")", "Bob", "", "bob@example.edu", "7.5"]
    assert rows[2][5] == "staff (tina), +1.5 points: regrade of good.add: =2+2 yes"
    assert rows[3] == ["Cat", "", "", "cat@example.edu", "7.0", ""]
    assert left_out == ["dan: not graded (the grader failed on it)"]


def test_the_cli_exports_from_a_grade_folder_with_the_course_roster(make_course, capsys):
    root = make_course({"course.toml": 'roster = "roster.csv"\n', "autograder/toy/assignment.toml": 'files = ["x.py"]\n',
                        "assignments/toy/.keep": "",
                        "roster.csv": "student_id,name,email,submission,lms_id\ns1,Ann Lee,ann@example.edu,ann,101\n"})
    out = root / "grades"
    book = Gradebook(out / DB_FILE, "toy")
    book.record(Graded(RESULTS[0], "0.1.0", "2030-01-01T00:00:00Z"))
    assert cli.main(["--course", str(root), "export", "canvas", str(out), "--lms-assignment-id", "9"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert parse((out / "canvas.csv").read_text())[2] == ["Ann Lee", "101", "", "", "", "8.0"]
    assert cli.main(["--course", str(root), "export", "moodle", str(out), "--out", str(root / "m.csv"),
                     "--title", "Tensors and strides"]) == 0
    assert parse((root / "m.csv").read_text())[0][-2:] == ["Assignment: Tensors and strides", "Feedback: Tensors and strides"]
    (root / "course.toml").write_text("")
    assert cli.main(["--course", str(root), "export", "moodle", str(out)]) == 2
    assert "needs a roster" in capsys.readouterr().out
