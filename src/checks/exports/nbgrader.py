"""`checks export nbgrader`: an assignment as an nbgrader course folder.

The folder holds nbgrader_config.py, source/<A>/<A>.ipynb and, beside them (never under source/,
so never released), the hidden course files of exports/hidden.py. The notebook has one
autograded-answer cell per student file (`%%checks file NAME`, the reference with its solution
regions between nbgrader's markers), the quiz as an answer cell, and one locked autograder-tests
cell per question, worth that question's points, which only calls `kernel.score`: the hidden
cases live in the course folder, outside the release and outside the feedback (nbgrader's
upstream issue 917 is test source shown to students). The grading cells run in the student's
kernel, so the export is only as safe as that kernel (README); `checks grade` reads the same
notebooks without running them there.

--fill turns .py submissions (folders or zips) into students' notebooks under
submitted/<name>/<A>/, so that a course moving from .py files, and the tests, can run
`nbgrader autograde` on known code.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from checks.course.answer_cells import answer_cell, parse_answer_cell
from checks.course.assignment import Assignment, CourseError
from checks.course.solution_regions import END, Region, split_regions
from checks.course.submissions import SubmissionError, read_submission, submission_name
from checks.exports import kernel
from checks.exports.hidden import hidden_files
from checks.grading.session import Source, grade_sources, named_files
from checks.suites.quiz import QUIZ_FILE

if TYPE_CHECKING:
    from nbformat import NotebookNode

CONFIG_FILE = "nbgrader_config.py"
SCHEMA_VERSION = 3  # nbgrader 0.9's cell metadata schema
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
# nbgrader finds a region by these words anywhere in a line (ClearSolutions: substring match)
NBGRADER_BEGIN, NBGRADER_END = "### BEGIN SOLUTION", "### END SOLUTION"

CONFIG = '''\
# nbgrader configuration written by `checks export nbgrader {assignment}`.
# The hidden suite of {assignment} is in autograder/ beside this file, outside source/ and
# release/: the grading cells find it above autograded/<student>/{assignment}/ when autograding.
c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = {course_id!r}
# the first grading cell grades every question of the notebook (sandbox start-up included)
c.Execute.timeout = {timeout}
'''

INTRO = """\
# {title}

Each code cell that starts with `%%checks file NAME` is the file NAME of this assignment: write
your code where it says `YOUR CODE HERE` (the hint above each such place says what it needs), and
put your quiz answers in the `%%checks file quiz.toml` cell. Run the cells from the top; a cell
below an answer cell can `import` it by its file name.

The cells that call `kernel.score` are graded when you submit, with checks your copy does not
have. Do not change or delete them.
"""


@dataclass(frozen=True)
class Question:
    qid: str
    points: float

    @property
    def grade_id(self) -> str:
        return grade_id(self.qid)


@dataclass(frozen=True)
class NbgraderExport:
    root: Path
    notebook: Path  # source/<A>/<A>.ipynb
    questions: list[Question]
    hidden: list[str]  # course-relative paths of the hidden files written beside source/
    filled: list[Path]  # the students' notebooks --fill wrote


grade_id = kernel.question_name  # an autograder-tests cell's grade_id: strides.offset -> strides_offset


def export_nbgrader(assignment: Assignment, out_dir: Path, fill: list[Path] | None = None) -> NbgraderExport:
    """Write the nbgrader course folder `out_dir` for `assignment`, and a student's notebook under
    submitted/ for each .py submission in `fill`."""
    import nbformat

    submissions = [_read_py_submission(assignment, path) for path in fill or []]  # refuse bad input first
    questions = assignment_questions(assignment)
    source = source_notebook(assignment, questions)
    released = release_notebook(source) if submissions else None

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / CONFIG_FILE).write_text(CONFIG.format(assignment=assignment.name, course_id=f"checks-{assignment.name}",
                                                     timeout=int(kernel.TIMEOUT_S)), encoding="utf-8")
    source_dir = out_dir / "source" / assignment.name
    source_dir.mkdir(parents=True, exist_ok=True)
    notebook = source_dir / f"{assignment.name}.ipynb"
    nbformat.write(source, str(notebook))
    for name in assignment.provided:  # released with the notebook, as `checks build` releases them
        (source_dir / name).write_bytes((assignment.release_dir / name).read_bytes())
    hidden = hidden_files(assignment)
    for relative, path in hidden.items():
        (out_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / relative).write_bytes(path.read_bytes())
    filled = []
    for name, files in submissions:
        target = out_dir / "submitted" / name / assignment.name / f"{assignment.name}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(filled_notebook(released, files), str(target))
        filled.append(target)
    return NbgraderExport(out_dir, notebook, questions, sorted(hidden), filled)


def assignment_questions(assignment: Assignment) -> list[Question]:
    """Every question with its points, as the hidden suite scores it on this machine: read from a
    grading of the release's stubs (the same run `checks grade` makes)."""
    stubs = {name: (assignment.release_dir / name).read_bytes()
             for name in named_files(assignment) or () if (assignment.release_dir / name).is_file()}
    (result,) = grade_sources(assignment, [Source.from_files("stubs", stubs)], jobs=1)
    if result.error:
        raise CourseError(f"grading the stubs of {assignment.name} to list its questions failed: {result.error}")
    questions = [Question(q.qid, q.max_score) for q in result.questions]
    ids = [q.grade_id for q in questions] + [_answer_id(name) for name in named_files(assignment) or ()]
    if len(set(ids)) != len(ids):
        raise CourseError(f"{assignment.name}: two cells would share a grade_id in {sorted(ids)}")
    return questions


def source_notebook(assignment: Assignment, questions: list[Question]) -> NotebookNode:
    """The instructor's notebook nbgrader's generate_assignment releases (solutions stripped)."""
    import nbformat

    cells = [_cell(nbformat.v4.new_markdown_cell(INTRO.format(title=assignment.title or assignment.name)),
                   "intro", locked=True),
             _cell(nbformat.v4.new_code_cell("%load_ext checks"), "load_checks", locked=True)]
    for name in assignment.files:
        code = _existing(assignment.solution_dir / name).read_text(encoding="utf-8")
        cells.append(_cell(nbformat.v4.new_code_cell(answer_cell(name, nbgrader_regions(code, name))),
                           _answer_id(name), solution=True))
    if assignment.quiz:
        # the release's quiz (answers empty) as it is: nbgrader's stub for a solution region is Python,
        # which in quiz.toml would be a TOML error, so this cell is a plain one the student edits
        quiz = _existing(assignment.release_dir / QUIZ_FILE).read_text(encoding="utf-8")
        cells.append(nbformat.v4.new_code_cell(answer_cell(QUIZ_FILE, quiz)))
        cells[-1].id = _answer_id(QUIZ_FILE)
    for question in questions:
        test = (f"# graded when you submit: {question.qid} ({question.points:g} points)\n"
                f"from checks.exports import kernel\n"
                f"kernel.score({assignment.name!r}, {question.qid!r})")
        cells.append(_cell(nbformat.v4.new_code_cell(test), question.grade_id, grade=True, locked=True,
                           points=question.points))
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC),
                                                           "language_info": {"name": "python"}})


def nbgrader_regions(code: str, filename: str) -> str:
    """A solution file's `# BEGIN SOLUTION hint: ...` regions as nbgrader's `### BEGIN SOLUTION`
    regions, each hint kept as a comment line above its region (nbgrader drops the marker line)."""
    out: list[str] = []
    for part in split_regions(code, filename):
        if isinstance(part, Region):
            hint = [f"{part.indent}# Hint: {part.hint}\n"] if part.hint else []
            end = END.match(part.end)
            out += [*hint, f"{part.indent}{NBGRADER_BEGIN}\n", *part.body,
                    end["indent"] + NBGRADER_END + part.end[len(part.end.rstrip("\r\n")):]]
        elif "BEGIN SOLUTION" in part[1] or "END SOLUTION" in part[1]:
            raise CourseError(f"{filename}:{part[0]}: nbgrader would take this line for a solution marker: "
                              f"{part[1].strip()}")
        else:
            out.append(part[1])
    return "".join(out)


def release_notebook(source: NotebookNode) -> NotebookNode:
    """What `nbgrader generate_assignment` releases of the source notebook's cells, by nbgrader's own
    ClearSolutions (the cells --fill starts from)."""
    try:
        from nbgrader.preprocessors import ClearSolutions
    except ImportError:
        raise CourseError("--fill needs nbgrader (the `interop` extra: pip install 'checks[interop]')") from None
    released, _ = ClearSolutions().preprocess(copy.deepcopy(source), {})
    return released


def filled_notebook(released: NotebookNode, files: dict[str, str]) -> NotebookNode:
    """The released notebook with each answer cell holding the student's file (a file the student
    does not have keeps its released cell)."""
    notebook = copy.deepcopy(released)
    for cell in notebook.cells:
        parsed = parse_answer_cell(cell.source) if cell.cell_type == "code" else None
        if parsed is not None and parsed[0] in files:
            cell.source = answer_cell(parsed[0], files[parsed[0]])
    return notebook


def _read_py_submission(assignment: Assignment, path: Path) -> tuple[str, dict[str, str]]:
    """(student name, {file name: text}) of a .py submission: a folder or a zip."""
    if not path.is_dir() and not (path.is_file() and path.suffix == ".zip"):
        raise CourseError(f"--fill {path}: not a folder or a .zip of {assignment.name}'s files")
    named = named_files(assignment) or ()
    try:
        submission = read_submission(path, named)
    except SubmissionError as error:
        raise CourseError(f"--fill {path}: {error}") from None
    files = {name: submission.files[name].decode("utf-8", errors="replace") for name in named if name in submission.files}
    if not files:
        raise CourseError(f"--fill {path}: holds none of {', '.join(named)}")
    return submission_name(path), files


def _answer_id(name: str) -> str:
    return "answer_" + grade_id(name)


def _cell(cell: NotebookNode, cell_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
          points: float | None = None) -> NotebookNode:
    """`cell` with nbgrader's metadata (and the same id as a cell id, so that exports are stable)."""
    cell.id = cell_id
    meta = {"grade": grade, "grade_id": cell_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution}
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise CourseError(f"{path} is missing: the nbgrader export needs it")
    return path
