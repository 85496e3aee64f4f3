"""`checks export`: an assignment's grader for another course tool (Gradescope, nbgrader, otter),
a student's bundle, or a grade folder's scores as a gradebook, Canvas or Moodle CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from checks.cli import common
from checks.course.assignment import Assignment, CourseError, find_course_root, load_assignment
from checks.reports.render import plain


def add_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    export = common.command(
        commands, "export", "write an assignment's grader for another course tool, or a gradebook CSV",
        "Write what another course tool needs to grade an assignment with its hidden suite. "
        "gradescope: DIR/autograder.zip (setup.sh, run_autograder and the hidden suite, never "
        "solutions/ or mutants) to upload as a Gradescope programming assignment's autograder. "
        "nbgrader: DIR as an nbgrader course (nbgrader_config.py, source/ASSIGNMENT/ASSIGNMENT.ipynb, "
        "the hidden suite beside source/, never released). "
        "otter: DIR/<name>.ipynb, an otter-assign master notebook, and the hidden course files it ships. "
        "csv: gradebook.csv again, from the gradebook.sqlite of a `checks grade` output folder, "
        "grading nothing (into that folder, or to --out FILE). "
        "canvas, moodle: that folder's final scores as Canvas's gradebook import CSV or Moodle's grade "
        "import CSV (FOLDER/canvas.csv, FOLDER/moodle.csv, or --out FILE), students from the course "
        "roster, or by the ids a Canvas or Moodle download came with (Moodle's: its grading worksheet). "
        "student: DIR/ASSIGNMENT-student/ and its zip, what a student needs and nothing of the "
        "staff's: the release (stubs, public checks, lesson notebook, quiz.toml without answers), "
        "a wheel of checks and setup_env.py, which installs only the light runtime.",
        "  checks export gradescope 01_tensors --out export/01_tensors\n"
        "  checks export nbgrader 01_tensors --out course --fill submissions/*\n"
        "  checks export otter 01_tensors --out export/otter --fill submissions/*\n"
        "  checks export csv grades/01_tensors                  # writes grades/01_tensors/gradebook.csv\n"
        "  checks export csv grades/01_tensors --out 01_tensors.csv\n"
        "  checks --course examples/course export canvas grades/01_tensors --lms-assignment-id 4711\n"
        "  checks --course examples/course export moodle grades/01_tensors\n"
        "  checks export student 01_tensors --out dist/          # dist/01_tensors-student(.zip)")
    export.add_argument("tool", choices=["gradescope", "nbgrader", "otter", "csv", "student", "canvas", "moodle"],
                        help="the tool to export for (student: a bundle for students)")
    export.add_argument("assignment", help=f"{assignment_help} (csv, canvas, moodle: the --out folder of "
                                           "`checks grade`)")
    export.add_argument("--title", default=None,
                        help="canvas, moodle: the assignment's name in the LMS (default: the assignment's)")
    export.add_argument("--lms-assignment-id", default=None, metavar="ID",
                        help="canvas: the id of the Canvas assignment to fill (default: Canvas makes a new one)")
    export.add_argument("--out", type=Path, metavar="DIR",
                        help="where to write the export (required but for csv: the CSV file, default "
                             "FOLDER/gradebook.csv)")
    export.add_argument("--fill", type=Path, nargs="+", default=[], metavar="SUBMISSION",
                        help="nbgrader and otter: also write each .py submission (folder or zip) as that student's "
                             "notebook (nbgrader: DIR/submitted/<name>/ASSIGNMENT/ASSIGNMENT.ipynb; otter: "
                             "DIR/submissions/<name>.ipynb)")
    export.set_defaults(run=_export, without_course=True)  # csv needs none; the others ask for one


def _export(root: Path | None, args: argparse.Namespace) -> int:
    if args.tool == "csv":
        return _export_csv(args)
    if args.tool in ("canvas", "moodle"):
        return _export_lms(root, args)
    if args.out is None:
        raise CourseError(f"`checks export {args.tool}` needs --out DIR: where to write the export")
    assignment = load_assignment(root or find_course_root(), args.assignment)
    if args.tool == "nbgrader":
        return _export_nbgrader(assignment, args)
    if args.tool == "otter":
        return _export_otter(assignment, args)
    if args.fill:
        raise CourseError("--fill is for the nbgrader and otter exports")
    if args.tool == "student":
        return _export_student(assignment, args)
    from checks.exports.gradescope import export_gradescope

    export = export_gradescope(assignment, args.out)
    course = [name for name in export.names if name.startswith("course/")]
    common.console.print(Text(f"wrote {export.zip_path}: setup.sh, run_autograder, checks and its pinned environment, "
                              f"and {len(course)} hidden course file(s):"))
    for name in course:
        common.console.print(Text(f"  {name.removeprefix('course/')}"))
    common.console.print("Upload it as the autograder of a Gradescope programming assignment (Ubuntu base image).")
    return 0


def _export_student(assignment: Assignment, args: argparse.Namespace) -> int:
    from checks.authoring.build import require_current_release
    from checks.exports.student import export_student

    require_current_release(assignment)
    export = export_student(assignment, args.out)
    common.console.print(plain(f"wrote {export.folder} and {export.zip_path}: {len(export.files)} files, the release "
                               f"of {assignment.name}, a wheel of checks, setup_env.py and its pins"), soft_wrap=True)
    if export.requirements:
        common.console.print(Text(f"  the assignment's files also import: {', '.join(export.requirements)} "
                                  "(in requirements.txt)"))
    common.console.print(Text(f"A student unpacks it and runs `python3.11 setup_env.py`; then `checks test` in "
                              f"assignments/{assignment.name}/ (README.md in the bundle says so)."), soft_wrap=True)
    return 0


def _export_csv(args: argparse.Namespace) -> int:
    from checks.reports.render import export_gradebook_csv, question_names

    if args.fill:
        raise CourseError("--fill is for the nbgrader and otter exports")
    folder = Path(args.assignment)
    path, results = export_gradebook_csv(folder, args.out)
    questions = question_names([r for r in results if not r.error])
    common.console.print(plain(f"wrote {path}: {len(results)} submission(s), {len(questions)} question(s), from "
                               f"{folder / 'gradebook.sqlite'} (nothing graded)"), soft_wrap=True)
    return 0


def _export_lms(root: Path | None, args: argparse.Namespace) -> int:
    from checks.exports.lms_csv import export_lms_csv
    from checks.reports.gradebook import DB_FILE, Gradebook

    if args.fill:
        raise CourseError("--fill is for the nbgrader and otter exports")
    course = common.load_course(root or find_course_root(), args)
    folder = Path(args.assignment)
    held = Gradebook.existing(folder / DB_FILE).assignment if folder.is_dir() else ""
    title = args.title or (load_assignment(course.root, held).title if held in course.policies else held)
    # no roster needed for an LMS's download: its ids came with it (export_lms_csv says when one is)
    export = export_lms_csv(folder, args.tool, course.roster, title=title, dest=args.out,
                            assignment_id=args.lms_assignment_id or "")
    common.console.print(plain(f"wrote {export.path}: {export.rows} student(s), final scores, from "
                               f"{folder / 'gradebook.sqlite'} (nothing graded)"), soft_wrap=True)
    for why in export.left_out:
        common.console.print(Text.assemble(("left out: ", "yellow"), plain(why)), soft_wrap=True)
    common.console.print({"canvas": "Canvas: Grades > Import.",
                          "moodle": "Moodle: Grades > Import > CSV file; map from Email address to useremail.",
                          "moodle-worksheet": "Moodle (its participant ids, from the download): the assignment's "
                                              "View all submissions > Upload grading worksheet (the Offline grading "
                                              "worksheet feedback type on)."}[export.kind])
    return 0


def _export_nbgrader(assignment: Assignment, args: argparse.Namespace) -> int:
    from checks.exports.nbgrader import export_nbgrader

    export = export_nbgrader(assignment, args.out, args.fill)
    points = sum(q.points for q in export.questions)
    common.console.print(Text(f"wrote {export.root}: {export.notebook.relative_to(export.root)} with "
                              f"{len(export.questions)} graded cells ({points:g} points), nbgrader_config.py, and "
                              f"{len(export.hidden)} hidden course file(s) beside source/ (never released)"))
    for path in export.filled:
        common.console.print(Text(f"  filled {path.relative_to(export.root)}"))
    common.console.print(Text(f"then, in {export.root}: nbgrader generate_assignment {assignment.name}"
                              + (f"; nbgrader autograde {assignment.name} --create" if export.filled else "")))
    return 0


def _export_otter(assignment: Assignment, args: argparse.Namespace) -> int:
    from checks.exports.otter import export_otter

    export = export_otter(assignment, args.out, args.fill)
    common.console.print(Text(f"wrote {export.master}: the otter-assign master notebook, {len(export.questions)} "
                              f"questions, and beside it {len(export.hidden)} hidden course file(s) that the autograder "
                              "zip ships"))
    for path in export.submissions:
        common.console.print(Text(f"  {path}"))
    common.console.print(Text(f"next: otter assign {export.master} dist/ ; otter run -a dist/autograder/"
                              f"{assignment.name}-autograder_*.zip NOTEBOOK"))
    return 0
