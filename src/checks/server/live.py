"""Pages that update in place (issue 47): the queued submission page and the class view poll
their own address with ?live=1 and get back, as JSON, only the parts of the page that change,
which live.js puts in place without a reload, without moving focus, and with a pause button.

A part is a template block named `live_<name>`: the page wraps it in the element of id `live-<name>`, and
the same block, rendered with the same context, is the part sent back. So the page and its
updates can never disagree, and a page without such blocks has nothing to update.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Template
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

PREFIX = "live_"
QUERY = "live"
SCRIPT = (Path(__file__).parent / "templates" / "live.js").read_text()
EVERY_SECONDS = 2


def wanted(request: Request) -> bool:
    """Whether the request asks for the page's live parts rather than the page (GET ...?live=1)."""
    return request.method == "GET" and QUERY in request.query_params


def parts(template: Template, context: dict[str, Any]) -> Response:
    """The page's live parts as JSON: {"parts": {element id: its inner HTML}, "done": no more to come}.
    `done` is the page's own `refresh` (a settled submission changes no more; the class view never settles)."""
    rendered = template.new_context(context)
    found = {name.replace("_", "-"): "".join(block(rendered))
             for name, block in template.blocks.items() if name.startswith(PREFIX)}
    return JSONResponse({"parts": found, "done": not context.get("refresh")})


async def script(request: Request) -> Response:
    """live.js, from the server itself: the pages' CSP runs no script from anywhere else."""
    return Response(SCRIPT, media_type="text/javascript")
