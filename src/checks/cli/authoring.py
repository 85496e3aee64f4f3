"""The author's commands: `checks new` writes an assignment, `checks build` its student release,
`checks verify` proves its hidden suite with the reference, the stubs and the mutants."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from checks.cli import common
from checks.course.assignment import list_assignments, load_assignment


def add_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    build_cmd = common.command(
        commands, "build", "regenerate assignments/ from solutions/",
        "Regenerate the student release assignments/<name>/ from solutions/<name>/: solution "
        "regions become stubs, quiz answers are emptied, and a marker lets a copy of the "
        "folder be checked anywhere.",
        "  checks build\n  checks build --check      # in CI: fail when assignments/ is out of date")
    build_cmd.add_argument("names", nargs="*", metavar="ASSIGNMENT", help=f"{assignment_help} (default: all)")
    build_cmd.add_argument("--check", action="store_true", help="change nothing; fail if assignments/ is out of date")
    build_cmd.set_defaults(run=_build)

    verify_cmd = common.command(
        commands, "verify", "prove a hidden suite sound with the reference, stubs and mutants",
        "Grade the reference (it must score 100), the stubs (0) and every mutant in "
        "mutants.toml (each must lose points on its own question only); check that every "
        "hidden question has a public check worth the same points (or is declared hidden_only), "
        "that the points add up to 100 and that the lesson notebook has every question. Ends "
        "with one line per assignment; exit status 1 when any expectation does not hold.",
        "  checks verify 01_tensors\n  checks verify            # every assignment",
        runs_student_code=True)
    verify_cmd.add_argument("names", nargs="*", metavar="ASSIGNMENT", help=f"{assignment_help} (default: all)")
    verify_cmd.add_argument("--jobs", type=common.positive_int, default=None, metavar="N",
                            help="submissions graded at once (default: all cores)")
    verify_cmd.set_defaults(run=_verify)

    new_cmd = common.command(
        commands, "new", "write a new assignment that builds and verifies at once",
        "Write a minimal complete assignment NAME into the course (here, or --course DIR; an empty "
        "folder becomes a course): the reference with its solution region and quiz answer, the "
        "lesson notebook's source and README in solutions/NAME/, the hidden suite, "
        "assignment.toml and a mutant per question in autograder/NAME/. `checks build` and "
        "`checks verify NAME` hold on it at once; then make it yours (docs/first-assignment.md).",
        "  checks new 04_norms\n  checks new 04_norms --title \"Norms and normalization\"\n"
        "  checks build 04_norms && checks verify 04_norms")
    new_cmd.add_argument("name", metavar="NAME", help="the new assignment's folder name, such as 04_norms")
    new_cmd.add_argument("--title", default="", help="its title (default: the example's, \"Standardizing a tensor\")")
    new_cmd.set_defaults(run=_new, without_course=True)


def _build(root: Path, args: argparse.Namespace) -> int:
    from checks.authoring.build import build

    names = args.names or list_assignments(root)
    differences = build(root, names, check=args.check)
    if args.check:
        for line in differences:
            common.console.print(f"[red]{line}[/red]", markup=True)
        common.console.print("assignments/ is up to date" if not differences else
                             "assignments/ is out of date: run `checks build` and commit the result")
        return 1 if differences else 0
    common.console.print(f"built {', '.join(names)}: {len(differences)} file(s) written or removed")
    return 0


def _verify(root: Path, args: argparse.Namespace) -> int:
    from checks.authoring.verify import verify

    all_ok = True
    for name in args.names or list_assignments(root):
        assignment = load_assignment(root, name)
        verdicts = verify(assignment, jobs=args.jobs, settings=args.settings)
        _print_verdicts(name, verdicts)
        held = sum(v.ok for v in verdicts)
        common.console.print(f"verify {name}: {held} of {len(verdicts)} hold",
                             style=None if held == len(verdicts) else "red")
        all_ok &= held == len(verdicts)
    return 0 if all_ok else 1


VERIFY_TABLE_WIDTH = 120  # narrower (or piped), the table's columns fold every detail into slivers


def _print_verdicts(name: str, verdicts: list) -> None:
    """A table on a wide terminal; elsewhere (80 columns, a pipe, a CI log) a line per verdict,
    whose detail wraps as the reader's terminal wraps it."""
    if common.console.is_terminal and common.console.width >= VERIFY_TABLE_WIDTH:
        table = Table(title=f"verify {name}", title_justify="left")
        for column in ("submission", "expectation", "ok", "detail"):
            table.add_column(column, overflow="fold")
        for v in verdicts:
            table.add_row(v.submission, v.expectation, "[green]yes[/green]" if v.ok else "[red]NO[/red]", v.detail)
        common.console.print(table)
        return
    print(f"verify {name}")
    for v in verdicts:
        print(f"  {'yes' if v.ok else 'NO ':3}  {v.submission}: {v.expectation}: {v.detail}")


def _new(root: Path | None, args: argparse.Namespace) -> int:
    from checks.authoring.new import new_assignment

    root = root or Path.cwd()
    written = new_assignment(root, args.name, title=args.title)
    for path in written:
        common.console.print(f"  wrote {path.relative_to(root)}", markup=False)
    common.console.print(f"new assignment {args.name}: {len(written)} files. Next: checks build {args.name} && "
                         f"checks verify {args.name}", markup=False)
    return 0
