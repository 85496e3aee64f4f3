"""`checks export student`: an assignment as students get it, with nothing of the staff's.

The bundle is a folder, and a zip of it, that a student can use with no course repository and no
staff environment:

    01_tensors-student/
      README.md                  what to type
      setup_env.py               one command: .venv with the light runtime (exports/student_setup.py)
      constraints.txt            the grader's pins for that runtime (exports/runtime.py)
      requirements.txt           what the assignment's own files import beyond it (03_mlp: scikit-learn)
      wheels/checks-*.whl        `checks` itself (exports/wheel.py)
      assignments/01_tensors/    the release: stubs, quiz.toml with empty answers, public checks,
                                 the lesson notebook, README, and the marker `checks test` reads

Only the release folder (assignments/<name>/, which `checks build` writes from the solutions with
every solution region and quiz answer taken out) is copied: never autograder/ (hidden suites,
quiz keys, mutants) or solutions/. Under an assignments/ folder, the bundle is a course of its own
to `checks`: `checks test 01_tensors` and `checks pack 01_tensors` work from its top folder, as in
the repository, and `checks test` alone from inside the assignment's folder.
"""

from __future__ import annotations

import shutil
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from checks.course.assignment import Assignment, CourseError, read_marker
from checks.course.submissions import SKIPPED_DIRS
from checks.exports import runtime, student_setup
from checks.exports.wheel import FIXED_TIME, write_wheel
from checks.suites.quiz import QUIZ_FILE

SETUP_SCRIPT = "setup_env.py"
BUNDLE_README = """\
# {name}: {title}

Everything you need to do this assignment and check your work, without the course repository.

1. Set up, once (Python 3.11; a few minutes, mostly downloading torch):

       python3.11 setup_env.py            # Windows: py -3.11 setup_env.py
       python3.11 setup_env.py --jupyter  # the same, and JupyterLab for the lesson notebook

2. Activate the environment (`source .venv/bin/activate`; Windows: `.venv\\Scripts\\activate`), go to
   your folder and work there: edit the `.py` files, answer `quiz.toml`, read the lesson notebook
   (`jupyter lab {name}.ipynb`) and the folder's README.md.

       cd assignments/{name}
       checks test          # the public checks: a row per question, and what went wrong
       checks pack          # writes {name}.zip: exactly the files the grader reads; upload that

The grader runs many more cases than the public checks, with the same versions of torch and
numpy as this environment (constraints.txt).
"""


@dataclass
class StudentExport:
    folder: Path  # the bundle
    zip_path: Path  # the same, zipped
    files: list[str]  # every file of the bundle, relative to its folder
    requirements: list[str]  # distributions the assignment's own files add to the core (requirements.txt)


def bundle_name(assignment: Assignment) -> str:
    return f"{assignment.name}-student"


def export_student(assignment: Assignment, out_dir: Path) -> StudentExport:
    """Write out_dir/<name>-student/ and out_dir/<name>-student.zip. CourseError when the release is
    missing, is not one `checks build` wrote, or holds a quiz answer."""
    release = assignment.release_dir
    if read_marker(release).get("assignment") != assignment.name:
        raise CourseError(f"{release} is not a built release of {assignment.name} (no {release.name}/.checks.toml): "
                          "run `checks build` first")
    release_files = _release_files(release)
    _refuse_quiz_answers(release_files, release)
    project = runtime.project_root()
    sources = {name: data.decode("utf-8", errors="replace") for name, data in release_files.items()
               if name.endswith(".py")}
    requirements = runtime.imported_distributions(sources, set(assignment.modules) | _test_modules(release_files))
    core = set(runtime.closure(runtime.core_requirements(project)))
    requirements = [name for name in requirements if name not in core]
    pins = runtime.runtime_pins(project, [*requirements, *student_setup.JUPYTER])

    folder = out_dir / bundle_name(assignment)
    _clear(folder)
    (folder / "assignments" / assignment.name).mkdir(parents=True)
    for name, data in release_files.items():
        path = folder / "assignments" / assignment.name / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    write_wheel(project, folder / "wheels")
    (folder / "constraints.txt").write_text(
        "# The versions the grader runs (from the course's constraints.txt): setup_env.py installs with them.\n"
        + "".join(f"{pin}\n" for pin in pins), encoding="utf-8")
    (folder / "requirements.txt").write_text(
        "# What this assignment's own files import beyond checks's core (setup_env.py installs it too).\n"
        + "".join(f"{name}\n" for name in requirements), encoding="utf-8")
    (folder / SETUP_SCRIPT).write_bytes(Path(student_setup.__file__).read_bytes())
    (folder / "README.md").write_text(BUNDLE_README.format(name=assignment.name, title=assignment.title
                                                           or assignment.name), encoding="utf-8")
    files = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    zip_path = out_dir / f"{folder.name}.zip"
    _write_zip(folder, files, zip_path)
    return StudentExport(folder, zip_path, files, requirements)


def _release_files(release: Path) -> dict[str, bytes]:
    """The release folder's files (posix paths), caches and editor folders left out."""
    return {path.relative_to(release).as_posix(): path.read_bytes() for path in sorted(release.rglob("*"))
            if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(release).parts)}


def _test_modules(files: dict[str, bytes]) -> set[str]:
    """Modules of the public tests folder (public_drivers), imported by bare name there."""
    return {Path(name).stem for name in files if name.startswith("tests/") and name.endswith(".py")}


def _refuse_quiz_answers(files: dict[str, bytes], release: Path) -> None:
    """A released quiz.toml has every answer empty (`checks build` blanks them): anything else is a
    key that must not reach students."""
    if QUIZ_FILE not in files:
        return
    try:
        quiz = tomllib.loads(files[QUIZ_FILE].decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise CourseError(f"{release / QUIZ_FILE}: cannot be read ({error})") from None
    answered = sorted(key for key, value in quiz.items() if value != "")
    if answered:
        raise CourseError(f"{release / QUIZ_FILE} holds answers for {', '.join(answered)}: a release must not; "
                          "run `checks build`")


def _clear(folder: Path) -> None:
    """Remove an earlier bundle at `folder`; refuse to remove anything that is not one."""
    if not folder.exists():
        return
    if not (folder / SETUP_SCRIPT).is_file() or not (folder / "assignments").is_dir():
        raise CourseError(f"{folder} exists and is not a student bundle: choose another --out")
    shutil.rmtree(folder)


def _write_zip(folder: Path, files: list[str], zip_path: Path) -> None:
    temp = zip_path.with_name(f".{zip_path.name}.tmp")
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in files:
            entry = zipfile.ZipInfo(f"{folder.name}/{name}", FIXED_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, (folder / name).read_bytes())
    temp.replace(zip_path)
