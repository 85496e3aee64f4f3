"""`checks new NAME`: a minimal complete assignment, written across the course's three trees.

One function (`exercise.standardize`) with its solution region, hidden and public checks, the
table of mistakes both name (tests/diagnoses.py, checks.suite.diagnosis_table), a quiz key with a tolerance, a mutant per question (and one that must
keep its points), the lesson notebook's source, a README and assignment.toml, so that `checks build
&& checks verify NAME` hold at once and the author edits from something that works. The files come
from templates/new/; the table below says where each goes.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from checks.authoring.points import README, assignment_points, with_points_table
from checks.course.assignment import CourseError, load_assignment

TEMPLATES = Path(__file__).parent / "templates" / "new"
# where each template goes in the course ({name}: the new assignment's)
LAYOUT = {
    "solutions/{name}/exercise.py": "exercise.py.j2",
    "solutions/{name}/quiz.toml": "quiz.toml.j2",
    "solutions/{name}/README.md": "README.md.j2",
    "solutions/{name}/{name}.py": "lesson.py.j2",
    "solutions/{name}/tests/test_public.py": "test_public.py.j2",
    "solutions/{name}/tests/diagnoses.py": "diagnoses.py.j2",
    "autograder/{name}/assignment.toml": "assignment.toml.j2",
    "autograder/{name}/test_exercise.py": "test_exercise.py.j2",
    "autograder/{name}/mutants.toml": "mutants.toml.j2",
}
TREES = ("solutions", "autograder", "assignments")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def new_assignment(root: Path, name: str, *, title: str = "") -> list[Path]:
    """Write the assignment `name` into the course at `root`; the files written. A CourseError,
    and nothing written, for a name that is not a plain folder name or that the course has."""
    if not NAME.fullmatch(name):
        raise CourseError(f"{name!r} cannot name an assignment: use letters, digits, _ and - (such as 04_norms), "
                          "starting with a letter or digit, at most 64 characters")
    taken = [f"{tree}/{name}" for tree in TREES if (root / tree / name).exists()]
    if taken:
        raise CourseError(f"the course at {root} already has {', '.join(taken)}: choose another name, or remove "
                          "those folders first")
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                                     keep_trailing_newline=True, autoescape=False)
    values = {"name": name, "title": title or "Standardizing a tensor"}
    written = []
    for target, template in LAYOUT.items():
        path = root / target.format(name=name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(environment.get_template(template).render(values), encoding="utf-8")
        written.append(path)
    readme = root / "solutions" / name / README  # its points table, from the suite just written
    readme.write_text(with_points_table(readme.read_text(encoding="utf-8"), assignment_points(load_assignment(root, name))),
                      encoding="utf-8")
    return written
