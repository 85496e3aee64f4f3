"""Every field of the course server's forms has a label a screen reader announces (issue 44): each
input, select and textarea that is not hidden sits inside a <label> or names one with aria-label.
Read from the templates' markup, so that a new field without one fails here."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

TEMPLATES = Path(__file__).resolve().parents[2] / "src" / "checks" / "server" / "templates"


class Fields(HTMLParser):
    """The fields outside any <label> (and without aria-label), by name."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.unlabelled: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attributes = dict(attrs)
        if tag == "label":
            self.depth += 1
        elif tag in ("input", "select", "textarea") and attributes.get("type") != "hidden":
            if not self.depth and not attributes.get("aria-label"):
                self.unlabelled.append(attributes.get("name") or tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self.depth = max(0, self.depth - 1)


@pytest.mark.parametrize("template", sorted(TEMPLATES.glob("*.j2")), ids=lambda path: path.name)
def test_every_form_field_has_a_label(template):
    fields = Fields()
    fields.feed(template.read_text())
    assert fields.unlabelled == [], f"{template.name}: fields without a label"


def test_the_check_finds_an_unlabelled_field():
    fields = Fields()
    fields.feed('<form><label>Why <input name="a"></label><input name="reason" placeholder="why"></form>')
    assert fields.unlabelled == ["reason"]
