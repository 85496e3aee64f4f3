"""What a run leaves for people: feedback.md (read raw or rendered), the terminal tables, the
gradebook CSV and report.html (rendered, and opened in headless Chromium)."""

from __future__ import annotations

import io
import re
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from checks.reports.gradebook import Graded
from checks.reports.html import histogram, render_report
from checks.reports.render import (feedback_html, feedback_markdown, gradebook_csv, gradescope_results, print_failures,
                                   question_table)
from checks.suites.quiz import AnswerForm
from checks.suites.scoring import QuestionResult, SubmissionResult

HOSTILE = ("3 of 4 checks failed.\n"
           "- numel(()) raised RuntimeError while importing strides.py: bad <script>alert(1)</script> __init__ *x*\n"
           "  at strides.py:1 in <module>: raise RuntimeError('...')\n"
           "  # printed: 1. not a list\n"
           "- view((2, 3), (3, 1), (3, 2)) returned [2, 0]; see [here](http://evil.example) `code` [/x]\n"
           "- ... and 1 more failing case.")


def result(name="ben", *, feedback=HOSTILE, error="", warnings=(), questions=None) -> SubmissionResult:
    if questions is None:
        questions = [QuestionResult("strides.numel", 1.0, 4.0, feedback, 1, 4),
                     QuestionResult("strides.view", 12.0, 12.0, "All 9 checks passed.", 9, 9)]
    return SubmissionResult(name, "01_tensors", questions, devices=["cpu"], sandbox="fork", seconds=2.0,
                            warnings=list(warnings), error=error)


def render(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


# ---------------------------------------------------------------- feedback.md


def test_feedback_reads_on_its_own_score_table_what_to_fix_and_provenance():
    text = feedback_markdown(result(), grader_version="1.2.3", graded_at="2030-01-01T10:00:00Z")
    assert text.startswith("# 01_tensors: feedback for ben\n")
    assert "**Score: 13 / 16** (1 of 2 questions with full marks)" in text
    assert "| `strides.numel` | 1 / 4 | needs work |" in text and "| `strides.view` | 12 / 12 | passed |" in text
    assert "## What to fix" in text and "### `strides.numel` (1 / 4)" in text
    assert "strides.view` (" not in text  # passed questions have no section
    assert text.rstrip().endswith("Checked on cpu by checks 1.2.3, 2030-01-01T10:00:00Z.")


def test_feedback_shows_student_text_as_written_when_rendered():
    html = render(feedback_markdown(result()))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "in &lt;module&gt;" in html and "__init__ *x*" in html and "<em>" not in html and "<strong>init" not in html
    assert 'href="http://evil.example"' not in html and "[here](http://evil.example)" in html
    assert "`code` [/x]" in html and "returned [2, 0]" in html
    assert "<h1>01_tensors: feedback for ben</h1>" in html and html.count("<h1>") == 1  # "# printed" is no heading
    item = re.search(r"<li>numel.*?</li>", html, re.S).group(0)  # continuation lines stay in their bullet
    assert "at strides.py:1" in item and "# printed: 1. not a list" in item
    assert html.count("<li>") == 3 and "<table>" in html


def test_feedback_raw_text_stays_readable():
    text = feedback_markdown(result())
    assert text.count("\\") == text.count("\\_") + text.count("\\*") + text.count("\\<") + text.count("\\`") + 2
    assert "numel(()) raised RuntimeError while importing strides.py" in text  # snake_case and calls untouched
    assert "returned [2, 0]" in text


def test_feedback_when_the_grader_failed_or_the_submission_could_not_be_read():
    failed = feedback_markdown(result(error="the grading process was killed by signal 9", questions=[]))
    assert "could not finish grading" in failed and "not your mistake" in failed
    assert "| question |" not in failed and "Score" not in failed  # no empty table, no 0 / 0
    unreadable = feedback_markdown(result(warnings=["The submission could not be read: ben.zip is not a readable "
                                                    "zip file (File is not a zip file)"]))
    assert "About your submission:\n\n- The submission could not be read: ben.zip" in unreadable


def test_feedback_when_everything_passed():
    text = feedback_markdown(result(questions=[QuestionResult("q", 4.0, 4.0, "All 3 checks passed.", 3, 3)]))
    assert "Every question passed all its checks." in text and "What to fix" not in text


def test_results_json_keeps_the_feedback_raw_for_gradescope():
    data = gradescope_results(result(), grader_version="1.2.3", graded_at="2030-01-01T10:00:00Z")
    assert data["tests"][0]["output"] == HOSTILE and data["tests"][0]["status"] == "failed"
    assert data["extra_data"]["grader_version"] == "1.2.3" and data["extra_data"]["graded_at"] == "2030-01-01T10:00:00Z"


def test_terminal_tables_print_messages_that_look_like_markup():
    console = Console(file=io.StringIO(), width=200)
    shown = result(feedback="1 of 2 checks failed.\n- f() returned [/x] and [bold]y")
    console.print(question_table(shown, quiz=[AnswerForm("k", False, "expected a number, got '[/x] [bold]'")]))
    print_failures(console, shown)
    assert "f() returned [/x] and [bold]y" in console.file.getvalue()  # this raised MarkupError
    assert "expected a number, got '[/x] [bold]'" in console.file.getvalue()


def test_gradebook_csv_has_a_row_per_submission_a_column_per_question_the_total_and_the_maxima():
    text = gradebook_csv([result("zoe"), result("amy", error="boom", questions=[])])
    refused = result("bo", questions=[QuestionResult("strides.numel", 0.0, 4.0, "unreadable", 0, 1)])
    refused.refused = "bo.zip is not a readable zip file"
    failed = result("amy", error="boom")  # its questions are no score: a grader failure is never a grade
    from_canvas = result("smithjane")
    from_canvas.student_id = "101"  # the LMS's id, where the batch found one; else the submission's name
    text = gradebook_csv([result("zoe"), failed, refused, from_canvas])
    assert text.splitlines() == ["submission,student_id,strides.numel,strides.view,total,status,reason",
                                 "Points Possible,,4.0,12.0,16.0,,",
                                 "amy,amy,,,,not graded,boom",
                                 "bo,bo,0.0,,0.0,refused,bo.zip is not a readable zip file",
                                 "smithjane,101,1.0,12.0,13.0,graded,",
                                 "zoe,zoe,1.0,12.0,13.0,graded,"]


# ---------------------------------------------------------------- report.html


def records(scores: list[float], *, failures: int = 1) -> list[Graded]:
    made = []
    for k, score in enumerate(scores):
        questions = [QuestionResult("part.a", min(score, 60.0), 60.0, "x", 1, 1),
                     QuestionResult("part.b", max(0.0, score - 60.0), 40.0, "y", 1, 1)]
        made.append(Graded(SubmissionResult(f"student{k:02d}", "demo", questions, devices=["cpu"], sandbox="fork",
                                            seconds=1.0 + k),
                           "0.1.0", f"2030-01-01T10:{k:02d}:00Z"))
    for k in range(failures):
        made.append(Graded(SubmissionResult(f"zz_broken{k}", "demo", error="Traceback ...\nMemoryError: out of memory"),
                           "0.1.0", "2030-01-01T11:00:00Z"))
    return made


SCORES = [100, 100, 100, 95, 87, 72, 64, 60, 55, 31, 12, 0]


def test_the_report_counts_and_lists_refused_submissions_with_the_reason():
    made = records([100, 50], failures=0)
    refused = SubmissionResult("mallory", "demo", [QuestionResult("part.a", 0.0, 60.0, "x", 0, 1)],
                               refused="mallory.zip: the entry '../x.py' would land outside the submission folder")
    page = render_report("demo", [*made, Graded(refused, "0.1.0", "2030-01-01T12:00:00Z")])
    figures = re.search(r'<div class="figures".*?</div>\n</div>', page, re.S).group(0)
    assert re.search(r"<div>1<span>refused", figures)
    table = re.search(r'<table id="refused">.*?</table>', page, re.S).group(0)
    assert table.count("<tr>") == 2 and "mallory" in table and "would land outside the submission folder" in table
    assert 'id="refused"' not in render_report("demo", made)  # no refused, no section


def test_histogram_bins_are_tenths_of_the_maximum_with_full_marks_in_the_last():
    counts = [b.count for b in histogram([0, 0.05, 0.1, 0.5, 0.95, 1.0, 1.0]).bins]
    assert counts == [2, 1, 0, 0, 0, 1, 0, 0, 0, 3]
    assert [b.label for b in histogram([]).bins][::9] == ["0–9%", "90–100%"]
    tall = histogram([1.0, 1.0, 0.0]).bins
    assert tall[9].height == 2 * tall[0].height > 0 and tall[5].height == 0


def test_the_report_has_the_figures_questions_submissions_and_escapes_names():
    made = records(SCORES) + [Graded(result("<img src=x onerror=alert(1)>"), "0.1.0", "2030-01-02T00:00:00Z")]
    html = render_report("demo", made, title="Demo <b>assignment</b>")
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "Demo &lt;b&gt;assignment&lt;/b&gt;" in html
    assert 'href="%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E/feedback.html"' in html
    assert html.count('class="bar"') == 10 and "<svg" in html
    assert "MemoryError: out of memory" in html and "zz_broken0" in html
    assert "<script" not in html and "default-src 'none'" in html  # self-contained, nothing fetched or run


CHROMIUM = Path("/usr/bin/chromium")


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--no-first-run", f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def png_rgb(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes) into RGB rows."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", None
    while position < len(data):
        (length,), kind = struct.unpack(">I", data[position:position + 4]), data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (2, 6), header
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up, corner = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        previous = line
        rows.append(bytes(line) if channels == 3 else bytes(b for k, b in enumerate(line) if k % 4 != 3))
    return width, height, rows


def count_colour(rows: list[bytes], rgb: tuple[int, int, int], tolerance: int = 6) -> int:
    count = 0
    for row in rows:
        for k in range(0, len(row), 3):
            if all(abs(row[k + c] - rgb[c]) <= tolerance for c in range(3)):
                count += 1
    return count


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                  "(apt-get install chromium; .ci/run installs it)")
def test_the_report_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_report("demo", records(SCORES), title="Demo"))
    opened = tmp_path / "opened.html"  # the details a TA opens: the histogram is one
    opened.write_text(page.read_text().replace("<details ", "<details open "))

    dumped = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    svg = re.search(r'<svg id="histogram".*?</svg>', dom, re.S).group(0)
    bars = re.findall(r'<rect class="bar"[^>]*data-count="(\d+)"', svg)
    assert [int(count) for count in bars] == [b.count for b in histogram([s / 100 for s in SCORES]).bins]
    submissions = re.search(r'<table id="submissions">.*?</table>', dom, re.S).group(0)
    assert submissions.count("<tr>") == 1 + len(SCORES) + 1  # header, graded, the one the grader failed on
    questions = re.search(r'<table id="questions">.*?</table>', dom, re.S).group(0)
    assert questions.count("<tr>") == 3 and "part.a" in questions
    assert "zz_broken0" in re.search(r'<table id="grader-errors">.*?</table>', dom, re.S).group(0)

    shot = tmp_path / "report.png"
    shotted = chromium(tmp_path, f"--screenshot={shot}", "--window-size=900,1500", "--hide-scrollbars", opened.as_uri())
    assert shotted.returncode == 0 and shot.is_file(), shotted.stderr[-2000:]
    width, height, rows = png_rgb(shot)
    assert (width, height) == (900, 1500)
    bar_pixels = count_colour(rows, (0x3B, 0x6F, 0xB6))  # svg .bar fill
    drawn = sum(b.width * b.height for b in histogram([s / 100 for s in SCORES]).bins)
    assert 0.9 * drawn < bar_pixels < 1.1 * drawn, (bar_pixels, drawn)  # every bar painted, at its size
    assert count_colour(rows, (0x2F, 0x9E, 0x62)) > 100  # the pass-rate meters of the questions table


def test_the_report_lists_each_submissions_warnings_as_written():
    made = records([100, 50], failures=0)
    missing = result("ann", warnings=["strides.py is missing; found strides.PY: rename it to strides.py",
                                      "skipped, as the assignment does not use them: data.csv, <b>x</b>.txt"])
    page = render_report("demo", [*made, Graded(missing, "0.1.0", "2030-01-01T12:00:00Z")])
    table = re.search(r'<table id="warnings">.*?</table>', page, re.S).group(0)
    assert table.count("<tr>") == 2 and 'href="ann/feedback.html"' in table  # the header, and ann's
    assert "<li>strides.py is missing; found strides.PY: rename it to strides.py</li>" in table
    assert "data.csv, &lt;b&gt;x&lt;/b&gt;.txt</li>" in table  # a student's file name stays text
    submissions = re.search(r'<table id="submissions">.*?</table>', page, re.S).group(0)
    row = re.search(r'<tr>\s*<td><a href="ann/feedback.html">ann</a>.*?</tr>', submissions, re.S).group(0)
    assert '<a href="#warnings">2</a>' in row  # counted in the submissions table, linked to the list
    assert 'id="warnings"' not in render_report("demo", made)  # no warnings, no section


def test_a_feedback_page_is_rendered_again_only_when_its_text_changed(tmp_path, monkeypatch):
    """publish's shortcut: the page a run just wrote is not rendered again from the same text, but
    is from changed text (a late penalty the policy added) and where the page is gone."""
    from checks.reports import render as render_module

    rendered = []
    real = render_module.feedback_html
    monkeypatch.setattr(render_module, "feedback_html",
                        lambda *args, **kwargs: rendered.append(1) or real(*args, **kwargs))
    first = render_module.write_submission_reports(tmp_path, result("ada"))
    assert render_module.write_submission_reports(tmp_path, result("ada"), page_of=first) == first
    assert len(rendered) == 1
    changed = result("ada", warnings=["A late penalty of 10 points."])
    render_module.write_submission_reports(tmp_path, changed, page_of=first)
    assert len(rendered) == 2 and "late penalty" in (tmp_path / "ada" / "feedback.html").read_text()
    (tmp_path / "ada" / "feedback.html").unlink()
    render_module.write_submission_reports(tmp_path, changed, page_of=render_module.write_submission_reports(
        tmp_path, changed))
    assert (tmp_path / "ada" / "feedback.html").is_file()
