"""RFC 8288 Link headers as the LTI services page their lists (checks.lti.links, issue 46): the next
page's URL exactly as written, `rel` quoted or not or in a list, relative URLs resolved."""

from __future__ import annotations

import pytest

from checks.lti.links import LinkHeaderError, next_url, parse_links

BASE = "https://LMS.example/api/Courses/7/Members?Page=1"


@pytest.mark.parametrize("header, expected", [
    ('<https://LMS.example/Courses/7/Members?Page=2&Cursor=AbC>; rel="next"',
     "https://LMS.example/Courses/7/Members?Page=2&Cursor=AbC"),  # never lower-cased
    ("<https://lms.example/m?p=2>; rel=next", "https://lms.example/m?p=2"),  # a token: unquoted
    ('<https://lms.example/m?p=1>; rel="prev", <https://lms.example/m?p=3>; rel="Prev NEXT"',
     "https://lms.example/m?p=3"),  # a relation list; relation types compared without case
    ('<https://lms.example/m?a=1,2;b>; title="a; rel=next, <x>"; rel=next', "https://lms.example/m?a=1,2;b"),
    ('<https://lms.example/first>; rel=first,\n <https://lms.example/last>; rel=last, '
     '<https://lms.example/two>; rel="next"', "https://lms.example/two"),
    ("</api/Courses/7/Members?Page=2>; rel=next", "https://LMS.example/api/Courses/7/Members?Page=2"),  # relative
    ("<?Page=2>; rel=next", "https://LMS.example/api/Courses/7/Members?Page=2"),
    ('<https://lms.example/m?p=2>; rel="nextpage"', None),
    ('<https://lms.example/m?p=2>; REL="next"', "https://lms.example/m?p=2"),  # parameter names: any case
    ('<https://lms.example/m?p=2>; rel="prev"; rel="next"', None),  # a second rel is ignored (RFC 8288 3.3)
    ("", None),
    (None, None),
])
def test_the_next_page_is_found_as_rfc_8288_writes_it(header, expected):
    assert next_url(header, BASE) == expected


@pytest.mark.parametrize("header", ["https://lms.example/m; rel=next", "<https://lms.example/m; rel=next",
                                    '<https://lms.example/m>; rel="next', "<a>; =next", "<a> rel=next"])
def test_a_header_that_is_not_rfc_8288_is_refused_saying_where(header):
    with pytest.raises(LinkHeaderError):
        next_url(header, BASE)


def test_parameters_keep_their_values_and_quoted_escapes():
    assert parse_links(r'<a>; rel=next; title="say \"hi\"", <b>') == [("a", {"rel": "next", "title": 'say "hi"'}),
                                                                      ("b", {})]
