"""What `checks similarity` writes: similarity.csv (every pair that shares anything, ranked) and
similarity.html (the ranking, and each top pair's matched regions side by side).

Names and code come from students: the page is rendered by Jinja2 with autoescaping, every value
made inert.visible first, and holds no script and fetches nothing (a Content-Security-Policy
says so); CSV cells go through inert.csv_cell (no formula).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import jinja2
import markupsafe

from checks.course import inert
from checks.similarity.compare import Code, Comparison, Pair, Region, shared_regions

CSV_FILE = "similarity.csv"
HTML_FILE = "similarity.html"
TEMPLATES = Path(__file__).parent / "templates"
CONTEXT_LINES = 2  # shown around a matched region
MAX_REGION_LINES = 80  # of one side of a region on the page
MAX_REGIONS = 8  # per pair on the page
MAX_ROWS = 500  # of the ranking on the page (the CSV has every pair)


def regions_text(regions: list[Region]) -> str:
    """Regions as one CSV cell: `a.py:10-25 ~ b.py:40-55; ...`."""
    return "; ".join(f"{r.file_a}:{r.first_a}-{r.last_a} ~ {r.file_b}:{r.first_b}-{r.last_b}" for r in regions)


def similarity_csv(comparison: Comparison, threshold: float, codes: list[Code] | None = None) -> str:
    """A row per pair sharing anything, most similar first: rank, both names, similarity, each
    side's share, the fingerprints shared, whether it is at or above the threshold."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")

    def row(cells: list) -> None:  # names come from students: no cell is a formula
        writer.writerow([inert.csv_cell(cell) for cell in cells])

    row(["rank", "a", "b", "similarity", "share_of_a", "share_of_b", "shared_fingerprints", "fingerprints_a",
         "fingerprints_b", "at_or_above_threshold"])
    for rank, p in enumerate(comparison.pairs, 1):
        row([rank, p.a, p.b, round(p.similarity, 4), round(p.share_a, 4), round(p.share_b, 4), p.shared, p.size_a,
             p.size_b, "yes" if p.similarity >= threshold else "no"])
    return buffer.getvalue()


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    matched: bool


@dataclass(frozen=True)
class Side:
    file: str
    first: int
    last: int
    lines: list[Line]


@dataclass(frozen=True)
class ShownRegion:
    a: Side
    b: Side
    fingerprints: int


@dataclass(frozen=True)
class ShownPair:
    rank: int
    pair: Pair
    regions: list[ShownRegion]


def _side(code: Code, file: str, first: int, last: int, matched: set[int]) -> Side:
    lines = code.files.get(file, "").splitlines()
    start = max(1, first - CONTEXT_LINES)
    end = min(len(lines), last + CONTEXT_LINES, start + MAX_REGION_LINES - 1)
    return Side(file, first, last, [Line(n, lines[n - 1], n in matched) for n in range(start, end + 1)])


def shown_pairs(comparison: Comparison, codes: list[Code], shown: int) -> list[ShownPair]:
    """The `shown` most similar pairs with their matched regions, as the page lays them out."""
    by_name = {code.name: code for code in codes}
    out = []
    for rank, pair in enumerate(comparison.pairs[:shown], 1):
        a, b = by_name[pair.a], by_name[pair.b]
        shared = comparison.kept[pair.a] & comparison.kept[pair.b]
        regions = shared_regions(a, b, shared)[:MAX_REGIONS]
        made = []
        for r in regions:
            made.append(ShownRegion(_side(a, r.file_a, r.first_a, r.last_a, set(range(r.first_a, r.last_a + 1))),
                                    _side(b, r.file_b, r.first_b, r.last_b, set(range(r.first_b, r.last_b + 1))),
                                    r.fingerprints))
        out.append(ShownPair(rank, pair, made))
    return out


def _inert(value: object) -> object:
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(inert.visible(str(value)))
    return inert.visible(value, keep="\t") if isinstance(value, str) else value


def similarity_html(assignment: str, comparison: Comparison, codes: list[Code], *, threshold: float, shown: int,
                    skipped: dict[str, str]) -> str:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                     finalize=_inert)
    return environment.get_template("similarity.html.j2").render(
        assignment=assignment, pairs=comparison.pairs[:MAX_ROWS], total_pairs=len(comparison.pairs),
        submissions=len(codes), threshold=threshold, shown=shown_pairs(comparison, codes, shown),
        sizes=comparison.sizes, left_out_common=comparison.left_out_common, common_above=comparison.common_above,
        rings=comparison.rings, skipped=sorted(skipped.items()), csv_file=CSV_FILE)
