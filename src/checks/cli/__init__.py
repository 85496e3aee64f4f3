"""The `checks` command: its entry point `main` and the top-level parser, a thin layer over the
library. Each command group has its module beside this one (student: test, pack, login, submit,
fetch; grade; similarity; authoring: new, build, verify; exports; serve: serve, roster, staff, db;
policy; lti), which adds its commands to the parser and runs them.

What `checks test` needs is imported when the parser is built (cli/student.py); each other command
imports its own part of the library when it runs, so that a student's `checks test` does not wait
for the gradebook, the reports and the exports (0.05 to 0.08 s of the 0.25 s the command took to
import).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from rich.text import Text

from checks import __version__
from checks.authoring.build import BuildError
from checks.cli import authoring, common, exports, grade, lti, policy, serve, similarity, student
from checks.config.errors import UsageError
from checks.config.settings import Settings
from checks.course.assignment import CourseError, find_assignment_copy, find_course_root, list_assignments, read_marker
from checks.reports.render import plain
from checks.sandbox import zygote


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    _refuse_unknown_options(parser, argv)
    args = parser.parse_args(argv)
    try:
        # the options win over the environment's CHECKS_* variables; built once, handed down
        args.settings = Settings.from_environment(isolation=getattr(args, "isolation", None),
                                                  device=getattr(args, "device", None),
                                                  course=getattr(args, "course", None),
                                                  database=getattr(args, "database", None))
        if args.settings.device == "cuda" and not zygote.cuda_available():  # asked of NVML: we fork graders
            raise UsageError("--device cuda: torch sees no CUDA device here (use --device auto or cpu)")
        return args.run(_course_root(args), args)
    except (UsageError, BuildError) as error:
        # plain: course errors name TOML tables ([quiz.a_grad]), some name a submission; soft_wrap:
        # one line, however wide
        common.console.print(Text("error: ", style="red") + plain(str(error), lines=True), soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        common.console.print("\ninterrupted: finished submissions are saved; run the same command again to resume")
        return 130


def _refuse_unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """An option the command does not have is named first, with the nearest it has: argparse would
    otherwise say that a required one is missing (`--outt DIR`: "--out is required")."""
    commands = next(action.choices for action in parser._actions  # noqa: SLF001 - argparse keeps them there
                    if isinstance(action, argparse._SubParsersAction))  # noqa: SLF001
    command = next((word for word in argv if word in commands), None)
    if command is None:
        return
    sub = commands[command]
    known = [*sub._option_string_actions, *parser._option_string_actions]  # noqa: SLF001
    for word in argv[argv.index(command) + 1:]:
        if word == "--":
            break
        name = word.split("=", 1)[0]
        if not name.startswith("--") or any(option.startswith(name) for option in known):
            continue  # a value, or an option (or an abbreviation argparse resolves)
        close = difflib.get_close_matches(name, [o for o in known if o.startswith("--")], n=1)
        sub.error(f"unknown option {name}" + (f" (did you mean {close[0]}?)" if close else ""))


def _course_root(args: argparse.Namespace) -> Path | None:
    """--course, else the course around the current folder; None where a command can do without one
    (a student's copy of an assignment folder) and none is found."""
    if args.settings.course is not None:  # a course folder may name where its assignments are (course.toml)
        return find_course_root(named=args.settings.course)
    try:
        return find_course_root()
    except CourseError:
        if getattr(args, "without_course", False):
            return None
        raise


def _known_assignments() -> list[str]:
    """The assignment names to list in --help, from the course around the current folder (if any)."""
    try:
        root = find_course_root()
    except CourseError:
        copy = find_assignment_copy(Path.cwd())
        return [read_marker(copy)["assignment"]] if copy else []
    release = root / "assignments"
    released = sorted(p.name for p in release.iterdir() if p.is_dir()) if release.is_dir() else []
    return sorted(set(released) | set(list_assignments(root)))


def _parser() -> argparse.ArgumentParser:
    try:
        known = _known_assignments()
    except OSError:  # the current folder is gone, say: the help goes on without the names
        known = []
    assignment_help = (f"the assignment: {', '.join(known)}" if known
                       else "the assignment's name, e.g. 01_tensors (none found around this folder)")
    parser = argparse.ArgumentParser(
        prog="checks", description="Sandboxed, question-by-question checks and grading of a PyTorch course.",
        epilog="examples:\n  checks test 01_tensors\n  checks grade 01_tensors submissions/* --out grades/\n\n"
               "`checks COMMAND --help` says more about each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"checks {__version__}")
    parser.add_argument("--course", type=Path, metavar="DIR", help=common.COURSE_HELP)
    commands = parser.add_subparsers(required=True, metavar="COMMAND", help="what to do; each has its own --help")

    student.add_work_commands(commands, assignment_help)
    grade.add_commands(commands, assignment_help)
    similarity.add_commands(commands, assignment_help)
    authoring.add_commands(commands, assignment_help)
    exports.add_commands(commands, assignment_help)
    serve.add_commands(commands)
    student.add_server_commands(commands, assignment_help)
    policy.add_commands(commands, assignment_help)
    lti.add_commands(commands)  # imports nothing of the `lms` extra until it runs
    if not _staff_here():  # a student's install: --help lists what a student runs (the rest still run)
        commands._choices_actions = [action for action in commands._choices_actions  # noqa: SLF001
                                     if action.dest in STUDENT_COMMANDS]
        parser.epilog = ("examples:\n  checks test 01_tensors\n  checks submit\n\n`checks COMMAND --help` says more "
                         "about each command. The course staff's commands (grade, serve, build, ...) are listed in "
                         "the course repository, or with --course DIR.")
    return parser


STUDENT_COMMANDS = ("test", "pack", "login", "submit", "fetch", "regrade-request")


def _staff_here() -> bool:
    """Whether --help lists the staff's commands: a course named (--course, CHECKS_COURSE), or one
    with its hidden suites (autograder/) at or above the current folder; never in a student's copy
    or a student's install (the release alone)."""
    if Settings.from_environment().course is not None or any(word == "--course" or word.startswith("--course=")
                                                             for word in sys.argv):
        return True
    try:
        return (find_course_root() / "autograder").is_dir()
    except CourseError:
        return False

