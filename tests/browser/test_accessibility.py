"""WCAG 2.1 AA in a real browser (Playwright on Debian's Chromium): axe-core, vendored from npm
(tests/browser/vendor/, see its README), runs on every page of the course server, students' and
staff's (a11y_pages.PAGES: the list tests/unit/test_a11y_pages.py holds to the app's routes and
templates, so that none is skipped silently; the LMS page with the simulated platform of
tests/lti_platform.py on 127.0.0.1), on feedback.html, report.html and similarity.html, and any
serious or critical violation fails; beside it, what axe cannot judge by itself: one h1 and a title of its own per page, and no
sideways scrolling at 320 px (SC 1.4.10), the width of a 1280 px screen at 400 % zoom and of a
640 px one at 200 %.

The screenshots of docs/images/a11y-*.png are taken into the test's temp dir
(CHECKS_UPDATE_SCREENSHOT=1 copies them to docs/images/, as the other browser tests do).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest

from a11y_pages import PAGES
from serving import REFERENCE, STUBS, add_staff, checks, course_folder, folder_zip, import_roster, signed_in, start_server
from serving import submit, wait_graded

REPO = Path(__file__).resolve().parents[2]
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]
EXAMPLES = REPO / "examples" / "01_tensors"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
FAILING_IMPACTS = ("serious", "critical")

pytest.importorskip("starlette")
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
pytestmark = [pytest.mark.long,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")]


@dataclass
class Site:
    """A served course with something on every page, and the batch pages of the same class."""

    url: str
    tokens: dict[str, str]
    staff: str
    submission: str  # s001's, graded
    report: Path  # report.html of `checks grade` over the example class
    similarity: Path  # similarity.html of `checks similarity` over it


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("a11y")
    folder = course_folder(tmp, extra='roster = "roster.csv"\n')
    tokens = import_roster(folder)
    staff = add_staff(folder, "tina", "ta")
    with contextlib.ExitStack() as stack:
        if importlib.util.find_spec("pylti1p3") is not None:  # the LMS's page: a course registered with a platform
            from checks.lti.keys import tool_key
            from lti_platform import running

            platform = stack.enter_context(running(tool_key(folder, create=True).jwks(),
                                                   "http://127.0.0.1/lti/launch"))
            with (folder / "course.toml").open("a") as out:
                out.write("\n" + platform.lti_table("http://127.0.0.1/lti/launch"))
        yield from _served(tmp, folder, tokens, staff)


def _served(tmp, folder, tokens, staff):
    server = start_server(folder)
    try:
        work = tmp / "work"
        work.mkdir()
        (work / "strides.py").write_bytes((REFERENCE / "strides.py").read_bytes())
        (work / "broadcasting.py").write_bytes((STUBS / "broadcasting.py").read_bytes())
        (work / "quiz.toml").write_bytes((REFERENCE / "quiz.toml").read_bytes())
        with server.client(tokens["s001"]) as http:
            reply = submit(http, folder_zip(work))
            assert reply.status_code == 202, reply.text
            submission = reply.json()["id"]
            assert wait_graded(http, submission)["status"] == "done"
        student, csrf = signed_in(server, "s001", tokens["s001"], f"/submissions/{submission}")
        try:  # a regrade request, for the pages that list them
            asked = student.post(f"/submissions/{submission}/regrade",
                                 data={"csrf": csrf, "question": "strides.contiguous_strides", "message": "look again"})
            assert asked.status_code == 303, asked.text
        finally:
            student.close()
        ta, csrf = signed_in(server, "tina", staff, "/staff/students/s001")
        try:  # an extension in force, for the revoke form
            granted = ta.post("/staff/extensions", data={"csrf": csrf, "student": "s001", "action": "grant",
                                                         "assignment": "01_tensors", "reason": "ill",
                                                         "until": "2030-07-07T23:59:00+00:00"})
            assert granted.status_code == 303, granted.text
        finally:
            ta.close()
        batch = tmp / "class"
        for name in ("ada_lovelace", "ben_bitdiddle", "cy_dee", "reference"):
            shutil.copytree(EXAMPLES / name, batch / name)
        (batch / "no_broadcasting").mkdir()  # a packaging problem: a file left out
        for name in ("strides.py", "quiz.toml"):
            (batch / "no_broadcasting" / name).write_bytes((EXAMPLES / "cy_dee" / name).read_bytes())
        graded = checks("--course", str(REPO), "grade", "01_tensors", str(batch), "--out", str(tmp / "grades"),
                        timeout=600)
        assert graded.returncode == 0, graded.stdout + graded.stderr
        compared = checks("--course", str(REPO), "similarity", "01_tensors", str(batch), "--out", str(tmp / "similar"))
        assert compared.returncode == 0, compared.stdout + compared.stderr
        yield Site(server.url, tokens, staff, submission, tmp / "grades" / "report.html",
                   tmp / "similar" / "similarity.html")
    finally:
        server.kill(15)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def sign_in(page, url: str, user: str, token: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=user]", user)
    page.fill("input[name=token]", token)
    page.click("button:has-text('Sign in')")
    page.wait_for_url(lambda now: not now.endswith("/login"))


def pages(site: Site) -> dict[str, tuple[str | None, str, str]]:
    """name -> (who is signed in, address, the button pressed there): every page of the server
    (a11y_pages.PAGES), and the batch pages."""
    users = {None: None, "student": "s001", "staff": "tina"}
    every = {name: (users[page.who], page.address.format(submission=site.submission), page.press)
             for name, page in PAGES.items()}
    if importlib.util.find_spec("pylti1p3") is None:  # the `lms` extra: the course has no [lti] then
        del every["lms"]
    every["report"] = (None, site.report.as_uri(), "")
    every["similarity"] = (None, site.similarity.as_uri(), "")
    return every


def axe_violations(page) -> list[dict]:
    """axe-core's violations of WCAG 2.0/2.1 A and AA and its best practices on the page as it is now."""
    for _ in range(5):  # a page that reloads itself (as the class view did) may go away under axe: once more
        try:
            page.wait_for_load_state()
            page.add_script_tag(path=str(AXE))
            return _axe_run(page)
        except playwright_api.Error as error:
            if "context was destroyed" not in str(error):
                raise
    raise AssertionError(f"{page.url} reloaded itself under axe five times")


def _axe_run(page) -> list[dict]:
    return page.evaluate("""async (tags) => {
        const found = await axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
        return found.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length,
                                           sample: v.nodes.slice(0, 2).map(n => n.target.join(" "))}));
    }""", AXE_TAGS)


def visit(browser, site: Site, who: str | None, address: str, press: str = "", *, width: int = 1100,
          scale: float = 1):
    context = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=scale,
                                  bypass_csp=True)  # lets axe's script in; the pages' own CSP allows none inline
    page = context.new_page()
    if who is not None:
        sign_in(page, site.url, who, site.staff if who == "tina" else site.tokens[who])
    page.goto(address if "://" in address else site.url + address)
    if press:  # the page is the answer to a form
        with page.expect_navigation():
            page.get_by_role("button", name=press).click()
    return context, page


def test_no_page_has_a_serious_or_critical_axe_violation(site, browser):
    failing, titles, headings = {}, {}, {}
    for name, (who, address, press) in pages(site).items():
        context, page = visit(browser, site, who, address, press)
        try:
            titles[name] = page.title()
            headings[name] = page.locator("h1").count()
            found = [v for v in axe_violations(page) if v["impact"] in FAILING_IMPACTS]
            if found:
                failing[name] = found
        finally:
            context.close()
    assert not failing, "serious or critical axe violations:\n" + json.dumps(failing, indent=1)
    assert all(count == 1 for count in headings.values()), f"h1 elements per page: {headings}"
    del titles["staff-submission"]  # the same page as the student's, the same address
    assert len(set(titles.values())) == len(titles), f"pages share a title: {titles}"


@pytest.mark.parametrize("width", [320])
def test_every_page_reflows_at_320_px(site, browser, width, tmp_path):
    """No page scrolls sideways at 320 CSS px: 1280 px at 400 %, and what 200 % makes of a 640 px window."""
    wide = {}
    for name, (who, address, press) in pages(site).items():
        context, page = visit(browser, site, who, address, press, width=width)
        try:
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            if overflow > 1:
                wide[name] = overflow
        finally:
            context.close()
    assert not wide, f"pages wider than {width} px (by so many px): {wide}"


def focused(page) -> str:
    """A description of the focused element: its tag, and its text or name."""
    return page.evaluate("""() => { const e = document.activeElement;
        return e ? `${e.tagName.toLowerCase()}|${e.getAttribute("name") || ""}|${(e.innerText || e.value || "").trim()}` : ""; }""")


def tab_to(page, wanted, *, limit: int = 60, pause_ms: int = 0) -> str:
    """Press Tab until the focused element's description contains `wanted`; fail after `limit` presses."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        if pause_ms:
            page.wait_for_timeout(pause_ms)
        now = focused(page)
        seen.append(now)
        if wanted in now:
            return now
    raise AssertionError(f"{wanted!r} not reached by keyboard in {limit} presses of Tab: {seen}")


def sign_in_by_keyboard(page, url: str, user: str, token: str) -> None:
    page.goto(f"{url}/login")
    page.keyboard.press("Tab")
    assert "Skip to the content" in focused(page)  # the first stop: the skip link
    page.keyboard.press("Enter")
    tab_to(page, "input|user|")
    page.keyboard.type(user)
    page.keyboard.press("Tab")
    page.keyboard.type(token)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda now: urlparse(now).path != "/login")  # the skip link made it /login#main


def test_keyboard_only_submit_read_feedback_ask_a_regrade_and_reach_every_staff_action(site, browser, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name in ("strides.py", "broadcasting.py", "quiz.toml"):
        (work / name).write_bytes((REFERENCE / name).read_bytes())
    page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    sign_in_by_keyboard(page, site.url, "s002", site.tokens["s002"])
    tab_to(page, "input|files|")
    with page.expect_file_chooser() as chooser:  # the file dialog, opened from the keyboard
        page.keyboard.press("Space")
    chooser.value.set_files([str(work / name) for name in ("strides.py", "broadcasting.py", "quiz.toml")])
    tab_to(page, "button||Submit 01_tensors")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda now: "/submissions/" in now)
    if page.locator("button.live-toggle").count():  # still queued or grading: it updates in place
        tab_to(page, "Pause live updates")
        playwright_api.expect(page.locator("#live-status")).to_contain_text("done", timeout=120_000)
        assert "button|" in focused(page)  # the update left the focus where it was
        assert page.locator("#live-status").get_attribute("role") == "status"  # and was announced
    playwright_api.expect(page.locator("#feedback")).to_contain_text("Score: 100 / 100")
    tab_to(page, "a||feedback.html")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda now: now.endswith("/feedback.html"))
    assert "feedback for s002" in page.title()
    page.go_back()
    tab_to(page, "select|question|")
    page.keyboard.press("ArrowDown")  # the second question
    page.keyboard.press("Tab")
    page.keyboard.type("Please look at this one again.")
    tab_to(page, "button||Send the regrade request")
    page.keyboard.press("Enter")
    playwright_api.expect(page.locator("#regrades")).to_contain_text("Please look at this one again.")
    page.context.close()

    staff = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    sign_in_by_keyboard(staff, site.url, "tina", site.staff)
    actions = staff.evaluate("""() => [...document.querySelectorAll(
        "main form button:not([disabled]), main a[href^='/staff/gradebook/'], main nav a, main .live-toggle")]
        .map(e => (e.innerText || "").trim())""")
    assert len(actions) >= 5, actions  # grade again, release, the pause button, the gradebook files, the tabs
    reached = set()
    for _ in range(80):  # slowly: the class view updates itself (every 2 s) under the keyboard
        staff.keyboard.press("Tab")
        staff.wait_for_timeout(250)
        reached.add(focused(staff).rsplit("|", 1)[-1])
        if set(actions) <= reached:
            break
    assert set(actions) <= reached, f"not reached by keyboard: {set(actions) - reached}"
    staff.keyboard.press("Shift+Tab")  # back to the last action and use it from the keyboard
    staff.wait_for_timeout(200)
    tab_to(staff, "button||Grade every submission of 01_tensors again", limit=80)
    staff.keyboard.press("Enter")
    staff.wait_for_url(lambda now: "/staff?assignment=01_tensors" in now)
    staff.context.close()


SHOTS = {  # docs/images/: (page, CSS width, device scale: 2 is 200 % zoom of a 640 px window)
    "a11y-login-320.png": ("login", 320, 1),
    "a11y-student-submission-320.png": ("student-submission", 320, 1),
    "a11y-class-view-320.png": ("class-view", 320, 1),
    "a11y-report-320.png": ("report", 320, 1),
    "a11y-similarity-320.png": ("similarity", 320, 1),
    "a11y-student-home-200.png": ("student-home", 640, 2),
    "a11y-class-view-200.png": ("class-view", 640, 2),
    "a11y-report-200.png": ("report", 640, 2),
}


def test_screenshots_at_320_px_and_200_percent(site, browser, tmp_path):
    every = pages(site)
    for shot, (name, width, scale) in SHOTS.items():
        context, page = visit(browser, site, *every[name], width=width, scale=scale)
        try:
            page.screenshot(path=str(tmp_path / shot), full_page=False)
        finally:
            context.close()
    if os.environ.get("CHECKS_UPDATE_SCREENSHOT"):
        (REPO / "docs" / "images").mkdir(exist_ok=True)
        for shot in SHOTS:
            shutil.copy(tmp_path / shot, REPO / "docs" / "images" / shot)
