"""The tool against an independent LTI 1.3 platform (issue 46): lti1p3platform from PyPI (the
`lms-test` extra), served by tests/lti1p3_platform.py in a process of its own on 127.0.0.1, beside
the project's simulator (tests/lti_platform.py, which tests/interop/test_lti.py runs the same
cases against). A real `checks serve` is the tool: the platform starts the OIDC login at it,
signs the launch, fetches the tool's key set from the server's /lti/jwks to check its client
assertions, and serves the roster in four pages and the line items in two, the next page named
by a Link header with `rel=next` unquoted, in a list (`rel="prev next"`) and quoted, at URLs
whose case matters. The roster and the scores go through `checks lti roster|post`, with the
endpoints the launches named.
"""

from __future__ import annotations

import csv
import html.parser
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("pylti1p3", reason="the `lms` extra (PyLTI1p3) is not installed")
pytest.importorskip("lti1p3platform", reason="the `lms-test` extra (lti1p3platform) is not installed")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

from checks import cli  # noqa: E402
from checks.lti.keys import tool_key  # noqa: E402
from checks.reports.gradebook import DB_FILE, Graded, Gradebook  # noqa: E402
from checks.suites.scoring import LATE, Adjustment, QuestionResult, SubmissionResult  # noqa: E402
from serving import add_staff, course_folder, free_port, import_roster, start_server  # noqa: E402

pytestmark = pytest.mark.long
PLATFORM = Path(__file__).resolve().parents[1] / "lti1p3_platform.py"


class _Form(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action, self.fields = "", {}

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = dict(attrs)
        if tag == "form":
            self.action = found["action"]
        if tag == "input":
            self.fields[found["name"]] = found["value"]


def start_platform(tool: str) -> tuple[subprocess.Popen, dict]:
    """tests/lti1p3_platform.py in its own process, and what it printed (its URL and ids)."""
    process = subprocess.Popen([sys.executable, str(PLATFORM), "--tool", tool, "--seconds", "300"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(60)
    if not line or not line[0].strip():
        process.kill()
        raise AssertionError(f"the platform did not start: {process.communicate(timeout=10)[1]}")
    return process, json.loads(line[0])


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    port = free_port()
    tool = f"http://127.0.0.1:{port}"
    folder = course_folder(tmp_path_factory.mktemp("lti1p3platform"), roster=[("s001", "Ann Lee", "ann@example.edu")],
                           extra='roster = "roster.csv"\n')
    (folder / "roster.csv").write_text("student_id,name,email,submission,lms_id\n"
                                       "s001,Ann Lee,ann@example.edu,ann,U-Ann\ntina,Tina TA,tina@example.edu,,U-Tina\n")
    import_roster(folder)
    add_staff(folder, "tina", "ta")
    tool_key(folder, create=True)
    process, said = start_platform(tool)
    server = None
    try:
        url = said["url"]
        (folder / "course.toml").write_text(
            (folder / "course.toml").read_text() +
            f'\n[lti]\nissuer = "{said["issuer"]}"\nclient_id = "{said["client_id"]}"\n'
            f'deployment_ids = ["{said["deployment_id"]}"]\nauth_login_url = "{url}/auth"\n'
            f'auth_token_url = "{url}/token"\nkey_set_url = "{url}/jwks"\nlaunch_url = "{tool}/lti/launch"\n')
        server = start_server(folder, port=port, wait_for_graders=False)
        yield folder, server, url
    finally:
        if server is not None:
            server.kill(15)
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def state(url: str) -> dict:
    return httpx.get(f"{url}/_state", timeout=10).json()


def launch(server, url: str, user: str, link: str = "link-1") -> httpx.Response:
    """The browser: the LMS's link, the tool's login, the platform's signed form posted back."""
    http = server.client()
    start = httpx.get(f"{url}/start", params={"user": user, "link": link}, timeout=10)
    assert start.status_code == 302, start.text
    login = http.get(start.headers["location"])
    assert login.status_code == 302, login.text
    form = _Form()
    answer = httpx.get(login.headers["location"], timeout=10)
    assert answer.status_code == 200, answer.text
    form.feed(answer.text)
    assert form.action == f"{server.url}/lti/launch"
    return http.post(form.action, data=form.fields)


def gradebook(folder: Path, name: str, scores: dict[str, tuple[float, bool]]) -> Path:
    """A `checks grade` folder: each submission's score of 10, late (a 10 % penalty) or not."""
    out = folder / name
    book = Gradebook(out / DB_FILE, "toy")
    for student, (score, late) in scores.items():
        adjustments = [Adjustment(LATE, -score / 10, "1 day late: 10 %", "policy", "t")] if late else []
        book.record(Graded(SubmissionResult(student, "toy", [QuestionResult("q.one", score, 10.0, "", 1, 1)],
                                            adjustments=adjustments), "0.1.0", "2030-01-01T00:00:00Z"))
    return out


def test_a_launch_with_its_own_line_item_is_posted_to_it(platform):
    folder, server, url = platform
    done = launch(server, url, "U-Tina", link="own-item")
    assert done.status_code == 200 and "Signed in as tina" in done.text, done.text
    out = gradebook(folder, "own", {"ann": (9.0, False)})
    assert cli.main(["--course", str(folder), "lti", "post", str(out)]) == 0
    held = state(url)
    assert [(s["userId"], s["scoreGiven"], s["lineitem"]) for s in held["scores"]] == [("U-Ann", 9.0, held["single"])]
    assert len(held["lineitems"]) == 4  # none made


def test_launch_roster_sync_and_scores_through_every_page(platform, capsys):
    folder, server, url = platform
    done = launch(server, url, "U-Tina")
    assert done.status_code == 200 and "Signed in as tina" in done.text, done.text
    # the roster: four pages, the next named unquoted, in a list, quoted; URLs read case-sensitively
    assert cli.main(["--course", str(folder), "lti", "roster"]) == 0
    assert "added 4" in capsys.readouterr().out
    rows = list(csv.DictReader((folder / "roster.csv").open()))  # the course's own: input only
    assert {row["lms_id"] for row in rows} == {"U-Ann", "U-Tina"}
    synced = list(csv.DictReader((folder / "data" / "lms-roster.csv").open()))  # the new learners, in data/
    assert {row["lms_id"] for row in synced} == {"U-Bob", "U-Cy", "U-Dot", "U-Eve"}
    pages = [path for method, path in state(url)["requests"] if "/Memberships" in path]
    assert pages[-4:] == ["/Courses/C-17/Memberships"] + [f"/Courses/C-17/Memberships?Page={n}&Cursor=XyZ"
                                                          for n in (2, 3, 4)]
    # the scores: the line item made once (after the course's three others: on page 2), found again
    out = gradebook(folder, "grades", {"ann": (9.0, True), "U-Bob": (7.0, False)})
    assert cli.main(["--course", str(folder), "lti", "post", str(out), "--label", "Tensors"]) == 0
    out = gradebook(folder, "regraded", {"ann": (9.0, False), "U-Bob": (7.5, False)})  # a regrade, posted at once
    assert cli.main(["--course", str(folder), "lti", "post", str(out), "--label", "Tensors"]) == 0
    held = state(url)
    made = [item for item in held["lineitems"].values() if item.get("tag") == "toy"]
    assert len(made) == 1 and made[0]["scoreMaximum"] == 10 and made[0]["label"] == "Tensors"
    posted = [(s["userId"], s["scoreGiven"]) for s in held["scores"] if s["lineitem"] == made[0]["id"]]
    assert sorted(posted[:2]) == [("U-Ann", 8.1), ("U-Bob", 7.0)] and sorted(posted[2:]) == [("U-Ann", 9.0), ("U-Bob", 7.5)]
    assert held["ignored"] == []  # every score newer than the one before it, to the microsecond


def test_an_issuer_the_tool_does_not_know_is_a_4xx_naming_it(platform):
    folder, server, url = platform
    answer = server.client().get("/lti/login", params={"iss": "https://Other.example", "login_hint": "U-Ann",
                                                       "target_link_uri": f"{server.url}/lti/launch"})
    assert answer.status_code == 400 and "'https://Other.example' is not registered" in answer.text
