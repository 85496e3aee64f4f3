"""Where a course keeps its assignments, and what `autograder/<name>/assignment.toml` says.

`checks build` also writes a small marker, `.checks.toml`, into each assignments/<name>/: it names
the assignment, its files and the kind of each quiz answer (never the answer), so that a student's
copy of the folder, anywhere, can be checked and packed without the course around it.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from checks.config.errors import UsageError
from checks.course.schema import ASSIGNMENT_TOML, Schema, problems
from checks.sandbox.jail import WARM_WITHHELD
from checks.course.tolerance import Tolerance, read_tolerance


REFERENCES_DIR = "references"  # an exported grader's reference files, in place of solutions/
QUIZ_FILE = "quiz.toml"  # a submission's quiz answers, and the release's blank quiz


class CourseError(UsageError):
    """The course tree is missing something the command needs; str() says what and where."""


@dataclass(frozen=True)
class QuizItem:
    key: str
    answer: float | bool
    points: float
    tolerance: Tolerance = Tolerance()  # for a numeric answer

    @property
    def qid(self) -> str:
        return f"quiz.{self.key}"


@dataclass(frozen=True)
class Assignment:
    name: str
    root: Path
    title: str = ""
    files: tuple[str, ...] = ()
    provided: tuple[str, ...] = ()
    quiz: tuple[QuizItem, ...] = field(default_factory=tuple)
    # modules the sandbox imports once, before it forks any worker: for what the
    # student code of every question would otherwise import again (seconds each)
    sandbox_imports: tuple[str, ...] = ()
    # modules the grading process imports once, before it forks a grader per submission, where the
    # hidden suite's checks would import them in each (None: torch's lazily imported dynamo and
    # symbolic shapes, a second's work, which torch.optim and torch.broadcast_shapes reach)
    grader_imports: tuple[str, ...] | None = None
    # packages no question's sandbox may import (each question's own block_imports add to these):
    # then no zygote that imports them is warmed up at all (02_autograd withholds torch)
    block_imports: tuple[str, ...] = ()
    # a fresh worker for every question, instead of handing a healthy one on (slower, stricter)
    fresh_worker_per_question: bool = False
    # what one submission may consume (see docs/authoring.md): wall time in its sandbox, per
    # question and in all; the memory of all its processes together; each worker's own temp
    # space (0: none of its own, files capped one by one); a worker's mount namespace is made once
    # for all its questions, and costs no measurable time
    question_seconds: float = 300.0
    submission_seconds: float = 1800.0
    submission_memory_mib: int = 8192
    temp_mib: int = 256
    # a student's copy of the release, checked without the course (see load_copy)
    release: Path | None = None

    @property
    def zygote_sets(self) -> tuple[tuple[str, ...], ...]:
        """The packages withheld by each zygote worth starting before collection: those a batch
        starts (jail.WARM_WITHHELD), each withholding `block_imports` too (02, which withholds
        torch: only the one without it)."""
        return tuple(dict.fromkeys(tuple(sorted({*self.block_imports, *packages})) for packages in WARM_WITHHELD))

    @property
    def release_dir(self) -> Path:
        return self.release or self.root / "assignments" / self.name

    @property
    def solution_dir(self) -> Path:
        return self.root / "solutions" / self.name

    @property
    def reference_dir(self) -> Path:
        """Where reference files a suite grades with (use_reference) come from: solutions/<name>/, or
        references/<name>/ in an exported grader, which ships only those files (checks.exports)."""
        exported = self.root / REFERENCES_DIR / self.name
        return exported if not self.solution_dir.is_dir() and exported.is_dir() else self.solution_dir

    @property
    def autograder_dir(self) -> Path:
        return self.root / "autograder" / self.name

    @property
    def public_tests_dir(self) -> Path:
        return self.release_dir / "tests"

    def suite_dir(self, public: bool) -> Path:
        """The public checks students run, or the hidden suite."""
        return self.public_tests_dir if public else self.autograder_dir

    @functools.cached_property
    def modules(self) -> frozenset[str]:
        """Importable module names a suite may reach through the `student` fixture (asked for by
        every test of every submission)."""
        return frozenset(Path(name).stem for name in self.files + self.provided if name.endswith(".py"))

    def course_files(self) -> dict[str, bytes]:
        """The files the course provides: they replace whatever a submission has under that name."""
        return {name: (self.release_dir / name).read_bytes() for name in self.provided}

    def reference_files(self, names: tuple[str, ...]) -> dict[str, bytes]:
        folder = self.reference_dir
        missing = [name for name in names if not (folder / name).is_file()]
        if missing:
            raise CourseError(f"the reference {', '.join(missing)} is not in {folder}")
        return {name: (folder / name).read_bytes() for name in names}


def find_course_root(start: Path | None = None, *, named: Path | None = None) -> Path:
    """`named` (--course or CHECKS_COURSE, from the settings), else the nearest folder at or above
    `start` with assignments/ or solutions/."""
    if named is not None:
        return _course_of_folder(named.resolve())
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "assignments").is_dir() or (folder / "solutions").is_dir():
            return folder
    raise CourseError(f"no course found: neither {here} nor a folder above it has assignments/ or solutions/ "
                      f"or is a copy of an assignment (with its {MARKER_FILE}); run from the course repository or "
                      "your copy of the assignment folder, or name the course with --course DIR or CHECKS_COURSE")


def _course_of_folder(folder: Path) -> Path:
    """A course folder (course.toml, a roster, records: checks.policy, `checks serve`) may keep the
    assignments elsewhere, naming them with `course = "../.."`: that folder is the course root."""
    config = folder / "course.toml"
    if any((folder / sub).is_dir() for sub in ("assignments", "solutions", "autograder")) or not config.is_file():
        return folder
    try:
        pointed = tomllib.loads(config.read_text(encoding="utf-8")).get("course")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return folder  # said with the file and key where the course's policy is read (checks.policy)
    return (folder / pointed).resolve() if isinstance(pointed, str) else folder


MARKER_FILE = ".checks.toml"
ANSWER_KINDS = ("number", "true or false")  # what a quiz answer must be; the marker records one per key


def marker_text(assignment: Assignment) -> str:
    """The marker `checks build` writes into assignments/<name>/: enough to check a copy of it."""
    lines = ["# Written by `checks build`: it lets `checks test` and `checks pack` run from a copy of this",
             "# folder, anywhere. It names the assignment and the kind of each quiz answer, never the answer.",
             f"assignment = {_toml_string(assignment.name)}",
             f"title = {_toml_string(assignment.title)}",
             f"files = [{', '.join(_toml_string(name) for name in assignment.files)}]",
             f"provided = [{', '.join(_toml_string(name) for name in assignment.provided)}]"]
    if assignment.block_imports:  # the public checks withhold them as the hidden suite does
        lines.append(f"block_imports = [{', '.join(_toml_string(name) for name in assignment.block_imports)}]")
    if assignment.quiz:
        lines += ["", "[quiz]"] + [f"{_toml_key(item.key)} = {_toml_string(answer_kind(item))}" for item in assignment.quiz]
        declared = [item for item in assignment.quiz if not isinstance(item.answer, bool) and item.tolerance.declared]
        if declared:  # how close a numeric answer must be, where the author said (course/tolerance.py)
            lines += ["", "[quiz_tolerance]"] + [f"{_toml_key(item.key)} = {_toml_string(item.tolerance.describe())}"
                                                 for item in declared]
    return "\n".join(lines) + "\n"


def answer_kind(item: QuizItem) -> str:
    return ANSWER_KINDS[1] if isinstance(item.answer, bool) else ANSWER_KINDS[0]


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def read_marker(folder: Path) -> dict:
    """The marker in an assignment folder as a dict ({} when there is none or it cannot be read)."""
    try:
        marker = tomllib.loads((folder / MARKER_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    return marker if isinstance(marker.get("assignment"), str) else {}


def find_assignment_copy(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds an assignment's marker (a release or a copy of one)."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if read_marker(folder):
            return folder
    return None


def load_copy(folder: Path) -> Assignment:
    """An assignment from a student's copy of its release folder: its public tests, files and quiz keys
    come from the copy and its marker (the hidden suite is not there, and not needed)."""
    marker = read_marker(folder)
    if not marker:
        raise CourseError(f"{folder} has no readable {MARKER_FILE}: it is not a copy of an assignment folder")
    def names(key: str) -> tuple[str, ...]:
        value = marker.get(key, [])
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
    return Assignment(name=marker["assignment"], root=folder.parent, title=str(marker.get("title", "")),
                      files=names("files"), provided=names("provided"), block_imports=names("block_imports"),
                      release=folder.resolve())


def _quiz_items(path: Path, tables: dict[str, dict]) -> tuple[QuizItem, ...]:
    """The [quiz.<key>] tables as items; a tolerance that does not fit its key is a CourseError."""
    items, found = [], []
    for key, spec in tables.items():
        tolerance, problem = read_tolerance(spec, key, spec["answer"])
        if problem:
            found.append(problem)
        items.append(QuizItem(key, spec["answer"], float(spec["points"]), tolerance))
    if found:
        raise CourseError(f"{path}: " + "; ".join(found))
    return tuple(items)


def load_assignment(root: Path, name: str) -> Assignment:
    """Read the assignment's config; a student's copy without autograder/ gets one from its files."""
    config_path = root / "autograder" / name / "assignment.toml"
    if not config_path.is_file():
        release = root / "assignments" / name
        if not release.is_dir():
            known = sorted(p.name for p in (root / "assignments").iterdir() if p.is_dir()) if (root / "assignments").is_dir() else []
            raise CourseError(f"no assignment {name!r} in {root} (known: {', '.join(known) or 'none'})")
        if read_marker(release).get("assignment") == name:
            return replace(load_copy(release), root=root, release=None)
        files = tuple(sorted(p.name for p in release.glob("*.py")))
        return Assignment(name=name, root=root, title=name, files=files)
    config = read_course_toml(config_path, ASSIGNMENT_TOML)
    quiz = _quiz_items(config_path, config.get("quiz", {}))
    return Assignment(name=name, root=root, title=config.get("title", name), files=tuple(config.get("files", ())),
                      provided=tuple(config.get("provided", ())), quiz=quiz,
                      sandbox_imports=tuple(config.get("sandbox_imports", ())),
                      grader_imports=tuple(config["grader_imports"]) if "grader_imports" in config else None,
                      block_imports=tuple(config.get("block_imports", ())),
                      fresh_worker_per_question=config.get("fresh_worker_per_question", False),
                      **{key: config[key] for key in BUDGET_KEYS if key in config})


BUDGET_KEYS = ("question_seconds", "submission_seconds", "submission_memory_mib", "temp_mib")


def read_course_toml(path: Path, schema: Schema) -> dict[str, Any]:
    """A course file's contents, checked against its schema (course/schema.py): a CourseError
    names the file and every mistake in it, in one line."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise CourseError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise CourseError(f"{path}: not valid TOML ({error})") from None
    found = problems(data, schema)
    if found:
        raise CourseError(f"{path}: " + "; ".join(found))
    return data


def list_assignments(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "solutions").iterdir() if p.is_dir()) if (root / "solutions").is_dir() else []
