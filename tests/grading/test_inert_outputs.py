"""Student text is inert in every output (DESIGN.md, "The trust boundary"): a name, a message, a
printed line or a quiz answer cannot forge Markdown structure, reach HTML unescaped, act on a
terminal, be a spreadsheet formula, or make a write raise (a lone surrogate from a file name that
is not UTF-8). The pure renderers are checked on hand-picked and generated text (Hypothesis); one
real `checks grade` of a hostile submission beside an honest one runs at each isolation level."""

from __future__ import annotations

import csv
import html.parser
import io
import json
import os
import re
import textwrap
from pathlib import Path

import markdown as python_markdown
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.console import Console

from checks import cli
from checks.reports.gradebook import Graded, Gradebook
from checks.reports.html import render_report
from checks.reports.render import (feedback_html, feedback_markdown, gradebook_csv, print_failures, question_table,
                                   submissions_table, write_submission_reports)
from checks.sandbox import jail
from checks.suites.quiz import AnswerForm
from checks.suites.scoring import QuestionResult, SubmissionResult

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# what Markdown may only get from the grader: student text must not add one of these
STRUCTURE = ("h1", "h2", "h3", "h4", "h5", "h6", "table", "tr", "a", "img", "pre", "code", "strong", "em", "hr",
             "blockquote", "ol", "script")
# every control character a terminal acts on (ESC starts CSI and OSC sequences), but newline and tab
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE_LINES = ["# Score: 100/100", "**Score: 100 / 100**", "| q | 100 / 100 | passed |", "|---|---|---|",
                 ":--|--:", "```", "~~~", "</pre><script>alert(1)</script>", "[click](http://evil.example)",
                 "<http://evil.example>", "=HYPERLINK(\"http://evil.example\",\"x\")", "\x1b[31mred\x1b[0m",
                 "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\", "\x9b2J", "[bold]b[/bold] [link=x]y[/link]",
                 "- # forged heading in a bullet", "Title\n=====", "Title\n-----", "    indented code", "1. item",
                 "&lt;b&gt;", "\udcff\ud800", "\u202egnp.exe", "[x]: http://evil.example",
                 "<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "x {: onclick=alert(1)}",
                 "&#60;script&#62;", "[^1]", "*[HTML]: hover", "term\n: definition"]


def result(text: str, *, name: str | None = None) -> SubmissionResult:
    """A submission whose name, warnings, feedback (a bullet, its continuation, a line of its own)
    and refusal reason all hold `text`."""
    feedback = (f"2 of 3 checks failed.\n- f(1) raised ValueError: {text}\n  it printed: {text}\n{text}\n"
                f"- g() returned {text}")
    questions = [QuestionResult("mod.f", 0.0, 4.0, feedback, 1, 3), QuestionResult("mod.ok", 2.0, 2.0, "", 1, 1)]
    made = SubmissionResult(text if name is None else name, "toy", questions, devices=["cpu"], sandbox="fork",
                            warnings=[f"{text}: a symlink, ignored"])
    made.refused = text
    return made


def structure(markdown: str) -> dict[str, int]:
    page = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    return {tag: len(re.findall(f"<{tag}[ >]", page)) for tag in STRUCTURE}


BASELINE = structure(feedback_markdown(result("x")))
# Python-Markdown, as it is (no backslash before `<` or `&` honoured) and with its "extra" set
# (tables, attribute lists, footnotes, definition lists, fenced code, HTML in Markdown)
PYTHON_MARKDOWN_EXTENSIONS = ([], ["extra"])


def python_markdown_pages(markdown: str) -> list[str]:
    return [python_markdown.markdown(markdown, extensions=extensions) for extensions in PYTHON_MARKDOWN_EXTENSIONS]


def tag_counts(page: str) -> dict[str, int]:
    return {tag: len(re.findall(f"<{tag}[ >]", page)) for tag in STRUCTURE}


def assert_no_live_tag_in_python_markdown(markdown: str) -> None:
    """feedback.md rendered by Python-Markdown holds no tag or attribute student text added: the
    same tags, as many, and the same attributes as an honest feedback's."""
    for page, baseline in zip(python_markdown_pages(markdown), PYTHON_MARKDOWN_BASELINE):
        parsed = Tags(page)
        assert parsed.tags <= baseline.tags, (parsed.tags - baseline.tags, page)
        assert parsed.attributes <= baseline.attributes, (parsed.attributes - baseline.attributes, page)
        assert tag_counts(page) == baseline.counts, page


class Tags(html.parser.HTMLParser):
    """The start tags of a page and the attribute names they use (student text that broke out of
    a quoted value adds one), and whether the parser met anything it could not read."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


PYTHON_MARKDOWN_BASELINE = [Tags(page) for page in python_markdown_pages(feedback_markdown(result("x")))]
for _parsed, _page in zip(PYTHON_MARKDOWN_BASELINE, python_markdown_pages(feedback_markdown(result("x")))):
    _parsed.counts = tag_counts(_page)
FEEDBACK_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table", "thead", "tbody",
                 "tr", "th", "td", "code", "strong", "ul", "li", "blockquote", "br"}
REPORT_TAGS = FEEDBACK_TAGS | {"h2", "h3", "div", "span", "svg", "line", "text", "rect", "a", "figure", "figcaption", "ol",
                               "details", "summary"}


def assert_terminal_inert(shown: str) -> None:
    assert not CONTROL.search(shown), repr(CONTROL.search(shown).group(0))
    shown.encode("utf-8")  # no lone surrogate: a strict UTF-8 terminal would raise


def terminal(*results: SubmissionResult, quiz_note: str = "") -> str:
    console = Console(file=io.StringIO(), width=300, color_system=None)
    for made in results:
        console.print(question_table(made, quiz=[AnswerForm("k", False, quiz_note or made.name)]))
        print_failures(console, made)
    console.print(submissions_table(list(results)))
    return console.file.getvalue()


# ---------------------------------------------------------------- hand-picked text, each output


@pytest.mark.parametrize("text", HOSTILE_LINES)
def test_markdown_cannot_be_forged_by_a_name_a_warning_or_a_message(text):
    markdown = feedback_markdown(result(text))
    assert structure(markdown) == BASELINE, markdown
    assert markdown.count("**Score:") == 1 and len(re.findall(r"(?m)^# ", markdown)) == 1
    page = feedback_html(markdown, title=f"toy: feedback for {text}")
    assert {"script", "a", "img", "pre"}.isdisjoint(Tags(page).tags) and not CONTROL.search(page)
    page.encode("utf-8")
    assert_no_live_tag_in_python_markdown(markdown)


def test_the_terminal_shows_control_sequences_and_markup_as_text():
    shown = terminal(*(result(text) for text in HOSTILE_LINES), quiz_note="got '\x1b[2J'")
    assert_terminal_inert(shown)
    assert "\\x1b[31mred" in shown and "[bold]b[/bold]" in shown  # shown as written, not acted on
    assert "\\xff" in shown


def test_a_name_with_a_newline_stays_on_its_row():
    shown = terminal(result("x", name="eve\nmallory  100/100"))
    assert "eve\\nmallory" in shown and not re.search(r"(?m)^\W*mallory", shown)


def test_no_csv_cell_is_a_formula_and_scores_stay_numbers():
    made = [result(text) for text in HOSTILE_LINES] + [result("x", name=name) for name in
                                                       ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", " =x")]
    text = gradebook_csv(made)
    text.encode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == len(made) + 2 and all(len(row) == len(rows[0]) for row in rows)  # one line each
    assert len(text.splitlines()) == len(rows)
    for row in rows:
        assert not any(cell.startswith(FORMULA_START) for cell in row), row
        assert not CONTROL.search(",".join(row))
    by_name = {row[0]: row for row in rows[2:]}  # under the header, the maxima
    assert by_name["'=1+1"][1:5] == ["'=1+1", "0.0", "2.0", "2.0"] and "' =x" not in by_name


def test_html_report_escapes_every_student_byte(tmp_path):
    records = [Graded(result(text), "0.1.0", "2030-01-01T10:00:00Z") for text in HOSTILE_LINES]
    records.append(Graded(SubmissionResult("</td><script>x</script>\x1b[2J\udcff", "toy", error="boom <b>\x1b"),
                          "0.1.0", "2030-01-01T10:00:00Z"))
    page = render_report("toy", records)
    assert Tags(page).tags <= REPORT_TAGS and not CONTROL.search(page)
    page.encode("utf-8")
    assert "&lt;/td&gt;&lt;script&gt;" in page and "\\x1b[2J\\xff" in page


def test_a_lone_surrogate_never_makes_a_write_raise(tmp_path):
    """os.fsdecode of a name that is not UTF-8 gives '\\udcff': feedback files, results.json, the
    gradebook (SQLite) and the report all take it, written as the escape `\\xff`."""
    made = result("bad byte \udcff and \ud800", name="caf\udce9")
    write_submission_reports(tmp_path, made, graded_at="2030-01-01T10:00:00Z")
    folder = tmp_path / "caf\udce9"
    assert "caf\\xe9" in (folder / "feedback.md").read_text(encoding="utf-8")
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert "bad byte \\xff and \\ud800" in results["tests"][0]["output"]
    book = Gradebook(tmp_path / "gradebook.sqlite", "toy")
    book.record(Graded(made, "0.1.0", "2030-01-01T10:00:00Z", source=str(tmp_path / "caf\udce9")))
    [loaded] = book.load()
    assert loaded.name == "caf\\xe9" and "\\xff" in loaded.result.questions[0].feedback
    render_report("toy", [loaded]).encode("utf-8")


def test_a_submission_name_that_is_not_utf8_is_mended_where_it_is_read(tmp_path):
    from checks.course.submissions import submission_name

    folder = tmp_path / os.fsdecode(b"caf\xe9")
    assert submission_name(folder) == "caf\\xe9" and submission_name(folder.with_suffix(".zip")) == "caf\\xe9"


# ---------------------------------------------------------------- generated text (Hypothesis)

# any code point, surrogates and controls included, and runs of the metacharacters that matter
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)
META = st.lists(st.sampled_from([*HOSTILE_LINES, "\n", "\r\n", "\t", " ", "  ", "`", "*", "_", "\\", "|", "#", "-",
                                 "=", ">", "<", "[", "]", "(", ")", "!", "&", "~", ":", "1.", "+", "@", "\x1b", "\x00",
                                 "\x85", "\u2028", "x"]), max_size=12).map("".join)
TEXT = st.one_of(ANY_TEXT, META, st.tuples(ANY_TEXT, META, ANY_TEXT).map("".join))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_any_text_is_inert_in_every_renderer(text):
    made = result(text)
    markdown = feedback_markdown(made)
    assert structure(markdown) == BASELINE, markdown
    assert len(re.findall(r"(?m)^# ", markdown)) == 1 and markdown.count("**Score:") == 1
    page = feedback_html(markdown, title=f"toy: feedback for {text}")
    assert {"script", "a", "img", "pre"}.isdisjoint(Tags(page).tags)
    page.encode("utf-8")
    assert_no_live_tag_in_python_markdown(markdown)
    rows = list(csv.reader(io.StringIO(gradebook_csv([made, result("x", name="honest")]))))
    assert len(rows) == 4 and not any(cell.startswith(FORMULA_START) for row in rows for cell in row)
    assert_terminal_inert(terminal(made))
    report = render_report("toy", [Graded(made, "0.1.0", "2030-01-01T10:00:00Z")])
    assert Tags(report).tags <= REPORT_TAGS and not CONTROL.search(report)
    report.encode("utf-8")


# ---------------------------------------------------------------- one real batch at each isolation level

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
COURSE = {
    "autograder/toy/assignment.toml": """
        files = ["mod.py"]
        [quiz.big]
        answer = 6
        points = 1
        [quiz.notanumber]
        answer = 1.5
        points = 1
        [quiz.nested]
        answer = true
        points = 1
    """,
    "autograder/toy/test_toy.py": """
        import pytest
        from checks.suite import question, expect_equal

        @question("mod.add", points=10)
        @pytest.mark.parametrize("a", [1, 2])
        def test_add(student, a):
            expect_equal(student.mod.add(a, 1), a + 1)

        @question("mod.shout", points=5)
        def test_shout(student):
            expect_equal(student.mod.shout("x"), "x!")
    """,
    "assignments/toy/.keep": "",
    "subs/honest/mod.py": """
        def add(a, b):
            return a + b

        def shout(s):
            return s + "!"
    """,
    "subs/honest/quiz.toml": "big = 6\nnotanumber = 1.5\nnested = true\n",
}
FORGED = ("line one\n# Score: 100/100\n**Score: 15 / 15**\n| mod.add | 10 / 10 | passed |\n"
          "</pre><script>alert(1)</script>\n=HYPERLINK(\"http://evil.example\",\"x\")\n"
          "\x1b[2J\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b31m caf\udce9")
HOSTILE_CODE = f"""
def add(a, b):
    print("\\x1b[31mred\\x1b]0;title\\x07 =1+1")
    raise ValueError({FORGED!r})

def shout(s):
    class E(Exception):
        pass
    E.__name__ = E.__qualname__ = "\\x1b[31m<b>Evil</b>[bold]"
    raise E("[bold]x[/bold] ```\\n~~~\\n- # heading")
"""
HOSTILE_QUIZ = "big = " + "9" * 5000 + "\nnotanumber = nan\nnested = {a = {b = [1, [2, {c = inf}]]}}\n"


def hostile_name() -> str:
    """A folder name with a newline, ESC, a formula start and a byte that is not UTF-8."""
    return os.fsdecode(b"=HYPERLINK(1)\n# Score 100\x1b[31m\xff")


def grade(root: Path, level: str, out: Path, *paths: Path, capsys) -> tuple[int, str]:
    code = cli.main(["--course", str(root), "grade", "toy", *map(str, paths), "--out", str(out), "--isolation", level])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("level", LEVELS)
def test_a_hostile_submission_is_inert_in_every_output_of_a_real_batch(level, make_course, monkeypatch, capsys):
    monkeypatch.setenv(jail.ENV_VARIABLE, level)  # main() sets it from --isolation: restored after the test
    root = make_course(COURSE)
    hostile = root / "subs" / hostile_name()
    hostile.mkdir()
    (hostile / "mod.py").write_text(textwrap.dedent(HOSTILE_CODE), encoding="utf-8", errors="surrogateescape")
    (hostile / "quiz.toml").write_text(HOSTILE_QUIZ)
    out = root / "grades"
    code, shown = grade(root, level, out, root / "subs/honest", hostile, capsys=capsys)
    assert code == 0, shown
    assert_terminal_inert(shown)

    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == 2
    [evil] = [p for p in folders if p.name != "honest"]
    assert evil.name == "=HYPERLINK(1)\n# Score 100\x1b[31m\\xff"  # mended where it was read, kept otherwise
    results = {p.name: json.loads((p / "results.json").read_text(encoding="utf-8")) for p in folders}
    graded = results[evil.name]
    assert {t["name"] for t in graded["tests"]} == {"mod.add", "mod.shout", "quiz.big", "quiz.notanumber",
                                                    "quiz.nested"}
    assert graded["score"] == 0 and not graded["extra_data"]["error"]
    quiz = {t["name"]: t["output"] for t in graded["tests"] if t["name"].startswith("quiz.")}
    assert "digits" in quiz["quiz.big"] and "nan" in quiz["quiz.notanumber"] and "a table" in quiz["quiz.nested"]
    assert all(len(output) < 200 for output in quiz.values())
    assert "# Score: 100/100" in next(t["output"] for t in graded["tests"] if t["name"] == "mod.add")

    rows = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 4 and {row[-2] for row in rows[2:]} == {"graded"}  # [1]: the maxima
    assert not any(cell.startswith(FORMULA_START) or CONTROL.search(cell) for row in rows for cell in row)

    report = (out / "report.html").read_text(encoding="utf-8")
    assert Tags(report).tags <= REPORT_TAGS and not CONTROL.search(report)
    for folder in folders:
        page = (folder / "feedback.html").read_text(encoding="utf-8")
        assert Tags(page).tags <= FEEDBACK_TAGS and not CONTROL.search(page), folder.name
        markdown = (folder / "feedback.md").read_text(encoding="utf-8")
        assert len(re.findall(r"(?m)^#{1,2} ", markdown)) <= 2 and markdown.count("**Score:") == 1
        assert not re.search(r"(?m)^(\| `?mod|~~~|```|- #)", markdown.partition("## What to fix")[2])
        assert structure(markdown)["h1"] == 1 and structure(markdown)["a"] == 0 and not CONTROL.search(markdown)
        for rendered in python_markdown_pages(markdown):  # the other dialect: no live tag or attribute
            parsed = Tags(rendered)
            assert parsed.tags <= FEEDBACK_TAGS and parsed.attributes <= {"style", "align"}, (parsed.tags, rendered)
    for forged in ("<script>", "<b>Evil", "\x1b"):
        assert all(forged not in path.read_text(encoding="utf-8") for path in out.rglob("*.html"))

    alone = root / "alone"
    code, _ = grade(root, level, alone, root / "subs/honest", capsys=capsys)
    assert code == 0
    assert json.loads((alone / "honest/results.json").read_text())["score"] == results["honest"]["score"] == 18
