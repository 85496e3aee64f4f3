"""`checks export gradescope`: an assignment as a Gradescope autograder.zip.

Gradescope builds an image from its Ubuntu base by running setup.sh once (here: Python 3.11, the
pinned environment from constraints.txt with the CPU build of torch, and this `checks`), then
runs run_autograder for each submission with the upload in /autograder/submission/; the grade is
whatever it writes to /autograder/results/results.json. Ours grades the upload with `checks
grade`, so that file is the one `checks grade` writes for the same code. When the grader itself
fails, run_autograder writes no results.json and exits non-zero: Gradescope then reports a failed
autograder to the staff instead of a score. The /autograder root, and the Python that runs
`checks`, can be moved (AUTOGRADER_ROOT, CHECKS_PYTHON) so that the layout can be tested anywhere.

What Gradescope shows a student of each test (question) is its `visibility` in results.json:
run_autograder sets it from `[gradescope]` in the assignment's assignment.toml as the last step
(`python -m checks.exports.gradescope`), the hidden suite's questions `after_due_date` unless the
author says otherwise. The results.json `checks grade` writes locally is the staff's: every test
visible.
"""

from __future__ import annotations

import json
import shlex
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import checks
from checks.course.assignment import Assignment, CourseError, load_assignment, read_course_toml
from checks.course.schema import ASSIGNMENT_TOML
from checks.exports.hidden import SKIPPED_PARTS, hidden_files
from checks.exports.runtime import project_root
from checks.reports.render import write_atomically

ZIP_NAME = "autograder.zip"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # zip entries' timestamp: the same course gives the same bytes
PROJECT_FILES = ("pyproject.toml", "constraints.txt", "LICENSE")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # Gradescope has no GPU: the CPU build of torch

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, on its Ubuntu base image: Python 3.11 and the grading
# environment pinned in constraints.txt (torch's CPU build), then `checks` itself.
set -euo pipefail
SOURCE=/autograder/source
export DEBIAN_FRONTEND=noninteractive
apt-get update
command -v python3.11 >/dev/null || apt-get install -y --no-install-recommends python3.11 python3.11-venv
# the strongest sandbox that works there: bubblewrap where the container allows namespaces, else fork
apt-get install -y --no-install-recommends bubblewrap || echo "no bubblewrap: checks will use the fork sandbox"
python3.11 -m venv "$SOURCE/venv"
"$SOURCE/venv/bin/pip" install --upgrade pip
"$SOURCE/venv/bin/pip" install --extra-index-url {torch_index} -c "$SOURCE/constraints.txt" "$SOURCE[course]"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission: it grades /autograder/submission with the hidden
# suite of {assignment} through `checks grade` and writes /autograder/results/results.json.
# A grader failure writes no results.json (Gradescope reports it to the staff, not as a score).
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
SOURCE="$ROOT/source"
PYTHON="${{CHECKS_PYTHON:-$SOURCE/venv/bin/python}}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/submission"
cp -R "$ROOT/submission/." "$work/submission/"
PYTHONPATH="$SOURCE/src" "$PYTHON" -m checks --course "$SOURCE/course" \\
    grade {assignment} "$work/submission" --out "$work/grades" --jobs 1
status=$?
shopt -s nullglob
results=("$work"/grades/*/results.json)  # one: the upload (named after its only folder if that is all it holds)
if [ "$status" -ne 0 ] || [ "${{#results[@]}}" -ne 1 ]; then
    echo "run_autograder: the grader failed (exit status $status); no score was written" >&2
    exit 1
fi
mkdir -p "$ROOT/results"
# what Gradescope shows of each test, and when: [gradescope] in the assignment's assignment.toml
if ! PYTHONPATH="$SOURCE/src" "$PYTHON" -m checks.exports.gradescope "$SOURCE/course" {assignment} \
        "${{results[0]}}" "$ROOT/results/results.json"; then
    echo "run_autograder: the grader failed (setting the tests' visibility); no score was written" >&2
    exit 1
fi
"""


DEFAULT_VISIBILITY = "after_due_date"  # the hidden suite's questions: shown once the due date has passed


@dataclass(frozen=True)
class Visibility:
    """Each question's visibility on Gradescope: `questions` maps a question id, or its first parts
    ("quiz", "strides"), to one of schema.VISIBILITIES; the most specific wins, else `default`."""

    default: str = DEFAULT_VISIBILITY
    questions: dict[str, str] = field(default_factory=dict)

    def of(self, qid: str) -> str:
        parts = qid.split(".")
        for end in range(len(parts), 0, -1):
            setting = self.questions.get(".".join(parts[:end]))
            if setting is not None:
                return setting
        return self.default


def gradescope_visibility(assignment: Assignment) -> Visibility:
    """`[gradescope]` of the assignment's autograder/<name>/assignment.toml (checked against the
    course schema when it is read: a value Gradescope does not know is a CourseError naming it):

        [gradescope]
        visibility = "after_due_date"     # every question: visible, hidden, after_due_date, after_published
        [gradescope.questions]
        quiz = "visible"                  # a question id, or its first part: the most specific wins
        "strides.view" = "hidden"

    Read here, from the file, because Assignment (course/assignment.py) keeps no field for it."""
    config = assignment.autograder_dir / "assignment.toml"
    table = read_course_toml(config, ASSIGNMENT_TOML).get("gradescope", {}) if config.is_file() else {}
    return Visibility(table.get("visibility", DEFAULT_VISIBILITY), dict(table.get("questions", {})))


def with_visibility(results: dict, visibility: Visibility) -> dict:
    """A results.json (as `checks grade` writes it) with each test's visibility set for Gradescope."""
    tests = [{**test, "visibility": visibility.of(str(test.get("name", "")))} for test in results.get("tests", [])]
    return {**results, "tests": tests}


def main(argv: list[str]) -> int:
    """run_autograder's last step: `python -m checks.exports.gradescope COURSE ASSIGNMENT RESULTS OUT`
    writes RESULTS to OUT (atomically) with each test's visibility from the assignment's [gradescope]."""
    if len(argv) != 4:
        print("usage: python -m checks.exports.gradescope COURSE ASSIGNMENT RESULTS_JSON OUT_JSON", file=sys.stderr)
        return 2
    course, name, source, out = argv
    try:
        visibility = gradescope_visibility(load_assignment(Path(course), name))
        results = json.loads(Path(source).read_text(encoding="utf-8"))
    except (CourseError, OSError, ValueError) as error:
        print(f"checks: {error}", file=sys.stderr)
        return 1
    write_atomically(Path(out), json.dumps(with_visibility(results, visibility), indent=2) + "\n")
    return 0


@dataclass(frozen=True)
class Export:
    zip_path: Path
    names: list[str]  # every entry of the zip, in order


def export_gradescope(assignment: Assignment, out_dir: Path) -> Export:
    """Write out_dir/autograder.zip for `assignment` (Gradescope unpacks it into /autograder/source/):
    setup.sh, run_autograder, `checks` with its pinned environment, and the hidden course files
    in course/ (never solutions/ or mutants). Its [gradescope] settings are checked here, not first
    on Gradescope."""
    gradescope_visibility(assignment)
    project = project_root()
    entries: dict[str, tuple[bytes, int]] = {
        "setup.sh": (SETUP_SH.format(torch_index=TORCH_CPU_INDEX).encode(), 0o755),
        "run_autograder": (RUN_AUTOGRADER.format(assignment=shlex.quote(assignment.name)).encode(), 0o755),
    }
    for name in PROJECT_FILES:
        if (project / name).is_file():
            entries[name] = ((project / name).read_bytes(), 0o644)
    package = Path(checks.__file__).resolve().parent
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if path.is_file() and path.suffix in (".py", ".j2") and not SKIPPED_PARTS & set(relative.parts):
            entries[f"src/checks/{relative.as_posix()}"] = (path.read_bytes(), 0o644)
    for relative, path in hidden_files(assignment).items():
        entries[f"course/{relative}"] = (path.read_bytes(), 0o644)
    out_dir.mkdir(parents=True, exist_ok=True)
    zip_path = out_dir / ZIP_NAME
    temp = zip_path.with_name(f".{ZIP_NAME}.tmp")
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (data, mode) in entries.items():
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    temp.replace(zip_path)
    return Export(zip_path, list(entries))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
