"""How `%checks test` shows a result: HTML in Jupyter, plain text in terminal IPython.

One object, two representations (IPython picks `_repr_html_` where it can show HTML, `__repr__`
elsewhere). Everything in it that came from student code (feedback, exception messages) is
escaped, never read as markup.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from checks.suites.quiz import AnswerForm
from checks.suites.scoring import NOT_STARTED, QuestionResult, SubmissionResult

STYLE = ("<style>.checks-report table{border-collapse:collapse;margin:.4em 0}"
         ".checks-report td,.checks-report th{padding:.2em .7em;text-align:left!important;border-bottom:1px solid #ddd}"
         ".checks-report .ok{color:#1a7f37}.checks-report .bad{color:#cf222e}.checks-report .todo{color:#9a6700}"
         ".checks-report pre{white-space:pre-wrap;background:#f6f8fa;padding:.5em}</style>")


@dataclass(frozen=True)
class Row:
    """One line of the table: a question or a quiz answer, and what to say about it."""

    qid: str
    checks: str
    state: str  # "passed", "not started" (a stub, or no quiz answer yet), "failed", "quiz ok"
    status: str


def question_row(q: QuestionResult) -> Row:
    if q.passed:
        return Row(q.qid, f"{q.passed_cases}/{q.total_cases}", "passed", "passed")
    if q.not_started:
        return Row(q.qid, f"{q.passed_cases}/{q.total_cases}", NOT_STARTED, f"{NOT_STARTED}: still the stub")
    return Row(q.qid, f"{q.passed_cases}/{q.total_cases}", "failed",
               f"{q.total_cases - q.passed_cases} of {q.total_cases} checks failed: see below")


def quiz_row(form: AnswerForm) -> Row:
    note = form.note + ("; it is marked when graded" if form.ok else "")
    state = "quiz ok" if form.ok else NOT_STARTED if not form.answered else "failed"  # failed: malformed
    return Row(form.qid, "", state, note)


@dataclass
class ChecksReport:
    """What one `%checks test` found: a table row per question and quiz answer, the failures,
    and a summary line; or the one reason the checks could not run (never shown as a score)."""

    title: str
    rows: list[Row] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    problem: str = ""

    @classmethod
    def from_runner(cls, report: dict) -> "ChecksReport":
        """From the runner's plain data (runner.run_public_checks), or its `problem`."""
        if "problem" in report:
            return cls(title="checks", problem=report["problem"])
        result = SubmissionResult.from_dict(dict(report["result"]))
        quiz = [AnswerForm(**form) for form in report["quiz"]]
        title = f"{result.assignment}: public checks" + (f" of {report['question']}" if report["question"] else "")
        if result.error:
            return cls(title=title, notes=list(result.warnings),
                       problem=f"The grader could not run these checks (this is not your score):\n{result.error}")
        summary_end = ""
        rows = [question_row(q) for q in result.questions] + [quiz_row(form) for form in quiz]
        failures = [(q.qid, q.feedback) for q in result.questions if not q.passed and not q.not_started]
        notes = list(result.warnings) + ([f"quiz: {report['quiz_problem']}"] if report["quiz_problem"] else [])
        stubs = sum(q.not_started for q in result.questions)
        if stubs:
            summary_end = (f" {NOT_STARTED.capitalize()}: {stubs} question{'s' if stubs != 1 else ''} still raise "
                           "the stub's NotImplementedError: its message, in your .py file, is a hint of where to begin.")
        passed = sum(q.passed for q in result.questions)
        summary = f"{passed} of {len(result.questions)} questions pass their public checks"
        if quiz:
            summary += f"; {sum(form.ok for form in quiz)} of {len(quiz)} quiz answers present and well-formed"
        return cls(title=title, rows=rows, failures=failures, notes=notes, summary=summary + "." + summary_end)

    def __repr__(self) -> str:
        lines = [self.title]
        lines += [f"warning: {note}" for note in self.notes]
        if self.problem:
            return "\n".join([*lines, self.problem])
        width = max([len(row.qid) for row in self.rows] + [8])
        lines.append(f"{'question':<{width}}  {'checks':>6}  status")
        lines += [f"{row.qid:<{width}}  {row.checks:>6}  {row.status}" for row in self.rows]
        for qid, feedback in self.failures:
            lines += ["", qid, feedback]
        return "\n".join([*lines, "", self.summary])

    def _repr_html_(self) -> str:
        parts = [STYLE, '<div class="checks-report">', f"<strong>{html.escape(self.title)}</strong>"]
        parts += [f'<p class="todo">warning: {html.escape(note)}</p>' for note in self.notes]
        if self.problem:
            parts.append(f'<pre class="checks-problem bad">{html.escape(self.problem)}</pre></div>')
            return "".join(parts)
        parts.append('<table class="checks-table"><thead><tr><th>question</th><th>checks</th><th></th>'
                     "<th>status</th></tr></thead><tbody>")
        for row in self.rows:
            mark, css = {"passed": ("✓", "ok"), "quiz ok": ("✓", "ok"), NOT_STARTED: ("…", "todo")}.get(row.state,
                                                                                                ("✗", "bad"))
            parts.append(f'<tr data-question="{html.escape(row.qid)}" data-state="{html.escape(row.state)}">'
                         f"<td><code>{html.escape(row.qid)}</code></td><td>{html.escape(row.checks)}</td>"
                         f'<td class="{css}">{mark}</td><td class="{css}">{html.escape(row.status)}</td></tr>')
        parts.append("</tbody></table>")
        for qid, feedback in self.failures:
            parts.append(f"<p><strong><code>{html.escape(qid)}</code></strong></p><pre>{html.escape(feedback)}</pre>")
        parts.append(f'<p class="checks-summary">{html.escape(self.summary)}</p></div>')
        return "".join(parts)
