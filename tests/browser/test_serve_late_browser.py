"""A late student reads, in a real browser (Playwright on Debian's Chromium), the score the
gradebook counts: the late penalty taken, on the submission's page and in "My submissions",
never the raw 100 / 100 (issue 44).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from serving import REFERENCE, course_folder, import_roster, start_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]

pytest.importorskip("starlette")
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
pytestmark = [pytest.mark.long,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")]


def test_a_late_student_reads_the_penalised_score(tmp_path):
    due = (datetime.now(timezone.utc) - timedelta(hours=1)).replace(microsecond=0)  # one started day late
    folder = course_folder(tmp_path, policy=f'due = "{due.isoformat()}"\n[policy.late]\nkind = "per_day"\n'
                                            'percent = 20\n')
    tokens = import_roster(folder)
    server = start_server(folder)
    try:
        with playwright_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_context().new_page()
                page.goto(f"{server.url}/login")
                page.fill("input[name=user]", "s001")
                page.fill("input[name=token]", tokens["s001"])
                page.click("button:has-text('Sign in')")
                page.set_input_files("section.assignment:has-text('01_tensors') input[type=file]",
                                     [str(REFERENCE / name) for name in ("strides.py", "broadcasting.py", "quiz.toml")])
                page.click("button:has-text('Submit 01_tensors')")
                feedback = page.locator("#feedback")
                playwright_api.expect(feedback).to_be_visible(timeout=120_000)  # the page refreshes itself
                playwright_api.expect(feedback).to_contain_text("Score: 80 / 100")
                playwright_api.expect(feedback).to_contain_text("late policy, -20 points")
                assert "100 / 100" not in feedback.inner_text()
                page.goto(f"{server.url}/")
                playwright_api.expect(page.locator("table.rows")).to_contain_text(re.compile(r"80 / 100"))
                assert "100 / 100" not in page.locator("table.rows").inner_text()
            finally:
                browser.close()
    finally:
        server.kill(15)
