"""Every field of the course server's forms has a label a screen reader announces (issue 44): each
input, select and textarea that is not hidden sits inside a <label>, is named by a <label for=its id>,
or names one with aria-label.
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
        self.outside: list[tuple[str, str]] = []  # (id, name) of fields outside a <label>, for a `for=`
        self.named: set[str] = set()  # the ids <label for=...> names

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attributes = dict(attrs)
        if tag == "label":
            self.depth += 1
            if attributes.get("for"):
                self.named.add(attributes["for"])
        elif tag in ("input", "select", "textarea") and attributes.get("type") != "hidden":
            if not self.depth and not attributes.get("aria-label"):
                self.outside.append((attributes.get("id") or "", attributes.get("name") or tag))

    def close(self) -> None:
        super().close()
        self.unlabelled = [name for ident, name in self.outside if not ident or ident not in self.named]

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self.depth = max(0, self.depth - 1)


@pytest.mark.parametrize("template", sorted(TEMPLATES.glob("*.j2")), ids=lambda path: path.name)
def test_every_form_field_has_a_label(template):
    fields = Fields()
    fields.feed(template.read_text())
    fields.close()
    assert fields.unlabelled == [], f"{template.name}: fields without a label"


def test_the_check_finds_an_unlabelled_field():
    fields = Fields()
    fields.feed('<form><label>Why <input name="a"></label><input name="reason" placeholder="why">'
                '<label for="b">Bee</label><input id="b" name="bee"><input id="c" name="sea"></form>')
    fields.close()
    assert fields.unlabelled == ["reason", "sea"]
