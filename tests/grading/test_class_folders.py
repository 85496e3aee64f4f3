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
