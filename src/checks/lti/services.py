"""LTI Advantage services, called with the tool's own credentials (a client assertion signed with
its key, exchanged for a scoped access token): Names and Role Provisioning (the class list: its new
learners kept in the course's data folder, beside its own roster, which is input only) and
Assignment and Grade Services (a line item per assignment, a score per student).

Scores come from a gradebook, `checks grade`'s output folder (`checks lti post`) or the course
server's own (its staff page): the final score (raw, less the late penalty, plus manual
adjustments), out of the assignment's maximum, for each graded submission whose student the
roster ties to a platform user id (lms_id); a grader failure is never posted. Both front ends
call the same post_scores, and find the endpoints the same way (`endpoint`: course.toml's [lti],
else what the latest launch named).
"""

from __future__ import annotations

import contextlib
import csv
import io
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import requests

from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from checks.course import inert
from checks.course.assignment import CourseError
from checks.lti.config import Registration
from checks.lti.launch import LtiError, TimedSession, kept_endpoints, store_for
from checks.lti.links import LinkHeaderError, next_url
from checks.policy.roster import OPTIONAL, REQUIRED, Roster, parse_roster, read_roster, student_id_problem
from checks.reports.gradebook import Graded
from checks.reports.render import adjustment_line

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
SERVICES = {"memberships_url": "Names and Role Provisioning", "lineitems_url": "Assignment and Grade Services"}
AGS_SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score"]


MAX_PAGES = 10_000  # of one list (a roster, the line items): more is a platform that pages in a loop


class Connector(ServiceConnector):
    """PyLTI1p3's service calls, with the next page read from the Link header per RFC 8288
    (checks.lti.links): PyLTI1p3 2.0.0 lower-cases the header before it looks, so it follows a
    URL that is not the platform's and misses `rel=next` unquoted or in a list of relations."""

    def __init__(self, registration: Any, session: requests.Session) -> None:
        super().__init__(registration, session)
        self._followed: set[str] = set()

    def make_service_request(self, scopes: Any, url: str, is_post: bool = False, data: str | None = None,
                             content_type: str = "application/json", accept: str = "application/json",
                             case_insensitive_headers: bool = False) -> Any:
        headers = {"Authorization": "Bearer " + self.get_access_token(scopes), "Accept": accept}
        if is_post:
            headers["Content-Type"] = content_type
            answer = self._requests_session.post(url, data=data or None, headers=headers)
        else:
            answer = self._requests_session.get(url, headers=headers)
        if not answer.ok:
            raise LtiServiceException(answer)
        try:  # only a list (a GET) has pages
            following = None if is_post else next_url(answer.headers.get("Link"), answer.url or url)
        except LinkHeaderError as error:
            raise LtiError(f"the platform's Link header at {url} cannot be read: {error}") from None
        if following is not None:
            if following in self._followed or following == url or len(self._followed) >= MAX_PAGES:
                raise LtiError(f"the platform's pages do not end: {url} names {following} as the next page, "
                               f"which was read already (or the list is over {MAX_PAGES} pages)")
            self._followed.add(following)
        return {"headers": answer.headers if case_insensitive_headers else dict(answer.headers),
                "body": answer.json() if answer.content else None, "next_page_url": following}


def _connector(conf: Any, issuer: str) -> Connector:
    return Connector(conf.find_registration_by_issuer(issuer), TimedSession())


class _Clock:
    """Score timestamps: microseconds, and each later than the one before in this process, so that
    two posts in a row for one (line item, user) never carry one time (AGS keeps the newer)."""

    EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def stamp(self, now: datetime | None = None) -> str:
        at = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
        micros = (at - self.EPOCH) // timedelta(microseconds=1)
        with self._lock:
            micros = self._last = max(micros, self._last + 1)
        return (self.EPOCH + timedelta(microseconds=micros)).isoformat(timespec="microseconds")


CLOCK = _Clock()


@contextlib.contextmanager
def _calling(what: str) -> Iterator[None]:
    """The platform's refusal, or no answer, as an LtiError naming the service."""
    try:
        yield
    except LtiServiceException as error:
        raise LtiError(f"{what}: the platform answered {error}") from None
    except LtiException as error:
        raise LtiError(f"{what}: {error}") from None
    except requests.RequestException as error:
        raise LtiError(f"{what}: the platform could not be reached ({error})") from None


def endpoint(registration: Registration, which: str) -> str:
    """The service endpoint `which` (memberships_url or lineitems_url): course.toml's [lti], else
    the one the latest staff launch named (kept in the course folder); CourseError says where to give it."""
    given = getattr(registration.config, which)
    if given:
        return given
    kept = str(kept_endpoints(store_for(registration.folder)).get(which) or "")
    if kept:
        return kept
    raise CourseError(f"no {SERVICES[which]} endpoint: course.toml's [lti] has no `{which}` and no staff member's "
                   f"launch from the LMS has named one yet. Launch the tool once from the LMS course, as staff (a "
                   f"staff launch names it and the course keeps it; a student's never does), or write {which} in "
                   f"[lti] (docs/policy.md)")


@dataclass
class RosterImport:
    added: list[str] = field(default_factory=list)
    kept: int = 0  # already on the roster
    skipped: list[str] = field(default_factory=list)  # not learners, or not active
    refused: list[str] = field(default_factory=list)  # "id: why" for learners whose id a roster cannot hold


def members(conf: Any, issuer: str, memberships_url: str) -> list[dict[str, Any]]:
    """The course's members, every page, as the platform lists them."""
    with _calling("Names and Role Provisioning"):
        service = NamesRolesProvisioningService(_connector(conf, issuer), {"context_memberships_url": memberships_url})
        return list(service.get_members())


def import_roster(conf: Any, issuer: str, memberships_url: str, roster_path: Path, *,
                  known: Roster | None = None) -> RosterImport:
    """Add the platform's active learners to the roster file `roster_path` (student_id and lms_id:
    the platform's user id); students already there, or in `known` (the course's own roster, which
    is never written: the learners go to Course.synced_roster), by lms_id or student_id, are kept
    as they are. The file is rewritten atomically, its other columns kept; not written when it
    would list nobody."""
    from checks.reports.render import write_atomically

    existing = read_roster(roster_path) if roster_path.exists() else None
    known_ids = set()
    for roster in (existing, known):
        if roster is not None:
            known_ids |= set(roster.students) | {s.lms_id for s in roster.students.values() if s.lms_id}
    done = RosterImport()
    new_rows = []
    for member in members(conf, issuer, memberships_url):
        user = str(member.get("user_id", ""))
        if LEARNER not in member.get("roles", []) or member.get("status", "Active") != "Active" or not user:
            done.skipped.append(user or "(no user id)")
            continue
        if user in known_ids:
            done.kept += 1
            continue
        problem = student_id_problem(user)
        if problem:  # written, it would make the whole roster unreadable: every command and the server refuse it
            done.refused.append(f"{inert.visible(user, keep='')[:100]!r}: {problem}")
            continue
        new_rows.append({"student_id": user, "name": str(member.get("name", "")), "email": str(member.get("email", "")),
                         "lms_id": user, "sis_id": str(member.get("lis_person_sourcedid", ""))})
        known_ids.add(user)
        done.added.append(user)
    if not new_rows:
        return done
    columns = list(REQUIRED) + list(OPTIONAL)  # a TA's role stays on the roster
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for student in (existing.students.values() if existing else []):
        writer.writerow({c: inert.csv_cell(getattr(student, c)) for c in columns})
    for row in new_rows:
        writer.writerow({c: inert.csv_cell(row.get(c, "")) for c in columns})
    parse_roster(buffer.getvalue(), roster_path)  # what it would write reads back, else nothing is written
    roster_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(roster_path, buffer.getvalue())
    return done


@dataclass
class Posted:
    lineitem: str  # its URL at the platform ("": nothing to post, the platform was not called)
    posted: list[str] = field(default_factory=list)  # submissions whose score the platform took now
    left_out: list[str] = field(default_factory=list)  # and why the others were not (nothing sent for them)
    failed: list[str] = field(default_factory=list)  # "name: why" for each score sent that the platform did not take
    unchanged: list[str] = field(default_factory=list)  # this very score was posted before: not sent again
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)  # what each of `posted` was given (for the record)


class PostFailed(LtiError):
    """The platform refused before any score could be sent (the token, the line item); `done`
    says what was left out."""

    def __init__(self, message: str, done: Posted) -> None:
        super().__init__(message)
        self.done = done


POSTS = "lti"  # COURSE/records/lti.jsonl: each post (who, when, what each student was sent) and roster sync
STOP_AFTER = 3  # scores in a row the platform gave no answer for: the rest are not tried (each costs a timeout)


def records_file(folder: Path) -> Path:
    from checks.policy import records

    return records.records_path(folder, POSTS)


def posted_before(folder: Path, assignment: str) -> dict[str, dict[str, dict[str, Any]]]:
    """What each student was last sent, and taken, for `assignment`: line item -> name -> the score
    sent (score, maximum, comment), from the course's records of posts (the CLI's and the server's)."""
    from checks.policy import records

    sent: dict[str, dict[str, dict[str, Any]]] = {}
    for line in records.read_records(records_file(folder)):
        fields = line.fields
        if fields.get("event") == "post" and fields.get("assignment") == assignment and isinstance(
                fields.get("sent"), dict):
            sent.setdefault(str(fields.get("lineitem", "")), {}).update(fields["sent"])
    return sent


def _reason(error: Exception) -> str:
    """Why the platform did not take one score, in a line a person reads (its answer cut short)."""
    if isinstance(error, LtiServiceException):
        answer = error.response
        body = inert.visible(" ".join((answer.text or "").split()))[:200]
        return f"the LMS answered HTTP {answer.status_code}" + (f" ({body})" if body else "")
    if isinstance(error, requests.Timeout):
        return ("the LMS gave no answer in time (it may or may not have taken it; posting again is safe: "
                "the LMS keeps the newer score)")
    if isinstance(error, requests.RequestException):
        return f"the LMS could not be reached ({inert.visible(str(error))[:200]})"
    return inert.visible(str(error))[:300]


def _to_post(records: list[Graded], roster: Roster) -> tuple[list[tuple[Graded, str]], list[str]]:
    """(each record to post, with its student's platform user id), and why each other record, and
    each student of the roster without one, is left out."""
    chosen, left_out, seen = [], [], set()
    for record in records:
        result = record.result
        student = roster.match(result.name, result.student_id)
        if student is not None:
            seen.add(student.student_id)
        if not record.ok:
            left_out.append(f"{result.name}: not graded (the grader failed on it)")
        elif student is None or not student.lms_id:
            left_out.append(f"{result.name}: no platform user id (lms_id) in the roster")
        else:
            chosen.append((record, student.lms_id))
    left_out += [f"{student.student_id}: no graded submission" for student in roster.students.values()
                 if student.role == "student" and student.student_id not in seen]
    return chosen, left_out


def ags_endpoint(registration: Registration) -> dict[str, Any]:
    """The Assignment and Grade Services claim to post with: the line items container (course.toml's
    lineitems_url, else the latest staff launch's), else the single line item it named
    (a platform may give a link only its own `lineitem`); CourseError says where to give one."""
    kept = kept_endpoints(store_for(registration.folder))
    if registration.config.lineitems_url or kept.get("lineitems_url"):
        return {"lineitems": endpoint(registration, "lineitems_url")}
    if kept.get("lineitem"):
        return {"lineitem": str(kept["lineitem"]), "scope": list(kept.get("ags_scope") or AGS_SCOPES)}
    return {"lineitems": endpoint(registration, "lineitems_url")}  # refused, saying where to give it


def _single_lineitem(service: AssignmentsGradesService, url: str, assignment: str, scopes: list[str]) -> LineItem:
    """The one line item a launch named: read back where the scope allows, and refused when it is
    another assignment's (its tag or resourceId names another)."""
    if not any(scope in scopes for scope in AGS_SCOPES[:2]):
        return LineItem({"id": url})
    item = service.get_lineitem(url)
    for named in (item.get_tag(), item.get_resource_id()):
        if named and named != assignment:
            raise LtiError(f"the line item the launch named ({url}) is for {named!r}, not {assignment!r}: launch the "
                           f"tool from {assignment}'s link in the LMS, or give lineitems_url in course.toml's [lti]")
    return item if item.get_id() else LineItem({"id": url})


def post_scores(conf: Any, issuer: str, ags: dict[str, Any], records: list[Graded], roster: Roster, *,
                assignment: str, label: str, now: datetime | None = None,
                before: dict[str, dict[str, dict[str, Any]]] | None = None) -> Posted:
    """Find (by tag: the assignment's name) or create the line item, then post each final score:
    the one code path of `checks lti post` and the course server. Where the claim names only one
    `lineitem` (no container), the scores go to it. Nothing is sent when nothing is to be
    posted, nor for a student `before` (posted_before) says was sent this very score on this line
    item. Each score is sent on its own: one the platform refuses, or does not answer, is named
    with why in `failed` and the others are still sent (after STOP_AFTER in a row without an
    answer the rest are not tried, and named so); only what the platform took is in `posted`.
    PostFailed when nothing could be sent (the token, the line item). Each score's timestamp is
    later than the one before (CLOCK), to the microsecond."""
    scopes = list(ags.get("scope") or AGS_SCOPES)
    service_data = {"scope": scopes, "lineitems": ags.get("lineitems", "")}
    if ags.get("lineitem"):
        service_data["lineitem"] = ags["lineitem"]
    if not (ags.get("lineitems") or ags.get("lineitem")):
        raise CourseError("no Assignment and Grade Services endpoint: neither `lineitems` nor `lineitem` is given")
    maximum = max((r.result.max_score for r in records if r.ok), default=0.0)
    chosen, left_out = _to_post(records, roster)
    done = Posted("", left_out=left_out)
    if not chosen:
        return done
    try:
        with _calling("Assignment and Grade Services"):
            service = AssignmentsGradesService(_connector(conf, issuer), service_data)
            if ags.get("lineitems"):
                item = service.find_or_create_lineitem(LineItem().set_tag(assignment).set_label(label)
                                                       .set_score_maximum(maximum).set_resource_id(assignment))
            else:
                item = _single_lineitem(service, str(ags["lineitem"]), assignment, scopes)
            done.lineitem = str(item.get_id())
    except LtiError as error:
        raise PostFailed(f"{error}; no score was posted", done) from None
    known = (before or {}).get(done.lineitem, {})
    silent = 0  # scores in a row without an answer
    for record, lms_id in chosen:
        result = record.result
        comment = "; ".join(adjustment_line(a) for a in result.adjustments)
        sending = {"score": result.final_score, "maximum": result.max_score, "comment": comment}
        if known.get(result.name) == sending:
            done.unchanged.append(result.name)
            continue
        if silent >= STOP_AFTER:
            done.failed.append(f"{result.name}: not sent: the LMS gave no answer to the {STOP_AFTER} scores before it")
            continue
        grade = (Grade().set_score_given(result.final_score).set_score_maximum(result.max_score)
                 .set_user_id(lms_id).set_timestamp(CLOCK.stamp(now)).set_activity_progress("Completed")
                 .set_grading_progress("FullyGraded"))
        if comment:
            grade.set_comment(comment)
        try:
            service.put_grade(grade, item)
        except (LtiException, LtiError, requests.RequestException) as error:
            silent = silent + 1 if isinstance(error, requests.RequestException) else 0
            done.failed.append(f"{result.name}: {_reason(error)}")
            continue
        silent = 0
        done.posted.append(result.name)
        done.sent[result.name] = sending
    return done
