"""A folder of submissions is told from one submission whatever hides in it (issue 43): an entry
whose name starts with a dot counts as a submission-like entry (so that it cannot make the folder
one student's, and its neighbour vanish), is not graded, and, like every entry of the folder that
is not graded, gets a line saying why. The real `checks grade` runs at each isolation level."""

from __future__ import annotations

import json

import pytest

from checks import cli
from checks.grading.batch import expand_submission_paths
from checks.sandbox import jail

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
HONEST = "def add(a, b):\n    return a + b\n"
COURSE = {
    "autograder/toy/assignment.toml": 'files = ["mod.py"]\n',
    "autograder/toy/test_toy.py": """
        from checks.suite import question, expect_equal

        @question("mod.add", points=10)
        def test_add(student):
            expect_equal(student.mod.add(1, 2), 3)
    """,
    "assignments/toy/.keep": "",
    "subs/honest/mod.py": HONEST,
    "subs/.sneaky/mod.py": "def add(a, b):\n    return 0\n",
    "subs/notes.txt": "the TA's notes\n",
}


def test_a_hidden_entry_counts_when_telling_a_folder_of_submissions_from_one(make_course):
    root = make_course(COURSE)
    skipped: list[str] = []
    found = expand_submission_paths([root / "subs"], "toy", skipped)
    assert [(f.path, f.name) for f in found] == [(root / "subs/honest", "honest")]
    assert any(".sneaky" in line and "starts with a dot" in line for line in skipped), skipped
    assert any("notes.txt" in line and "not a folder, zip or notebook" in line for line in skipped), skipped
    # a student's folder that wraps their work is still theirs: alice/hw2/ is graded as alice
    (root / "alice/hw2").mkdir(parents=True)
    (root / "alice/hw2/mod.py").write_text(HONEST)
    assert [(f.path, f.name) for f in expand_submission_paths([root / "alice"], "toy")] == [(root / "alice", "alice")]


@pytest.mark.parametrize("level", LEVELS)
def test_the_neighbour_of_a_hidden_entry_is_graded_and_the_entry_is_named(make_course, capsys, level):
    root = make_course(COURSE)
    out = root / "out"
    code = cli.main(["--course", str(root), "grade", "toy", str(root / "subs"), "--out", str(out),
                     "--isolation", level])
    shown = capsys.readouterr().out
    assert code == 0, shown
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["honest"], shown
    assert json.loads((out / "honest/results.json").read_text())["score"] == 10
    assert ".sneaky" in shown and "starts with a dot" in shown and "notes.txt" in shown, shown


# What a student's own upload (a folder or a zip: its content is the student's) may hold to pose as
# other students: folders of work named for them, files or folders named as Canvas or Moodle name
# them, a zip of either, or one such zip wrapped in a folder. None of it may name anyone.
def _posing_as_others(root, name: str, shape: str) -> None:
    import zipfile

    inner = {
        "nested": {"zoe/mod.py": "def add(a, b):\n    return 0\n", "carol/mod.py": HONEST},
        "canvas": {"zoe_102_9002_mod.py": "def add(a, b):\n    return 0\n", "carol_103_9003_mod.py": HONEST},
        "moodle": {"Zoe Honest_501_assignsubmission_file_/mod.py": "def add(a, b):\n    return 0\n",
                   "Carol Never_502_assignsubmission_file_/mod.py": HONEST},
    }[shape.split("-")[0]]
    base = root / "subs" / name
    if shape.endswith("-zip") or shape.endswith("-wrapped"):
        zipped = (base / "upload.zip") if shape.endswith("-wrapped") else base.with_suffix(".zip")
        zipped.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(zipped, "w") as archive:
            for path, text in inner.items():
                archive.writestr(path, text)
    else:
        for path, text in inner.items():
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            (base / path).write_text(text)


SHAPES = ["nested", "nested-zip", "canvas", "canvas-zip", "canvas-wrapped", "moodle", "moodle-zip", "moodle-wrapped"]


@pytest.mark.parametrize("form", ["class folder", "subs/*"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_students_upload_never_names_other_students(make_course, shape, form):
    """Found by a fresh attacker: `subs/*` read mallory/zoe/ and mallory/carol/ as two students, so
    mallory's stub took zoe's name (her folder sorted first) and a row appeared for carol, who never
    submitted; a class folder read mallory's Canvas-named files as zoe's, id and all."""
    root = make_course({name: text for name, text in COURSE.items() if not name.startswith("subs/")})
    (root / "subs/zoe").mkdir(parents=True)
    (root / "subs/zoe/mod.py").write_text(HONEST)
    _posing_as_others(root, "mallory", shape)
    given = [root / "subs"] if form == "class folder" else sorted((root / "subs").iterdir())
    notes: list[str] = []
    found = expand_submission_paths(given, "toy", notes)
    assert sorted((f.name, f.student_id) for f in found) == [("mallory", ""), ("zoe", "")], found
    if shape != "nested-zip":  # a zip of two folders is one student's anyway (its feedback says to move them)
        assert any("mallory" in line and "looks like several" in line for line in notes), notes
