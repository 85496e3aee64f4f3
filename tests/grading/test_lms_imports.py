"""The CSV exports read back as Canvas and Moodle read them (issue 46): each LMS's documented import
rules, applied to the files `checks export canvas|moodle` writes, decide who gets which grade.

Canvas (Grades > Import; the gradebook CSV of Canvas's own export): the columns `Student`, `ID`,
`SIS User ID`, `SIS Login ID`, `Section`; a `Points Possible` row; each other column an
assignment, `TITLE (ID)` filling the assignment with that id and any other header making a new
one, whose points are the Points Possible row's; a student found by ID, else SIS User ID, else
SIS Login ID, each compared as written.
Moodle (Grades > Import > CSV file): an identifier column mapped to a user field (`Email address`
to useremail, `ID number` to useridnumber), compared as written; `Assignment: TITLE` mapped to
the grade item, `Feedback: TITLE` to its feedback.
Moodle's grading worksheet (assignfeedback_offline's importer): the columns `Identifier`, `Grade`
and `Last modified (grade)` must all be there; `Identifier` less `Participant ` is the
participant id; feedback from the `Feedback comments` column.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime

import pytest

from checks import cli
from checks.exports.lms_csv import canvas_csv, moodle_csv
from checks.policy.roster import Roster, Student
from checks.reports.gradebook import DB_FILE, Graded, Gradebook
from checks.suites.scoring import LATE, Adjustment, QuestionResult, SubmissionResult

CANVAS_FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def canvas_import(text: str, users: list[dict[str, str]]) -> dict:
    """What Canvas's gradebook import does with `text`, given the course's users (id, sis_user_id,
    login_id): {"assignments": {header: ("existing", id) | ("new", title, points)}, "grades":
    {(assignment key, canvas user id): score}, "unmatched": [row]}."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert tuple(header[:5]) == CANVAS_FIXED, header
    points = rows[1] if rows[1][0].strip() == "Points Possible" else None
    assignments = {}
    for index, name in enumerate(header[5:], start=5):
        found = re.search(r"\((\d+)\)\s*$", name)
        assignments[index] = (("existing", found[1]) if found else
                              ("new", name, float(points[index]) if points and points[index] else None))
    grades, unmatched = {}, []
    for row in rows[2 if points else 1:]:
        user = (next((u for u in users if row[1] and u["id"] == row[1]), None)
                or next((u for u in users if row[2] and u["sis_user_id"] == row[2]), None)
                or next((u for u in users if row[3] and u["login_id"] == row[3]), None))
        if user is None:
            unmatched.append(row)
            continue
        for index, key in assignments.items():
            grades[(key, user["id"])] = float(row[index])
    return {"assignments": list(assignments.values()), "grades": grades, "unmatched": unmatched}


def moodle_import(text: str, users: list[dict[str, str]], *, identifier: str = "Email address",
                  field: str = "email") -> dict:
    """Moodle's CSV grade import with `identifier` mapped to the user field `field`: {email: (grade, feedback)}."""
    reader = csv.DictReader(io.StringIO(text))
    items = [name.removeprefix("Assignment: ") for name in reader.fieldnames if name.startswith("Assignment: ")]
    assert len(items) == 1 and f"Feedback: {items[0]}" in reader.fieldnames, reader.fieldnames
    taken, unmatched = {}, []
    for row in reader:
        user = next((u for u in users if row[identifier] and u[field] == row[identifier]), None)
        if user is None:
            unmatched.append(row)
            continue
        taken[user["email"]] = (float(row[f"Assignment: {items[0]}"]), row[f"Feedback: {items[0]}"])
    return {"grades": taken, "unmatched": unmatched}


def moodle_worksheet_import(text: str, participants: dict[str, str]) -> dict:
    """Moodle's grading worksheet upload: {participant's user: (grade, feedback)}; None when the
    importer refuses the file (a required column missing)."""
    reader = csv.DictReader(io.StringIO(text))
    if not {"Identifier", "Grade", "Last modified (grade)"} <= set(reader.fieldnames or []):
        return {}
    taken, unmatched = {}, []
    for row in reader:
        user = participants.get(row["Identifier"][len("Participant "):])
        if user is None:
            unmatched.append(row)
            continue
        assert datetime.fromisoformat(row["Last modified (grade)"])  # strtotime reads ISO 8601
        taken[user] = (float(row["Grade"]), row.get("Feedback comments", ""))
    return {"grades": taken, "unmatched": unmatched}


def result(name: str, score: float, *, student_id: str = "", late: bool = False, error: str = "") -> SubmissionResult:
    return SubmissionResult(name, "toy", [QuestionResult("q.one", score, 10.0, "", 1, 1)], error=error,
                            student_id=student_id, adjustments=[Adjustment(LATE, -1.0, "1 day late", "policy", "t")]
                            if late else [])


ROSTER = Roster(__file__, {  # type: ignore[arg-type]
    "s1": Student("s1", "Ann Lee", "ann@example.edu", submission="ann", lms_id="101", sis_id="SIS1", login="alee"),
    "s2": Student("s2", "Bob Ray", "bob@example.edu", submission="bob", sis_id="-SIS2"),  # a SIS id a guard would touch
    "s3": Student("s3", "Cat Dee", "=cat@example.edu", submission="cat", login="cdee"),
    "s4": Student("s4", "Dan Eck", "dan@example.edu", submission="dan", login="deck"),
})
USERS = [{"id": "101", "sis_user_id": "SIS1", "login_id": "alee", "email": "ann@example.edu"},
         {"id": "102", "sis_user_id": "-SIS2", "login_id": "bray", "email": "bob@example.edu"},
         {"id": "103", "sis_user_id": "", "login_id": "cdee", "email": "=cat@example.edu"},
         {"id": "104", "sis_user_id": "", "login_id": "deck", "email": "dan@example.edu"}]
RESULTS = [result("ann", 9.0, late=True), result("bob", 6.0), result("cat", 7.0), result("dan", 5.0),
           result("eve", 0.0, error="the sandbox did not start")]


def test_canvas_imports_each_grade_to_its_student_or_the_export_says_why_not():
    text, left_out = canvas_csv(RESULTS, ROSTER, "Tensors", "4711")
    read = canvas_import(text, USERS)
    assert read["assignments"] == [("existing", "4711")] and read["unmatched"] == []
    assert read["grades"] == {(("existing", "4711"), "101"): 8.0, (("existing", "4711"), "103"): 7.0,
                              (("existing", "4711"), "104"): 5.0}
    assert any(why.startswith("bob: its SIS User ID '-SIS2'") for why in left_out), left_out  # never sent as '-SIS2
    assert "eve: not graded (the grader failed on it)" in left_out


@pytest.mark.parametrize("title, assignment_id, read_as", [
    ("Tensors", "", ("new", "Tensors", 10.0)),
    ("Lab (2)", "", ("new", "Lab [2]", 10.0)),  # not Canvas's assignment 2
    ("Lab (2)", "4711", ("existing", "4711")),
    ("Lab(12)  ", "", ("new", "Lab[12]", 10.0)),
])
def test_canvas_reads_the_assignment_column_as_meant(title, assignment_id, read_as):
    text, _ = canvas_csv(RESULTS[:1], ROSTER, title, assignment_id)
    assert canvas_import(text, USERS)["assignments"] == [read_as]


def test_moodle_imports_by_email_exactly_with_feedback():
    text, left_out = moodle_csv(RESULTS, ROSTER, "Tensors")
    read = moodle_import(text, USERS)
    assert read["unmatched"] == []
    assert read["grades"] == {"ann@example.edu": (8.0, "late policy, -1 point: 1 day late"),
                              "dan@example.edu": (5.0, "")}
    assert any(why.startswith("cat: its Email address '=cat@example.edu'") for why in left_out), left_out
    assert any(why.startswith("bob: its ID number '-SIS2'") for why in left_out), left_out  # never as "'-SIS2"
    by_id_number = moodle_import(text, USERS, identifier="ID number", field="sis_user_id")
    assert by_id_number["grades"] == {"ann@example.edu": (8.0, "late policy, -1 point: 1 day late")}


def download_folder(root, results):
    book = Gradebook(root / "grades" / DB_FILE, "toy")
    for one in results:
        book.record(Graded(one, "0.1.0", "2030-01-01T00:00:00Z"))
    return root / "grades"


@pytest.fixture
def course_without_roster(make_course):
    return make_course({"course.toml": "", "autograder/toy/assignment.toml": 'files = ["x.py"]\n',
                        "assignments/toy/.keep": ""})


def test_a_canvas_download_exports_without_a_roster(course_without_roster, capsys):
    root = course_without_roster
    out = download_folder(root, [result("smithjane", 9.0, student_id="101"), result("doejohn", 4.0, student_id="104")])
    assert cli.main(["--course", str(root), "export", "canvas", str(out), "--title", "Lab (2)"]) == 0
    read = canvas_import((out / "canvas.csv").read_text(), USERS)
    assert read["grades"] == {(("new", "Lab [2]", 10.0), "101"): 9.0, (("new", "Lab [2]", 10.0), "104"): 4.0}
    assert "wrote" in capsys.readouterr().out


def test_a_moodle_download_exports_a_grading_worksheet_without_a_roster(course_without_roster, capsys):
    root = course_without_roster
    out = download_folder(root, [result("Jane Smith", 9.0, student_id="501", late=True),
                                 result("John Doe", 4.0, student_id="502"),
                                 result("Gone", 0.0, student_id="503", error="the sandbox did not start")])
    assert cli.main(["--course", str(root), "export", "moodle", str(out)]) == 0
    said = capsys.readouterr().out
    assert "2 student(s)" in said and "Upload grading worksheet" in said
    read = moodle_worksheet_import((out / "moodle.csv").read_text(), {"501": "jane", "502": "john", "503": "gone"})
    assert read["grades"] == {"jane": (8.0, "late policy, -1 point: 1 day late"), "john": (4.0, "")}
    assert read["unmatched"] == []


def test_nothing_to_write_is_an_error_not_an_empty_file(make_course, capsys):
    root = make_course({"course.toml": 'roster = "roster.csv"\n', "autograder/toy/assignment.toml": 'files = ["x.py"]\n',
                        "assignments/toy/.keep": "", "roster.csv": "student_id,name,email\ns9,Zed Z,zed@example.edu\n"})
    out = download_folder(root, [result("nobody", 3.0)])
    assert cli.main(["--course", str(root), "export", "moodle", str(out)]) == 2
    assert "no student" in capsys.readouterr().out and not (out / "moodle.csv").exists()
