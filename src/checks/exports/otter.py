"""`checks export otter`: an assignment as an otter-grader master notebook, and what it ships.

`otter assign` turns the master notebook into a student notebook and an autograder zip; `otter
run` (or Gradescope) grades a student notebook with that zip. Our master notebook holds:
- `%load_ext checks`, then one answer cell per file (`%%checks file strides.py`): the reference,
  each solution region written as otter's markers (a `# BEGIN PROMPT` string holding the stub line
  `checks build` writes, then `# BEGIN SOLUTION NO PROMPT`), so that otter's student notebook
  holds exactly the stubs of the release, hints included; the quiz cell is the blank quiz (otter
  has no marker that keeps a TOML line for students only; the keys are in the hidden suite);
- per question (otter name: the qid with every character other than a letter or digit made `_`),
  one hidden otter test case per hidden check, worth its share of the question's points, which
  calls `checks.exports.kernel.check_case`: no hidden case is in the notebook or the zip's tests.
  The kernel grades the answer cells with the hidden suite, shipped in the zip through otter's
  `autograder_files` (otter run copies them beside the notebook, where the kernel finds them).
The tests run in the student's kernel, so the export is only as safe as that kernel (README).
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from checks.course.answer_cells import answer_cell, parse_answer_cell
from checks.course.assignment import QUIZ_FILE, Assignment, CourseError
from checks.course.release import stub_files
from checks.course.submissions import Submission, SubmissionError, read_submission
from checks.exports.hidden import hidden_files
from checks.exports.kernel import grade_answers, question_name, question_parts

HIDDEN_DIRS = ("autograder", "assignments", "references")  # the course tree hidden_files writes, shipped in the zip
SUBMISSIONS_DIR = "submissions"


class OtterNotInstalled(CourseError):
    """--fill needs otter-grader (the `interop` extra)."""


@dataclass
class OtterExport:
    master: Path  # DIR/<assignment>.ipynb
    questions: dict[str, str]  # qid -> otter question name
    hidden: list[str]  # course-relative paths of the shipped hidden files
    submissions: list[Path] = field(default_factory=list)  # DIR/submissions/<name>.ipynb (--fill)


otter_name = question_name  # otter's name for a question: strides.offset -> strides_offset


def export_otter(assignment: Assignment, out_dir: Path, fill: Sequence[Path] = (), *,
                 reference: Mapping[str, str] | None = None, stubs: Mapping[str, str] | None = None) -> OtterExport:
    """Write out_dir/<assignment>.ipynb (the master notebook) and the hidden course tree beside it;
    with `fill`, run otter assign and write out_dir/submissions/<name>.ipynb for each .py submission.
    `reference` and `stubs` are the assignment's files (name -> source), by default the course's
    solutions and the stubs made from them."""
    if reference is None:
        reference = {name: data.decode("utf-8") for name, data in read_submission(assignment.solution_dir).files.items()}
    if stubs is None:
        stubs = {name: data.decode("utf-8") for name, data in stub_files(assignment.solution_dir).items()
                 if name.endswith((".py", ".toml"))}
    missing = [name for name in (*assignment.files, QUIZ_FILE) if name not in reference or name not in stubs]
    if missing:
        raise CourseError(f"{assignment.name}: the reference or the stubs lack {', '.join(missing)}")
    filled = [_read_fill(assignment, path) for path in fill]  # a bad path is refused before anything is written
    # the reference's grading says how many checks each test of each question has: one otter case each
    result = grade_answers(assignment.name, {name: reference[name] for name in (*assignment.files, QUIZ_FILE)},
                           root=assignment.root)
    if result.score < result.max_score:
        raise CourseError(f"the reference of {assignment.name} scores {result.score:g} of {result.max_score:g} "
                          "with its hidden suite: fix it before exporting")
    if out_dir.resolve() == assignment.root.resolve():
        raise CourseError(f"--out {out_dir} is the course itself: write the export to a folder of its own")
    out_dir.mkdir(parents=True, exist_ok=True)
    shipped = hidden_files(assignment)
    for top in HIDDEN_DIRS:  # what an earlier export of this assignment shipped, and the suite no longer has
        shutil.rmtree(out_dir / top / assignment.name, ignore_errors=True)
    for relative, path in shipped.items():
        (out_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out_dir / relative)
    for name in assignment.provided:  # beside the notebook too, for the students' own imports
        shutil.copyfile(assignment.release_dir / name, out_dir / name)
    master = out_dir / f"{assignment.name}.ipynb"
    notebook = master_notebook(assignment, reference, stubs, result.questions)
    import nbformat

    nbformat.write(notebook, str(master))
    export = OtterExport(master, {q.qid: otter_name(q.qid) for q in result.questions}, sorted(shipped))
    if filled:
        export.submissions = fill_submissions(master, out_dir / SUBMISSIONS_DIR, filled)
    return export


def _read_fill(assignment: Assignment, path: Path) -> Submission:
    try:
        return read_submission(path, (*assignment.files, QUIZ_FILE))
    except SubmissionError as error:
        raise CourseError(f"--fill {path}: {error}") from None


def master_notebook(assignment: Assignment, reference: Mapping[str, str], stubs: Mapping[str, str],
                    questions: Sequence) -> "nbformat.NotebookNode":
    """The otter-assign master notebook: config, answer cells, and one hidden test cell per check."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

    config = {
        "name": assignment.name,
        "init_cell": False, "check_all_cell": False, "export_cell": False, "run_tests": False,
        "strip_solutions_from_all_cells": True,  # an answer cell holds many questions' solutions
        "tests": {"files": False, "ok_format": False},
        "files": list(assignment.provided),
        "autograder_files": [top for top in HIDDEN_DIRS if any(p.startswith(top + "/") for p in hidden_files(assignment))],
        "generate": {"pdf": False},
    }
    cells = [
        new_raw_cell("# ASSIGNMENT CONFIG\n" + _yaml(config)),
        new_markdown_cell(f"# {assignment.name}: {assignment.title}\n\nWrite your answers in the cells that start "
                          "with `%%checks file`: each is one file of the assignment, and a cell below it can `import` it by "
                          "that name. Run the cells from the top; the hidden checks run when your notebook is graded."),
        new_code_cell("%load_ext checks"),
    ]
    for name in assignment.files:
        cells += [new_markdown_cell(f"## {name}"),
                  new_code_cell(answer_cell(name, with_otter_markers(reference[name], stubs[name], name)))]
    cells += [new_markdown_cell(f"## {QUIZ_FILE}"), new_code_cell(answer_cell(QUIZ_FILE, stubs[QUIZ_FILE])),
              new_markdown_cell("## Hidden checks\n\nEach question below is graded by the course's hidden checks "
                                "when your notebook is graded.")]
    for question in questions:
        parts = question_parts(question)
        points = [p["points"] / _shown_count(p) for p in parts for _ in range(_shown_count(p))]
        cells += [new_raw_cell("# BEGIN QUESTION\n" + _yaml({"name": otter_name(question.qid), "points": points})),
                  new_markdown_cell(f"**{question.qid}** ({question.max_score:g} points: {len(points)} hidden "
                                    f"check{'s' if len(points) > 1 else ''})"),
                  new_raw_cell("# BEGIN TESTS")]
        for number, part in enumerate(parts):
            count = _shown_count(part)
            for index in range(count):
                cells.append(new_code_cell(_test_source(assignment.name, question.qid, number, index, count)))
        cells += [new_raw_cell("# END TESTS"), new_raw_cell("# END QUESTION")]
    notebook = new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    nbformat.validate(notebook)
    return notebook


def _shown_count(part: dict) -> int:
    """How many otter test cases a test of the hidden suite becomes: one per check, or one in all."""
    return 1 if part["all_or_nothing"] else len(part["passed"])


def _test_source(assignment: str, qid: str, part: int, index: int, count: int) -> str:
    """An otter test cell: hidden, worth its share (the question's points list), the check by number."""
    return (f'""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n'
            f"def test_{otter_name(qid)}_{part + 1}_{index + 1}():\n"
            f"    from checks.exports import kernel\n"
            f"    kernel.check_case({assignment!r}, {qid!r}, {part}, {index}, {count})\n")


def with_otter_markers(solution: str, stub: str, name: str) -> str:
    """The reference file with each solution region written for otter: a `# BEGIN PROMPT` string
    holding the stub's line (otter keeps its content for students; in the reference it is a string
    that does nothing), then the region between `# BEGIN SOLUTION NO PROMPT` and `# END SOLUTION`.
    The regions are where the stub differs from the reference (`checks build` wrote the stub)."""
    old, new = solution.splitlines(keepends=True), stub.splitlines(keepends=True)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out += old[i1:i2]
            continue
        if tag != "replace":
            raise CourseError(f"{name}: the stub and the reference differ in more than their solution regions "
                              "(run `checks build`)")
        indent = re.match(r"[ \t]*", new[j1])[0]
        prompt = "".join(new[j1:j2])
        quote = "'''" if '"""' in prompt else '"""'
        body = [line for line in old[i1:i2] if not re.match(r"\s*# (BEGIN|END) SOLUTION", line)]
        out += [f"{indent}{quote} # BEGIN PROMPT\n", prompt, f"{indent}{quote} # END PROMPT\n",
                f"{indent}# BEGIN SOLUTION NO PROMPT\n", *body, f"{indent}# END SOLUTION\n"]
    return "".join(out)


def fill_submissions(master: Path, out_dir: Path, submissions: Sequence[Submission]) -> list[Path]:
    """Run otter assign on the master notebook, and write its student notebook once per submission
    as out_dir/<name>.ipynb, each answer cell holding the student's file (a missing file keeps the
    stub's cell)."""
    import nbformat

    student = otter_student_notebook(master)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for submission in submissions:
        notebook = nbformat.from_dict(json.loads(json.dumps(student)))
        for cell in notebook.cells:
            parsed = parse_answer_cell(cell.source) if cell.cell_type == "code" else None
            if parsed and parsed[0] in submission.files:
                cell.source = answer_cell(parsed[0], submission.files[parsed[0]].decode("utf-8", errors="replace"))
        target = out_dir / f"{submission.name}.ipynb"
        nbformat.write(notebook, str(target))
        written.append(target)
    return written


def otter_student_notebook(master: Path) -> "nbformat.NotebookNode":
    """The student notebook `otter assign` makes of the master notebook (run in a scratch folder)."""
    import nbformat

    try:
        from otter.assign import main as otter_assign
    except ImportError:
        raise OtterNotInstalled("--fill runs otter assign: install otter-grader (pip install 'checks[interop]')") from None
    with tempfile.TemporaryDirectory(prefix="checks-otter-") as scratch:
        copy = Path(scratch) / "master"
        shutil.copytree(master.parent, copy, ignore=shutil.ignore_patterns(SUBMISSIONS_DIR, "dist"))
        otter_assign(str(copy / master.name), str(Path(scratch) / "dist"), no_pdfs=True, no_run_tests=True)
        return nbformat.read(str(Path(scratch) / "dist" / "student" / master.name), as_version=4)


def _yaml(data: dict) -> str:
    """YAML for otter's config cells, written as JSON (which YAML reads): no YAML writer needed."""
    return json.dumps(data, indent=1)


__all__ = ["OtterExport", "OtterNotInstalled", "export_otter", "otter_name", "with_otter_markers"]
