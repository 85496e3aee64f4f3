"""The student's commands: `checks test` and `checks pack` on a copy of an assignment, and
`checks login`, `checks submit` and `checks fetch` with the course server.

What `checks test` needs is imported here, at the top; the server's client and the packer are
imported when their command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.text import Text

from checks import __version__
from checks.cli import common
from checks.course.assignment import Assignment, CourseError
from checks.course.selection import check_questions
from checks.course.submissions import NOTEBOOK_SUFFIX, SubmissionError, read_submission
from checks.grading.session import Source, named_files
from checks.grading.student_target import read_student_words, student_target
from checks.reports.render import adjustment_line, plain, print_failures, question_table
from checks.suites.quiz import QUIZ_FILE, AnswerForm
from checks.suites.scoring import SubmissionResult


def add_work_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    """test and pack: the student's own copy of an assignment, no server."""
    test = common.command(
        commands, "test", "run the public checks on your work",
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

    pack_cmd = common.command(
        commands, "pack", "write the zip you upload",
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


def add_server_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    """login, submit and fetch: the student's side of the course server (httpx only)."""
    login = common.command(
        commands, "login", "sign in to your course's server",
        "Check your token with the course server and keep it (with the URL) in your config folder "
        "($XDG_CONFIG_HOME/checks, else ~/.config/checks; readable by you only), for `checks "
        "submit` and `checks fetch`. The token is asked for (not echoed), or read from standard "
        "input when it is not a terminal.",
        "  checks login https://checks.example.edu\n  echo \"$TOKEN\" | checks login http://127.0.0.1:8000")
    login.add_argument("url", help="the server, http(s)://HOST[:PORT]")
    login.set_defaults(run=_login, without_course=True)

    submit = common.command(
        commands, "submit", "submit your work to the course server and show the feedback",
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

    fetch = common.command(
        commands, "fetch", "download an assignment from your course's server",
        "Download the student release of an assignment (stubs, public checks, quiz.toml, "
        "notebook) once the course has opened it, into a new folder.",
        "  checks fetch 01_tensors\n  checks fetch 01_tensors --out ~/work/01_tensors")
    fetch.add_argument("assignment", help="the assignment's name")
    fetch.add_argument("--out", type=Path, metavar="DIR", default=None,
                       help="the folder to create (default: ./ASSIGNMENT)")
    fetch.set_defaults(run=_fetch, without_course=True)


def _test(root: Path | None, args: argparse.Namespace) -> int:
    from checks.grading.public import public_questions, run_public_checks

    request = read_student_words(root, args.words, args.run_name)
    questions = request.questions
    assignment, path = student_target(root, request, args.run_name)
    if not assignment.public_tests_dir.is_dir():
        raise CourseError(f"{assignment.name} has no public tests in {assignment.public_tests_dir}")
    if questions and (known := public_questions(assignment)) is not None:
        check_questions(assignment.name, questions, known)  # before the heading: a typo is one error line
    common.console.print(plain(f"checks {__version__}: public checks of {assignment.name} on {path}"
                               + (f", {' '.join(questions)} only" if questions else "")))
    named = _named_in_notebook(assignment, path)
    checks = run_public_checks(assignment, Source.from_path(path, named), _quiz_bytes(path, named), questions,
                               args.settings)
    result, quiz, quiz_problem = checks.result, checks.quiz, checks.quiz_problem
    _show(result, quiz)
    if quiz_problem:
        common.console.print(Text.assemble(("\nquiz: ", "bold"), plain(quiz_problem)))
    if result.error:
        return 2
    failed = [q for q in result.questions if not q.passed]
    quiz_ok = sum(form.ok for form in quiz)
    line = f"\n{len(result.questions) - len(failed)} of {len(result.questions)} questions pass their public checks"
    if quiz:
        line += f"; {quiz_ok} of {len(quiz)} quiz answers present and well-formed"
    all_ok = not failed and quiz_ok == len(quiz) and not quiz_problem
    common.console.print(Text(line + "." + (" Public checks do not guarantee full marks: the hidden suite has many "
                                            "more cases." if all_ok else "")))
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
        common.console.print(Text.assemble(("warning: ", "yellow"), plain(warning)))
    common.console.print(question_table(result, show_points=False, quiz=quiz))
    print_failures(common.console, result)
    if result.error:
        common.console.print("\nThe grader could not run these checks:", style="red")
        common.console.print(plain(result.error, lines=True))


def _pack(root: Path | None, args: argparse.Namespace) -> int:
    from checks.pack import pack, submission_file_names

    request = read_student_words(root, args.words, args.run_name)
    if request.questions:
        raise CourseError(f"`checks pack` packs the whole assignment; {', '.join(request.questions)} is neither "
                          "an assignment nor a folder here")
    assignment, folder = student_target(root, request, args.run_name)
    if not folder.is_dir():
        raise CourseError(f"{folder} is not a folder: `checks pack` packs the folder you worked in")
    out = (args.out or Path(f"{assignment.name}.zip")).resolve()
    packing = pack(assignment, folder, out)
    if packing.problems:
        common.console.print(plain(f"{out.name} was not written: fix these in {folder} first"), style="red")
        for problem in packing.problems:
            common.console.print(Text("  ") + plain(problem))
        return 1
    common.console.print(plain(f"wrote {out}, with {len(packing.files)} files from {folder}:"))
    for name in submission_file_names(assignment):
        common.console.print(Text(f"  {name} ({packing.files[name]:,} bytes)"))
    if packing.untouched:
        files = packing.untouched
        names = ", ".join(files[:-1]) + f" and {files[-1]}" if len(files) > 1 else files[0]
        common.console.print(Text.assemble(("warning: ", "yellow"), plain(
                   f"nothing implemented yet in {names}: every function there still raises the stub's "
                   "NotImplementedError (packed anyway)")), soft_wrap=True)
    if packing.unanswered:
        common.console.print(Text(f"quiz: no answer yet for {', '.join(packing.unanswered)} (packed anyway)"),
                             style="yellow")
    common.console.print("Upload this zip as it is. `checks test` on your folder shows what the public checks say.")
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
        common.console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        return 1
    common.console.print(plain(f"signed in to {credentials.url} as {credentials.user}; kept in {path} (readable by you "
                               "only)"), soft_wrap=True)
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
            common.console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
            return 1
        return _show_reply(reply, credentials.url)
    request = read_student_words(root, args.words, args.run_name)
    if request.questions:
        raise CourseError("`checks submit` submits the whole assignment: name the assignment and your folder only")
    assignment, folder = student_target(root, request, args.run_name)
    if not folder.is_dir():
        raise CourseError(f"{folder} is not a folder: `checks submit` packs the folder you worked in"
                          + (" (a zip: unzip it and submit the folder, or upload the zip on the course's page)"
                             if folder.suffix.lower() == ".zip" else ""))
    with tempfile.TemporaryDirectory(prefix="checks-submit-") as temp:
        out = Path(temp) / f"{assignment.name}.zip"
        packing = pack(assignment, folder, out)
        if packing.problems:
            common.console.print(plain(f"nothing was submitted: fix these in {folder} first"), style="red")
            for problem in packing.problems:
                common.console.print(Text("  ") + plain(problem))
            return 1
        data = out.read_bytes()
    try:
        credentials = client.load_credentials()
        reply = client.submit(assignment.name, data, credentials, grace=args.grace)
        common.console.print(plain(f"submitted {assignment.name} ({len(packing.files)} files from {folder}) to "
                                   f"{credentials.url}: id {reply['id']}"
                                   + (f", number {reply['position']} in the queue" if reply.get("position") else "")),
                             soft_wrap=True)
        if args.no_wait:
            common.console.print(plain(reply["id"]))  # checked by the client: letters, digits, - and _; shown as text
            return 0
        reply = client.wait(reply["id"], credentials)
    except client.ServerError as error:
        common.console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        if error.retry_after:
            common.console.print(plain(f"the next try is allowed in {error.retry_after:g} s"))
        return 1
    return _show_reply(reply, credentials.url)


def _show_reply(reply: dict, url: str) -> int:
    """show_submission, and a result the server sent that is not one as a one-line error."""
    try:
        return show_submission(reply, url)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        common.console.print(Text("error: ", style="red") + plain(f"the server's reply is malformed "
                                                                   f"({type(error).__name__}: {str(error)[:200]})"),
                             soft_wrap=True)
        return 1


def show_submission(reply: dict, url: str) -> int:
    """The feedback of a graded submission, as `checks test` prints it, with the score; every
    string of the reply shown as text."""
    if reply.get("message"):
        common.console.print(plain(reply["message"], "red", lines=True), soft_wrap=True)
        return 1
    result = SubmissionResult.from_dict(reply["result"]) if reply.get("result") else None
    if result is None and not reply.get("public"):
        common.console.print(plain(f"status: {reply['status']}"))
        return 1
    public = SubmissionResult.from_dict(reply["public"]) if reply.get("public") else None
    pending = result is None  # its public checks ran; its hidden suite waits in the queue, unseen until released
    if result is None:
        result = SubmissionResult(name=reply["id"], assignment=reply["assignment"], warnings=public.warnings)
    for warning in result.warnings:
        common.console.print(Text.assemble(("warning: ", "yellow"), plain(warning)))
    if result.questions:
        common.console.print(question_table(result, show_points=True))
        print_failures(common.console, result)
        common.console.print(Text(f"\nscore: {result.final_score:g} / {result.max_score:g}", style="bold"))
        if result.adjustments:  # the late penalty, as the gradebook counts it: never the raw score alone
            common.console.print(plain(f"the checks gave {result.score:g}; then:"))
            for adjustment in result.adjustments:
                common.console.print(Text("  ") + plain(adjustment_line(adjustment)), soft_wrap=True)
    if public is not None and public.questions and not result.questions:  # hidden scores not released yet
        common.console.print(Text("public checks (the ones `checks test` runs):", style="bold"))
        common.console.print(question_table(public, show_points=True))
        print_failures(common.console, public)
        common.console.print(Text(f"\npublic checks: {public.score:g} / {public.max_score:g}", style="bold"))
        common.console.print(plain(f"(out of the public checks' own {public.max_score:g} points: not your grade, which "
                                   "the hidden checks decide)"), soft_wrap=True)
    if not reply.get("hidden_shown", True) or not result.questions:
        common.console.print(plain(reply.get("visibility", "")), soft_wrap=True)
    if pending:
        common.console.print(plain(f"The hidden checks wait in the queue: `checks submit --status {reply['id']}` says "
                                   "when they are graded."), soft_wrap=True)
    common.console.print(plain(f"feedback page: {url}{reply['url']}"), soft_wrap=True)
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
        common.console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        return 1
    try:
        client.unpack_release(data, args.assignment, out)  # streamed, within caps; nothing left on a refusal
    except client.ServerError as error:
        common.console.print(Text("error: ", style="red") + plain(str(error)), soft_wrap=True)
        return 1
    common.console.print(plain(f"wrote {out}: {args.assignment} as released; `checks test` there runs its public "
                               "checks"), soft_wrap=True)
    return 0
