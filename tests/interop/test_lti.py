"""LTI 1.3 against a simulated platform on 127.0.0.1 (tests/lti_platform.py): the OIDC login and
launch, the refusals (a signature by another key, an expired id_token, a replayed nonce, another
audience, a lost state), the roster from Names and Role Provisioning, the final scores posted with
Assignment and Grade Services, and the tool's private key, which never leaves the course folder."""

from __future__ import annotations

import html.parser
import json
import os
import re

import jwt
import pytest
import requests

pytest.importorskip("pylti1p3", reason="the `lms` extra (PyLTI1p3) is not installed")

from checks import cli  # noqa: E402
from checks.course.assignment import CourseError  # noqa: E402
from checks.lti.config import load_registration, read_lti  # noqa: E402
from checks.lti.keys import key_path, tool_key  # noqa: E402
from checks.lti.launch import (ENDPOINTS_KEY, LtiError, keep_endpoints, kept_endpoints, launch, login,  # noqa: E402
                               store_for)
from checks.lti.services import AGS_SCOPES, ags_endpoint, import_roster, post_scores  # noqa: E402
from checks.policy.roster import read_roster  # noqa: E402
from checks.reports.gradebook import DB_FILE, Graded, Gradebook  # noqa: E402
from checks.suites.scoring import LATE, Adjustment, QuestionResult, SubmissionResult  # noqa: E402

from lti_platform import CLIENT_ID, running  # noqa: E402

LAUNCH_URL = "https://checks.example.edu/lti/launch"


class _Form(html.parser.HTMLParser):
    """What a browser would post: the hidden inputs of the platform's auto-submitted form."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if tag == "input":
            self.fields[attrs["name"]] = attrs["value"]


@pytest.fixture
def course(tmp_path):
    """A course folder with a tool key, registered with a running platform."""
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "roster.csv").write_text("student_id,name,email,lms_id\ns1,Ann Lee,ann@example.edu,u-ann\n")
    key = tool_key(folder, create=True)
    with running(key.jwks(), LAUNCH_URL) as platform:
        (folder / "course.toml").write_text(f'roster = "roster.csv"\n{platform.lti_table(LAUNCH_URL)}')
        yield folder, platform


def browse(folder, platform, user: str = "u-ann") -> tuple[dict, dict]:
    """The browser's part: the platform's login request, the tool's redirect, the platform's form."""
    registration = load_registration(folder)
    redirect = login(registration.conf, {"iss": platform.issuer, "login_hint": user, "target_link_uri": LAUNCH_URL,
                                         "client_id": CLIENT_ID, "lti_message_hint": "rl-1"},
                     store_for(folder), launch_url=LAUNCH_URL)
    assert redirect.url.startswith(f"{platform.url}/auth?")
    page = requests.get(redirect.url, timeout=10)
    assert page.status_code == 200, page.text
    form = _Form()
    form.feed(page.text)
    return form.fields, redirect.cookies


def test_a_launch_is_checked_and_says_who_and_which_services(course):
    folder, platform = course
    fields, cookies = browse(folder, platform)
    done = launch(load_registration(folder).conf, fields, cookies, store_for(folder))
    assert (done.user_id, done.name, done.email, done.context_id) == ("u-ann", "Ann Lee", "ann@example.edu", "course-1")
    assert not done.staff and done.memberships_url == f"{platform.url}/nrps"
    assert done.ags["lineitems"] == f"{platform.url}/lineitems"
    fields, cookies = browse(folder, platform, "u-tina")
    assert launch(load_registration(folder).conf, fields, cookies, store_for(folder)).staff


@pytest.mark.parametrize("knob, value, says", [
    ("sign_with_other_key", True, "Signature verification failed"),
    ("expires_in", -30, "Signature has expired"),
    ("audience", "another-tool", "Client id not registered for this issuer"),
])
def test_a_launch_is_refused_when_the_id_token_is_not_for_us_now(course, knob, value, says):
    folder, platform = course
    setattr(platform, knob, value)
    fields, cookies = browse(folder, platform)
    with pytest.raises(LtiError, match=says):
        launch(load_registration(folder).conf, fields, cookies, store_for(folder))


def test_a_replayed_id_token_is_refused(course):
    folder, platform = course
    fields, cookies = browse(folder, platform)
    conf = load_registration(folder).conf
    launch(conf, fields, cookies, store_for(folder))
    with pytest.raises(LtiError, match="Invalid Nonce"):
        launch(conf, fields, cookies, store_for(folder))


def test_a_launch_without_the_browsers_state_is_refused(course):
    folder, platform = course
    fields, _ = browse(folder, platform)
    with pytest.raises(LtiError, match="State not found"):
        launch(load_registration(folder).conf, fields, {}, store_for(folder))


def test_the_roster_comes_from_names_and_roles(course):
    folder, platform = course
    registration = load_registration(folder)
    done = import_roster(registration.conf, platform.issuer, f"{platform.url}/nrps", folder / "roster.csv")
    assert (done.added, done.kept, sorted(done.skipped)) == (["u-bob"], 1, ["u-gone", "u-tina"])  # two pages read
    roster = read_roster(folder / "roster.csv")
    assert set(roster.students) == {"s1", "u-bob"} and roster.students["u-bob"].email == "bob@example.edu"


def graded(folder, platform):
    out = folder / "grades"
    book = Gradebook(out / DB_FILE, "toy")
    for name, score in (("ann", 9.0), ("zed", 5.0)):
        book.record(Graded(SubmissionResult(name, "toy", [QuestionResult("good.add", score, 10.0, "", 1, 1)],
                                            adjustments=[Adjustment(LATE, -0.9, "1 day late: 10 %", "policy", "t")]
                                            if name == "ann" else []), "0.1.0", "2030-01-01T00:00:00Z"))
    (folder / "roster.csv").write_text("student_id,name,email,submission,lms_id\n"
                                       "s1,Ann Lee,ann@example.edu,ann,u-ann\n")
    return out, book


def test_final_scores_are_posted_to_a_line_item_found_again_by_tag(course):
    folder, platform = course
    out, book = graded(folder, platform)
    registration = load_registration(folder)
    ags = {"lineitems": f"{platform.url}/lineitems"}
    first = post_scores(registration.conf, platform.issuer, ags, book.load(), read_roster(folder / "roster.csv"),
                        assignment="toy", label="Tensors")
    again = post_scores(registration.conf, platform.issuer, ags, book.load(), read_roster(folder / "roster.csv"),
                        assignment="toy", label="Tensors")
    assert first.lineitem == again.lineitem and len(platform.lineitems) == 1
    assert platform.lineitems[first.lineitem]["tag"] == "toy" and platform.lineitems[first.lineitem]["scoreMaximum"] == 10
    assert [(s["userId"], s["scoreGiven"], s["scoreMaximum"]) for s in platform.scores] == [("u-ann", 8.1, 10.0)] * 2
    assert platform.scores[0]["comment"] == "late policy, -0.9 points: 1 day late: 10 %"
    assert first.left_out == ["zed: no platform user id (lms_id) in the roster"]


def test_the_platform_refuses_a_tool_whose_key_it_does_not_know(course):
    folder, platform = course
    out, book = graded(folder, platform)
    platform.tool_jwks = {"keys": []}
    with pytest.raises(LtiError, match="invalid_client"):
        post_scores(load_registration(folder).conf, platform.issuer, {"lineitems": f"{platform.url}/lineitems"},
                    book.load(), read_roster(folder / "roster.csv"), assignment="toy", label="Tensors")


def test_the_private_key_stays_in_the_course_folder_readable_by_its_owner_only(course, capsys):
    folder, platform = course
    out, book = graded(folder, platform)
    path = key_path(folder)
    assert path.is_relative_to(folder) and (path.stat().st_mode & 0o777) == 0o600
    key = tool_key(folder)
    assert "PRIVATE" not in repr(key) and all("d" not in k and "p" not in k for k in key.jwks()["keys"])
    assert cli.main(["--course", str(folder), "lti", "post", str(out)]) == 0
    assert cli.main(["--course", str(folder), "lti", "key"]) == 0  # prints the public JWKS only
    printed = capsys.readouterr().out
    secret = "".join(key.private_pem.strip().splitlines()[1:-1])  # the key's base64 body
    sent = b"".join(body for _, _, body in platform.requests).decode(errors="replace")
    for place in (printed, sent):  # what the tool printed, and everything it sent the platform
        assert secret[:64] not in place and "PRIVATE KEY" not in place
    assert platform.scores and '"kty": "RSA"' in printed  # posted (signed with the key), and the JWKS shown
    os.chmod(path, 0o644)
    with pytest.raises(CourseError, match="may be read by others"):
        tool_key(folder)


def test_the_cli_imports_the_roster_and_posts_scores(course, capsys):
    folder, platform = course
    out, book = graded(folder, platform)
    own = (folder / "roster.csv").read_text()
    assert cli.main(["--course", str(folder), "lti", "roster"]) == 0
    assert "added 1" in capsys.readouterr().out
    assert (folder / "roster.csv").read_text() == own  # input only: the new learner is in the data folder
    assert "u-bob" in (folder / "data" / "lms-roster.csv").read_text()
    assert cli.main(["--course", str(folder), "lti", "roster"]) == 0
    assert "added 0, kept 2" in capsys.readouterr().out
    assert cli.main(["--course", str(folder), "lti", "post", str(out), "--label", "Tensors"]) == 0
    said = capsys.readouterr().out
    assert re.search(r"posted 1 score", said) and "left out: zed" in said
    assert platform.scores[-1]["scoreGiven"] == 8.1


@pytest.mark.parametrize("table, says", [
    ({"issuer": "x"}, "[lti] has no `client_id`"),
    ({"issuer": "https://lms", "client_id": "c", "deployment_ids": ["d"], "auth_login_url": "http://lms.example/auth",
      "auth_token_url": "https://lms/t", "key_set_url": "https://lms/k", "launch_url": "https://t/l"},
     "`auth_login_url` in [lti] must be an https URL"),
    ({"issuer": "https://lms", "client_id": "c", "deployment_ids": "d", "auth_login_url": "https://l/a",
      "auth_token_url": "https://lms/t", "key_set_url": "https://lms/k", "launch_url": "https://t/l"},
     "`deployment_ids` in [lti] must be a list"),
    ({"issuer": "https://lms", "client_id": "c", "deployment_ids": ["d"], "auth_login_url": "https://l/a",
      "auth_token_url": "https://lms/t", "key_set_url": "https://lms/k", "launch_url": "https://t/l", "secret": "x"},
     "unknown key `secret` in [lti]"),
])
def test_a_bad_registration_is_refused_naming_the_key(tmp_path, table, says):
    with pytest.raises(CourseError) as raised:
        read_lti(table, tmp_path / "course.toml")
    assert "course.toml" in str(raised.value) and says in str(raised.value)


def test_a_platform_that_cannot_be_reached_is_said_so(course):
    folder, platform = course
    out, book = graded(folder, platform)
    text = (folder / "course.toml").read_text().replace(f"{platform.url}/token", "http://127.0.0.1:9/token")
    (folder / "course.toml").write_text(text)
    with pytest.raises(LtiError, match="could not be reached"):
        post_scores(load_registration(folder).conf, platform.issuer, {"lineitems": f"{platform.url}/lineitems"},
                    book.load(), read_roster(folder / "roster.csv"), assignment="toy", label="Tensors")


# ---------------------------------------------------------------------------- issue 46: what a platform may write

@pytest.mark.parametrize("style", ["quoted", "unquoted", "list"])
def test_every_page_of_the_roster_is_read_at_the_url_the_platform_wrote(course, style):
    """RFC 8288: `rel=next` unquoted, or in a list of relations; the next URL kept exactly (the
    simulator answers 404 to a lower-cased one)."""
    folder, platform = course
    platform.link_style, platform.page_size = style, 1  # four pages
    registration = load_registration(folder)
    done = import_roster(registration.conf, platform.issuer, f"{platform.url}/nrps", folder / "roster.csv")
    assert (done.added, done.kept, sorted(done.skipped)) == (["u-bob"], 1, ["u-gone", "u-tina"])
    pages = [path for method, path, _ in platform.requests if path.startswith("/nrps")]
    assert pages == ["/nrps"] + [f"/nrps?Page={n}&Cursor=AbC" for n in (2, 3, 4)]


@pytest.mark.parametrize("style", ["quoted", "unquoted", "list"])
def test_a_line_item_on_a_later_page_is_found_and_never_made_twice(course, style):
    folder, platform = course
    out, book = graded(folder, platform)
    for n in range(1, 4):  # the course's other columns come first
        platform.lineitems[f"{platform.url}/lineitems/{n}"] = {"id": f"{platform.url}/lineitems/{n}", "tag": f"other{n}",
                                                               "label": f"Other {n}", "scoreMaximum": 5}
    platform.link_style = style
    registration = load_registration(folder)
    ags = {"lineitems": f"{platform.url}/lineitems"}
    first = post_scores(registration.conf, platform.issuer, ags, book.load(), read_roster(folder / "roster.csv"),
                        assignment="toy", label="Tensors")
    assert len(platform.lineitems) == 4  # made once, as the fourth: on page 2
    again = post_scores(registration.conf, platform.issuer, ags, book.load(), read_roster(folder / "roster.csv"),
                        assignment="toy", label="Tensors")
    assert again.lineitem == first.lineitem and len(platform.lineitems) == 4


def test_two_posts_in_a_row_carry_sub_second_times_that_increase(course):
    """AGS: a score whose timestamp is not newer than the last for its (line item, user) may be
    ignored (the simulator does): the second post, a regrade, must win."""
    folder, platform = course
    out, book = graded(folder, platform)
    registration = load_registration(folder)
    ags, roster = {"lineitems": f"{platform.url}/lineitems"}, read_roster(folder / "roster.csv")
    post_scores(registration.conf, platform.issuer, ags, book.load(), roster, assignment="toy", label="Tensors")
    records = book.load()
    records[0].result.adjustments.clear()  # the late penalty waived: 9.0, not 8.1
    post_scores(registration.conf, platform.issuer, ags, records, roster, assignment="toy", label="Tensors")
    assert platform.ignored == [] and [s["scoreGiven"] for s in platform.scores] == [8.1, 9.0]
    first, second = (s["timestamp"] for s in platform.scores)
    assert re.fullmatch(r".*T\d\d:\d\d:\d\d\.\d{6}\+00:00", first) and second > first


def test_a_launch_that_names_only_its_own_line_item_can_be_posted_to(course):
    folder, platform = course
    out, book = graded(folder, platform)
    item = f"{platform.url}/lineitems/7"
    platform.lineitems[item] = {"id": item, "label": "Tensors", "scoreMaximum": 10}
    platform.single_lineitem = item
    fields, cookies = browse(folder, platform)
    done = launch(load_registration(folder).conf, fields, cookies, store_for(folder))
    assert "lineitems" not in done.ags and done.ags["lineitem"] == item
    keep_endpoints(store_for(folder), done, by="tom")
    (folder / "course.toml").write_text((folder / "course.toml").read_text().replace(
        f'lineitems_url = "{platform.url}/lineitems"\n', ""))
    registration = load_registration(folder)
    ags = ags_endpoint(registration)
    assert ags == {"lineitem": item, "scope": [AGS_SCOPES[2]]}
    posted = post_scores(registration.conf, platform.issuer, ags, book.load(), read_roster(folder / "roster.csv"),
                         assignment="toy", label="Tensors")
    assert posted.lineitem == item and [(s["userId"], s["lineitem"]) for s in platform.scores] == [("u-ann", item)]
    assert len(platform.lineitems) == 1  # none made


@pytest.mark.parametrize("step", ["login", "launch"])
def test_an_unknown_issuer_is_refused_naming_it(course, step):
    folder, platform = course
    conf = load_registration(folder).conf
    with pytest.raises(LtiError, match="the issuer 'https://lms.elsewhere.example' is not registered"):
        if step == "login":
            login(conf, {"iss": "https://lms.elsewhere.example", "login_hint": "u-ann", "target_link_uri": LAUNCH_URL,
                         "client_id": CLIENT_ID}, store_for(folder), launch_url=LAUNCH_URL)
        else:
            fields, cookies = browse(folder, platform)
            claims = jwt.decode(fields["id_token"], options={"verify_signature": False})
            forged = jwt.encode({**claims, "iss": "https://lms.elsewhere.example"}, platform.private, algorithm="RS256",
                                headers={"kid": "platform-1"})
            launch(conf, {**fields, "id_token": forged}, cookies, store_for(folder))


def test_lti_key_prints_the_jwks_as_json_on_a_narrow_terminal(course, capfd, monkeypatch):
    folder, platform = course
    monkeypatch.setenv("COLUMNS", "40")
    assert cli.main(["--course", str(folder), "lti", "key"]) == 0
    printed = capfd.readouterr()
    assert json.loads(printed.out) == tool_key(folder).jwks() and "tool's key" in printed.err


# ---------------------------------------------------------------------------- issue 44: all posted, or who was not and why

def test_the_cli_names_each_student_not_posted_and_posting_again_sends_only_theirs(course, capsys, monkeypatch):
    """The platform refuses one student's score (500), another's (403) and answers a third too late:
    `checks lti post` says who was not posted and why (exit 1), records only those it took, and
    the next run sends only those left; a third run sends nothing."""
    import checks.lti.launch

    folder, platform = course
    out = folder / "grades"
    book = Gradebook(out / DB_FILE, "toy")
    people = {"ann": "u-ann", "bo": "u-bob", "cy": "u-cy", "di": "u-di"}
    for n, name in enumerate(people):
        book.record(Graded(SubmissionResult(name, "toy", [QuestionResult("good.add", 6.0 + n, 10.0, "", 1, 1)]),
                           "0.1.0", "2030-01-01T00:00:00Z"))
    (folder / "roster.csv").write_text("student_id,name,email,submission,lms_id\n" + "".join(
        f"s-{name},{name},{name}@example.edu,{name},{lms}\n" for name, lms in people.items()))
    monkeypatch.setattr(checks.lti.launch, "HTTP_SECONDS", 2.0)
    platform.score_failures = {"u-bob": 500, "u-cy": 403, "u-di": "timeout"}
    assert cli.main(["--course", str(folder), "lti", "post", str(out)]) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert "posted 1 score(s) of toy" in said
    assert "not posted: bo: the LMS answered HTTP 500" in said and "not posted: cy: the LMS answered HTTP 403" in said
    assert "not posted: di: the LMS gave no answer in time" in said and "3 score(s) not posted" in said
    (line,) = [json.loads(text) for text in (folder / "records" / "lti.jsonl").read_text().splitlines()]
    assert line["posted"] == ["ann"] and set(line["sent"]) == {"ann"} and len(line["failed"]) == 3
    platform.score_failures = {}
    assert cli.main(["--course", str(folder), "lti", "post", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "posted 3 score(s)" in said and "1 already there with the same score" in said
    assert cli.main(["--course", str(folder), "lti", "post", str(out)]) == 0
    assert "posted 0 score(s)" in " ".join(capsys.readouterr().out.split())
    given = [s["userId"] for s in platform.scores]
    # di's first score was taken though its answer came late (the tool could not know): sent again, never ann's
    assert sorted(given) == ["u-ann", "u-bob", "u-cy", "u-di", "u-di"]


def test_a_changed_score_is_posted_again_and_only_it(course):
    from checks.lti.services import posted_before

    folder, platform = course
    out, book = graded(folder, platform)
    registration = load_registration(folder)
    ags, roster = {"lineitems": f"{platform.url}/lineitems"}, read_roster(folder / "roster.csv")
    first = post_scores(registration.conf, platform.issuer, ags, book.load(), roster, assignment="toy", label="T")
    before = {first.lineitem: first.sent}
    same = post_scores(registration.conf, platform.issuer, ags, book.load(), roster, assignment="toy", label="T",
                       before=before)
    assert (same.posted, same.unchanged) == ([], ["ann"])
    records = book.load()
    records[0].result.adjustments.clear()  # the late penalty waived: a new score, sent
    changed = post_scores(registration.conf, platform.issuer, ags, records, roster, assignment="toy", label="T",
                          before=before)
    assert changed.posted == ["ann"] and [s["scoreGiven"] for s in platform.scores] == [8.1, 9.0]
    assert posted_before(folder, "toy") == {}  # post_scores itself records nothing: its callers do


def test_after_three_scores_without_an_answer_the_rest_are_not_tried_and_say_so(course, monkeypatch):
    """Each unanswered score costs a timeout: after STOP_AFTER in a row, the others are named as not sent."""
    import checks.lti.launch
    from checks.lti.services import STOP_AFTER

    folder, platform = course
    names = ["a1", "a2", "a3", "a4", "a5"]
    book = Gradebook(folder / "grades" / DB_FILE, "toy")
    for name in names:
        book.record(Graded(SubmissionResult(name, "toy", [QuestionResult("good.add", 5.0, 10.0, "", 1, 1)]),
                           "0.1.0", "2030-01-01T00:00:00Z"))
    (folder / "roster.csv").write_text("student_id,name,email,lms_id\n" + "".join(
        f"{name},{name},{name}@example.edu,u-{name}\n" for name in names))
    monkeypatch.setattr(checks.lti.launch, "HTTP_SECONDS", 2.0)
    platform.score_failures = {f"u-{name}": "timeout" for name in names}
    done = post_scores(load_registration(folder).conf, platform.issuer, {"lineitems": f"{platform.url}/lineitems"},
                       book.load(), read_roster(folder / "roster.csv"), assignment="toy", label="T")
    assert done.posted == [] and len(done.failed) == 5
    assert all("no answer in time" in why for why in done.failed[:STOP_AFTER])
    assert all(why.endswith(f"not sent: the LMS gave no answer to the {STOP_AFTER} scores before it")
               for why in done.failed[STOP_AFTER:])
    sent = [path for method, path, _ in platform.requests if method == "POST" and path.endswith("/scores")]
    assert len(sent) == STOP_AFTER


def test_endpoints_kept_before_only_a_staff_launch_could_keep_them_are_not_used(course):
    """Endpoints kept by an older server from anyone's launch (no `by`) may be a student's LMS
    course's: they are not used, and a staff launch names them again."""
    folder, platform = course
    store = store_for(folder)
    store.set_value(ENDPOINTS_KEY, {"lineitems_url": "https://lms.example/their-course/line_items",
                                    "context_id": "their-course", "at": 1.0})
    assert kept_endpoints(store) == {}
    fields, cookies = browse(folder, platform)
    keep_endpoints(store, launch(load_registration(folder).conf, fields, cookies, store), by="tom")
    kept = kept_endpoints(store)
    assert (kept["lineitems_url"], kept["context_id"], kept["by"]) == (f"{platform.url}/lineitems", "course-1", "tom")
