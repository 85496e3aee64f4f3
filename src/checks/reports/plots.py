"""Small plots for report.html, drawn as inline SVG: nothing to install, nothing fetched when the page
is viewed, and each bar carries its number (data-value, a <title> tooltip) for a test to read.

Labels may be student text (a diagnosis quoting what came back): made visible (course/inert.py),
then escaped here, since the SVG is handed to the template as markup.
"""

from __future__ import annotations

import html

import markupsafe

from checks.course import inert

ROW_HEIGHT = 22
LABEL_CHARS = 48  # a label is cut to this many characters; its <title> holds it whole


def bar_chart(rows: list[tuple[str, float, str]], *, chart_id: str, title: str, maximum: float | None = None,
              percent: bool = False, width: int = 640, label_width: int = 300, colour: str = "#3b6fb6") -> markupsafe.Markup:
    """A horizontal bar chart: one bar per (label, value, tooltip) row, longest at `maximum` (default:
    the largest value); values printed as percentages of 1 with `percent`, else as counts."""
    top = max([maximum or 0.0, *(value for _, value, _ in rows)]) or 1.0
    height = ROW_HEIGHT * len(rows) + 28
    plot = width - label_width - 60
    parts = [f'<svg id="{_e(chart_id)}" class="chart" role="img" aria-labelledby="{_e(chart_id)}-title" '
             f'width="100%" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',  # scales with the page
             f'<title id="{_e(chart_id)}-title">{_e(title)}</title>']
    for k, (label, value, tooltip) in enumerate(rows):
        y = 8 + k * ROW_HEIGHT
        bar = round(plot * value / top, 1)
        shown = f"{value:.0%}" if percent else f"{value:g}"
        short = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        parts += [f'<text x="{label_width - 8}" y="{y + 14}" text-anchor="end">{_e(short)}<title>{_e(label)}</title></text>',
                  f'<rect class="hbar" x="{label_width}" y="{y + 3}" width="{bar}" height="{ROW_HEIGHT - 7}" '
                  f'fill="{colour}" data-value="{value:g}"><title>{_e(tooltip)}</title></rect>',
                  f'<text x="{label_width + bar + 5}" y="{y + 14}">{_e(shown)}</text>']
    axis = 8 + len(rows) * ROW_HEIGHT + 2
    parts += [f'<line class="axis" x1="{label_width}" x2="{label_width}" y1="6" y2="{axis}"/>', "</svg>"]
    return markupsafe.Markup("\n".join(parts))


def _e(text: str) -> str:
    return html.escape(inert.visible(str(text), keep=""), quote=True)
