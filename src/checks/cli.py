"""The `checks` command: a thin layer over the library (grading, batch, build, verify)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from checks import __version__
from checks.grading.batch import expand_submission_paths, grade_to_folder
from checks.authoring.build import BuildError, build
from checks.course.assignment import CourseError, find_course_root, list_assignments, load_assignment
from checks.grading.session import Source, grade_sources
from checks.sandbox import jail
from checks.progress import GradeProgress, print_summary
from checks.reports.render import print_failures, question_table
from checks.suites.scoring import SubmissionResult
from checks.authoring.verify import verify

console = Console(highlight=False)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "device", None):
        os.environ["CHECKS_DEVICE"] = args.device
    if getattr(args, "isolation", None):  # the option wins over the variable: grading reads the variable
        os.environ[jail.ENV_VARIABLE] = args.isolation
    try:
        root = args.course.resolve() if args.course else find_course_root()
        return args.run(root, args)
    except (CourseError, BuildError, ValueError) as error:
        console.print(f"[red]error:[/red] {error}", markup=True)
        return 2
    except KeyboardInterrupt:
        console.print("\ninterrupted: finished submissions are saved; run the same command again to resume")
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="checks", description="Sandboxed, question-by-question grading.")
    parser.add_argument("--version", action="version", version=f"checks {__version__}")
    parser.add_argument("--course", type=Path, help="course folder (default: the nearest one with assignments/)")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    # shared by the commands that run student code
    sandboxed = argparse.ArgumentParser(add_help=False)
    sandboxed.add_argument("--isolation", choices=jail.LEVELS, default=None,
                           help=f"sandbox level: auto (the strongest this machine allows), bwrap or fork "
                                f"(default: ${jail.ENV_VARIABLE}, else auto)")

    test = commands.add_parser("test", parents=[sandboxed], help="run the public checks on your work")
    test.add_argument("assignment")
    test.add_argument("path", nargs="?", type=Path, help="your folder (default: assignments/ASSIGNMENT)")
    test.set_defaults(run=_test)

    grade = commands.add_parser("grade", parents=[sandboxed], help="grade submissions with the hidden suite")
    grade.add_argument("assignment")
    grade.add_argument("submissions", nargs="+", type=Path, help="folders or .zip files (or a folder of them)")
    grade.add_argument("--out", type=Path, required=True, help="output folder")
    grade.add_argument("--jobs", type=int, default=None, help="parallel submissions (default: all cores)")
    grade.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    grade.add_argument("--regrade", action="store_true", help="grade again what an earlier run already graded")
    grade.set_defaults(run=_grade)

    build_cmd = commands.add_parser("build", help="regenerate assignments/ from solutions/")
    build_cmd.add_argument("names", nargs="*", help="assignments (default: all)")
    build_cmd.add_argument("--check", action="store_true", help="change nothing; fail if assignments/ is out of date")
    build_cmd.set_defaults(run=_build)

    verify_cmd = commands.add_parser("verify", parents=[sandboxed],
                                     help="prove a hidden suite sound with the reference, stubs and mutants")
    verify_cmd.add_argument("names", nargs="*", help="assignments (default: all)")
    verify_cmd.add_argument("--jobs", type=int, default=None)
    verify_cmd.set_defaults(run=_verify)
    return parser


def _test(root: Path, args: argparse.Namespace) -> int:
    assignment = load_assignment(root, args.assignment)
    path = (args.path or assignment.release_dir).resolve()
    if not assignment.public_tests_dir.is_dir():
        raise CourseError(f"{assignment.name} has no public tests in {assignment.public_tests_dir}")
    console.print(f"checks {__version__}: public checks of {assignment.name} on {path}")
    isolation = jail.choose()
    (result,) = grade_sources(assignment, [Source.from_path(path)], public=True, jobs=1, isolation=isolation)
    _show(result, show_points=False)
    failed = [q for q in result.questions if not q.passed]
    if result.error:
        return 2
    console.print(f"\n{len(result.questions) - len(failed)} of {len(result.questions)} questions pass their public checks."
                  + ("" if failed else " Public checks do not guarantee full marks: the hidden suite has many more cases."))
    return 1 if failed else 0


def _show(result: SubmissionResult, *, show_points: bool) -> None:
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    console.print(question_table(result, show_points=show_points))
    print_failures(console, result)
    if result.error:
        console.print("\nThe grader could not run these checks:", style="red")
        console.print(result.error, markup=False)


def _grade(root: Path, args: argparse.Namespace) -> int:
    assignment = load_assignment(root, args.assignment)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise CourseError("--device cuda: torch sees no CUDA device here (use --device auto or cpu)")
    isolation = jail.choose()  # here for the header, and to refuse an impossible level before anything is written
    paths = expand_submission_paths([p for p in args.submissions])
    console.print(f"checks {__version__}: grading {len(paths)} submission(s) of {assignment.name} "
                  f"into {args.out} (sandbox: {isolation.description}; device: {args.device})")
    summary = grade_to_folder(assignment, paths, args.out, jobs=args.jobs, regrade=args.regrade,
                              listener=GradeProgress(console))
    print_summary(console, summary)
    return 1 if summary.failed else 0


def _build(root: Path, args: argparse.Namespace) -> int:
    names = args.names or list_assignments(root)
    differences = build(root, names, check=args.check)
    if args.check:
        for line in differences:
            console.print(f"[red]{line}[/red]", markup=True)
        console.print("assignments/ is up to date" if not differences else
                      "assignments/ is out of date: run `checks build` and commit the result")
        return 1 if differences else 0
    console.print(f"built {', '.join(names)}: {len(differences)} file(s) written or removed")
    return 0


def _verify(root: Path, args: argparse.Namespace) -> int:
    all_ok = True
    isolation = jail.choose()
    for name in args.names or list_assignments(root):
        assignment = load_assignment(root, name)
        verdicts = verify(assignment, jobs=args.jobs, isolation=isolation)
        table = Table(title=f"verify {name}", title_justify="left")
        for column in ("submission", "expectation", "ok", "detail"):
            table.add_column(column, overflow="fold")
        for v in verdicts:
            table.add_row(v.submission, v.expectation, "[green]yes[/green]" if v.ok else "[red]NO[/red]", v.detail)
        console.print(table)
        all_ok &= all(v.ok for v in verdicts)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
