"""What a TA hands `checks grade` straight from an LMS or a class's uploads (issue 35): Canvas's and
Moodle's bulk downloads, and folders that wrap a student's work in one more folder or zip. Each
student is graded under their own name (and the LMS's id), reading the files under the names the
student gave them. With a stand-in grader: the naming and reading, not the suites."""

from __future__ import annotations

import csv
import glob
import io
import json
import zipfile
from pathlib import Path

import pytest
from rich.console import Console

from checks import cli
from checks.grading import batch
from checks.reports.gradebook import DB_FILE, Gradebook
from checks.suites.scoring import QuestionResult, SubmissionResult

NAMED = ("work.py", "answers.json")


def listing_grader(assignment, sources, *, jobs=None, **settings):
    """One question whose feedback lists the files read (name: first line), and a point per named file."""
    for source in sources:
        submission = source.load()
        read = {name: data.decode(errors="replace").splitlines()[0] if data else "" for name, data in
                sorted(submission.files.items())}
        score = float(sum(name in read for name in NAMED))
        yield SubmissionResult(source.name, assignment.name,
                               [QuestionResult("q", score, 2.0, json.dumps(read), 1, 1)],
                               warnings=list(submission.warnings), sandbox="stand-in")


@pytest.fixture
def course(tmp_path):
    root = tmp_path / "course"
    (root / "autograder" / "fake").mkdir(parents=True)
    (root / "autograder" / "fake" / "assignment.toml").write_text('files = ["work.py", "answers.json"]\n')
    return root


def grade(monkeypatch, course: Path, out: Path, *paths: Path) -> tuple[int, str]:
    monkeypatch.setattr(batch, "grade_sources", listing_grader)
    buffer = io.StringIO()
    monkeypatch.setattr(cli.common, "console", Console(file=buffer, width=200))
    code = cli.main(["--course", str(course), "grade", "fake", *map(str, paths), "--out", str(out)])
    return code, buffer.getvalue()


def graded(out: Path) -> dict[str, tuple[str, dict[str, str], list[str]]]:
    """name -> (student id, {file read: its first line}, warnings), from the gradebook."""
    return {g.name: (getattr(g.result, "student_id", ""), json.loads(g.result.questions[0].feedback), g.result.warnings)
            for g in Gradebook(out / DB_FILE, "fake").load()}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def zipped(path: Path, files: dict[str, str | bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def zip_bytes(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# Canvas: one flat folder, `<name>[_late]_<user id>_<attachment id>_<file>`, `-1` for a file uploaded again
CANVAS = {
    "smithjane_101_9001_work.py": "# jane's work",
    "smithjane_101_9002_answers.json": "{}",
    "doejohn_LATE_202_9003_work.py": "# john's first upload",
    "doejohn_LATE_202_9004_work-1.py": "# john's second upload",
    "doejohn_202_text.html": "<p>see attached</p>",
    "leeann_303_9005_hw2.zip": zip_bytes({"hw2/work.py": "# ann's zip", "hw2/answers.json": "{}"}),
    "leeann_303_9006_screenshot.png": "a picture",
    ".DS_Store": "junk",
    "._smithjane_101_9001_work.py": "macOS's resource fork of it, copied to another disk",
    "__MACOSX/smithjane_101_9001_work.py": "macOS's zip debris",
}
EXPECTED_CANVAS = {
    "smithjane": ("101", {"answers.json": "{}", "work.py": "# jane's work"}),
    "doejohn": ("202", {"work.py": "# john's second upload"}),  # text.html is not read: not the assignment's
    "leeann": ("303", {"answers.json": "{}", "work.py": "# ann's zip"}),
}


def canvas_folder(folder: Path) -> Path:
    for name, data in CANVAS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return folder


def files_and_ids(out: Path) -> dict[str, tuple[str, dict[str, str]]]:
    return {name: (student_id, files) for name, (student_id, files, _) in graded(out).items()}


@pytest.mark.parametrize("given", ["folder", "its files", "zip"])
def test_a_canvas_download_grades_each_student_under_their_name_and_canvas_id(tmp_path, monkeypatch, course, given):
    folder = canvas_folder(tmp_path / "canvas")
    paths = {"folder": [folder], "its files": sorted(map(Path, glob.glob(str(folder / "*")))),  # `canvas/*`
             "zip": [zipped(tmp_path / "submissions.zip", CANVAS)]}[given]
    code, shown = grade(monkeypatch, course, tmp_path / "out", *paths)
    assert code == 0, shown
    assert files_and_ids(tmp_path / "out") == EXPECTED_CANVAS
    rows = csv.DictReader((tmp_path / "out" / "gradebook.csv").open())
    assert {row["submission"]: row["student_id"] for row in rows} == {
        "Points Possible": "", "smithjane": "101", "doejohn": "202", "leeann": "303"}  # the ids to import by
    warnings = graded(tmp_path / "out")["doejohn"][2]
    assert any("work-1.py, was graded as work.py" in w for w in warnings), warnings  # said once, to the student
    assert "hw2.zip was graded; screenshot.png, beside it, was not read" in graded(tmp_path / "out")["leeann"][2]
    assert "grading 3 submission(s)" in shown


def test_moodle_folders_grade_each_student_under_their_full_name_and_participant_id(tmp_path, monkeypatch, course):
    moodle = tmp_path / "moodle"
    write(moodle / "Jane Smith_501_assignsubmission_file_" / "work.py", "# jane")
    write(moodle / "Jane Smith_501_assignsubmission_file_" / "answers.json", "{}")
    write(moodle / "Jane Smith_501_assignsubmission_onlinetext_" / "onlinetext.html", "<p>hi</p>")
    write(moodle / "John Doe_502_assignsubmission_file_" / "hw2" / "work.py", "# john, in a folder")
    code, shown = grade(monkeypatch, course, tmp_path / "out", *sorted(moodle.iterdir()))  # `moodle/*`
    assert code == 0, shown
    assert files_and_ids(tmp_path / "out") == {"Jane Smith": ("501", {"answers.json": "{}", "work.py": "# jane"}),
                                               "John Doe": ("502", {"work.py": "# john, in a folder"})}
    assert "only the files you uploaded are graded: your online text was not read" in graded(tmp_path / "out")[
        "Jane Smith"][2]
    code, _ = grade(monkeypatch, course, tmp_path / "again", moodle)  # the download's folder itself
    assert code == 0 and files_and_ids(tmp_path / "again") == files_and_ids(tmp_path / "out")
    moodle_zip = zipped(tmp_path / "moodle.zip", {str(p.relative_to(moodle)): p.read_text()
                                                  for p in moodle.rglob("*") if p.is_file()})
    code, _ = grade(monkeypatch, course, tmp_path / "zip", moodle_zip)  # or the zip Moodle gave
    assert code == 0 and files_and_ids(tmp_path / "zip") == files_and_ids(tmp_path / "out")


def test_moodle_without_folders_and_a_name_that_is_a_formula_or_holds_controls(tmp_path, monkeypatch, course):
    """Any name is data: mended and escaped as every name is (names.py, inert.py), never a formula."""
    moodle = tmp_path / "moodle"
    write(moodle / "=1+1\x1b[31m_7_assignsubmission_file_work.py", "# formula")
    write(moodle / "gradebook.csv_8_assignsubmission_file_work.py", "# a name of the grader's own")
    code, shown = grade(monkeypatch, course, tmp_path / "out", moodle)
    assert code == 0, shown
    got = files_and_ids(tmp_path / "out")
    assert got["=1+1\x1b[31m"] == ("7", {"work.py": "# formula"})
    (apart,) = [name for name in got if name.startswith("_gradebook.csv~")]  # never the grader's gradebook.csv
    assert got[apart] == ("8", {"work.py": "# a name of the grader's own"})
    assert "\x1b" not in shown and "\\x1b[31m" in shown


def test_students_of_one_download_who_share_a_name_are_told_apart_by_their_id(tmp_path, monkeypatch, course):
    folder = tmp_path / "canvas"
    write(folder / "smithjane_101_1_work.py", "# the first jane")
    write(folder / "smithjane_102_2_work.py", "# the second jane")
    code, _ = grade(monkeypatch, course, tmp_path / "out", folder)
    assert code == 0
    assert files_and_ids(tmp_path / "out") == {"smithjane_101": ("101", {"work.py": "# the first jane"}),
                                               "smithjane_102": ("102", {"work.py": "# the second jane"})}


def test_folders_that_wrap_the_work_in_one_folder_or_zip_are_graded_under_the_students_name(tmp_path, monkeypatch,
                                                                                          course):
    subs = tmp_path / "subs"
    write(subs / "alice" / "hw2" / "work.py", "# alice")
    write(subs / "bob" / "hw2" / "work.py", "# bob")
    write(subs / "bob" / ".DS_Store", "junk")
    zipped(subs / "carol" / "hw2.zip", {"hw2/work.py": "# carol"})
    code, shown = grade(monkeypatch, course, tmp_path / "out", *sorted(subs.iterdir()))  # `subs/*`
    assert code == 0, shown  # two `hw2/` did not stop the batch
    assert files_and_ids(tmp_path / "out") == {"alice": ("", {"work.py": "# alice"}), "bob": ("", {"work.py": "# bob"}),
                                               "carol": ("", {"work.py": "# carol"})}
    code, _ = grade(monkeypatch, course, tmp_path / "one", subs / "alice")  # one such folder keeps its name
    assert code == 0 and list(files_and_ids(tmp_path / "one")) == ["alice"]
    code, _ = grade(monkeypatch, course, tmp_path / "all", subs)  # the class folder: each of them
    assert code == 0 and files_and_ids(tmp_path / "all") == files_and_ids(tmp_path / "out")


def test_a_rerun_on_a_download_skips_the_unchanged_and_grades_a_changed_student_again(tmp_path, monkeypatch, course):
    folder = canvas_folder(tmp_path / "canvas")
    out = tmp_path / "out"
    assert grade(monkeypatch, course, out, folder)[0] == 0
    code, shown = grade(monkeypatch, course, out, folder)
    assert code == 0 and "3 of 3 already graded" in shown
    (folder / "smithjane_101_9001_work.py").write_text("# jane, fixed")
    code, shown = grade(monkeypatch, course, out, folder)
    assert code == 0 and "smithjane: changed since it was graded" in shown and "2 already graded" in shown
