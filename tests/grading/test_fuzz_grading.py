"""Fuzzing GRADING, not only rendering (issue 29, the trust boundary): Hypothesis builds a hostile
submission of a tiny course (test_inert_outputs.COURSE) from generated folder and file names,
exception messages and class names, printed text, return values, notebook cells and quiz answers,
grades it beside an honest submission in one `checks grade` (cli.main, default isolation level),
and checks what DESIGN.md promises: the batch finishes with exit 0, every output parses, no
student byte reaches HTML, Markdown, CSV or the terminal unescaped, and the honest neighbour's
result is the one it gets graded alone.

The grading itself is the real one, pytest session, sandbox and all; only its warm parent is
kept across examples (the serve.py pool a Dask worker keeps, behind batch.grade_sources) so that
an example costs a fraction of a second instead of starting a sandbox zygote and torch each time.
Where `distributed` is missing the cold grader runs (slower, same assertions).

The default run tries 15 examples, derandomized (CI is reproducible). The long run:

    PYTHONPATH=src python -m pytest -m slow tests/grading/test_fuzz_grading.py     (200 examples; `make test-all`)
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import nbformat
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from checks import cli
from checks.course.assignment import Assignment
from checks.grading import batch
from checks.reports.gradebook import Gradebook
from checks.suites.scoring import SubmissionResult
from test_hostile_names import HOSTILE_NAMES
from test_inert_outputs import (CONTROL, COURSE, FEEDBACK_TAGS, FORMULA_START, HOSTILE_LINES, REPORT_TAGS, TEXT, Tags,
                                assert_terminal_inert, structure)

QUESTIONS = ("mod.add", "mod.shout", "quiz.big", "quiz.notanumber", "quiz.nested")

# ---------------------------------------------------------------- a warm grader kept across examples


class WarmGrader:
    """A stand-in for grading.session.grade_sources that grades each source, one at a time, in a
    serve.py pool kept warm across examples (started again if it ever dies: that example's
    submissions then fail as a grader failure, which the invariants catch)."""

    def __init__(self, course: Path, assignment: str) -> None:
        from checks.executors.worker import WarmPool

        self._start = lambda: WarmPool(course, assignment, "cpu", self._launcher)
        self._launcher = ThreadPoolExecutor(1)  # the pool dies with the thread that started it
        self.pool = self._start()

    def __call__(self, assignment: Assignment, sources: list, *, jobs: int | None = None,
                 **settings: object) -> Iterator[SubmissionResult]:  # the pool's own isolation; device cpu
        from checks.executors.serve import request_for
        from checks.executors.worker import PoolFailed

        for source in sources:
            try:
                reply = self.pool.grade(request_for(source.name, source.load))
            except PoolFailed as error:
                self.pool.close()
                self.pool = self._start()
                reply = {"error": f"the warm pool died: {error}"}
            if reply.get("error") or reply.get("value") is None:
                yield SubmissionResult(source.name, assignment.name, error=reply.get("error") or "no result")
            else:
                yield SubmissionResult.from_dict(reply["value"])

    def close(self) -> None:
        self.pool.close()
        self._launcher.shutdown()


@dataclass
class Course:
    root: Path
    honest: Path
    alone: dict  # the honest submission's results.json, graded alone by the cold grader


def run_grade(root: Path, out: Path, *paths: Path, options: tuple[str, ...] = ()) -> tuple[int, str]:
    """`checks grade toy PATHS --out OUT [OPTIONS]` at the default isolation level: (exit code, what it printed)."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(shown):
        code = cli.main(["--course", str(root), "grade", "toy", *map(str, paths), "--out", str(out), *options])
    return code, shown.getvalue()


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Iterator[Course]:
    """The tiny course, its honest submission graded alone (cold, the real grade_sources), and
    batch.grade_sources replaced by a warm grader for the examples."""
    root = tmp_path_factory.mktemp("fuzz-course")
    for relative, text in COURSE.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    code, shown = run_grade(root, root / "alone", root / "subs/honest")
    assert code == 0, shown
    alone = json.loads((root / "alone/honest/results.json").read_text(encoding="utf-8"))
    assert alone["score"] == 18
    with pytest.MonkeyPatch.context() as patch:
        try:
            warm = WarmGrader(root, "toy")
        except ImportError:  # no `cluster` extra: the cold grader, slower
            warm = None
        if warm is not None:
            patch.setattr(batch, "grade_sources", warm)
        try:
            yield Course(root, root / "subs/honest", alone)
        finally:
            if warm is not None:
                warm.close()


# ---------------------------------------------------------------- what a submission may hold

NAME_TEXT = st.one_of(TEXT, st.sampled_from([os.fsdecode(n) if isinstance(n, bytes) else n for n in HOSTILE_NAMES]),
                      st.sampled_from(["mod.py", "quiz.toml", "honest", "HONEST", "gradebook.sqlite", "x.ipynb"]))


def fs_name(text: str, limit: int = 240) -> bytes:
    """`text` as a file name, byte for byte where a file system allows it: a lone surrogate as the
    bytes it stands for (not UTF-8), no '/' or NUL, at most `limit` bytes, never '.' or '..'."""
    raw = b"".join(char.encode("utf-8", "surrogatepass") if "\ud800" <= char <= "\udfff" and not
                   "\udc80" <= char <= "\udcff" else os.fsencode(char) for char in text)
    raw = raw.replace(b"/", b"|").replace(b"\0", b"^")[:limit]
    return b"x" + raw if raw in (b"", b".", b"..") else raw


def source_text(text: str) -> str:
    """A Python literal for `text` (repr escapes lone surrogates, so the module stays UTF-8)."""
    return repr(text)


NUMPY_DTYPES = ["float16", "float32", ">f8", "complex64", "complex128", "int8", "uint64", ">i4", "bool",
                "datetime64[ns]", "timedelta64[s]", "U2", "S3", "V4", "longdouble"]


def float_source(x: float) -> str:
    return f"float({str(x)!r})" if x != x or x in (float("inf"), float("-inf")) else f"float.fromhex({x.hex()!r})"


@st.composite
def array_source(draw) -> str:
    dtype = draw(st.sampled_from([*NUMPY_DTYPES, "object"]))
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    size = 1
    for n in shape:
        size *= n
    if dtype == "object":
        items = draw(st.lists(LEAF, min_size=size, max_size=size))
        return f"__import__('numpy').array([{', '.join(items)}, None], dtype=object)[:-1].reshape({tuple(shape)})"
    import numpy

    data = draw(st.binary(min_size=size * numpy.dtype(dtype).itemsize, max_size=size * numpy.dtype(dtype).itemsize))
    return f"__import__('numpy').frombuffer(bytes.fromhex({data.hex()!r}), dtype={dtype!r}).reshape({tuple(shape)})"


LEAF = st.one_of(
    st.just("None"), st.booleans().map(repr), st.integers().map(str),
    st.integers(63, 20_000).map(lambda k: f"(-2**{k} + 1)"),  # past int64, and past str()'s 4300 digits
    st.floats(allow_nan=True, allow_infinity=True).map(float_source),
    TEXT.map(source_text), st.binary(max_size=8).map(repr),
    st.sampled_from(["__import__('numpy').float64('nan')", "__import__('numpy').int64(-2**63)",
                     "__import__('numpy').float16(65504)", "__import__('numpy').longdouble('1e4000')",
                     "__import__('numpy').str_('\\x1b[2J')", "complex('nanj')", "{1, 2}", "range(3)", "print",
                     "(lambda l: l.append(l) or l)([])",  # a list that holds itself
                     "(lambda: [x := [], [x := [x] for _ in range(100_000)], x][-1])()"]),  # nested past any stack
)
VALUE = st.recursive(st.one_of(LEAF, array_source()), lambda inner: st.one_of(
    st.lists(inner, max_size=4).map(lambda items: f"[{', '.join(items)}]"),
    st.lists(inner, max_size=4).map(lambda items: f"({''.join(item + ', ' for item in items)})"),
    st.lists(st.tuples(st.one_of(TEXT.map(source_text), st.integers().map(str), st.none().map(str)), inner),
             max_size=4).map(lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"),
), max_leaves=10)


@st.composite
def behaviour(draw) -> str:
    """The body of a student function: raise, return, print then return, or leave."""
    kind = draw(st.sampled_from(["raise", "return", "print", "exit"]))
    if kind == "raise":
        name, message = draw(TEXT), draw(st.one_of(TEXT.map(source_text), VALUE))
        module = draw(st.one_of(st.just("__name__"), TEXT.map(source_text)))
        return (f"class E(Exception):\n    pass\nE.__name__ = E.__qualname__ = {source_text(name)}\n"
                f"E.__module__ = {module}\nraise E({message})")
    if kind == "print":
        text = source_text(draw(TEXT))
        return f"import sys\nprint({text})\nprint({text}, file=sys.stderr)\nreturn {draw(VALUE)}"
    if kind == "exit":
        return draw(st.sampled_from(["import os\nos._exit(0)", "import os\nos._exit(3)", "import sys\nsys.exit(0)",
                                     f"import sys\nsys.exit({source_text(draw(TEXT))})"]))
    return f"return {draw(VALUE)}"


def module_source(add: str, shout: str) -> str:
    return (f"def add(a, b):\n{textwrap.indent(add, '    ')}\n\n\n"
            f"def shout(s):\n{textwrap.indent(shout, '    ')}\n")


# ---------------------------------------------------------------- quiz answers: any TOML value, or none at all

def toml_string(text: str) -> str:
    """A TOML basic string of `text` (a lone surrogate stays one: such a file is not valid TOML)."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else
                         f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text) + '"'


def toml_float(x: float) -> str:
    return "nan" if x != x else ("inf" if x > 0 else "-inf") if x in (float("inf"), float("-inf")) else repr(x)


TOML_LEAF = st.one_of(st.booleans().map(lambda b: str(b).lower()), st.integers().map(str),
                      st.floats().map(toml_float), TEXT.map(toml_string),
                      st.sampled_from(["1979-05-27T07:32:00Z", "1979-05-27", "07:32:00", "0x_dead", "'''x\ny'''",
                                       "9" * 5000, "-0.0", "+inf", "[]", "{}"]))
TOML_VALUE = st.recursive(TOML_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=4).map(lambda items: f"[{', '.join(items)}]"),
    st.lists(st.tuples(TEXT.map(toml_string), inner), max_size=3).map(
        lambda pairs: "{" + ", ".join(f"{k} = {v}" for k, v in pairs) + "}")), max_leaves=8)
QUIZ = st.one_of(
    st.lists(st.tuples(st.one_of(st.sampled_from(["big", "notanumber", "nested"]), TEXT).map(toml_string), TOML_VALUE),
             max_size=4).map(lambda pairs: "".join(f"{key} = {value}\n" for key, value in pairs)),
    TEXT)  # not TOML at all


# ---------------------------------------------------------------- a hostile submission


@dataclass
class Hostile:
    """What the generated submission holds, written by `write`."""

    name: str
    module: str
    quiz: str | None
    files: list[tuple[str, str]]  # other files: (name, text); a name with '/' makes a folder
    notebook: list[tuple[str, str]] | None  # (cell type, source) cells, when it is handed in as a notebook

    def write(self, parent: Path) -> Path:
        folder = os.path.join(os.fsencode(parent), fs_name(self.name))
        os.mkdir(folder)
        files, notebook = list(self.files), folder
        if self.notebook is None:
            files += [("mod.py", self.module)] + ([("quiz.toml", self.quiz)] if self.quiz is not None else [])
        else:
            made = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell,
                    "raw": nbformat.v4.new_raw_cell}
            cells = [made[kind](source) for kind, source in self.notebook]
            notebook = os.path.join(folder, fs_name(self.name, 200) + b".ipynb")
            with open(notebook, "wb") as handle:  # the notebook itself is handed in; the folder is its scratch
                handle.write(nbformat.writes(nbformat.v4.new_notebook(cells=cells)).encode("utf-8", "surrogatepass"))
        for name, text in files:
            parts = [fs_name(part, 120) for part in name.split("/")][-3:]
            path = os.path.join(folder, *parts)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(text.encode("utf-8", "surrogatepass"))
            except (IsADirectoryError, NotADirectoryError, FileExistsError):
                continue  # one generated name is a folder of another's: that file is left out
        return Path(os.fsdecode(notebook))


@st.composite
def hostile(draw) -> Hostile:
    module = module_source(draw(behaviour()), draw(behaviour()))
    quiz = draw(st.one_of(st.none(), QUIZ))
    files = draw(st.lists(st.tuples(st.one_of(NAME_TEXT, st.tuples(NAME_TEXT, NAME_TEXT).map("/".join),
                                              NAME_TEXT.map(lambda n: n + ".py")), TEXT), max_size=3))
    notebook = None
    if draw(st.booleans()):
        answer = [("code", f"%%checks file mod.py\n{module}")]
        answer += [("code", f"%%checks file quiz.toml\n{quiz}")] if quiz is not None else []
        others = st.tuples(st.sampled_from(["markdown", "code", "raw"]),
                           st.one_of(TEXT, TEXT.map(lambda t: f"%%checks file {t}\n{t}")))
        notebook = draw(st.lists(others, max_size=3)) + answer + draw(st.lists(others, max_size=2))
    return Hostile(draw(NAME_TEXT), module, quiz, files, notebook)


# ---------------------------------------------------------------- the invariants


# the attributes the grader's templates (reports/templates, render.py) write, and nothing else
GRADER_ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "class", "href", "id", "style", "width",
                     "height", "x", "y", "text-anchor", "xmlns", "role", "data-count", "aria-labelledby", "viewbox",
                     "aria-label", "title", "x1", "x2", "y1", "y2", "fill", "data-value", "data-question",
                     "scope", "tabindex"}  # table headers and focusable scroll regions (issue 47)
HEADING = re.compile(r"(?m)^ {0,3}#{1,6}(?:[ \t]|$).*")
GRADER_HEADING = re.compile(r"# toy: feedback for .*|## What to fix|### `(%s)` \(\S+ / \S+\)" %
                            "|".join(map(re.escape, QUESTIONS)))


def assert_inert_page(page: str, allowed: set[str]) -> None:
    parsed = Tags(page)
    assert parsed.tags <= allowed, parsed.tags - allowed
    assert parsed.attributes <= GRADER_ATTRIBUTES, parsed.attributes - GRADER_ATTRIBUTES
    assert not CONTROL.search(page), repr(CONTROL.search(page).group(0))
    page.encode("utf-8")


def assert_inert_markdown(markdown: str) -> None:
    """Headings are only the grader's, one title, one score line, no link, image or raw HTML."""
    headings = HEADING.findall(markdown)
    assert all(GRADER_HEADING.fullmatch(line) for line in headings), headings
    shape = structure(markdown)
    assert shape["h1"] == 1 and shape["h2"] <= 1 and shape["h3"] == len(headings) - 1 - shape["h2"], shape
    assert shape["h4"] == shape["h5"] == shape["h6"] == 0 and shape["a"] == shape["img"] == shape["script"] == 0
    assert markdown.count("**Score:") == 1 and not CONTROL.search(markdown)


def graded_by_source(out: Path) -> dict[str, SubmissionResult]:
    return {record.source: record.result for record in Gradebook(out / "gradebook.sqlite", "toy").load()}


def comparable(results: dict) -> tuple:
    """What the honest neighbour must get whatever is beside it: its score, and each question's verdict."""
    return results["score"], [(t["name"], t["score"], t["max_score"], t["status"], t["output"])
                              for t in results["tests"]]


def assert_batch_inert(out: Path, code: int, shown: str, honest: Path, alone: dict) -> None:
    """What a batch of `honest` and one hostile submission must leave, however hostile: exit 0, inert
    terminal output, two graded submissions (no grader failure), outputs that parse and are inert,
    and the honest one's results.json as `alone` (its results.json graded alone)."""
    assert code == 0, shown  # graded, whatever the score
    assert_terminal_inert(shown)
    by_source = graded_by_source(out)
    assert len(by_source) == 2 and not any(r.error for r in by_source.values()), by_source
    honest_name = by_source[str(honest)].name
    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == 2
    results = {}
    for folder in folders:
        results[folder.name] = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert_inert_page((folder / "feedback.html").read_text(encoding="utf-8"), FEEDBACK_TAGS)
        assert_inert_markdown((folder / "feedback.md").read_text(encoding="utf-8"))
    assert comparable(results[honest_name]) == comparable(alone)
    hostile_results = next(r for name, r in results.items() if name != honest_name)
    assert {t["name"] for t in hostile_results["tests"]} <= set(QUESTIONS)
    rows = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 4 and all(len(row) == len(rows[0]) for row in rows), rows  # header, maxima, two
    assert not any(cell.startswith(FORMULA_START) or CONTROL.search(cell) for row in rows for cell in row), rows
    assert_inert_page((out / "report.html").read_text(encoding="utf-8"), REPORT_TAGS)


def check_batch(course: Course, submission: Hostile) -> None:
    scratch = Path(tempfile.mkdtemp(dir=course.root))
    try:
        path = submission.write(scratch)
        code, shown = run_grade(course.root, scratch / "out", course.honest, path)
        assert_batch_inert(scratch / "out", code, shown, course.honest, course.alone)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------- the tests

FORGING = Hostile(
    name="=HYPERLINK(\"http://evil.example\")\n# Score 100\x1b[31m\udcff",
    module=module_source(f"raise ValueError({HOSTILE_LINES!r})", "import os\nos._exit(0)"),
    quiz="big = " + "9" * 5000 + "\nnotanumber = nan\n",
    files=[("gradebook.csv/<b>.py", "=1+1"), ("\ud800", "x")], notebook=None)

FAST = settings(max_examples=15, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])
LONG = settings(FAST, max_examples=200)


@FAST
@given(submission=hostile())
@example(submission=FORGING)
def test_any_hostile_submission_is_graded_inert_beside_an_untouched_neighbour(course, submission):
    """Generated names, messages, return values, notebook cells and quiz answers, graded for real."""
    check_batch(course, submission)


@pytest.mark.slow  # about a second an example on a loaded 2-core machine: `make test-all`
@LONG
@given(submission=hostile())
def test_many_hostile_submissions_are_graded_inert_beside_an_untouched_neighbour(course, submission):
    """The same, 200 examples."""
    check_batch(course, submission)
