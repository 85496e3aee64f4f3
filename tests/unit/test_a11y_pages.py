"""The accessibility test visits every page of the course server (issue 47): its list
(tests/browser/a11y_pages.py) is held to the app's own routing table and templates, so that a
page added later is visited, or excluded with a reason, never skipped silently."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from a11y_pages import EXCLUDED_ROUTES, PAGES, PARTS, templates  # noqa: E402
from serving import course_folder  # noqa: E402

from checks.server.app import create_app  # noqa: E402
from checks.server.config import load_config  # noqa: E402
from checks.server.storage import Storage  # noqa: E402


def routes(tmp_path) -> set[str]:
    config = load_config(course_folder(tmp_path))
    storage = Storage(config.storage_url)
    try:
        app = create_app(config, storage, None)
        return {f"{method} {route.path}" for route in app.routes for method in (route.methods or ())
                if method != "HEAD"}
    finally:
        storage.close()


def test_every_route_of_the_app_is_visited_or_excluded_with_a_reason(tmp_path):
    served = routes(tmp_path)
    visited = {page.route for page in PAGES.values()}
    assert not visited - served, f"the list visits routes the app does not have: {visited - served}"
    stale = set(EXCLUDED_ROUTES) - served
    assert not stale, f"excluded routes the app no longer has: {stale}"
    assert not visited & set(EXCLUDED_ROUTES), "a route is both visited and excluded"
    missing = {route for route in served - visited - set(EXCLUDED_ROUTES) if route.startswith("GET ")}
    assert not missing, f"pages of the server the accessibility test does not visit: {missing}"
    unsaid = served - visited - set(EXCLUDED_ROUTES)
    assert not unsaid, f"routes neither visited nor excluded with a reason: {unsaid}"
    assert all(reason.strip() for reason in EXCLUDED_ROUTES.values())


def test_every_template_is_a_visited_page_or_a_part_of_one(tmp_path):
    shown = {page.template for page in PAGES.values()}
    present = templates()
    assert not set(PARTS) - present, f"parts that are no longer templates: {set(PARTS) - present}"
    unvisited = present - shown - set(PARTS)
    assert not unvisited, f"templates no visited page renders: {unvisited}"
    assert not {t for t in shown if t.endswith(".j2")} - present
