"""A reference file's solution regions: the lines between `# BEGIN SOLUTION [hint: ...]` and
`# END SOLUTION`. `checks build` turns each into a stub, the nbgrader export into nbgrader's own
markers; one walk, so that both agree on what a region is and refuse the same mistakes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checks.course.assignment import CourseError

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION(?:\s+hint:\s*(?P<hint>.*?))?\s*$")
END = re.compile(r"^(?P<indent>[ \t]*)# END SOLUTION\s*$")


class RegionError(CourseError):
    """Markers that do not pair up; str() names the file and line."""


@dataclass(frozen=True)
class Region:
    line: int  # the BEGIN SOLUTION line's number
    indent: str  # the BEGIN SOLUTION line's
    hint: str | None
    body: list[str]  # the lines between the markers, with their line ends
    end: str  # the END SOLUTION line as written (its line end included)


def split_regions(source: str, filename: str = "<source>") -> list[tuple[int, str] | Region]:
    """The file as its lines outside the regions, (number, line with its end), and its regions,
    in order; RegionError for a region never closed, nested, or an END without a BEGIN."""
    parts: list[tuple[int, str] | Region] = []
    opened: tuple[int, re.Match[str]] | None = None
    body: list[str] = []
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if opened is not None:
                raise RegionError(f"{filename}:{number}: BEGIN SOLUTION inside the region opened at line {opened[0]}")
            opened, body = (number, begin), []
        elif end:
            if opened is None:
                raise RegionError(f"{filename}:{number}: END SOLUTION without a BEGIN SOLUTION")
            parts.append(Region(opened[0], opened[1]["indent"], opened[1]["hint"], body, line))
            opened = None
        elif opened is not None:
            body.append(line)
        else:
            parts.append((number, line))
    if opened is not None:
        raise RegionError(f"{filename}:{opened[0]}: BEGIN SOLUTION is never closed")
    return parts
