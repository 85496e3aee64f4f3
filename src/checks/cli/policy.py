"""The course-policy commands of `checks`, over checks.policy: `checks policy` (show and check the
course's policy), `checks extension grant|revoke|list`, `checks grace show|request`, `checks
regrade-request` (a student's) and `checks regrade collect|list|answer` (staff's). Each staff
command loads the whole course first, so a mistake anywhere in its policy is refused before
anything is recorded; the clock and the staff member's name are read here, once, and handed to
the library.
"""

from __future__ import annotations

import argparse
import getpass
from datetime import datetime, timezone
from pathlib import Path

from rich.table import Table

from checks.cli import common
from checks.course.assignment import CourseError
from checks.reports.render import plain


def now() -> datetime:
    """The clock of a command: read once, in UTC."""
    return datetime.now(timezone.utc)


def staff_name(given: str | None) -> str:
    """Who is recorded as having done it: --by, else the account running the command."""
    if given and given.strip():
        return given.strip()
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        raise CourseError("say who you are with --by NAME (it is recorded with every change)") from None


def add_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    """policy, extension, grace, regrade-request and regrade, added to `checks`'s parser."""
    policy = common.command(
        commands, "policy", "show the course's policy (dates, late penalties, grace days), checked",
        "Load the course's policy (course.toml, each assignment.toml's [policy], the roster and the "
        "recorded extensions), refuse the first mistake naming its file and key, and show each "
        "assignment's dates and late policy.",
        "  checks policy\n  checks --course examples/course policy")
    policy.set_defaults(run=_policy)

    extension = common.command(
        commands, "extension", "grant, revoke or list extensions (audited)",
        "Give one student a later due date on one assignment, take it back, or list every grant "
        "and revocation: each is recorded in the course folder's records/extensions.jsonl with "
        "who, when and why. The next `checks grade` of the assignment (which grades nothing "
        "again) applies it.",
        "  checks extension grant 01_tensors s002 --until 2030-07-03T23:59 --reason 'illness (note)'\n"
        "  checks extension revoke 01_tensors s002 --reason 'granted by mistake'\n"
        "  checks extension list 01_tensors")
    extension.add_argument("action", choices=["grant", "revoke", "list"])
    extension.add_argument("assignment", nargs="?", help=assignment_help)
    extension.add_argument("student", nargs="?", help="the student's student_id in the roster")
    extension.add_argument("--until", metavar="DATE",
                           help="the new due date, with its offset (2030-07-03T23:59+02:00) or in the course's "
                                "time_zone")
    extension.add_argument("--reason", default="", help="why (recorded)")
    extension.add_argument("--by", metavar="NAME", help="who grants it (default: this account's name)")
    extension.set_defaults(run=_extension)

    grace = common.command(
        commands, "grace", "grace days: a student's balance, or a request to spend some",
        "show: the grace days a student has spent on each assignment and has left. request: record "
        "that a student asks to spend grace days on an assignment (courses with [grace] mode = "
        "\"request\"), after showing how many they have left and asking to confirm.",
        "  checks grace show s002\n  checks grace request 01_tensors s002 --days 1")
    grace.add_argument("action", choices=["show", "request"])
    grace.add_argument("words", nargs="+", metavar="ASSIGNMENT STUDENT",
                       help="show: STUDENT; request: ASSIGNMENT STUDENT")
    grace.add_argument("--days", type=int, default=1, help="request: how many (0 withdraws a request; default 1)")
    grace.add_argument("--yes", action="store_true", help="request: confirm without asking")
    grace.add_argument("--by", metavar="NAME", help="who records it (default: this account's name)")
    grace.set_defaults(run=_grace)


    request = common.command(
        commands, "regrade-request", "ask for a question to be looked at again (writes a file to hand in)",
        "Write your regrade request for one question of an assignment, with your message, into a small "
        "file (regrade-ASSIGNMENT-STUDENT-ID.json) to hand in as your course says (with your work, or "
        "by mail). The staff's answer, and any change to your score, appear in your feedback.",
        "  checks regrade-request 01_tensors strides.offset --student s002 --message 'my offset is "
        "right for a transposed view: see line 12'")
    request.add_argument("assignment", help=assignment_help)
    request.add_argument("question", help="the question id, as your feedback names it (strides.offset)")
    request.add_argument("--student", required=True, help="your student id")
    request.add_argument("--message", required=True, help="what should be looked at again, and why")
    request.add_argument("--out", type=Path, default=Path("."), metavar="DIR",
                         help="where to write the file (default: here)")
    request.set_defaults(run=_regrade_request, without_course=True)

    regrade = common.command(
        commands, "regrade", "staff: collect, list and answer regrade requests (audited)",
        "collect: record students' request files in the course (records/regrades.jsonl), each "
        "checked against the roster and the assignment's questions. list: every request and its "
        "answer. answer: reply to a request, with an optional manual adjustment of the score "
        "(--adjust POINTS), kept apart from the automatic score and recorded with who and when; the "
        "next `checks grade` of the assignment (which grades nothing again) puts it in the gradebook "
        "and the student's feedback.",
        "  checks regrade collect inbox/regrade-*.json\n  checks regrade list 01_tensors\n"
        "  checks regrade answer 3f2a9c1d0b7e --reply 'Right: the check was too strict.' --adjust 2")
    regrade.add_argument("action", choices=["collect", "list", "answer"])
    regrade.add_argument("words", nargs="*", metavar="FILE|ASSIGNMENT|ID",
                         help="collect: request files; list: an assignment (default: all); answer: the request's id")
    regrade.add_argument("--reply", default="", help="answer: what the student reads")
    regrade.add_argument("--adjust", type=float, default=0.0, metavar="POINTS",
                         help="answer: points added to the score (negative: taken; default 0)")
    regrade.add_argument("--open", action="store_true", help="list: only requests without an answer")
    regrade.add_argument("--by", metavar="NAME", help="who (default: this account's name)")
    regrade.set_defaults(run=_regrade)


def _regrade_request(root: Path | None, args: argparse.Namespace) -> int:
    from checks.policy.regrades import new_request, write_request

    request = new_request(args.assignment, args.student, args.question, args.message, now=now())
    if not args.out.is_dir():
        raise CourseError(f"--out {args.out} is not a folder")
    path = write_request(request, args.out)
    common.console.print(plain(f"wrote {path}: hand it in as your course asks (request {request.id}, on "
                               f"{request.question})"), soft_wrap=True)
    return 0


def _regrade(root: Path, args: argparse.Namespace) -> int:
    from checks.grading.adjust import check_regrade_requests
    from checks.policy import regrades

    course = common.load_course(root, args)
    if args.action == "collect":
        if not args.words:
            raise CourseError("`checks regrade collect FILE...`: the request files students handed in")
        requests = [regrades.read_request_file(Path(word)) for word in args.words]  # all checked first
        check_regrade_requests(course, requests)
        who = staff_name(args.by)
        for request in requests:
            new = regrades.record_request(course, request, by=who, now=now())
            common.console.print(plain(f"{'recorded' if new else 'already recorded'}: {request.id} "
                                       f"{request.assignment} {request.student} {request.question}"))
        return 0
    if args.action == "list":
        table = Table(title="regrade requests", title_justify="left")
        for column in ("id", "assignment", "student", "question", "message", "answer", "points", "by"):
            table.add_column(column, overflow="fold")
        for thread in regrades.threads(course, assignment=args.words[0] if args.words else None):
            if args.open and thread.answer is not None:
                continue
            answer = thread.answer
            table.add_row(*(plain(text) for text in (
                thread.request.id, thread.request.assignment, thread.request.student, thread.request.question,
                thread.request.message, answer.reply if answer else "(open)", f"{answer.points:+g}" if answer else "",
                answer.by if answer else "")))
        common.console.print(table)
        return 0
    if len(args.words) != 1:
        raise CourseError("`checks regrade answer ID --reply TEXT [--adjust POINTS]`: one request's id")
    given = regrades.answer(course, args.words[0], args.reply, points=args.adjust, by=staff_name(args.by), now=now())
    thread = next(t for t in regrades.threads(course) if t.request.id == given.id)
    common.console.print(plain(f"answered {given.id} ({thread.request.student}, {thread.request.question}): "
                               f"{given.points:+g} points, by {given.by}; `checks grade "
                               f"{thread.request.assignment} ...` again puts it in the gradebook and the student's "
                               "feedback"), soft_wrap=True)
    return 0


def _policy(root: Path, args: argparse.Namespace) -> int:
    course = common.load_course(root, args)
    common.console.print(plain(f"policy of {course.folder} (checked):"), soft_wrap=True)
    for name, policy in course.policies.items():
        late = policy.late
        rule = "none" if late.kind == "none" else f"{late.percent:g} % {late.kind.replace('_', ' ')}, cap {late.cap:g} %"
        hidden = "after the due date" if policy.hidden_wait else "shown at once"
        common.console.print(plain(f"  {name}: release {_date(policy.release, policy.zone)}, due "
                                   f"{_date(policy.due, policy.zone)}; late penalty {rule}, hard close "
                                   f"{_date(late.close, policy.zone)}; counts {policy.counts}; hidden checks' results: "
                                   f"{hidden}"), soft_wrap=True)
    roster = f"{len(course.roster.students)} students in {course.roster.path}" if course.roster else "no roster"
    common.console.print(plain(f"grace days: {course.grace.days} per student ({course.grace.mode}); {roster}"),
                         soft_wrap=True)
    return 0


def _date(when: datetime | None, zone) -> str:
    return "-" if when is None else when.astimezone(zone).isoformat(timespec="minutes") + f" ({zone})"


def _extension(root: Path, args: argparse.Namespace) -> int:
    from checks.policy.extensions import grant, history

    course = common.load_course(root, args)
    if args.action == "list":
        table = Table(title="extensions (latest last)", title_justify="left")
        for column in ("assignment", "student", "until", "reason", "by", "at"):
            table.add_column(column, overflow="fold")
        for one in history(course):
            if args.assignment in (None, one.assignment) and args.student in (None, one.student):
                until = "revoked" if one.until is None else one.until.isoformat(timespec="minutes")
                table.add_row(*(plain(text) for text in (one.assignment, one.student, until, one.reason, one.by,
                                                         one.at.isoformat(timespec="seconds"))))
        common.console.print(table)
        return 0
    if not args.assignment or not args.student:
        raise CourseError(f"`checks extension {args.action}` needs ASSIGNMENT STUDENT")
    if args.action == "grant" and not args.until:
        raise CourseError("`checks extension grant` needs --until DATE: the student's new due date")
    extension = grant(course, args.assignment, args.student, args.until if args.action == "grant" else None,
                      reason=args.reason, by=staff_name(args.by), now=now())
    what = (f"extended {extension.assignment} for {extension.student} to {extension.until.isoformat()}"
            if extension.until else f"revoked {extension.student}'s extension on {extension.assignment}")
    common.console.print(plain(f"{what} (recorded by {extension.by}); `checks grade` of {extension.assignment} again "
                               "applies it"), soft_wrap=True)
    return 0


def _grace(root: Path, args: argparse.Namespace) -> int:
    from checks.policy import grace

    course = common.load_course(root, args)
    if args.action == "show":
        if len(args.words) != 1:
            raise CourseError("`checks grace show STUDENT`: one student")
        student = args.words[0]
        roster = course.require_roster("grace days")
        if student not in roster:
            raise CourseError(f"{student!r} is not on the roster ({roster.path})")
        used = grace.spent(course, student)
        for name, days in used.items():
            common.console.print(plain(f"  {name}: {days} spent"))
        common.console.print(plain(f"{student}: {grace.left_after(course.grace.days, used)} of {course.grace.days} "
                                   f"grace days left ({course.grace.mode})"))
        return 0
    if len(args.words) != 2:
        raise CourseError("`checks grace request ASSIGNMENT STUDENT --days N`")
    assignment, student = args.words

    def confirm(left: int) -> bool:
        common.console.print(plain(f"{student} has {left} grace day{'s' if left != 1 else ''} left; spend {args.days} "
                                   f"on {assignment}?"))
        return args.yes or input("[y/N] ").strip().lower() in ("y", "yes")

    if grace.request_grace(course, assignment, student, args.days, by=staff_name(args.by), now=now(), confirm=confirm):
        common.console.print(plain(f"recorded: {student} spends up to {args.days} grace day(s) on {assignment} (as "
                                   "many as the submission is late)"))
        return 0
    common.console.print("nothing recorded")
    return 1
