"""The course server in a real browser (Playwright on Debian's Chromium): a student signs in,
uploads files and reads the feedback; a second student cannot open it; staff watch the class view
update by itself. Takes the screenshots of docs/server-*.md into the test's temp dir
(CHECKS_UPDATE_SCREENSHOT=1 copies them to docs/, as the JupyterLab test does).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from serving import REFERENCE, STUBS, add_staff, course_folder, folder_zip, import_roster, start_server, submit

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]
SHOTS = ("server-feedback.png", "server-class-view.png")  # docs/, the students' and the staff's page

pytest.importorskip("starlette")
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
pytestmark = [pytest.mark.long,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")]


def sign_in(page, url: str, user: str, token: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=user]", user)
    page.fill("input[name=token]", token)
    page.click("button:has-text('Sign in')")


def test_students_submit_and_read_feedback_and_staff_watch_the_class(tmp_path):
    feedback_shot, class_shot = (tmp_path / name for name in SHOTS)
    folder = course_folder(tmp_path)
    tokens = import_roster(folder)
    staff = add_staff(folder, "tina", "ta")
    server = start_server(folder)
    try:
        with playwright_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                ada = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
                sign_in(ada, server.url, "s001", tokens["s001"])
                playwright_api.expect(ada.locator("h1")).to_have_text("Submit")
                # a partly done submission: stub broadcasting, reference strides
                work = tmp_path / "work"
                work.mkdir()
                (work / "strides.py").write_bytes((REFERENCE / "strides.py").read_bytes())
                (work / "broadcasting.py").write_bytes((STUBS / "broadcasting.py").read_bytes())
                (work / "quiz.toml").write_bytes((REFERENCE / "quiz.toml").read_bytes())
                ada.set_input_files("section.assignment:has-text('01_tensors') input[type=file]",
                                    [str(work / name) for name in ("strides.py", "broadcasting.py", "quiz.toml")])
                ada.click("button:has-text('Submit 01_tensors')")
                playwright_api.expect(ada.locator("#feedback")).to_be_visible(timeout=60_000)  # the page refreshes itself
                playwright_api.expect(ada.locator("#feedback")).to_contain_text("Score: 76 / 100")
                playwright_api.expect(ada.locator("#status")).to_contain_text("done")
                own_url = ada.url
                ada.screenshot(path=str(feedback_shot), full_page=False)
                feedback = ada.goto(own_url + "/feedback.html")
                assert feedback.status == 200 and "feedback for s001" in ada.title()
                ada.goto(server.url + "/")
                playwright_api.expect(ada.locator("table.rows")).to_contain_text("76 / 100")

                ben = browser.new_context().new_page()
                sign_in(ben, server.url, "s002", tokens["s002"])
                assert ben.goto(own_url).status == 404
                assert ben.goto(own_url + "/feedback.html").status == 404
                assert "76 / 100" not in ben.goto(server.url + "/").text()

                ta = browser.new_context(viewport={"width": 1100, "height": 1000}).new_page()
                sign_in(ta, server.url, "tina", staff)
                playwright_api.expect(ta.locator("h1")).to_have_text("Class view: 01_tensors")
                playwright_api.expect(ta.locator("#total")).to_have_text("1")
                with server.client(tokens["s002"]) as http:  # another student submits from the terminal
                    assert submit(http, folder_zip(REFERENCE)).status_code == 202
                playwright_api.expect(ta.locator("#total")).to_have_text("2", timeout=30_000)  # no reload by us
                playwright_api.expect(ta.locator("#students")).to_have_text("2", timeout=30_000)
                playwright_api.expect(ta.locator("table.stats")).to_contain_text("broadcasting.broadcast_shape")
                assert re.search(r"50 %", ta.locator("table.stats").inner_text())  # half the class passes it
                ta.screenshot(path=str(class_shot), full_page=True)
                ta.click("a:has-text('s001')")
                playwright_api.expect(ta.locator("h1")).to_contain_text("s001")
            finally:
                browser.close()
        if os.environ.get("CHECKS_UPDATE_SCREENSHOT"):
            for shot in (feedback_shot, class_shot):
                shutil.copy(shot, REPO / "docs" / shot.name)
    finally:
        server.kill(15)
