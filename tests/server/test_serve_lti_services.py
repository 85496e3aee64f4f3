"""The staff's LMS actions on the course server (issue 34): post an assignment's final scores from
the server's own gradebook (Assignment and Grade Services) and sync the roster from the LMS (Names
and Role Provisioning), each a staff form with a CSRF token. The simulated platform
(tests/lti_platform.py) runs on 127.0.0.1 and every call to it is real HTTP with real signatures;
the app is served in process (Starlette's test client) over a real SQLite database, with results
recorded as the grading threads record them, so that no grader starts.
"""

from __future__ import annotations

import csv
import html
import io
import json
from datetime import datetime, timezone

import pytest

pytest.importorskip("pylti1p3", reason="the `lms` extra (PyLTI1p3) is not installed")
pytest.importorskip("starlette")

import httpx  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from checks.lti.keys import tool_key  # noqa: E402
from checks.server.app import create_app  # noqa: E402
from checks.server.config import load_config  # noqa: E402
from checks.server.roster import add_user  # noqa: E402
from checks.server.storage import INSTRUCTOR, STUDENT, Storage, User  # noqa: E402
from checks.policy.roster import read_roster  # noqa: E402
from lti_platform import CLIENT_ID, LEARNER, running  # noqa: E402
from serving import course_folder, csrf_of  # noqa: E402
from test_serve_lti import _Form  # noqa: E402

DUE = datetime(2030, 6, 30, 23, 59, tzinfo=timezone.utc)
POLICY = f'due = "{DUE.isoformat()}"\n[policy.late]\nkind = "per_day"\npercent = 10\n'
ROSTER = ("student_id,name,email,lms_id\ns001,Ann Lee,ann@example.edu,u-ann\ns002,Cy Dee,cy@example.edu,u-cy\n"
          "s003,Dot Eve,dot@example.edu,\ns004,Fay Gee,fay@example.edu,u-fay\ns005,Gus Hay,gus@example.edu,u-gus\n")
LAUNCH_URL = "http://127.0.0.1/lti/launch"  # the platform's redirect_uri; the test client posts the form to the app


def result(student: str, earned: float) -> dict:
    return {"name": student, "assignment": "01_tensors", "questions": [
        {"qid": "strides.numel", "score": earned, "max_score": 10.0, "feedback": "", "passed_cases": 1,
         "total_cases": 1}], "devices": ["cpu"], "sandbox": "fork", "sandbox_uid": None, "seconds": 0.1,
        "warnings": [], "error": "", "refused": "", "student_id": student}


def graded(storage: Storage, student: str, earned: float | None, *, days_late: float = 0) -> None:
    """A submission of `student`, received `days_late` after the due date, graded `earned` of 10
    (None: the grader failed on it)."""
    row = storage.add_submission(student, "01_tensors", "uploads/x.zip", "0" * 64, 1, ["strides.py"],
                                 created=DUE.timestamp() + days_late * 86400 - (0 if days_late else 3600))
    assert storage.claim("w", ["01_tensors"], 60) is not None
    if earned is None:
        assert storage.complete(row.id, "w", result=None, error="the sandbox did not start")
    else:
        assert storage.complete(row.id, "w", result=result(student, earned), error=None)


@pytest.fixture
def course(tmp_path):
    """A served course registered with a running platform: its staff member, students' tokens, the
    app's client and the platform; course.toml names the service endpoints unless the test asks not."""
    folder = course_folder(tmp_path, extra='roster = "roster.csv"\n', policy=POLICY)
    (folder / "roster.csv").write_text(ROSTER)
    key = tool_key(folder, create=True)
    with running(key.jwks(), LAUNCH_URL) as platform:
        def serve(*, endpoints: bool = True) -> tuple[TestClient, Storage, dict[str, str]]:
            text = (folder / "course.toml").read_text()
            (folder / "course.toml").write_text(f"{text}\n{platform.lti_table(LAUNCH_URL, endpoints=endpoints)}")
            config = load_config(folder)
            storage = Storage(config.storage_url)
            tokens = {user.id: add_user(storage, user).token for user in (
                User("tom", "Tom", "tom@example.edu", INSTRUCTOR), User("s001", "Ann Lee", "ann@example.edu", STUDENT),
                User("s002", "Cy Dee", "cy@example.edu", STUDENT), User("s003", "Dot Eve", "dot@example.edu", STUDENT),
                User("s004", "Fay Gee", "fay@example.edu", STUDENT),
                User("s005", "Gus Hay", "gus@example.edu", STUDENT))}
            return TestClient(create_app(config, storage, None)), storage, tokens
        yield folder, platform, serve


def sign_in(http: TestClient, user: str, token: str, page: str) -> str:
    """Sign `user` in through the login form; the CSRF token of `page`."""
    reply = http.post("/login", data={"user": user, "token": token, "csrf": csrf_of(http.get("/login").text)},
                      follow_redirects=False)
    assert reply.status_code == 303, reply.text
    return csrf_of(http.get(page).text)


def audit(folder) -> list[dict]:
    path = folder / "records" / "lti.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_staff_post_the_servers_final_scores_to_the_lms(course):
    folder, platform, serve = course
    http, storage, tokens = serve()
    graded(storage, "s001", 9.0)  # on time
    graded(storage, "s002", 8.0, days_late=1.5)  # two started days late: 20 % of 8 taken
    graded(storage, "s003", 7.0)  # no lms_id
    graded(storage, "s004", None)  # the grader failed: never posted
    with http:
        csrf = sign_in(http, "tom", tokens["tom"], "/staff")
        page = http.get("/staff").text
        assert 'action="/staff/lti/scores"' in page
        done = http.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"})
        assert done.status_code == 200, done.text
        assert "Posted 2 score(s)" in done.text and "3 left out" in done.text
        assert "s003: no platform user id (lms_id) in the roster" in done.text
        assert "s004: not graded (the grader failed on it)" in done.text
        assert "s005: no graded submission" in done.text
        # what the server's own gradebook export says, the LMS holds
        book = {row["student_id"]: row for row in csv.DictReader(io.StringIO(
            http.get("/staff/gradebook/01_tensors/csv").text))}
    ((url, item),) = platform.lineitems.items()
    assert (item["tag"], item["scoreMaximum"]) == ("01_tensors", 10.0)
    given = {s["userId"]: s["scoreGiven"] for s in platform.scores if s["lineitem"] == url}
    assert given == {"u-ann": 9.0, "u-cy": 6.4}
    assert float(book["s002"]["total"]) == 6.4 and float(book["s002"]["raw"]) == 8.0
    assert "late" in next(s for s in platform.scores if s["userId"] == "u-cy")["comment"]
    (line,) = audit(folder)
    assert (line["event"], line["by"], line["assignment"], line["posted"], line["lineitem"]) == (
        "post", "tom", "01_tensors", ["s001", "s002"], url)
    assert line["at"]


def test_a_student_is_refused_and_a_form_without_csrf_too(course):
    folder, platform, serve = course
    http, storage, tokens = serve()
    graded(storage, "s001", 9.0)
    with http:
        csrf = sign_in(http, "s001", tokens["s001"], "/")
        assert http.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"}).status_code == 403
        assert http.post("/staff/lti/roster", data={"csrf": csrf}).status_code == 403
    with TestClient(http.app) as staff:
        csrf = sign_in(staff, "tom", tokens["tom"], "/staff")
        assert staff.post("/staff/lti/scores", data={"assignment": "01_tensors"}).status_code == 403
        assert staff.post("/staff/lti/scores", data={"csrf": "forged", "assignment": "01_tensors"}).status_code == 403
        assert staff.post("/staff/lti/roster", data={"csrf": "forged"}).status_code == 403
    assert not platform.lineitems and not platform.scores and not audit(folder)
    assert "u-bob" not in (folder / "roster.csv").read_text() and not (folder / "data" / "lms-roster.csv").exists()


@pytest.mark.parametrize("failure", ["bad signature", "unreachable"])
def test_a_platform_that_refuses_changes_nothing_and_staff_are_told(course, failure):
    folder, platform, serve = course
    http, storage, tokens = serve()
    graded(storage, "s001", 9.0)
    if failure == "bad signature":
        platform.tool_jwks = {"keys": []}  # the platform does not know the tool's key
        says = "invalid_client"
    else:
        text = (folder / "course.toml").read_text().replace(f"{platform.url}/token", "http://127.0.0.1:9/token")
        (folder / "course.toml").write_text(text)
        http = TestClient(create_app(load_config(folder), storage, None))
        says = "could not be reached"
    roster_before, users_before = (folder / "roster.csv").read_text(), storage.users()
    with http:
        csrf = sign_in(http, "tom", tokens["tom"], "/staff")
        post = http.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"})
        assert post.status_code == 502 and "The LMS did not take the scores" in post.text and says in post.text
        assert "no score was posted" in post.text
        sync = http.post("/staff/lti/roster", data={"csrf": csrf})
        assert sync.status_code == 502 and says in sync.text and "Nothing was changed" in sync.text
    assert not platform.lineitems and not platform.scores and not audit(folder)
    assert (folder / "roster.csv").read_text() == roster_before and storage.users() == users_before
    assert not (folder / "data" / "lms-roster.csv").exists()


def test_roster_sync_adds_the_new_learner_and_keeps_everyone(course):
    folder, platform, serve = course
    http, storage, tokens = serve()
    hashes = {user.id: user.token_hash for user in storage.users()}
    with http:
        csrf = sign_in(http, "tom", tokens["tom"], "/staff/students")
        assert 'action="/staff/lti/roster"' in http.get("/staff/students").text
        done = http.post("/staff/lti/roster", data={"csrf": csrf})
        assert done.status_code == 200, done.text
        assert "1 new learner(s)" in done.text and "1 new account(s)" in done.text
        shown = list(csv.DictReader(io.StringIO(html.unescape(
            done.text.split('<pre id="tokens">')[1].split("</pre>")[0]))))
        assert [(row["student_id"], row["role"]) for row in shown] == [("u-bob", "student")]
        # the new learner signs in with the token shown, once; only its hash is stored
        bob = storage.user("u-bob")
        assert bob is not None and shown[0]["token"] not in bob.token_hash
        with TestClient(http.app) as learner:
            sign_in(learner, "u-bob", shown[0]["token"], "/")
        again = http.post("/staff/lti/roster", data={"csrf": csrf})
        assert "0 new account(s)" in again.text and '<pre id="tokens">' not in again.text
    kept = {user.id: user.token_hash for user in storage.users()}
    assert {user: kept[user] for user in hashes} == hashes  # nobody dropped, no token changed
    assert (folder / "roster.csv").read_text() == ROSTER  # the course's roster is input only
    roster = (folder / "roster.csv").read_text() + (folder / "data" / "lms-roster.csv").read_text()
    assert all(student in roster for student in ("s001", "s002", "s003", "s004", "u-bob"))
    assert "u-gone" not in roster and "u-tina" not in roster
    first, second = audit(folder)
    assert (first["event"], first["by"], first["added"], first["accounts"]) == ("roster", "tom", ["u-bob"], ["u-bob"])
    assert second["added"] == [] and second["accounts"] == []


@pytest.mark.parametrize("odd_id", ['=HYPERLINK("http://x")', "_under", "has space", "a:b", "x" * 101, "tab\tin",
                                    "ünï", "-lead"])
def test_a_learner_whose_lms_id_no_roster_can_hold_is_named_and_the_roster_stays_readable(course, odd_id):
    """Found by a fresh attacker: a learner whose LMS id breaks the roster's id rule was written
    into data/lms-roster.csv before the page refused it, and from then on the server would not
    start and the staff's commands failed. Such a learner is now named and left out; the others
    are added, and the file reads back."""
    folder, platform, serve = course
    platform.members.append({"user_id": odd_id, "name": "Odd", "email": "odd@example.edu", "roles": [LEARNER],
                             "status": "Active"})
    http, storage, tokens = serve()
    with http:
        csrf = sign_in(http, "tom", tokens["tom"], "/staff/students")
        done = http.post("/staff/lti/roster", data={"csrf": csrf})
    assert done.status_code == 200, done.text
    assert "1 new learner(s)" in done.text and "1 not added: the LMS gave them an id a roster cannot hold" in done.text
    synced = read_roster(folder / "data" / "lms-roster.csv")
    assert "u-bob" in synced.students and odd_id not in synced.students
    assert load_config(folder).course.roster is not None  # the server starts again
    (entry,) = audit(folder)
    assert entry["added"] == ["u-bob"] and len(entry["refused"]) == 1


STAFF_ROW = "tom,Tom,tom@example.edu,u-tom\n"  # the instructor's LMS id, so that Tom may launch the tool
TOM = {"user_id": "u-tom", "name": "Tom", "email": "tom@example.edu",
       "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"], "status": "Active"}


def launch_from_the_lms(http: TestClient, platform, lms_id: str) -> httpx.Response:
    """`lms_id` launches the tool from the LMS course the platform launches from now (platform.context)."""
    started = http.get("/lti/login", params={"iss": platform.issuer, "login_hint": lms_id, "client_id": CLIENT_ID,
                                             "target_link_uri": LAUNCH_URL, "lti_message_hint": "rl-1"},
                       follow_redirects=False)
    assert started.status_code == 302, started.text
    form = _Form()
    form.feed(httpx.get(started.headers["location"], timeout=10).text)
    return http.post("/lti/launch", data=form.fields)


def without_endpoints(course):
    """The course served without endpoints in course.toml, Tom able to launch the tool, and Ann's
    submission graded 9 of 10: (folder, platform, client, storage, tokens)."""
    folder, platform, serve = course
    (folder / "roster.csv").write_text(ROSTER + STAFF_ROW)
    platform.members.append(TOM)
    http, storage, tokens = serve(endpoints=False)
    graded(storage, "s001", 9.0)
    return folder, platform, http, storage, tokens


def test_the_endpoints_a_staff_launch_carries_are_kept_and_used(course):
    """Without memberships_url and lineitems_url in course.toml, the staff are told how to give
    them; a student's launch keeps none (found by a fresh attacker: a student's launch from an LMS
    course of their own sent the class's grades there); after a staff member's launch, which names
    them, both actions work."""
    folder, platform, http, storage, tokens = without_endpoints(course)
    with http:
        csrf = sign_in(http, "tom", tokens["tom"], "/staff")
        refused = http.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"})
        assert refused.status_code == 400 and "no Assignment and Grade Services endpoint" in refused.text
        assert "Launch the tool once from the LMS course" in refused.text
        assert "no Names and Role Provisioning endpoint" in http.post("/staff/lti/roster", data={"csrf": csrf}).text
        assert not [path for _, path, _ in platform.requests if path == "/token"]  # the platform was not called
    with TestClient(http.app) as ann:
        assert launch_from_the_lms(ann, platform, "u-ann").status_code == 200  # signed in, and nothing kept
    with TestClient(http.app) as staff:
        csrf = sign_in(staff, "tom", tokens["tom"], "/staff")
        still = staff.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"})
        assert still.status_code == 400 and "no Assignment and Grade Services endpoint" in still.text
    with TestClient(http.app) as staff:
        assert launch_from_the_lms(staff, platform, "u-tom").status_code == 200
        csrf = csrf_of(staff.get("/staff").text)
        done = staff.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"})
        assert done.status_code == 200 and "Posted 1 score(s)" in done.text, done.text
        assert staff.post("/staff/lti/roster", data={"csrf": csrf}).status_code == 200
    assert [(s["userId"], s["scoreGiven"]) for s in platform.scores] == [("u-ann", 9.0)]
    assert "u-bob" in (folder / "data" / "lms-roster.csv").read_text()
    assert (folder / "roster.csv").read_text() == ROSTER + STAFF_ROW
    assert not (folder / "course.toml").read_text().count("lineitems_url")  # they came from the launch


def test_a_launch_from_another_lms_course_moves_no_endpoint_and_context_id_refuses_it(course):
    """Found by a fresh attacker: a student on the roster launched the tool from an LMS course of
    her own (the same deployment), which made its services the kept ones: staff's next post sent
    every student's score to her course, and the roster sync added her course's members. Only a
    staff launch keeps endpoints; with the LMS course named in course.toml (`context_id`), a
    launch from any other is refused."""
    folder, platform, http, storage, tokens = without_endpoints(course)
    with http:
        assert launch_from_the_lms(http, platform, "u-tom").status_code == 200  # staff, from the course's own
    platform.context = "ann-sandbox"  # Ann's own LMS course, in the same deployment
    with TestClient(http.app) as ann:
        assert launch_from_the_lms(ann, platform, "u-ann").status_code == 200  # signed in as herself
    with TestClient(http.app) as staff:
        csrf = sign_in(staff, "tom", tokens["tom"], "/staff")
        done = staff.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"})
        assert done.status_code == 200 and "Posted 1 score(s)" in done.text, done.text
        assert staff.post("/staff/lti/roster", data={"csrf": csrf}).status_code == 200
    assert not [path for _, path, _ in platform.requests if path.startswith("/ann-sandbox/")]
    assert [s["lineitem"] for s in platform.scores] == [f"{platform.url}/lineitems/1"]
    text = (folder / "course.toml").read_text()
    (folder / "course.toml").write_text(text + 'context_id = "course-1"\n')  # into [lti], the file's last table
    with TestClient(create_app(load_config(folder), storage, None)) as pinned:
        refused = launch_from_the_lms(pinned, platform, "u-ann")
        assert refused.status_code == 403, refused.text
        assert "came from the LMS course 'ann-sandbox', and this tool serves 'course-1' only" in refused.text
        platform.context = "course-1"
        assert launch_from_the_lms(pinned, platform, "u-ann").status_code == 200
