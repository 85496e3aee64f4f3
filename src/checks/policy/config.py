"""A course's policy, read and checked: `course.toml` in the course folder (the course-wide
defaults, grace days, the roster) and each assignment's `[policy]` in its assignment.toml.

```toml
# course.toml
roster = "roster.csv"
[policy]                       # every assignment's, unless its assignment.toml says otherwise
time_zone = "Europe/Zurich"    # dates without an offset are read here; a day late ends at the due time
show_hidden = "after_due"      # hidden checks' results wait for the due date ("at_once": shown when graded)
counts = "last"                # last, best or last_before_due
[policy.late]
kind = "per_day"               # none, per_day or per_hour
percent = 10                   # of the score earned, per started day (hour) late
cap = 50                       # the most taken, in all
[grace]
days = 3                       # grace days per student for the term
mode = "auto"                  # auto: spent as needed; request: only when asked for and confirmed
```

Every mistake is refused here, when the course is loaded, naming the file and the key: a date
without a time zone (no offset, and no time_zone), a wall-clock time that a DST change skips or
repeats, a due date before the release, a close before the due date, a penalty above 100 %, an
unknown time zone. A grade run loads the course before it opens its gradebook, so nothing
already graded changes until the policy is valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from checks.course.assignment import CourseError, read_course_toml
from checks.course.schema import ASSIGNMENT_TOML, POLICY_TABLE, SHOW_HIDDEN, TABLE, Key, Kind, Schema

from checks.policy.roster import SYNCED, Roster, read_roster, with_synced

COURSE_FILE = "course.toml"
DATA_DIR = "data"  # the course server's data folder, by default (server/config.py reads `data` the same)
GRACE_MODES = ("auto", "request")
AT_ONCE, AFTER_DUE = SHOW_HIDDEN  # the hidden checks' results: shown when graded, or from the due date
UTC = timezone.utc

ANYTHING = Kind("any value", lambda value: True)
GRACE_TABLE: Schema = {
    "days": Key(Kind("a whole number of days, 0 or more", lambda value: type(value) is int and value >= 0)),
    "mode": Key(Kind(" or ".join(f'"{m}"' for m in GRACE_MODES), lambda value: value in GRACE_MODES)),
}
COURSE_TOML: Schema = {
    "course": Key(Kind("a folder, relative to this file's", lambda value: type(value) is str)),
    "roster": Key(Kind("a CSV file, relative to this file's folder", lambda value: type(value) is str and value != "")),
    "policy": Key(TABLE, fields=POLICY_TABLE),
    "grace": Key(TABLE, fields=GRACE_TABLE),
    # the course server's own keys (`checks serve`, docs/server-staff.md): it checks them itself
    **{key: Key(ANYTHING) for key in ("title", "storage", "data", "jobs", "limits", "rate", "login",
                                      "secure_cookies", "assignment", "queue")},
    "lti": Key(TABLE),  # the LMS registration: lti/config.py checks it
}


@dataclass(frozen=True)
class LatePolicy:
    """What lateness costs: `percent` of the score earned per started day or hour after the due
    date (none: nothing), at most `cap` percent in all; nothing is accepted after `close`."""

    kind: str = "none"
    percent: float = 0.0
    cap: float = 100.0
    close: datetime | None = None


@dataclass(frozen=True)
class Policy:
    """One assignment's dates and rules, every date aware (compare them as instants, in UTC)."""

    assignment: str
    zone: tzinfo = UTC  # the course's time zone: a day late ends at the due time of day here
    release: datetime | None = None
    due: datetime | None = None
    late: LatePolicy = LatePolicy()
    counts: str = "last"
    show_hidden: str = AT_ONCE  # AFTER_DUE: the hidden checks' results wait for the (student's) due date

    @property
    def hidden_wait(self) -> bool:
        """Whether the hidden checks' results wait for the due date (show_hidden = "after_due")."""
        return self.show_hidden == AFTER_DUE


@dataclass(frozen=True)
class GracePolicy:
    days: int = 0
    mode: str = "auto"


@dataclass(frozen=True)
class Course:
    """A course folder's policy: the course-wide part, and each assignment's, all checked."""

    folder: Path  # where course.toml is (and records/)
    root: Path  # where assignments/ and autograder/ are
    config_file: Path | None  # None: the folder has no course.toml (every default)
    grace: GracePolicy = GracePolicy()
    roster: Roster | None = None
    policies: dict[str, Policy] = field(default_factory=dict)  # every assignment with an assignment.toml
    zone: tzinfo = UTC  # [policy] time_zone of course.toml, for dates typed on the command line
    data: Path | None = None  # the course server's data folder (course.toml's `data`, default data/)

    @property
    def synced_roster(self) -> Path:
        """Where a roster sync from the LMS keeps the learners it adds: the data folder, never the
        course's own roster file (input only, perhaps tracked in git)."""
        return (self.data or self.folder / DATA_DIR) / SYNCED

    def policy(self, assignment: str) -> Policy:
        """The assignment's policy (the course-wide default for an assignment the course does not list)."""
        return self.policies.get(assignment) or Policy(assignment, zone=self.zone)

    def named_zone(self, assignment: str) -> tzinfo | None:
        """The zone a date typed without an offset (on the command line, in a CSV) is read in: the
        policy's time_zone where it names one; None (such a date is refused) where it does not."""
        zone = self.policy(assignment).zone
        return zone if isinstance(zone, ZoneInfo) else None

    def require_roster(self, why: str) -> Roster:
        if self.roster is None:
            raise CourseError(f"{why} needs a roster: name it in {self.config_file or self.folder / COURSE_FILE} "
                              "(roster = \"roster.csv\": student_id,name,email)")
        return self.roster


def course_folder(root: Path, named: Path | None = None) -> Path:
    """Where the course's course.toml is: the folder --course named, if it holds one, else the
    course root (the folder with assignments/ and autograder/)."""
    if named is not None and (named / COURSE_FILE).is_file():
        return named.resolve()
    return root.resolve()


def load_course(folder: Path, root: Path | None = None) -> Course:
    """The policy of the course in `folder`, every part of it checked (course.toml, the roster,
    each assignment's [policy], the records of extensions): CourseError names the file and key of
    the first mistake. `root` defaults to where course.toml's `course` points, else `folder`."""
    from checks.policy.extensions import check_extensions  # records name assignments and students: checked last

    path = folder / COURSE_FILE
    table = read_course_toml(path, COURSE_TOML) if path.is_file() else {}
    root = (root or (folder / table.get("course", ".")).resolve())
    defaults = table.get("policy", {})
    zone = _zone(defaults.get("time_zone"), path, "[policy] time_zone") or UTC
    data = (folder / str(table.get("data", DATA_DIR))).resolve()
    roster = with_synced(read_roster(folder / table["roster"]), data / SYNCED) if "roster" in table else None
    grace = GracePolicy(**table.get("grace", {}))
    policies = {}
    autograder = root / "autograder"
    for config in sorted(autograder.glob("*/assignment.toml")) if autograder.is_dir() else []:
        own = read_course_toml(config, ASSIGNMENT_TOML).get("policy", {})
        policies[config.parent.name] = read_policy(config.parent.name, defaults, path, own, config)
    course = Course(folder.resolve(), root, path if path.is_file() else None, grace, roster, policies, zone, data)
    check_extensions(course)
    return course


def read_policy(assignment: str, defaults: dict[str, Any], defaults_file: Path, own: dict[str, Any],
                own_file: Path) -> Policy:
    """One assignment's policy: its own [policy] keys over the course's, each date read in the
    time zone and checked where it was written."""
    origin = {key: defaults_file for key in defaults} | {key: own_file for key in own}
    merged = defaults | own
    late_origin = {key: defaults_file for key in defaults.get("late", {})} | {key: own_file for key in own.get("late", {})}
    late = defaults.get("late", {}) | own.get("late", {})
    zone = _zone(merged.get("time_zone"), origin.get("time_zone", own_file), "[policy] time_zone")
    def when(key: str, table: dict, where: dict, label: str) -> datetime | None:
        return read_when(table.get(key), zone, where.get(key, own_file), f"{label} {key}") if key in table else None
    release, due = when("release", merged, origin, "[policy]"), when("due", merged, origin, "[policy]")
    close = when("close", late, late_origin, "[policy.late]")
    if release and due and due.astimezone(UTC) < release.astimezone(UTC):
        raise CourseError(f"{origin['due']}: [policy] due ({due.isoformat()}) is before release "
                          f"({release.isoformat()}, {origin['release']}): an assignment is due after it opens")
    if close and due and close.astimezone(UTC) < due.astimezone(UTC):
        raise CourseError(f"{late_origin['close']}: [policy.late] close ({close.isoformat()}) is before the due date "
                          f"({due.isoformat()}, {origin['due']}): the hard close comes after it")
    if close and due is None:
        raise CourseError(f"{late_origin['close']}: [policy.late] close needs a due date ([policy] due)")
    kind = late.get("kind", "none")
    if kind != "none" and "percent" not in late:
        raise CourseError(f"{late_origin.get('kind', own_file)}: [policy.late] kind = \"{kind}\" needs percent "
                          "(taken per started day or hour late)")
    return Policy(assignment, zone=zone or (due.tzinfo if due else UTC) or UTC, release=release, due=due,
                  late=LatePolicy(kind, float(late.get("percent", 0)), float(late.get("cap", 100)), close),
                  counts=merged.get("counts", "last"), show_hidden=merged.get("show_hidden", AT_ONCE))


def _zone(name: str | None, path: Path, key: str) -> tzinfo | None:
    if name is None:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CourseError(f"{path}: {key} = {name!r} is not a time zone this machine knows (an IANA name, such as "
                          "\"Europe/Zurich\" or \"America/New_York\")") from None


def read_when(value: Any, zone: tzinfo | None, path: Path | str, key: str) -> datetime:
    """A date and time as an instant: with its own offset, or a wall-clock time in `zone` (the
    policy's time_zone). Refused, naming `path` and `key`: no time zone at all, a date alone, or a
    wall-clock time that a DST change skips or repeats in `zone`."""
    example = "such as 2030-06-30T23:59:00+02:00"
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise CourseError(f"{path}: {key} = {value!r} is not a date and time ({example})") from None
    if not isinstance(value, datetime):
        raise CourseError(f"{path}: {key} must be a date and time ({example}), not {value!r}")
    if value.tzinfo is not None:
        return value
    if zone is None:
        raise CourseError(f"{path}: {key} = {value.isoformat()} has no time zone: write its offset "
                          f"({value.isoformat()}+02:00, say) or name the zone with time_zone = \"Europe/Zurich\" in "
                          "[policy]")
    earlier, later = value.replace(tzinfo=zone, fold=0), value.replace(tzinfo=zone, fold=1)
    if earlier.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != value:
        raise CourseError(f"{path}: {key} = {value.isoformat()} does not exist in {zone} (the clocks go forward "
                          "over it): choose another time")
    if earlier.utcoffset() != later.utcoffset():
        raise CourseError(f"{path}: {key} = {value.isoformat()} happens twice in {zone} (the clocks go back): "
                          "write its offset to say which")
    return earlier

