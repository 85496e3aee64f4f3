"""The settings of one run: isolation level, device, course folder, the notebook's time limit, a
course server's database.

A front end (the CLI, the notebook magic and the processes it starts, a pool process, a
grading kernel) builds one `Settings` from its flags, then the environment (CHECKS_ISOLATION,
CHECKS_DEVICE, CHECKS_COURSE, CHECKS_NOTEBOOK_TIMEOUT, CHECKS_DATABASE_URL), then the defaults, and passes it down;
no module below reads or writes those variables, and the jail is chosen once, here.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from checks.config.errors import UsageError
from checks.sandbox import jail

ISOLATION_VARIABLE = jail.ENV_VARIABLE
DEVICE_VARIABLE = "CHECKS_DEVICE"
COURSE_VARIABLE = "CHECKS_COURSE"
NOTEBOOK_TIMEOUT_VARIABLE = "CHECKS_NOTEBOOK_TIMEOUT"
DATABASE_VARIABLE = "CHECKS_DATABASE_URL"  # a course server's database, where --database names none
DEVICES = ("auto", "cpu", "cuda")
NOTEBOOK_TIMEOUT_S = 600.0  # `%checks test` in a lesson notebook: the whole run, jail and all


@dataclass(frozen=True)
class Settings:
    """What one run was asked for. Immutable: a part of the run that needs another value makes
    its own copy (dataclasses.replace), and what it passes on says so."""

    isolation_level: str = jail.AUTO  # auto, bwrap or fork
    device: str = "auto"  # auto, cpu or cuda: where checks that take a device run
    course: Path | None = None  # the course folder named by --course or CHECKS_COURSE; None: look around
    notebook_timeout: float = NOTEBOOK_TIMEOUT_S
    database: str | None = None  # a course server's database URL (--database); None: course.toml's storage

    def __post_init__(self) -> None:
        if self.isolation_level not in jail.LEVELS:
            raise UsageError(f"the isolation level is one of {', '.join(jail.LEVELS)}, not {self.isolation_level!r}")
        if self.device not in DEVICES:
            raise UsageError(f"the device is one of {', '.join(DEVICES)}, not {self.device!r}")
        if not self.notebook_timeout > 0:
            raise UsageError(f"the notebook's time limit is a number of seconds above 0, not {self.notebook_timeout!r}")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, *, isolation: str | None = None,
                         device: str | None = None, course: Path | None = None,
                         database: str | None = None) -> "Settings":
        """The flags given (None: not given) win, then the environment's CHECKS_* variables, then
        the defaults. A variable's bad value is named with the variable."""
        environ = os.environ if environ is None else environ
        values: dict = {}
        for field, flag, variable, convert in (
                ("isolation_level", isolation, ISOLATION_VARIABLE, _level),
                ("device", device, DEVICE_VARIABLE, _level),
                ("course", course, COURSE_VARIABLE, lambda text: Path(text).expanduser().resolve()),
                ("notebook_timeout", None, NOTEBOOK_TIMEOUT_VARIABLE, float),
                ("database", database, DATABASE_VARIABLE, str.strip)):
            if flag is not None:
                values[field] = flag
            elif environ.get(variable, "").strip():
                try:
                    values[field] = convert(environ[variable])
                    cls(**{field: values[field]})  # its own check, named with the variable
                except (UsageError, ValueError) as error:
                    raise UsageError(f"{variable}={environ[variable]!r}: {error}") from None
        return cls(**values)

    @functools.cached_property
    def isolation(self) -> jail.Isolation:
        """The jail for `isolation_level` on this machine, chosen once (it probes bubblewrap)."""
        try:
            return jail.choose(self.isolation_level)
        except jail.IsolationUnavailable as error:
            raise UsageError(str(error)) from None


def _level(text: str) -> str:
    return text.strip().lower()
