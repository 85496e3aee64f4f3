"""HTTP `Link` headers (RFC 8288), read the way the LTI services page their lists: the URL of the
next page, exactly as the platform wrote it.

Why our own: PyLTI1p3 2.0.0 finds `rel="next"` with a regex on the lower-cased header, so a
platform with case-sensitive URLs is sent to a page that does not exist, and an unquoted
`rel=next` (RFC 8288 allows a token) or a relation list (`rel="prev next"`) is not seen at all:
the roster then stops at page 1 and a line item on a later page is missed (and made again).
Here a link value is `<URI-Reference>` then `;`-separated parameters, each a token or a quoted
string; `rel` is a space-separated list of relation types compared without regard to case
(the URL never is); a relative URI is resolved against the URL of the response it came with.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

_SEPARATORS = set('()<>@,;:\\"/[]?={} \t')


class LinkHeaderError(ValueError):
    """A Link header that is not RFC 8288's syntax; str() says where."""


def parse_links(header: str) -> list[tuple[str, dict[str, str]]]:
    """Each link of a Link header's value (several headers joined with `,`): (its URI reference,
    as written, and its parameters, names lower-cased; of a parameter given twice, the first)."""
    links: list[tuple[str, dict[str, str]]] = []
    i, n = 0, len(header)

    def skip_space(at: int) -> int:
        while at < n and header[at] in " \t\r\n":
            at += 1
        return at

    while True:
        i = skip_space(i)
        while i < n and header[i] == ",":  # empty list elements are allowed (RFC 9110 #rule)
            i = skip_space(i + 1)
        if i >= n:
            return links
        if header[i] != "<":
            raise LinkHeaderError(f"a link must start with `<` at character {i} of {header!r}")
        end = header.find(">", i + 1)
        if end < 0:
            raise LinkHeaderError(f"no `>` closes the link that starts at character {i} of {header!r}")
        target, params = header[i + 1:end], {}
        i = skip_space(end + 1)
        while i < n and header[i] == ";":
            i = skip_space(i + 1)
            start = i
            while i < n and header[i] not in _SEPARATORS:
                i += 1
            name = header[start:i].lower()
            if not name:
                raise LinkHeaderError(f"a parameter without a name at character {start} of {header!r}")
            i = skip_space(i)
            value = ""
            if i < n and header[i] == "=":
                i = skip_space(i + 1)
                if i < n and header[i] == '"':
                    i += 1
                    chars = []
                    while i < n and header[i] != '"':
                        if header[i] == "\\" and i + 1 < n:
                            i += 1
                        chars.append(header[i])
                        i += 1
                    if i >= n:
                        raise LinkHeaderError(f"an unclosed quoted string in {header!r}")
                    value = "".join(chars)
                    i += 1
                else:
                    start = i
                    while i < n and header[i] not in _SEPARATORS:
                        i += 1
                    value = header[start:i]
                i = skip_space(i)
            params.setdefault(name, value)
        if i < n and header[i] != ",":
            raise LinkHeaderError(f"unexpected {header[i]!r} at character {i} of {header!r}")
        links.append((target, params))


def relations(params: dict[str, str]) -> set[str]:
    """A link's relation types (`rel`), lower-cased: `rel="prev next"` is two."""
    return {rel.lower() for rel in params.get("rel", "").split()}


def next_url(header: str | None, base: str) -> str | None:
    """The URL a Link header names `next` (resolved against `base`, the URL it came from, and
    otherwise exactly as written), or None when it names none."""
    if not header:
        return None
    for target, params in parse_links(header):
        if "next" in relations(params):
            return target if urlsplit(target).scheme else urljoin(base, target)
    return None
