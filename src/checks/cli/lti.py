"""`checks lti key|roster|post`: the course's LTI 1.3 registration from the command line, over
checks.lti (the `lms` extra). `key` makes the tool's key pair in the course folder (once) and
prints its public JWKS for the LMS's tool registration (raw JSON on standard output, the message
on standard error; the course server serves it at /lti/jwks); `roster` adds the LMS's new learners
to the course's data folder (data/lms-roster.csv, read with the course's roster.csv, which it
never writes; Names and Role Provisioning); `post` sends a grade folder's final scores to the
LMS's gradebook (Assignment and Grade Services). The endpoints are course.toml's [lti]
memberships_url and lineitems_url, else those the latest launch at the course server named
(services.endpoint). The course server's staff pages do the same from its own gradebook.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.text import Text

from checks.cli import common
from checks.course.assignment import CourseError
from checks.reports.render import plain


def add_commands(commands: argparse._SubParsersAction) -> None:
    lti = common.command(
        commands, "lti", "LTI 1.3: the tool's key, the roster from the LMS, scores to the LMS",
        "key: make the tool's key pair in the course folder (lti/tool-private.pem, readable by you only; "
        "never over an existing one) and print the public JWKS to register the tool with. roster: add the "
        "LMS's active learners to the roster (Names and Role Provisioning). post: send the final scores of a "
        "`checks grade` output folder to the LMS's gradebook (Assignment and Grade Services; a line item per "
        "assignment). Needs the `lms` extra and course.toml's [lti] (docs/policy.md).",
        "  checks --course examples/course lti key\n  checks --course examples/course lti roster\n"
        "  checks --course examples/course lti post grades/01_tensors --label 'Tensors (autograded)'")
    lti.add_argument("action", choices=["key", "roster", "post"])
    lti.add_argument("folder", nargs="?", type=Path, help="post: the --out folder of `checks grade`")
    lti.add_argument("--label", default=None, help="post: the line item's name in the LMS (default: the assignment's "
                                                   "title)")
    lti.set_defaults(run=_lti)


def _lti(root: Path, args: argparse.Namespace) -> int:
    try:
        from checks.lti.config import load_registration
        from checks.lti.keys import tool_key
    except ImportError as error:
        raise CourseError(f"`checks lti` needs the lms extra ({error.name} is missing): "
                          "pip install -c constraints.txt -e '.[lms]'") from None
    course = common.load_course(root, args)
    if args.action == "key":
        existed = (course.folder / "lti").exists()
        key = tool_key(course.folder, create=True)
        Console(highlight=False, stderr=True).print(
            plain(f"{'the' if existed else 'made the'} tool's key: {key.path} (mode 600; it never leaves this folder). "
                  "Register the public key set on standard output with the LMS, or its URL on the course server, "
                  "https://SERVER/lti/jwks"), soft_wrap=True)
        # raw, never through the console: it wraps long lines, and the modulus is one (not JSON then)
        sys.stdout.write(json.dumps(key.jwks(), indent=2) + "\n")
        sys.stdout.flush()
        return 0
    registration = load_registration(course.folder)
    config = registration.config
    from checks.lti.services import endpoint

    if args.action == "roster":
        from checks.lti.services import import_roster

        memberships = endpoint(registration, "memberships_url")
        if course.roster is not None:  # the course's own roster is input only: the new learners go beside it
            from checks.policy.roster import read_roster

            roster = course.synced_roster
            done = import_roster(registration.conf, config.issuer, memberships, roster,
                                 known=read_roster(course.roster.path))
        else:
            roster = course.folder / "roster.csv"
            done = import_roster(registration.conf, config.issuer, memberships, roster)
        common.console.print(plain(f"{roster}: added {len(done.added)}, kept {done.kept} already there, skipped "
                            f"{len(done.skipped)} (not active learners)"), soft_wrap=True)
        for refused in done.refused:
            common.console.print(plain(f"not added: {refused}"), soft_wrap=True)
        return 0
    from checks.lti.services import ags_endpoint, post_scores
    from checks.reports.gradebook import DB_FILE, Gradebook

    if args.folder is None:
        raise CourseError("`checks lti post FOLDER`: the --out folder of `checks grade`")
    ags = ags_endpoint(registration)
    book = Gradebook.existing(args.folder / DB_FILE)
    roster = course.require_roster("`checks lti post`")
    if args.label:
        label = args.label
    elif book.assignment in course.policies:
        from checks.course.assignment import load_assignment

        label = load_assignment(course.root, book.assignment).title
    else:
        label = book.assignment
    from checks.lti.services import posted_before, records_file
    from checks.policy import records

    with records.locked(records_file(course.folder)) as fd:  # the server's posts share the record and its lock
        done = post_scores(registration.conf, config.issuer, ags, book.load(), roster, assignment=book.assignment,
                           label=label, before=posted_before(course.folder, book.assignment))
        if done.lineitem:
            records.append(fd, {"event": "post", "assignment": book.assignment, "lineitem": done.lineitem,
                                "posted": done.posted, "sent": done.sent, "failed": done.failed,
                                "unchanged": done.unchanged, "left_out": done.left_out, "by": "checks lti post",
                                "at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    common.console.print(plain(f"posted {len(done.posted)} score(s) of {book.assignment} to {done.lineitem}; "
                        f"{len(done.unchanged)} already there with the same score (not sent again)" if done.lineitem
                        else f"nothing of {book.assignment} to post: the LMS was not called"), soft_wrap=True)
    for why in done.left_out:
        common.console.print(Text.assemble(("left out: ", "yellow"), plain(why)), soft_wrap=True)
    for why in done.failed:
        common.console.print(Text.assemble(("not posted: ", "red"), plain(why)), soft_wrap=True)
    if done.failed:
        common.console.print(plain(f"{len(done.failed)} score(s) not posted: run the same command again to send only those"),
                      soft_wrap=True)
        return 1
    return 0
