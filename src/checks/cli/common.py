"""What every command module of `checks` shares: the one console, the way a command is added to
the parser, and the small readers of arguments (a count, a pattern no shell expanded, the course's
policy)."""

from __future__ import annotations

import argparse
import glob
import textwrap
from pathlib import Path

from rich.console import Console

from checks.config.settings import DEVICES
from checks.sandbox import jail

# every command prints through this one; looked up as `common.console` when printing, so that a
# test can put another in its place
console = Console(highlight=False)

COURSE_HELP = ("the course folder (default: the nearest folder at or above the current one with assignments/ "
               "or solutions/; CHECKS_COURSE also sets it)")


def command(commands: argparse._SubParsersAction, name: str, summary: str, description: str,
            examples: str, *, runs_student_code: bool = False, usage: str | None = None) -> argparse.ArgumentParser:
    """Add the sub-command `name`: its help, its examples, --course, and, where it runs student code,
    --isolation and --device."""
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


def positive_int(text: str) -> int:
    """--jobs: a whole number of at least 1 (argparse turns the ValueError into a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_seconds(text: str) -> float:
    """--worker-wait: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return value


def unquoted_glob(path: Path) -> list[Path]:
    """A pattern no shell expanded (`docker run IMAGE grade 01_tensors '/subs/*'`: the entrypoint has
    none) matches as the shell would; a path that exists, or a pattern matching nothing, stays as given."""
    text = str(path)
    if path.exists() or not any(char in text for char in "*?["):
        return [path]
    return [Path(match) for match in sorted(glob.glob(text))] or [path]


def load_course(root: Path, args: argparse.Namespace):  # noqa: ANN201 - checks.policy is imported when it runs
    """The course's policy, checked: from the folder --course named (with its course.toml), else the root."""
    from checks.policy.config import course_folder, load_course as load

    return load(course_folder(root, args.settings.course), root)
