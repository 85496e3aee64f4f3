"""DIR/report.html: the batch for people, in one self-contained page (no script, nothing fetched).

Per-question mean and pass rate, a histogram of total scores drawn as inline SVG, what the class
got wrong (reports/analytics.py: common mistakes per question, failures no diagnosis explains,
with plots of pass rates and mistake counts), what the latest regrade changed (reports/regrade.py), every
submission with a link to its feedback (feedback.html, beside feedback.md), each one's warnings
(a missing or misnamed file, files skipped, a name changed), and what the grader itself could not grade. Rendered from the gradebook with Jinja2 and autoescaping: names and
messages come partly from students, and every value is made inert.visible before it is escaped.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import jinja2
import markupsafe

from checks.course import inert
from checks.reports.analytics import ANALYTICS_JSON, MISTAKES_CSV, ClassAnalytics, class_analytics
from checks.reports.gradebook import Graded
from checks.reports.plots import bar_chart
from checks.reports.regrade import REGRADE_CSV, RegradeReport
from checks.reports.render import FEEDBACK_HTML_FILE, RESULTS_FILE, error_summary, question_stats

TEMPLATES = Path(__file__).parent / "templates"
REPORT_FILE = "report.html"
BINS = 10  # of the total score, as a share of the maximum


@dataclass(frozen=True)
class Bin:
    label: str  # "40–49%"
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Histogram:
    bins: list[Bin]
    width: int
    height: int
    plot_top: int
    plot_bottom: int
    plot_left: int
    highest: int  # the tallest bar's count

    @property
    def ticks(self) -> list[tuple[int, float]]:
        """(count, y) for a few round counts on the vertical axis."""
        step = max(1, -(-self.highest // 4))
        span = self.plot_bottom - self.plot_top
        return [(count, self.plot_bottom - span * count / max(self.highest, 1))
                for count in range(0, self.highest + 1, step)]


def histogram(shares: list[float], *, width: int = 640, height: int = 260) -> Histogram:
    """Counts of total scores (as shares of the maximum, 0..1) in BINS equal bins; 100% in the last."""
    counts = [0] * BINS
    for share in shares:
        counts[min(BINS - 1, max(0, int(share * BINS + 1e-9)))] += 1
    left, right, top, bottom = 40, 10, 20, height - 40
    highest = max(counts, default=0)
    slot = (width - left - right) / BINS
    bins = []
    for k, count in enumerate(counts):
        bar = (bottom - top) * count / highest if highest else 0.0
        label = f"{k * 100 // BINS}–{(k + 1) * 100 // BINS - 1}%" if k < BINS - 1 else f"{k * 100 // BINS}–100%"
        bins.append(Bin(label, count, round(left + k * slot + 2, 1), round(bottom - bar, 1), round(slot - 4, 1),
                        round(bar, 1)))
    return Histogram(bins, width, height, top, bottom, left, highest)


def _inert(value: object) -> object:
    """Every value the template prints, before autoescape: no control character, no lone surrogate."""
    if isinstance(value, markupsafe.Markup):  # escaped already (join's): kept markup, only made visible
        return markupsafe.Markup(inert.visible(str(value)))
    return inert.visible(value, keep="") if isinstance(value, str) else value


def mistake_plots(analytics: ClassAnalytics, *, top: int = 12) -> dict[str, markupsafe.Markup]:
    """The pass rate of each question, and the class's most common mistakes (over all questions),
    as inline SVG bar charts."""
    size = max(analytics.class_size, 1)
    charts = {"pass_rates": bar_chart(
        [(q.qid, q.pass_rate, f"{q.qid}: {q.passed} of {analytics.class_size} with full marks") for q in analytics.questions],
        chart_id="pass-rates", title="Share of the class with full marks, per question", maximum=1.0, percent=True,
        colour="#2f9e62")}
    mistakes = sorted(((m.count, q.qid, m.text) for q in analytics.questions for m in q.mistakes), key=lambda t: -t[0])
    if mistakes:
        charts["mistakes"] = bar_chart(
            [(f"{qid}: {text}", count, f"{qid}: {text} ({count} of {size})") for count, qid, text in mistakes[:top]],
            chart_id="mistake-counts", title="Submissions that made each mistake", colour="#c0552b")
    return charts


def render_report(assignment: str, records: list[Graded], *, title: str = "",
                  regrade: RegradeReport | None = None) -> str:
    results = [record.result for record in records]
    analytics = class_analytics(assignment, records)
    graded = [r for r in results if not r.error]
    max_score = max((r.max_score for r in graded), default=0.0)
    totals = [r.final_score for r in graded]
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                     finalize=_inert)
    environment.filters["path"] = lambda name: quote(inert.mend(name), safe="")
    environment.filters["error_summary"] = error_summary
    return environment.get_template("report.html.j2").render(
        assignment=assignment,
        title=title,
        records=sorted(records, key=lambda g: g.name),
        graded=graded,
        failed=[g for g in sorted(records, key=lambda g: g.name) if not g.ok],
        refused=[g for g in sorted(records, key=lambda g: g.name) if g.ok and g.result.refused],
        warned=[g for g in sorted(records, key=lambda g: g.name) if g.ok and g.result.warnings],
        questions=question_stats(results),
        max_score=max_score,
        mean=statistics.fmean(totals) if totals else None,
        median=statistics.median(totals) if totals else None,
        histogram=histogram([r.final_score / r.max_score if r.max_score else 0.0 for r in graded]),
        adjusted=[g for g in sorted(records, key=lambda g: g.name) if g.ok and (g.result.adjustments
                                                                                 or g.result.submitted_at)],
        versions=sorted({g.grader_version for g in records}),
        devices=sorted({d for r in results for d in r.devices}),
        last_graded=max((g.graded_at for g in records), default=""),
        feedback_file=FEEDBACK_HTML_FILE,
        results_file=RESULTS_FILE,
        analytics=analytics,
        analysed={q.qid: q for q in analytics.questions},
        plots=mistake_plots(analytics),
        analytics_files=(ANALYTICS_JSON, MISTAKES_CSV),
        regrade=regrade,
        regrade_file=REGRADE_CSV,
    )
