"""What an author is told on the way: each message says what to do, not only what broke (verify
before `checks build`, a suite that asks for a module assignment.toml does not name, a key that
TOML reads into the [table] above it, the verify table in a pipe or at 80 columns)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from checks.authoring.new import new_assignment
from checks.authoring.verify import verify
from checks.course.assignment import load_assignment
from checks.course.schema import ASSIGNMENT_TOML, problems
from checks.suites.student import Student


def test_a_key_after_a_table_header_is_said_to_belong_to_that_table():
    text = 'title = "x"\n[quiz.a]\nanswer = 1\npoints = 2\nhidden_only = ["q"]\n[policy]\ntime_zone = "UTC"\nfiles = []\n'
    found = problems(tomllib.loads(text), ASSIGNMENT_TOML)
    assert found == ["`hidden_only` is read as part of [quiz.a]: in TOML a key belongs to the last [table] above it, "
                     "so move `hidden_only = ...` above the first [table] of the file",
                     "`files` is read as part of [policy]: in TOML a key belongs to the last [table] above it, so "
                     "move `files = ...` above the first [table] of the file"]
    assert problems(tomllib.loads('[quiz.a]\nanswer = 1\npoints = 2\nanwser = 3\n'), ASSIGNMENT_TOML) == [
        "unknown key `anwser` in [quiz.a] (did you mean `answer`?)"]


def test_a_module_the_assignment_does_not_name_says_where_to_name_it():
    for modules, wanted in ((frozenset(), 'add `files = ["exercise.py"]` to its assignment.toml'),
                            (frozenset({"strides"}), 'add "exercise.py" to `files` (or `provided`)')):
        student = Student(None, modules)
        try:
            student.exercise
        except AttributeError as error:
            assert wanted in str(error), str(error)
        else:
            raise AssertionError("no AttributeError")


def test_verify_before_build_says_to_build_and_prints_a_line_per_verdict_in_a_pipe(tmp_path):
    new_assignment(tmp_path, "demo")
    verdicts = verify(load_assignment(tmp_path, "demo"), jobs=1)
    last = verdicts[-1]
    assert not last.ok and last.expectation == "the release is built"
    assert last.detail.startswith("assignments/demo does not exist yet: run `checks build demo`")
    assert not [v for v in verdicts if "public check" in v.expectation or "notebook" in v.expectation]
    piped = subprocess.run([sys.executable, "-m", "checks", "verify", "demo"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600)
    lines = piped.stdout.splitlines()
    held, total = map(int, re.fullmatch(r"verify demo: (\d+) of (\d+) hold", lines[-1]).groups())
    assert piped.returncode == 1 and lines[0] == "verify demo" and held == total - 1  # all but "the release is built"
    assert "  yes  reference: scores 100/100: 100/100" in lines
    assert not any(set(line) & set("┃│┏") for line in lines)
