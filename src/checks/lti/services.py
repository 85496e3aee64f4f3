"""LTI Advantage services, called with the tool's own credentials (a client assertion signed with
its key, exchanged for a scoped access token): Names and Role Provisioning (the class list, into
roster.csv) and Assignment and Grade Services (a line item per assignment, a score per student).

Scores come from a `checks grade` output folder's gradebook: the final score (raw, less the late
penalty, plus manual adjustments), out of the assignment's maximum, for each graded submission
whose student the roster ties to a platform user id (lms_id); a grader failure is never posted.
"""

from __future__ import annotations

import contextlib
import csv
import io
from dataclasses import dataclass, field
from datetime import datetime, timezone
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
from checks.lti.launch import LtiError, TimedSession
from checks.policy.roster import OPTIONAL, REQUIRED, Roster, read_roster
from checks.reports.gradebook import Graded
from checks.reports.render import adjustment_line

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
AGS_SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score"]


def _connector(conf: Any, issuer: str) -> ServiceConnector:
    return ServiceConnector(conf.find_registration_by_issuer(issuer), TimedSession())


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


@dataclass
class RosterImport:
    added: list[str] = field(default_factory=list)
    kept: int = 0  # already on the roster
    skipped: list[str] = field(default_factory=list)  # not learners, or not active


def members(conf: Any, issuer: str, memberships_url: str) -> list[dict[str, Any]]:
    """The course's members, every page, as the platform lists them."""
    with _calling("Names and Role Provisioning"):
        service = NamesRolesProvisioningService(_connector(conf, issuer), {"context_memberships_url": memberships_url})
        return list(service.get_members())


def import_roster(conf: Any, issuer: str, memberships_url: str, roster_path: Path) -> RosterImport:
    """Add the platform's active learners to roster.csv (student_id and lms_id: the platform's
    user id); students already there (by lms_id or student_id) are kept as they are. The file is
    rewritten atomically, its other columns kept."""
    from checks.reports.render import write_atomically

    existing = read_roster(roster_path) if roster_path.exists() else None
    known = {s.lms_id for s in existing.students.values()} | set(existing.students) if existing else set()
    done = RosterImport()
    new_rows = []
    for member in members(conf, issuer, memberships_url):
        user = str(member.get("user_id", ""))
        if LEARNER not in member.get("roles", []) or member.get("status", "Active") != "Active" or not user:
            done.skipped.append(user or "(no user id)")
            continue
        if user in known:
            done.kept += 1
            continue
        new_rows.append({"student_id": user, "name": str(member.get("name", "")), "email": str(member.get("email", "")),
                         "lms_id": user, "sis_id": str(member.get("lis_person_sourcedid", ""))})
        done.added.append(user)
    columns = list(REQUIRED) + [c for c in OPTIONAL if c != "role"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for student in (existing.students.values() if existing else []):
        writer.writerow({c: inert.csv_cell(getattr(student, c)) for c in columns})
    for row in new_rows:
        writer.writerow({c: inert.csv_cell(row.get(c, "")) for c in columns})
    write_atomically(roster_path, buffer.getvalue())
    return done


@dataclass
class Posted:
    lineitem: str  # its URL at the platform
    posted: list[str] = field(default_factory=list)  # submissions whose score was posted
    left_out: list[str] = field(default_factory=list)  # and why the others were not


def post_scores(conf: Any, issuer: str, ags: dict[str, Any], records: list[Graded], roster: Roster, *,
                assignment: str, label: str, now: datetime | None = None) -> Posted:
    """Find (by tag: the assignment's name) or create the line item, then post each final score."""
    service_data = {"scope": ags.get("scope") or AGS_SCOPES, "lineitems": ags.get("lineitems", "")}
    if ags.get("lineitem"):
        service_data["lineitem"] = ags["lineitem"]
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat(timespec="seconds")
    maximum = max((r.result.max_score for r in records if r.ok), default=0.0)
    with _calling("Assignment and Grade Services"):
        service = AssignmentsGradesService(_connector(conf, issuer), service_data)
        item = service.find_or_create_lineitem(
            LineItem().set_tag(assignment).set_label(label).set_score_maximum(maximum).set_resource_id(assignment))
        done = Posted(str(item.get_id()))
        for record in records:
            result = record.result
            if not record.ok:
                done.left_out.append(f"{result.name}: not graded (the grader failed on it)")
                continue
            student = roster.match(result.name, result.student_id)
            if student is None or not student.lms_id:
                done.left_out.append(f"{result.name}: no platform user id (lms_id) in the roster")
                continue
            comment = "; ".join(adjustment_line(a) for a in result.adjustments)
            grade = (Grade().set_score_given(result.final_score).set_score_maximum(result.max_score)
                     .set_user_id(student.lms_id).set_timestamp(stamp).set_activity_progress("Completed")
                     .set_grading_progress("FullyGraded"))
            if comment:
                grade.set_comment(comment)
            service.put_grade(grade, item)
            done.posted.append(result.name)
    return done
