"""`checks build`: the student release in assignments/ is generated from solutions/.

The lesson source solutions/<name>/<name>.py becomes the notebook <name>.ipynb (notebooks/lesson.py).
Solution regions become `raise NotImplementedError("<function>: <hint>")`, quiz answers become
empty strings, and every other file is copied as it is; each release also gets its marker
(course/assignment.py), so that a student's copy of it can be checked anywhere. Data a release
needs from the grader's side (01's table of likely mistakes for the public cases) comes from
autograder/<name>/release_data.py, whose `files(solution_dir)` the build calls: what the hidden
suite knows reaches students as values for the public cases, never as code. A README's table of
points is generated from the hidden suite (authoring/points.py), in solutions/ and so in the release.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

from checks.course.assignment import MARKER_FILE, Assignment, CourseError, QuizItem, load_assignment, marker_text
from checks.course.release import IGNORED, quiz_notes, stub_files
from checks.course.solution_regions import RegionError
from checks.course.stubs import stub_functions
from checks.authoring.points import README, assignment_points, has_points_region, with_points_table
from checks.notebooks.lesson import build_notebook, lesson_source, notebook_name

BuildError = RegionError  # a solution file whose regions do not pair up; str() names the file and line


def release_files(solution_dir: Path, *, with_notebook: bool = True,
                  quiz: tuple[QuizItem, ...] = ()) -> dict[str, bytes]:
    """The student release generated from one solutions/<name> folder; its lesson source
    (solutions/<name>/<name>.py, where there is one) becomes the notebook <name>.ipynb, unless
    `with_notebook` is False (grading the stubs needs no notebook, nor jupytext). `quiz`: the keys,
    whose declared tolerances the blank quiz.toml states."""
    files: dict[str, bytes] = {}
    lesson = lesson_source(solution_dir)
    if lesson.is_file() and with_notebook:
        files[notebook_name(solution_dir)] = build_notebook(lesson.read_text(encoding="utf-8"), lesson.name).encode()
    return files | stub_files(solution_dir, leave_out=lesson, quiz_notes=quiz_notes(quiz))


RELEASE_DATA = "release_data.py"


def release_data(autograder_dir: Path, solution_dir: Path) -> dict[str, bytes]:
    """The files autograder/<name>/release_data.py computes for the release (none without it). It is
    the course's own code, run with its suite folder importable, and its modules forgotten after."""
    path = autograder_dir / RELEASE_DATA
    if not path.is_file():
        return {}
    before = set(sys.modules)
    sys.path.insert(0, str(autograder_dir))
    try:
        spec = importlib.util.spec_from_file_location(f"checks_release_data_{autograder_dir.name}", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type] - a .py file always has a spec
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        made = module.files(solution_dir)
    finally:
        sys.path.remove(str(autograder_dir))
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file.startswith(str(autograder_dir)) or name.startswith("checks_release"):
                del sys.modules[name]
    return {str(name): bytes(data) for name, data in made.items()}


# Numbers a release's data files hold (diagnoses worked out at build time) agree between two
# machines to about this: NumPy's exp and PyTorch's kernels differ in a last bit from one CPU's
# vector instructions to another's (2.2418079431114208e-104 against 2.24180794311142e-104).
DATA_REL_TOL = 1e-9


def _same_content(name: str, current: bytes | None, wanted: bytes) -> bool:
    """Whether the release's file already holds what the build makes of it: the same bytes, or for
    a JSON data file the same values, its floats within DATA_REL_TOL (a file is not out of date on
    one machine and current on another)."""
    if current == wanted:
        return True
    if current is None or not name.endswith(".json"):
        return False
    try:
        return _same_values(json.loads(current), json.loads(wanted))
    except ValueError:
        return False


def _same_values(old: object, new: object) -> bool:
    if isinstance(old, float) and isinstance(new, float):
        both_nan = math.isnan(old) and math.isnan(new)
        return both_nan or math.isclose(old, new, rel_tol=DATA_REL_TOL, abs_tol=0.0)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same_values(a, b) for a, b in zip(old, new))
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_same_values(old[key], new[key]) for key in old)
    return type(old) is type(new) and old == new


def _current_files(release_dir: Path) -> dict[str, bytes]:
    if not release_dir.is_dir():
        return {}
    return {path.relative_to(release_dir).as_posix(): path.read_bytes() for path in sorted(release_dir.rglob("*"))
            if path.is_file() and not IGNORED.intersection(path.relative_to(release_dir).parts)}


def _marker_assignment(root: Path, name: str) -> Assignment:
    """What the marker records: the assignment.toml, or for a course without one the solution's modules."""
    if (root / "autograder" / name / "assignment.toml").is_file():
        return load_assignment(root, name)
    solution_dir = root / "solutions" / name
    files = tuple(sorted(path.name for path in solution_dir.glob("*.py") if path != lesson_source(solution_dir)))
    return Assignment(name=name, root=root, title=name, files=files)


def stubs_table(files: tuple[str, ...], release: dict[str, bytes]) -> str:
    """The marker's record of the functions each file leaves to write (course/stubs.py), so that a
    student's copy can tell untouched stubs from a start, with no course around it."""
    lines = []
    for name in files:
        stubs = stub_functions(release[name].decode("utf-8")) if name.endswith(".py") and name in release else None
        if stubs:
            lines.append(f"{json.dumps(name)} = [{', '.join(json.dumps(stub) for stub in stubs)}]")
    return "\n# the functions each file leaves to write\n[stubs]\n" + "\n".join(lines) + "\n" if lines else ""


def _readme_with_points(root: Path, assignment: Assignment) -> str | None:
    """solutions/<name>/README.md with its points table made from the suite, where that changes it
    (None where it has no points markers, or its table is current)."""
    path = root / "solutions" / assignment.name / README
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if not has_points_region(text) or not assignment.autograder_dir.is_dir():
        return None
    made = with_points_table(text, assignment_points(assignment))
    return None if made == text else made


def require_current_release(assignment: Assignment) -> None:
    """CourseError while `assignment`'s release differs from what `checks build` makes of its
    solution (an export for students would hand them an old release); nothing to compare where
    the course has no solution."""
    if assignment.solution_dir.is_dir() and build(assignment.root, [assignment.name], check=True):
        raise CourseError(f"{assignment.release_dir} is out of date with {assignment.solution_dir}: run "
                          f"`checks build {assignment.name}` first (students would get an old release)")


def build(root: Path, names: list[str], *, check: bool = False) -> list[str]:
    """Regenerate assignments/<name> for each name; with check, change nothing and list what differs."""
    differences: list[str] = []
    for name in names:
        release_dir = root / "assignments" / name
        assignment = _marker_assignment(root, name)
        wanted = release_files(root / "solutions" / name, quiz=assignment.quiz)
        readme = _readme_with_points(root, assignment)
        if readme is not None:
            differences.append(f"solutions/{name}/{README}: its points table is not the suite's")
            wanted[README] = readme.encode()
            if not check:
                (root / "solutions" / name / README).write_text(readme, encoding="utf-8")
        wanted |= release_data(root / "autograder" / name, root / "solutions" / name)
        wanted[MARKER_FILE] = (marker_text(assignment) + stubs_table(assignment.files, wanted)).encode()
        current = _current_files(release_dir)
        stale = sorted(set(current) - set(wanted))
        changed = sorted(f for f in wanted if not _same_content(f, current.get(f), wanted[f]))
        differences += [f"assignments/{name}/{f}: out of date" for f in changed]
        differences += [f"assignments/{name}/{f}: not generated from solutions/{name}" for f in stale]
        if check:
            continue
        for relative in stale:
            (release_dir / relative).unlink()
        for relative in changed:
            target = release_dir / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(wanted[relative])
        for folder in sorted((p for p in release_dir.rglob("*") if p.is_dir()), reverse=True):
            if not any(folder.iterdir()) or folder.name == "__pycache__":
                shutil.rmtree(folder, ignore_errors=True)
    return differences
