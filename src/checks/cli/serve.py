"""The course server's staff side: `checks serve`, and `checks roster`, `checks staff` and `checks db`
on the course's database (the `serve` extra)."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from checks import __version__
from checks.cli import common
from checks.course.assignment import CourseError
from checks.reports.render import plain


def add_commands(commands: argparse._SubParsersAction) -> None:
    serve_cmd = common.command(
        commands, "serve", "run the course server: students submit, staff watch the class",
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
    serve_cmd.add_argument("--port", type=common.positive_int, default=8000, help="port (default: 8000)")
    serve_cmd.add_argument("--jobs", type=common.positive_int, default=None, metavar="N",
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
    serve_cmd.add_argument("--worker-wait", type=common.positive_seconds, default=None, metavar="SECONDS",
                           help="with --scheduler: how long the cluster may have no worker before a submission "
                                "goes back to the queue (default: 120)")
    serve_cmd.set_defaults(run=_serve, without_course=True)

    roster = common.command(
        commands, "roster", "import the class roster into a course server",
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

    staff = common.command(
        commands, "staff", "add a staff account to a course server",
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

    db = common.command(
        commands, "db", "migrate a course server's database to this version's schema",
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


def _database_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--database", metavar="URL", default=None,
                         help="the course's database, sqlite:///PATH or postgresql://USER@HOST[:PORT]/DB (default: "
                              "$CHECKS_DATABASE_URL, else course.toml's storage, else SQLite under the course "
                              "folder); a password is better left to $PGPASSWORD or ~/.pgpass")


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

    config = load_config(args.folder, args.settings.database)
    jobs = args.jobs or config.jobs
    with contextlib.ExitStack() as stack:
        make = None
        if args.scheduler or args.scheduler_file:
            make = dask_grader(args.scheduler, args.scheduler_file, stack, worker_wait=args.worker_wait)
        isolation = None if make else args.settings.isolation  # chosen once: named, and checked by serve()
        for change in confinement.secure(config, isolation):  # refused before anything says it serves
            common.console.print(plain(change), soft_wrap=True)
        where = ("on the Dask cluster, in its workers' sandbox" if make else
                 f"{jobs} warm grading pool(s) per assignment; sandbox: {isolation.description}")
        common.console.print(plain(f"checks {__version__}: serving {config.title} ({', '.join(config.assignments)}) "
                                   f"from {config.folder} at http://{args.host}:{args.port}/ ; storage "
                                   f"{shown(config.storage_url)}; grading: {where}. Ctrl-C stops it."), soft_wrap=True)
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

    config, storage = _server_storage(args.folder, args.settings.database, upgrade=False)
    try:
        if args.action == "current":
            revision = migrations.current(storage.engine)
            state = "up to date" if revision == migrations.head() else f"behind: `checks db upgrade` brings it to " \
                f"{migrations.head()}"
            common.console.print(plain(f"{shown(config.storage_url)}: schema revision {revision or 'none (empty)'}; "
                                       f"{state}"), soft_wrap=True)
            return 0
        before, after = migrations.upgrade(storage.engine)
        change = "already at" if before == after else f"upgraded from {before or 'empty'} to"
        common.console.print(plain(f"{shown(config.storage_url)}: {change} schema revision {after}"), soft_wrap=True)
    finally:
        storage.close()
    return 0


def _roster(root: Path | None, args: argparse.Namespace) -> int:
    import time

    from checks.server.roster import import_roster, read_roster, write_tokens

    folder = args.server or (args.csv.parent if (args.csv.parent / "course.toml").is_file() else Path.cwd())
    config, storage = _server_storage(folder, args.settings.database)
    people = read_roster(args.csv)
    tokens = args.tokens or config.data_dir / f"tokens-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    if tokens.exists():
        raise CourseError(f"{tokens} exists: the tokens are written once; name another file with --tokens")
    issued, kept = import_roster(storage, people, reissue=args.reissue)
    if issued:
        tokens.parent.mkdir(parents=True, exist_ok=True)
        write_tokens(tokens, issued)
    handing = (f"; the new tokens are in {tokens} (readable by you only): hand each student theirs, then delete the "
               "file" if issued else "")
    common.console.print(plain(f"roster of {config.title}: {len(issued)} token(s) issued, {kept} account(s) already "
                               f"there kept theirs{handing}"), soft_wrap=True)
    return 0


def _staff(root: Path | None, args: argparse.Namespace) -> int:
    from checks.server.roster import add_user
    from checks.server.storage import User

    if not args.login or not all(c.isalnum() or c in "._@-" for c in args.login):
        raise CourseError("a staff login is letters, digits and . _ @ - only")
    config, storage = _server_storage(args.server, args.settings.database)
    issued = add_user(storage, User(args.login, args.name, args.email, args.role))
    common.console.print(plain(f"{args.role} {args.login} of {config.title}: sign in on the web page with this login "
                               f"and token (shown once): {issued.token}"), soft_wrap=True)
    return 0
