"""`checks grade`: a class's submissions graded with the hidden suite into an output folder,
here or on a Dask cluster, with the course's policy applied."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from checks import __version__
from checks.cli import common
from checks.course.assignment import CourseError, load_assignment
from checks.reports.render import plain

if TYPE_CHECKING:
    from checks.grading.batch import BatchSummary


def add_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    grade = common.command(
        commands, "grade", "grade submissions with the hidden suite",
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
    grade.add_argument("--jobs", type=common.positive_int, default=None, metavar="N",
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
    grade.add_argument("--worker-wait", type=common.positive_seconds, default=None, metavar="SECONDS",
                       help="with --scheduler: how long the cluster may have no worker before what is not graded "
                            "yet is a grader failure (default: 120)")
    grade.set_defaults(run=_grade)


def _grade(root: Path, args: argparse.Namespace) -> int:
    from checks.grading.batch import OutputFailed, check_out_dir, expand_submission_paths, grade_to_folder
    from checks.policy.times import MTIME, SubmissionTimes, read_times
    from checks.progress import GradeProgress, print_summary

    assignment = load_assignment(root, args.assignment)
    if not assignment.autograder_dir.is_dir():  # a student's install: the release, without the hidden suites
        raise CourseError(f"{assignment.name} has no hidden suite here ({assignment.autograder_dir} is missing): "
                          "`checks grade` is for the course staff, in the course repository; your own work is "
                          f"checked with `checks test {assignment.name}`")
    course = common.load_course(root, args)  # the whole policy checked now: a mistake changes nothing graded
    times = None
    if args.submitted_at == MTIME:
        times = SubmissionTimes(from_files=True, zone=course.zone)
    elif args.submitted_at:
        times = read_times(Path(args.submitted_at), course.named_zone(assignment.name))
    settings = args.settings
    isolation = settings.isolation  # chosen here, once: for the header, and to refuse an impossible level early
    given = [p for pattern in args.submissions for p in common.unquoted_glob(pattern)]
    skipped: list[str] = []  # entries that are nobody's, or read as one student's: each said, never dropped quietly
    paths = expand_submission_paths(given, assignment.name, skipped)
    check_out_dir(args.out, [*given, *paths])  # a class folder given, too: its next run would grade the output
    with contextlib.ExitStack() as cluster:
        grader, where = None, f"sandbox: {isolation.description}"
        if args.scheduler or args.scheduler_file:
            try:
                grader, where = _dask_grader(args, cluster)
            except RuntimeError as error:  # the scheduler cannot be reached or is unsafe, or no `cluster` extra
                common.console.print(Text("error: ", style="red") + plain(str(error), lines=True), soft_wrap=True)
                return 2
        header = plain(f"checks {__version__}: grading {len(paths)} submission(s) of {assignment.name} "
                       f"into {args.out} ({where}; device: {settings.device})")
        for line in skipped:
            common.console.print(plain(line), soft_wrap=True)
        try:  # the header is printed once the run holds the folder: a second run's error comes first
            summary = grade_to_folder(assignment, paths, args.out, jobs=args.jobs, regrade=args.regrade,
                                      listener=GradeProgress(common.console, header=header), grader=grader,
                                      settings=settings, course=course, times=times)
        except OutputFailed as error:  # the run stopped part-way; the gradebook keeps what it graded
            common.console.print(Text("stopped: ", style="red") + plain(str(error), lines=True))
            return 1
    print_summary(common.console, summary)
    _policy_lines(summary)
    common.console.print(Text(_grade_line(assignment.name, summary)), soft_wrap=True)  # one line, for scripts too
    return 1 if summary.failed else 0


def _policy_lines(summary: BatchSummary) -> None:
    """What the course policy did, where it did anything."""
    applied = summary.applied
    if applied is None:
        return
    if applied.late:
        common.console.print(plain(f"late penalty: {', '.join(applied.late)} (report.html lists why)"), soft_wrap=True)
    if applied.unknown_time:
        common.console.print(plain(f"no submission time for {len(applied.unknown_time)} submission(s): no late penalty "
                                   "charged (give --submitted-at CSV, or mtime)"), soft_wrap=True)
    if applied.unmatched:
        common.console.print(plain(f"not on the roster: {', '.join(applied.unmatched)} (no extension or regrade "
                                   "applies)"), soft_wrap=True)


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
    where = f"on the Dask cluster at {client.scheduler.address}: {len(workers)} worker(s), each with its own sandbox"
    return DaskGrader(client, device=args.settings.device, **wait), where


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
