"""The `checks` command: a thin layer over the library (test, pack, grade, build, verify).

What `checks test` needs is imported here; each other command imports its own part of the library
when it runs, so that a student's `checks test` does not wait for the gradebook, the reports and
the exports (0.05 to 0.08 s of the 0.25 s the command took to import).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import glob
import os
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from checks import __version__
from checks.authoring.build import BuildError
from checks.config.errors import UsageError
from checks.config.settings import DEVICES, Settings
from checks.course.assignment import (Assignment, CourseError, find_assignment_copy, find_course_root,
                                     list_assignments, load_assignment, load_copy, read_marker)
from checks.course.submissions import NOTEBOOK_SUFFIX, SubmissionError, read_submission
from checks.course.selection import check_questions, read_test_words
from checks.grading.session import Source, named_files
from checks.sandbox import jail, zygote
from checks.reports.render import adjustment_line, plain, print_failures, question_table
from checks.suites.quiz import QUIZ_FILE, AnswerForm
from checks.suites.scoring import SubmissionResult

if TYPE_CHECKING:
    from checks.grading.batch import BatchSummary

console = Console(highlight=False)


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
        console.print(Text("error: ", style="red") + plain(str(error), lines=True), soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        console.print("\ninterrupted: finished submissions are saved; run the same command again to resume")
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


def _command(commands: argparse._SubParsersAction, name: str, summary: str, description: str,
             examples: str, *, runs_student_code: bool = False, usage: str | None = None) -> argparse.ArgumentParser:
    parser = commands.add_parser(name, help=summary, description=textwrap.fill(description, 78), usage=usage,
                                 epilog="examples:\n" + examples,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    # also after the subcommand (`checks test 01_tensors --course ~/course`); SUPPRESS keeps the one before it
    parser.add_argument("--course", type=Path, default=argparse.SUPPRESS, metavar="DIR", help=COURSE_HELP)
    if runs_student_code:
        parser.add_argument("--isolation", choices=jail.LEVELS, default=None,
                            help=f"sandbox level: auto (the strongest this machine allows), bwrap or fork "
                                 f"(default: ${jail.ENV_VARIABLE}, else auto)")
        parser.add_argument("--device", choices=DEVICES, default=None,
                            help="where checks that take a device run (default: $CHECKS_DEVICE, else auto: the GPU "
                                 "too when there is one)")
    return parser


COURSE_HELP = ("the course folder (default: the nearest folder at or above the current one with assignments/ "
               "or solutions/; CHECKS_COURSE also sets it)")


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
    parser.add_argument("--course", type=Path, metavar="DIR", help=COURSE_HELP)
    commands = parser.add_subparsers(required=True, metavar="COMMAND", help="what to do; each has its own --help")

    test = _command(commands, "test", "run the public checks on your work",
                    "Run an assignment's public checks on your files: a row per question (passed, not started, "
                    "or how many checks failed), a row per quiz answer (present and well-formed; it is marked "
                    "only when graded), then each failing question's first failures. Questions named after "
                    "it run alone. Exit status 0 only when every public check run passes and every quiz "
                    "answer shown is well-formed.",
                    "  checks test                          # in your copy of an assignment: it knows which\n"
                    "  checks test 01_tensors               # assignments/01_tensors, or the copy you are in\n"
                    "  checks test 01_tensors strides.offset quiz.broadcast_numel   # those questions only\n"
                    "  checks test 01_tensors ~/my-copy     # another folder, a .zip or a notebook",
                    runs_student_code=True, usage="checks test [ASSIGNMENT] [PATH] [QUESTION ...] [options]")
    test.add_argument("words", nargs="*", metavar="ASSIGNMENT PATH QUESTION",
                      help=f"{assignment_help} (default: the copy the current folder is in); PATH: your folder, "
                           ".zip or notebook (default: the copy of the assignment the current folder is in, else "
                           "assignments/ASSIGNMENT); QUESTION: a question id such as strides.offset or "
                           "quiz.broadcast_numel (default: every question)")
    test.set_defaults(run=_test, run_name="test", without_course=True)

    pack_cmd = _command(commands, "pack", "write the zip you upload",
                        "Write the submission zip: exactly the files the assignment takes and quiz.toml, "
                        "nothing else, so what you upload is what the grader reads. Refuses (and writes "
                        "nothing) while a file is missing or misnamed, or quiz.toml cannot be read.",
                        "  checks pack                                  # in your copy: writes 01_tensors.zip here\n"
                        "  checks pack 01_tensors                       # the same, naming the assignment\n"
                        "  checks pack 01_tensors ~/my-copy --out ~/upload/01_tensors.zip",
                        usage="checks pack [ASSIGNMENT] [PATH] [options]")
    pack_cmd.add_argument("words", nargs="*", metavar="ASSIGNMENT PATH",
                          help=f"{assignment_help} (default: the copy the current folder is in); PATH: your "
                               "folder (default: as for `checks test`)")
    pack_cmd.add_argument("--out", type=Path, metavar="ZIP",
                          help="where to write the zip (default: ASSIGNMENT.zip in the current folder)")
    pack_cmd.set_defaults(run=_pack, run_name="pack", without_course=True)

    grade = _command(commands, "grade", "grade submissions with the hidden suite",
                     "Grade submissions with the hidden suite, each in its own sandbox, into an output folder: "
                     "results.json and feedback.md (and .html) per submission, gradebook.csv, "
                     "gradebook.sqlite and report.html. Run it again after an interruption to resume.",
                     "  checks grade 01_tensors submissions/* --out grades/01_tensors\n"
                     "  checks grade 01_tensors submissions/ --out grades/01_tensors --jobs 4 --regrade\n"
                     "  checks grade 01_tensors nbgrader/submitted/* --out grades/01_tensors   # notebooks\n"
                     "  checks grade 01_tensors submissions/ --out grades/01_tensors --scheduler tcp://head:8786",
                     runs_student_code=True)
    grade.add_argument("assignment", help=assignment_help)
    grade.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                       help="a folder, .zip or notebook (.ipynb with answer cells) per student "
                            "(or a folder that holds only them)")
    grade.add_argument("--out", type=Path, required=True, metavar="DIR",
                       help="output folder (one assignment per folder; an earlier run's is resumed)")
    grade.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                       help="submissions graded at once (default: all cores)")
    grade.add_argument("--regrade", action="store_true", help="grade again what an earlier run already graded")
    grade.add_argument("--submitted-at", metavar="CSV|mtime", default=None,
                       help="when each submission was made, for the course's late policy: a CSV (submission or "
                            "student_id, submitted_at) or `mtime` (the files' modification times); without it, a "
                            "time is unknown and costs nothing (docs/policy.md)")
    grade.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                       help="grade on this running Dask scheduler's workers (needs the `cluster` extra); "
                            "the output folder is still written here")
    grade.add_argument("--scheduler-file", type=Path, metavar="PATH", default=None,
                       help="the same, with the file `dask scheduler --scheduler-file PATH` wrote")
    grade.add_argument("--worker-wait", type=_positive_seconds, default=None, metavar="SECONDS",
                       help="with --scheduler: how long the cluster may have no worker before what is not graded "
                            "yet is a grader failure (default: 120)")
    grade.set_defaults(run=_grade)

    similar = _command(commands, "similarity", "rank pairs of submissions by shared code (evidence, not a verdict)",
                       "Compare every pair of submissions' Python code, robust to renamed identifiers, reformatting, "
                       "comments and reordered functions, with the starter code and the class's common idioms left "
                       "out. Writes DIR/similarity.csv (every pair sharing code, ranked) and DIR/similarity.html (the "
                       "ranking and the top pairs' matched regions side by side). Runs no student code. A high score "
                       "is evidence for a person to weigh, never a verdict.",
                       "  checks similarity 01_tensors submissions/* --out similarity/01_tensors\n"
                       "  checks similarity 01_tensors canvas.zip --out similarity/01_tensors --threshold 0.6")
    similar.add_argument("assignment", help=assignment_help)
    similar.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                         help="a folder, .zip or notebook per student (or a folder that holds only them), as for grade")
    similar.add_argument("--out", type=Path, required=True, metavar="DIR", help="where to write the CSV and the page")
    similar.add_argument("--threshold", type=float, default=0.5, metavar="S",
                         help="mark pairs at or above this similarity, 0 to 1 (default: 0.5)")
    similar.add_argument("--show", type=_positive_int, default=30, metavar="N",
                         help="pairs whose matched regions the page shows (default: 30)")
    similar.set_defaults(run=_similarity)

    build_cmd = _command(commands, "build", "regenerate assignments/ from solutions/",
                         "Regenerate the student release assignments/<name>/ from solutions/<name>/: solution "
                         "regions become stubs, quiz answers are emptied, and a marker lets a copy of the "
                         "folder be checked anywhere.",
                         "  checks build\n  checks build --check      # in CI: fail when assignments/ is out of date")
    build_cmd.add_argument("names", nargs="*", metavar="ASSIGNMENT", help=f"{assignment_help} (default: all)")
    build_cmd.add_argument("--check", action="store_true", help="change nothing; fail if assignments/ is out of date")
    build_cmd.set_defaults(run=_build)

    verify_cmd = _command(commands, "verify", "prove a hidden suite sound with the reference, stubs and mutants",
                          "Grade the reference (it must score 100), the stubs (0) and every mutant in "
                          "mutants.toml (each must lose points on its own question only); check that every "
                          "hidden question has a public check worth the same points (or is declared hidden_only), "
                          "that the points add up to 100 and that the lesson notebook has every question. Ends "
                          "with one line per assignment; exit status 1 when any expectation does not hold.",
                          "  checks verify 01_tensors\n  checks verify            # every assignment",
                          runs_student_code=True)
    verify_cmd.add_argument("names", nargs="*", metavar="ASSIGNMENT", help=f"{assignment_help} (default: all)")
    verify_cmd.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                            help="submissions graded at once (default: all cores)")
    verify_cmd.set_defaults(run=_verify)

    new_cmd = _command(commands, "new", "write a new assignment that builds and verifies at once",
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

    export = _command(commands, "export", "write an assignment's grader for another course tool, or a gradebook CSV",
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
    _server_commands(commands, assignment_help)

    from checks import policy_commands  # the course-policy commands (policy, extension, grace)

    policy_commands.add_commands(commands, _command, assignment_help)
    from checks import lti_commands  # imports nothing of the `lms` extra until it runs

    lti_commands.add_commands(commands, _command)
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


def _database_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--database", metavar="URL", default=None,
                         help="the course's database, sqlite:///PATH or postgresql://USER@HOST[:PORT]/DB (default: "
                              "$CHECKS_DATABASE_URL, else course.toml's storage, else SQLite under the course "
                              "folder); a password is better left to $PGPASSWORD or ~/.pgpass")


def _database_url(args: argparse.Namespace) -> str | None:
    return args.settings.database


def _server_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    """serve, roster, staff (staff's side: the `serve` extra) and login, submit, fetch (the student's)."""
    serve_cmd = _command(commands, "serve", "run the course server: students submit, staff watch the class",
                         "Serve a course folder (course.toml, a roster, the assignments) over HTTP: students "
                         "submit from `checks submit`, a notebook or the web page and read their feedback; staff "
                         "watch the class, regrade and download the gradebook. Storage is SQLite under the "
                         "course folder, or PostgreSQL by --database (several `checks serve` processes then "
                         "serve one course); the schema is migrated on start. Grading uses warm pools (or a "
                         "Dask cluster with --scheduler). Listens on 127.0.0.1 unless --host says otherwise: put "
                         "it behind a reverse proxy with TLS to open it to a class (docs/server-operators.md, "
                         "docs/server-deploy.md).",
                         "  checks serve examples/course\n"
                         "  checks serve examples/course --port 8080 --jobs 4\n"
                         "  checks serve ~/course --scheduler tcp://head:8786\n"
                         "  checks serve ~/course --port 8001 --database postgresql://checks@db/course",
                         runs_student_code=True)
    serve_cmd.add_argument("folder", type=Path, metavar="COURSE", help="the course folder (with course.toml)")
    serve_cmd.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve_cmd.add_argument("--port", type=_positive_int, default=8000, help="port (default: 8000)")
    serve_cmd.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                           help="submissions graded at once (default: course.toml's jobs)")
    serve_cmd.add_argument("--proxy-headers", action="store_true",
                           help="behind a reverse proxy on this machine: take the client's address from the "
                                "X-Forwarded-For and X-Forwarded-Proto headers it sets (trusted from "
                                "--forwarded-allow-ips only)")
    serve_cmd.add_argument("--forwarded-allow-ips", default="127.0.0.1", metavar="IPS",
                           help="the proxy's addresses, comma-separated, whose X-Forwarded-* headers are trusted "
                                "(default: 127.0.0.1; '*' only where nothing but the proxy can reach the server)")
    _database_option(serve_cmd)
    serve_cmd.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                           help="grade on this Dask scheduler's workers (the `cluster` extra)")
    serve_cmd.add_argument("--scheduler-file", type=Path, metavar="PATH", default=None,
                           help="the same, with the file `dask scheduler --scheduler-file PATH` wrote")
    serve_cmd.add_argument("--worker-wait", type=_positive_seconds, default=None, metavar="SECONDS",
                           help="with --scheduler: how long the cluster may have no worker before a submission "
                                "goes back to the queue (default: 120)")
    serve_cmd.set_defaults(run=_serve, without_course=True)

    roster = _command(commands, "roster", "import the class roster into a course server",
                      "Import students from a CSV with the columns student_id, name, email (and optionally "
                      "role: student, ta or instructor). Each new account gets a token; only its hash is "
                      "stored, and the tokens are written once, to a CSV (0600) for you to hand out. "
                      "Importing again adds new students and keeps the others' tokens (--reissue replaces them).",
                      "  checks roster import examples/course/roster.csv\n"
                      "  checks roster import roster.csv --server ~/course --tokens ~/tokens.csv")
    roster.add_argument("action", choices=["import"], help="what to do")
    roster.add_argument("csv", type=Path, metavar="ROSTER.CSV", help="the roster")
    roster.add_argument("--server", type=Path, metavar="COURSE", default=None,
                        help="the served course folder (default: the roster's folder when it has course.toml, "
                             "else the current folder)")
    roster.add_argument("--tokens", type=Path, metavar="CSV", default=None,
                        help="where to write the new tokens (default: COURSE/data/tokens-DATE.csv)")
    roster.add_argument("--reissue", action="store_true", help="new tokens for everyone listed (old ones stop working)")
    _database_option(roster)
    roster.set_defaults(run=_roster, without_course=True)

    staff = _command(commands, "staff", "add a staff account to a course server",
                     "Add (or give a new token to) a staff account: a TA or an instructor, who signs in on the "
                     "web page with the login and the token printed here, once.",
                     "  checks staff add alice --role instructor --server examples/course")
    staff.add_argument("action", choices=["add"], help="what to do")
    staff.add_argument("login", help="the staff member's login")
    staff.add_argument("--name", default="", help="their name")
    staff.add_argument("--email", default="", help="their email")
    staff.add_argument("--role", choices=["ta", "instructor"], default="ta", help="their role (default: ta)")
    staff.add_argument("--server", type=Path, metavar="COURSE", default=Path("."),
                       help="the served course folder (default: the current folder)")
    _database_option(staff)
    staff.set_defaults(run=_staff, without_course=True)

    db = _command(commands, "db", "migrate a course server's database to this version's schema",
                  "Bring the course's database (SQLite under the course folder, or PostgreSQL by --database or "
                  "course.toml's storage) to the schema this version of checks uses; `checks serve` does the "
                  "same when it starts. `current` shows where it stands. Safe to run while servers run.",
                  "  checks db upgrade ~/course\n"
                  "  checks db current ~/course --database postgresql://checks@127.0.0.1/course")
    db.add_argument("action", choices=["upgrade", "current"], help="what to do")
    db.add_argument("folder", type=Path, metavar="COURSE", nargs="?", default=Path("."),
                    help="the course folder (default: the current folder)")
    _database_option(db)
    db.set_defaults(run=_db, without_course=True)

    login = _command(commands, "login", "sign in to your course's server",
                     "Check your token with the course server and keep it (with the URL) in your config folder "
                     "($XDG_CONFIG_HOME/checks, else ~/.config/checks; readable by you only), for `checks "
                     "submit` and `checks fetch`. The token is asked for (not echoed), or read from standard "
                     "input when it is not a terminal.",
                     "  checks login https://checks.example.edu\n  echo \"$TOKEN\" | checks login http://127.0.0.1:8000")
    login.add_argument("url", help="the server, http(s)://HOST[:PORT]")
    login.set_defaults(run=_login, without_course=True)

    submit = _command(commands, "submit", "submit your work to the course server and show the feedback",
                      "Pack your folder as `checks pack` does, upload it, wait for the grader and print the "
                      "feedback with your score (or, while the hidden checks are not released, say so). "
                      "--no-wait prints the submission's id and returns at once; --status ID shows it later.",
                      "  checks submit                         # in your copy of an assignment\n"
                      "  checks submit 01_tensors ~/my-copy\n  checks submit 01_tensors --no-wait",
                      usage="checks submit [ASSIGNMENT] [FOLDER] [options]")
    submit.add_argument("words", nargs="*", metavar="ASSIGNMENT FOLDER",
                        help=f"{assignment_help} (default: the copy the current folder is in); FOLDER: your folder "
                             "(default: as for `checks pack`)")
    submit.add_argument("--no-wait", action="store_true", help="print the submission id and return")
    submit.add_argument("--status", metavar="ID", default=None,
                        help="upload nothing: show a submission's status and feedback as the server has it now")
    late = submit.add_mutually_exclusive_group()
    late.add_argument("--use-grace-day", dest="grace", action="store_const", const="use",
                      help="a late upload spends grace days (where the course asks first; the server says how many "
                           "are left)")
    late.add_argument("--no-grace-day", dest="grace", action="store_const", const="none",
                      help="a late upload takes the late penalty and keeps the grace days")
    submit.set_defaults(run=_submit, run_name="submit", without_course=True)

    fetch = _command(commands, "fetch", "download an assignment from your course's server",
                     "Download the student release of an assignment (stubs, public checks, quiz.toml, "
                     "notebook) once the course has opened it, into a new folder.",
                     "  checks fetch 01_tensors\n  checks fetch 01_tensors --out ~/work/01_tensors")
    fetch.add_argument("assignment", help="the assignment's name")
    fetch.add_argument("--out", type=Path, metavar="DIR", default=None,
                       help="the folder to create (default: ./ASSIGNMENT)")
    fetch.set_defaults(run=_fetch, without_course=True)


def _positive_seconds(text: str) -> float:
    """--worker-wait: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return value


def _positive_int(text: str) -> int:
    """--jobs: a whole number of at least 1 (argparse turns the ValueError into a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _read_words(root: Path | None, args: argparse.Namespace) -> tuple[str, ...]:
    """[ASSIGNMENT] [PATH] [QUESTION...] as `%checks test` reads them too (course/selection.py), into
    args.assignment and args.path; the questions asked for. Without a name, the assignment is the
    one the copy at PATH, or around the current folder, is a copy of."""
    from checks.grading.public import public_questions

    copy_here = find_assignment_copy(Path.cwd())
    known = list_assignments(root) if root is not None else []
    known += [p.name for p in (root / "assignments").iterdir() if p.is_dir()] if root and (root / "assignments").is_dir() else []
    known += [read_marker(copy_here)["assignment"]] if copy_here is not None else []
    here = public_questions(load_copy(copy_here)) or [] if copy_here is not None else None
    request = read_test_words(args.words, sorted(set(known)), questions_here=here)
    args.path = request.path
    args.assignment = request.assignment
    if args.assignment is None:
        start = request.path if request.path is not None else Path.cwd()
        found = find_assignment_copy(start if start.is_dir() else start.parent) if start.exists() else None
        if found is None:
            names = f" (here: {', '.join(sorted(set(known)))})" if known else ""
            raise CourseError(f"name the assignment: `checks {args.run_name} ASSIGNMENT`{names}; in a copy of an "
                              "assignment folder, `checks " + args.run_name + "` alone checks that copy")
        args.assignment = read_marker(found)["assignment"]
    return request.questions


def _student_assignment(root: Path | None, args: argparse.Namespace) -> tuple[Assignment, Path]:
    """The assignment and the folder to check or pack: PATH; else the copy of this assignment the
    current folder is in; else the course's release. Without a course, a copy describes itself."""
    if args.path is not None and not args.path.exists():
        raise CourseError(f"{args.path} does not exist")
    start = args.path if args.path is not None else Path.cwd()
    found = find_assignment_copy(start if start.is_dir() else start.parent)
    copy = found if found is not None and read_marker(found)["assignment"] == args.assignment else None
    if root is not None:
        assignment = load_assignment(root, args.assignment)
    elif copy is not None:
        assignment = load_copy(copy)
    elif found is not None:
        other = read_marker(found)["assignment"]
        raise CourseError(f"{found} is a copy of {other}, not of {args.assignment}: here, use `checks "
                          f"{args.run_name} {other}`; for {args.assignment}, work in a copy of it or name the "
                          "course with --course DIR")
    elif (here := find_assignment_copy(Path.cwd())) is not None:
        other = read_marker(here)["assignment"]
        if other != args.assignment:
            raise CourseError(f"{here} is a copy of {other}, not of {args.assignment}: for {args.assignment}, work in "
                              "a copy of it or name the course with --course DIR")
        assignment = load_copy(here)  # in a copy (`checks fetch`): it describes the assignment PATH is checked for
    else:
        find_course_root()  # raises: no course, and no copy of an assignment here
        raise CourseError(f"no copy of {args.assignment} found")
    return assignment, (args.path or copy or assignment.release_dir).resolve()


def _test(root: Path | None, args: argparse.Namespace) -> int:
    from checks.grading.public import public_questions, run_public_checks

    questions = _read_words(root, args)
    assignment, path = _student_assignment(root, args)
    if not assignment.public_tests_dir.is_dir():
        raise CourseError(f"{assignment.name} has no public tests in {assignment.public_tests_dir}")
    if questions and (known := public_questions(assignment)) is not None:
        check_questions(assignment.name, questions, known)  # before the heading: a typo is one error line
    console.print(plain(f"checks {__version__}: public checks of {assignment.name} on {path}"
                        + (f", {' '.join(questions)} only" if questions else "")))
    named = _named_in_notebook(assignment, path)
    checks = run_public_checks(assignment, Source.from_path(path, named), _quiz_bytes(path, named), questions,
                               args.settings)
    result, quiz, quiz_problem = checks.result, checks.quiz, checks.quiz_problem
    _show(result, quiz)
    if quiz_problem:
        console.print(Text.assemble(("\nquiz: ", "bold"), plain(quiz_problem)))
    if result.error:
        return 2
    failed = [q for q in result.questions if not q.passed]
    quiz_ok = sum(form.ok for form in quiz)
    line = f"\n{len(result.questions) - len(failed)} of {len(result.questions)} questions pass their public checks"
    if quiz:
        line += f"; {quiz_ok} of {len(quiz)} quiz answers present and well-formed"
    all_ok = not failed and quiz_ok == len(quiz) and not quiz_problem
    console.print(Text(line + "." + (" Public checks do not guarantee full marks: the hidden suite has many more "
                                     "cases." if all_ok else "")))
    return 0 if all_ok else 1


def _named_in_notebook(assignment: Assignment, path: Path) -> tuple[str, ...] | None:
    """A notebook is read for its answer cells, which needs the files they stand for; a folder or
    zip is read whole, so that a misnamed file can be pointed out."""
    return named_files(assignment) if path.suffix == NOTEBOOK_SUFFIX else None


def _quiz_bytes(path: Path, named: tuple[str, ...] | None = None) -> bytes | None:
    """quiz.toml as the grader would read it from this folder, zip or notebook (None when it has none)."""
    try:
        return read_submission(path, named).files.get(QUIZ_FILE)
    except SubmissionError:
        return None  # the checks above already said why the submission cannot be read


def _show(result: SubmissionResult, quiz: list[AnswerForm]) -> None:
    for warning in result.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), plain(warning)))
    console.print(question_table(result, show_points=False, quiz=quiz))
    print_failures(console, result)
    if result.error:
        console.print("\nThe grader could not run these checks:", style="red")
        console.print(plain(result.error, lines=True))


def _pack(root: Path | None, args: argparse.Namespace) -> int:
    from checks.pack import pack, submission_file_names

    questions = _read_words(root, args)
    if questions:
        raise CourseError(f"`checks pack` packs the whole assignment; {', '.join(questions)} is neither "
                          "an assignment nor a folder here")
    assignment, folder = _student_assignment(root, args)
    if not folder.is_dir():
        raise CourseError(f"{folder} is not a folder: `checks pack` packs the folder you worked in")
    out = (args.out or Path(f"{assignment.name}.zip")).resolve()
    packing = pack(assignment, folder, out)
    if packing.problems:
        console.print(plain(f"{out.name} was not written: fix these in {folder} first"), style="red")
        for problem in packing.problems:
            console.print(Text("  ") + plain(problem))
        return 1
    console.print(plain(f"wrote {out}, with {len(packing.files)} files from {folder}:"))
    for name in submission_file_names(assignment):
        console.print(Text(f"  {name} ({packing.files[name]:,} bytes)"))
    if packing.untouched:
        files = packing.untouched
        names = ", ".join(files[:-1]) + f" and {files[-1]}" if len(files) > 1 else files[0]
        console.print(Text.assemble(("warning: ", "yellow"), plain(
            f"nothing implemented yet in {names}: every function there still raises the stub's "
            "NotImplementedError (packed anyway)")), soft_wrap=True)
    if packing.unanswered:
        console.print(Text(f"quiz: no answer yet for {', '.join(packing.unanswered)} (packed anyway)"),
                      style="yellow")
    console.print("Upload this zip as it is. `checks test` on your folder shows what the public checks say.")
    return 0


def _grade(root: Path, args: argparse.Namespace) -> int:
    from checks.grading.batch import OutputFailed, check_out_dir, expand_submission_paths, grade_to_folder
    from checks.progress import GradeProgress, print_summary

    from checks.policy.times import MTIME, SubmissionTimes, read_times
    from checks.policy_commands import load as load_course

    assignment = load_assignment(root, args.assignment)
    if not assignment.autograder_dir.is_dir():  # a student's install: the release, without the hidden suites
        raise CourseError(f"{assignment.name} has no hidden suite here ({assignment.autograder_dir} is missing): "
                          "`checks grade` is for the course staff, in the course repository; your own work is "
                          f"checked with `checks test {assignment.name}`")
    course = load_course(root, args)  # the whole policy checked now: a mistake changes nothing graded
    times = None
    if args.submitted_at == MTIME:
        times = SubmissionTimes(from_files=True, zone=course.zone)
    elif args.submitted_at:
        times = read_times(Path(args.submitted_at), course.named_zone(assignment.name))
    settings = args.settings
    isolation = settings.isolation  # chosen here, once: for the header, and to refuse an impossible level early
    given = [p for pattern in args.submissions for p in _unquoted_glob(pattern)]
    skipped: list[str] = []  # entries of a folder of submissions that are nobody's: each said, never dropped quietly
    paths = expand_submission_paths(given, assignment.name, skipped)
    check_out_dir(args.out, [*given, *paths])  # a class folder given, too: its next run would grade the output
    with contextlib.ExitStack() as cluster:
        grader, where = None, f"sandbox: {isolation.description}"
        if args.scheduler or args.scheduler_file:
            try:
                grader, where = _dask_grader(args, cluster)
            except RuntimeError as error:  # the scheduler cannot be reached or is unsafe, or no `cluster` extra
                console.print(Text("error: ", style="red") + plain(str(error), lines=True), soft_wrap=True)
                return 2
        header = plain(f"checks {__version__}: grading {len(paths)} submission(s) of {assignment.name} "
                       f"into {args.out} ({where}; device: {settings.device})")
        for line in skipped:
            console.print(plain(f"skipped {line}"), soft_wrap=True)
        try:  # the header is printed once the run holds the folder: a second run's error comes first
            summary = grade_to_folder(assignment, paths, args.out, jobs=args.jobs, regrade=args.regrade,
                                      listener=GradeProgress(console, header=header), grader=grader,
                                      settings=settings, course=course, times=times)
        except OutputFailed as error:  # the run stopped part-way; the gradebook keeps what it graded
            console.print(Text("stopped: ", style="red") + plain(str(error), lines=True))
            return 1
    print_summary(console, summary)
    _policy_lines(summary)
    console.print(Text(_grade_line(assignment.name, summary)), soft_wrap=True)  # one line, for scripts too
    return 1 if summary.failed else 0


def _policy_lines(summary: BatchSummary) -> None:
    """What the course policy did, where it did anything."""
    applied = summary.applied
    if applied is None:
        return
    if applied.late:
        console.print(plain(f"late penalty: {', '.join(applied.late)} (report.html lists why)"), soft_wrap=True)
    if applied.unknown_time:
        console.print(plain(f"no submission time for {len(applied.unknown_time)} submission(s): no late penalty "
                            "charged (give --submitted-at CSV, or mtime)"), soft_wrap=True)
    if applied.unmatched:
        console.print(plain(f"not on the roster: {', '.join(applied.unmatched)} (no extension or regrade applies)"),
                      soft_wrap=True)


def _similarity(root: Path, args: argparse.Namespace) -> int:
    from checks.similarity.run import similarity_to_folder

    assignment = load_assignment(root, args.assignment)
    given = [p for pattern in args.submissions for p in _unquoted_glob(pattern)]
    run = similarity_to_folder(assignment, given, args.out, threshold=args.threshold, shown=args.show)
    for name, why in sorted(run.skipped.items()):
        console.print(plain(f"not compared: {name} {why}"))
    table = Table(title=f"most similar pairs (of {len(run.comparison.pairs)} sharing code)", title_justify="left")
    for column, justify in (("a", "left"), ("b", "left"), ("similarity", "right"), ("shared", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for pair in run.comparison.pairs[:10]:
        table.add_row(plain(pair.a), plain(pair.b), f"{pair.similarity:.2f}", str(pair.shared),
                      style="red" if pair.similarity >= run.threshold else None)
    console.print(table)
    console.print(Text(f"similarity {assignment.name}: {len(run.codes)} submissions compared in {run.seconds:.1f} s; "
                       f"{len(run.flagged)} pair(s) at or above {run.threshold:g}; "
                       f"{args.out / 'similarity.html'} and similarity.csv (evidence for a person, not a verdict)"),
                  soft_wrap=True)
    return 0


def _unquoted_glob(path: Path) -> list[Path]:
    """A pattern no shell expanded (`docker run IMAGE grade 01_tensors '/subs/*'`: the entrypoint has
    none) matches as the shell would; a path that exists, or a pattern matching nothing, stays as given."""
    text = str(path)
    if path.exists() or not any(char in text for char in "*?["):
        return [path]
    return [Path(match) for match in sorted(glob.glob(text))] or [path]


def _dask_grader(args: argparse.Namespace, cluster: contextlib.ExitStack) -> tuple[object, str]:
    """The Dask executor for --scheduler/--scheduler-file, its client closed with `cluster`."""
    try:
        from checks.executors.dask_grader import ClusterProblem, DaskGrader, connect
    except ImportError as error:
        raise RuntimeError(f"--scheduler needs dask and distributed ({error}): "
                           "pip install -c constraints.txt -e '.[cluster]'") from None
    try:
        wait = {"worker_wait": args.worker_wait} if args.worker_wait else {}
        client = cluster.enter_context(connect(args.scheduler, scheduler_file=args.scheduler_file, **wait))
    except ClusterProblem as error:
        raise RuntimeError(str(error)) from None
    workers = client.nthreads()
    return DaskGrader(client, device=args.settings.device, **wait), (f"on the Dask cluster at {client.scheduler.address}: {len(workers)} worker(s), "
                                "each with its own sandbox")


def _grade_line(name: str, summary: BatchSummary) -> str:
    """The last line of `checks grade`: what this run did, and the class at a glance."""
    graded = [r for r in summary.results if not r.error]
    line = f"grade {name}: {len(summary.graded)} graded now, {len(summary.skipped)} already graded"
    if graded:
        line += (f"; mean {sum(r.final_score for r in graded) / len(graded):.1f} of {graded[0].max_score:g} "
                 f"over {len(graded)}")
    if summary.failed:  # the exit status is 1 then: this says how many, and that none of them is a score
        count = len(summary.failed)
        line += (f"; {count} could not be graded (the grader failed on {'it' if count == 1 else 'them'}, above: "
                 "not scored; the same command grades again)")
    return line


def _build(root: Path, args: argparse.Namespace) -> int:
    from checks.authoring.build import build

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
    from checks.authoring.verify import verify

    all_ok = True
    for name in args.names or list_assignments(root):
        assignment = load_assignment(root, name)
        verdicts = verify(assignment, jobs=args.jobs, settings=args.settings)
        _print_verdicts(name, verdicts)
        held = sum(v.ok for v in verdicts)
        console.print(f"verify {name}: {held} of {len(verdicts)} hold", style=None if held == len(verdicts) else "red")
        all_ok &= held == len(verdicts)
    return 0 if all_ok else 1


VERIFY_TABLE_WIDTH = 120  # narrower (or piped), the table's columns fold every detail into slivers


def _print_verdicts(name: str, verdicts: list) -> None:
    """A table on a wide terminal; elsewhere (80 columns, a pipe, a CI log) a line per verdict,
    whose detail wraps as the reader's terminal wraps it."""
    if console.is_terminal and console.width >= VERIFY_TABLE_WIDTH:
        table = Table(title=f"verify {name}", title_justify="left")
        for column in ("submission", "expectation", "ok", "detail"):
            table.add_column(column, overflow="fold")
        for v in verdicts:
            table.add_row(v.submission, v.expectation, "[green]yes[/green]" if v.ok else "[red]NO[/red]", v.detail)
        console.print(table)
        return
    print(f"verify {name}")
    for v in verdicts:
        print(f"  {'yes' if v.ok else 'NO ':3}  {v.submission}: {v.expectation}: {v.detail}")


def _new(root: Path | None, args: argparse.Namespace) -> int:
    from checks.authoring.new import new_assignment

    root = root or Path.cwd()
    written = new_assignment(root, args.name, title=args.title)
    for path in written:
        console.print(f"  wrote {path.relative_to(root)}", markup=False)
    console.print(f"new assignment {args.name}: {len(written)} files. Next: checks build {args.name} && "
                  f"checks verify {args.name}", markup=False)
    return 0


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
    console.print(Text(f"wrote {export.zip_path}: setup.sh, run_autograder, checks and its pinned environment, "
                       f"and {len(course)} hidden course file(s):"))
    for name in course:
        console.print(Text(f"  {name.removeprefix('course/')}"))
    console.print("Upload it as the autograder of a Gradescope programming assignment (Ubuntu base image).")
    return 0


def _export_student(assignment: Assignment, args: argparse.Namespace) -> int:
    from checks.authoring.build import build
    from checks.exports.student import export_student

    if assignment.solution_dir.is_dir() and build(assignment.root, [assignment.name], check=True):
        raise CourseError(f"{assignment.release_dir} is out of date with {assignment.solution_dir}: run "
                          f"`checks build {assignment.name}` first (students would get an old release)")
    export = export_student(assignment, args.out)
    console.print(plain(f"wrote {export.folder} and {export.zip_path}: {len(export.files)} files, the release of "
                        f"{assignment.name}, a wheel of checks, setup_env.py and its pins"), soft_wrap=True)
    if export.requirements:
        console.print(Text(f"  the assignment's files also import: {', '.join(export.requirements)} "
                           "(in requirements.txt)"))
    console.print(Text(f"A student unpacks it and runs `python3.11 setup_env.py`; then `checks test` in "
                       f"assignments/{assignment.name}/ (README.md in the bundle says so)."), soft_wrap=True)
    return 0


def _export_csv(args: argparse.Namespace) -> int:
    from checks.reports.render import export_gradebook_csv, question_names

    if args.fill:
        raise CourseError("--fill is for the nbgrader and otter exports")
    folder = Path(args.assignment)
    path, results = export_gradebook_csv(folder, args.out)
    questions = question_names([r for r in results if not r.error])
    console.print(plain(f"wrote {path}: {len(results)} submission(s), {len(questions)} question(s), from "
                        f"{folder / 'gradebook.sqlite'} (nothing graded)"), soft_wrap=True)
    return 0


def _export_lms(root: Path | None, args: argparse.Namespace) -> int:
    from checks.exports.lms_csv import export_lms_csv
    from checks.policy_commands import load as load_course
    from checks.reports.gradebook import DB_FILE, Gradebook

    if args.fill:
        raise CourseError("--fill is for the nbgrader and otter exports")
    course = load_course(root or find_course_root(), args)
    folder = Path(args.assignment)
    held = Gradebook.existing(folder / DB_FILE).assignment if folder.is_dir() else ""
    title = args.title or (load_assignment(course.root, held).title if held in course.policies else held)
    # no roster needed for an LMS's download: its ids came with it (export_lms_csv says when one is)
    export = export_lms_csv(folder, args.tool, course.roster, title=title, dest=args.out,
                            assignment_id=args.lms_assignment_id or "")
    console.print(plain(f"wrote {export.path}: {export.rows} student(s), final scores, from {folder / 'gradebook.sqlite'} "
                        "(nothing graded)"), soft_wrap=True)
    for why in export.left_out:
        console.print(Text.assemble(("left out: ", "yellow"), plain(why)), soft_wrap=True)
    console.print({"canvas": "Canvas: Grades > Import.",
                   "moodle": "Moodle: Grades > Import > CSV file; map from Email address to useremail.",
                   "moodle-worksheet": "Moodle (its participant ids, from the download): the assignment's View all "
                                       "submissions > Upload grading worksheet (the Offline grading worksheet feedback "
                                       "type on)."}[export.kind])
    return 0


def _export_nbgrader(assignment: Assignment, args: argparse.Namespace) -> int:
    from checks.exports.nbgrader import export_nbgrader

    export = export_nbgrader(assignment, args.out, args.fill)
    points = sum(q.points for q in export.questions)
    console.print(Text(f"wrote {export.root}: {export.notebook.relative_to(export.root)} with "
                       f"{len(export.questions)} graded cells ({points:g} points), nbgrader_config.py, and "
                       f"{len(export.hidden)} hidden course file(s) beside source/ (never released)"))
    for path in export.filled:
        console.print(Text(f"  filled {path.relative_to(export.root)}"))
    console.print(Text(f"then, in {export.root}: nbgrader generate_assignment {assignment.name}"
                       + (f"; nbgrader autograde {assignment.name} --create" if export.filled else "")))
    return 0


def _export_otter(assignment: Assignment, args: argparse.Namespace) -> int:
    from checks.exports.otter import export_otter

    export = export_otter(assignment, args.out, args.fill)
    console.print(Text(f"wrote {export.master}: the otter-assign master notebook, {len(export.questions)} questions, "
                       f"and beside it {len(export.hidden)} hidden course file(s) that the autograder zip ships"))
    for path in export.submissions:
        console.print(Text(f"  {path}"))
    console.print(Text(f"next: otter assign {export.master} dist/ ; otter run -a dist/autograder/"
                       f"{assignment.name}-autograder_*.zip NOTEBOOK"))
    return 0



# ---------------------------------------------------------------------------- the course server

def _serve(root: Path | None, args: argparse.Namespace) -> int:
    try:
        from checks.server import confinement
        from checks.server.config import load_config
        from checks.server.database import shown
        from checks.server.queue import LocalPools
        from checks.server.run import dask_grader, serve
    except ImportError as error:
        raise CourseError(f"`checks serve` needs the `serve` extra ({error}): "
                          "pip install -c constraints.txt -e '.[serve]'") from None

    config = load_config(args.folder, _database_url(args))
    jobs = args.jobs or config.jobs
    with contextlib.ExitStack() as stack:
        make = None
        if args.scheduler or args.scheduler_file:
            make = dask_grader(args.scheduler, args.scheduler_file, stack, worker_wait=args.worker_wait)
        isolation = None if make else args.settings.isolation  # chosen once: named, and checked by serve()
        for change in confinement.secure(config, isolation):  # refused before anything says it serves
            console.print(plain(change), soft_wrap=True)
        where = ("on the Dask cluster, in its workers' sandbox" if make else
                 f"{jobs} warm grading pool(s) per assignment; sandbox: {isolation.description}")
        console.print(plain(f"checks {__version__}: serving {config.title} ({', '.join(config.assignments)}) from "
                            f"{config.folder} at http://{args.host}:{args.port}/ ; storage {shown(config.storage_url)}; "
                            f"grading: {where}. Ctrl-C stops it."), soft_wrap=True)
        serve(config, host=args.host, port=args.port, jobs=jobs, proxy_headers=args.proxy_headers,
              forwarded_allow_ips=args.forwarded_allow_ips, isolation=isolation, make_grader=make or (
            lambda: LocalPools(args.settings.device, isolation.kind)))
    return 0


def _server_storage(folder: Path, database: str | None = None, *,  # noqa: ANN202 - the server's types are imported here only
                    upgrade: bool = True):
    try:
        from checks.server.config import load_config
        from checks.server.storage import Storage
    except ImportError as error:
        raise CourseError(f"this command needs the `serve` extra ({error}): "
                          "pip install -c constraints.txt -e '.[serve]'") from None
    config = load_config(folder, database)
    return config, Storage(config.storage_url, upgrade=upgrade)


def _db(root: Path | None, args: argparse.Namespace) -> int:
    from checks.server import migrations
    from checks.server.database import shown

    config, storage = _server_storage(args.folder, _database_url(args), upgrade=False)
    try:
        if args.action == "current":
            revision = migrations.current(storage.engine)
            state = "up to date" if revision == migrations.head() else f"behind: `checks db upgrade` brings it to " \
                f"{migrations.head()}"
            console.print(plain(f"{shown(config.storage_url)}: schema revision {revision or 'none (empty)'}; {state}"),
                          soft_wrap=True)
            return 0
        before, after = migrations.upgrade(storage.engine)
        change = "already at" if before == after else f"upgraded from {before or 'empty'} to"
        console.print(plain(f"{shown(config.storage_url)}: {change} schema revision {after}"), soft_wrap=True)
    finally:
        storage.close()
    return 0


def _roster(root: Path | None, args: argparse.Namespace) -> int:
    import time

    from checks.server.roster import import_roster, read_roster, write_tokens

    folder = args.server or (args.csv.parent if (args.csv.parent / "course.toml").is_file() else Path.cwd())
    config, storage = _server_storage(folder, _database_url(args))
    people = read_roster(args.csv)
    tokens = args.tokens or config.data_dir / f"tokens-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    if tokens.exists():
        raise CourseError(f"{tokens} exists: the tokens are written once; name another file with --tokens")
    issued, kept = import_roster(storage, people, reissue=args.reissue)
    if issued:
        tokens.parent.mkdir(parents=True, exist_ok=True)
        write_tokens(tokens, issued)
    console.print(plain(f"roster of {config.title}: {len(issued)} token(s) issued, {kept} account(s) already there "
                        f"kept theirs" + (f"; the new tokens are in {tokens} (readable by you only): hand each "
                                          "student theirs, then delete the file" if issued else "")), soft_wrap=True)
    return 0


def _staff(root: Path | None, args: argparse.Namespace) -> int:
    from checks.server.roster import add_user
    from checks.server.storage import User

    if not args.login or not all(c.isalnum() or c in "._@-" for c in args.login):
        raise CourseError("a staff login is letters, digits and . _ @ - only")
    config, storage = _server_storage(args.server, _database_url(args))
    issued = add_user(storage, User(args.login, args.name, args.email, args.role))
    console.print(plain(f"{args.role} {args.login} of {config.title}: sign in on the web page with this login and "
                        f"token (shown once): {issued.token}"), soft_wrap=True)
    return 0


def _login(root: Path | None, args: argparse.Namespace) -> int:
    import getpass

    from checks.server.client import ServerError, login

    token = getpass.getpass("token: ") if sys.stdin.isatty() else sys.stdin.readline()
    if not token.strip():
        raise CourseError("no token given: paste the token the course staff gave you")
    try:
        credentials, path = login(args.url, token)
    except ServerError as error:
        console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        return 1
    console.print(plain(f"signed in to {credentials.url} as {credentials.user}; kept in {path} (readable by you only)"),
                  soft_wrap=True)
    return 0


def _submit(root: Path | None, args: argparse.Namespace) -> int:
    import tempfile

    from checks.pack import pack
    from checks.server import client

    if args.status is not None:
        if args.words:
            raise CourseError("`checks submit --status ID` uploads nothing: name no assignment or folder")
        try:
            credentials = client.load_credentials()
            reply = client.status(args.status, credentials)
        except client.ServerError as error:
            console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
            return 1
        return _show_reply(reply, credentials.url)
    if _read_words(root, args):
        raise CourseError("`checks submit` submits the whole assignment: name the assignment and your folder only")
    assignment, folder = _student_assignment(root, args)
    if not folder.is_dir():
        raise CourseError(f"{folder} is not a folder: `checks submit` packs the folder you worked in")
    with tempfile.TemporaryDirectory(prefix="checks-submit-") as temp:
        out = Path(temp) / f"{assignment.name}.zip"
        packing = pack(assignment, folder, out)
        if packing.problems:
            console.print(plain(f"nothing was submitted: fix these in {folder} first"), style="red")
            for problem in packing.problems:
                console.print(Text("  ") + plain(problem))
            return 1
        data = out.read_bytes()
    try:
        credentials = client.load_credentials()
        reply = client.submit(assignment.name, data, credentials, grace=args.grace)
        console.print(plain(f"submitted {assignment.name} ({len(packing.files)} files from {folder}) to "
                            f"{credentials.url}: id {reply['id']}"
                            + (f", number {reply['position']} in the queue" if reply.get("position") else "")),
                      soft_wrap=True)
        if args.no_wait:
            console.print(plain(reply["id"]))  # checked by the client: letters, digits, - and _; shown as text
            return 0
        reply = client.wait(reply["id"], credentials)
    except client.ServerError as error:
        console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        if error.retry_after:
            console.print(plain(f"the next try is allowed in {error.retry_after:g} s"))
        return 1
    return _show_reply(reply, credentials.url)


def _show_reply(reply: dict, url: str) -> int:
    """show_submission, and a result the server sent that is not one as a one-line error."""
    try:
        return show_submission(reply, url)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        console.print(Text("error: ", style="red") + plain(f"the server's reply is malformed ({type(error).__name__}: "
                                                            f"{str(error)[:200]})"), soft_wrap=True)
        return 1


def show_submission(reply: dict, url: str) -> int:
    """The feedback of a graded submission, as `checks test` prints it, with the score; every
    string of the reply shown as text."""
    if reply.get("message"):
        console.print(plain(reply["message"], "red", lines=True), soft_wrap=True)
        return 1
    result = SubmissionResult.from_dict(reply["result"]) if reply.get("result") else None
    if result is None and not reply.get("public"):
        console.print(plain(f"status: {reply['status']}"))
        return 1
    public = SubmissionResult.from_dict(reply["public"]) if reply.get("public") else None
    pending = result is None  # its public checks ran; its hidden suite waits in the queue, unseen until released
    if result is None:
        result = SubmissionResult(name=reply["id"], assignment=reply["assignment"], warnings=public.warnings)
    for warning in result.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), plain(warning)))
    if result.questions:
        console.print(question_table(result, show_points=True))
        print_failures(console, result)
        console.print(Text(f"\nscore: {result.final_score:g} / {result.max_score:g}", style="bold"))
        if result.adjustments:  # the late penalty, as the gradebook counts it: never the raw score alone
            console.print(plain(f"the checks gave {result.score:g}; then:"))
            for adjustment in result.adjustments:
                console.print(Text("  ") + plain(adjustment_line(adjustment)), soft_wrap=True)
    if public is not None and public.questions and not result.questions:  # hidden scores not released yet
        console.print(Text("public checks (the ones `checks test` runs):", style="bold"))
        console.print(question_table(public, show_points=True))
        print_failures(console, public)
        console.print(Text(f"\npublic checks: {public.score:g} / {public.max_score:g}", style="bold"))
        console.print(plain(f"(out of the public checks' own {public.max_score:g} points: not your grade, which the "
                            "hidden checks decide)"), soft_wrap=True)
    if not reply.get("hidden_shown", True) or not result.questions:
        console.print(plain(reply.get("visibility", "")), soft_wrap=True)
    if pending:
        console.print(plain(f"The hidden checks wait in the queue: `checks submit --status {reply['id']}` says when "
                            "they are graded."), soft_wrap=True)
    console.print(plain(f"feedback page: {url}{reply['url']}"), soft_wrap=True)
    if not result.questions:  # graded, its hidden scores not released yet: the public checks say
        return 0 if public is None or public.score >= public.max_score else 1
    return 0 if result.final_score >= result.max_score else 1


def _fetch(root: Path | None, args: argparse.Namespace) -> int:
    from checks.server import client

    out = (args.out or Path(args.assignment)).resolve()
    if out.exists():
        raise CourseError(f"{out} exists: `checks fetch` writes a new folder (name another with --out)")
    try:
        data = client.fetch(args.assignment)
    except client.ServerError as error:
        console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        return 1
    try:
        client.unpack_release(data, args.assignment, out)  # streamed, within caps; nothing left on a refusal
    except client.ServerError as error:
        console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        return 1
    console.print(plain(f"wrote {out}: {args.assignment} as released; `checks test` there runs its public checks"),
                  soft_wrap=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
