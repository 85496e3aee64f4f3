"""`checks similarity`: a planted copy (renamed, recommented, reformatted, reordered) of one
solution ranks first; independent correct solutions (the reference, and ada_lovelace's, written
her own way) are not flagged; the starter code alone scores nothing; the page and the CSV show
student text as written; bad input is refused with a clear error."""

from __future__ import annotations

import csv
import io
import re
import shutil
from pathlib import Path

import pytest

from checks import cli
from checks.config.errors import UsageError
from checks.course.assignment import load_assignment
from checks.similarity.fingerprints import fingerprints, tokens, winnow
from checks.similarity.run import DEFAULT_THRESHOLD, similarity_to_folder
from similarity_helpers import disguise

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "01_tensors"
FILES = ("strides.py", "broadcasting.py")


@pytest.fixture(scope="module")
def assignment():
    return load_assignment(ROOT, "01_tensors")


@pytest.fixture
def class_folder(tmp_path) -> Path:
    """The bundled examples (reference, stubs and three students), and mallory: ada's disguised."""
    folder = tmp_path / "class"
    for name in ("ada_lovelace", "ben_bitdiddle", "cy_dee", "reference", "stubs"):
        shutil.copytree(EXAMPLES / name, folder / name, symlinks=False)
    (folder / "mallory").mkdir()
    for name in FILES:
        (folder / "mallory" / name).write_text(disguise((EXAMPLES / "ada_lovelace" / name).read_text(), seed=7))
    return folder


def test_the_disguise_changes_what_a_text_comparison_would_see():
    original = (EXAMPLES / "ada_lovelace" / "strides.py").read_text()
    copy = disguise(original, seed=7)
    shared = set(original.splitlines()) & set(copy.splitlines())
    kept = [line for line in shared if len(line.strip()) > 12 and not line.startswith(("import", "from"))]
    assert len(kept) <= 3 and len(original.splitlines()) > 150  # hardly a line of 163 left as it was


def test_a_planted_copy_ranks_first_and_independent_solutions_are_not_flagged(assignment, class_folder, tmp_path):
    run = similarity_to_folder(assignment, [class_folder], tmp_path / "out")
    assert {p.a for p in run.comparison.pairs} | {p.b for p in run.comparison.pairs} <= \
        {"ada_lovelace", "ben_bitdiddle", "cy_dee", "reference", "mallory"}
    top = run.comparison.pairs[0]
    assert {top.a, top.b} == {"ada_lovelace", "mallory"} and top.similarity > 0.8
    assert [{p.a, p.b} for p in run.flagged] == [{"ada_lovelace", "mallory"}]
    independent = next(p for p in run.comparison.pairs if {p.a, p.b} == {"ada_lovelace", "reference"})
    assert independent.similarity < 0.2 < DEFAULT_THRESHOLD
    assert all(p.similarity < 0.5 for p in run.comparison.pairs[1:])


def test_the_starter_alone_scores_nothing(assignment, class_folder, tmp_path):
    run = similarity_to_folder(assignment, [class_folder], tmp_path / "out")
    assert run.comparison.sizes["stubs"] == 0
    assert not [p for p in run.comparison.pairs if "stubs" in (p.a, p.b)]
    (class_folder / "stubs2").mkdir()  # two students who handed in the starter: still nothing in common
    for name in FILES:
        shutil.copy(class_folder / "stubs" / name, class_folder / "stubs2" / name)
    again = similarity_to_folder(assignment, [class_folder], tmp_path / "out")
    assert not [p for p in again.comparison.pairs if {"stubs", "stubs2"} & {p.a, p.b}]


def test_fingerprints_ignore_names_comments_layout_and_order():
    one = "def f(xs):\n    # add them up\n    total = 0\n    for x in xs:\n        total += x * 2\n    return total\n\n" \
          "def g(a, b):\n    '''Doc.'''\n    return [a[i] + b[i] for i in range(len(a))]\n"
    two = "def g(p,q):\n  return [ p[k]+q[k] for k in range( len(p) ) ]\n\n\n" \
          "def f(values):\n  s=0  # the sum\n  for v in values:\n    s += (v * 2)\n  return s\n"
    assert sorted(t.text for t in tokens(one)) == sorted(t.text for t in tokens(two))
    prints_one = {f.hash for f in fingerprints({"a.py": one}, k=5, w=3)}
    prints_two = {f.hash for f in fingerprints({"a.py": two}, k=5, w=3)}
    assert len(prints_one & prints_two) >= 0.6 * len(prints_one)
    broken = "def f(:\n    return 1 +\n"  # does not parse: still read
    assert [t.text for t in tokens(broken)][:3] == ["def", "V", "("]


def test_winnowing_keeps_the_rightmost_smallest_of_every_window():
    assert winnow([5, 3, 4, 3, 9, 9, 1], 3) == [1, 3, 6]
    assert winnow([2, 2, 2], 4) == [2] and winnow([], 4) == []
    hashes = list(range(50, 0, -1))
    assert winnow(hashes, 4) == list(range(3, 50))  # every window's smallest: its last


def test_the_page_and_the_csv_show_student_text_as_written(assignment, class_folder, tmp_path):
    hostile = class_folder / "=HYPERLINK(1)"
    hostile.mkdir()
    for name in FILES:
        text = (class_folder / "mallory" / name).read_text()
        (hostile / name).write_text("# </pre><script>alert(1)</script>\n" + text + "\nX = '<img src=x>'\n")
    out = tmp_path / "out"
    similarity_to_folder(assignment, [class_folder], out)
    page = (out / "similarity.html").read_text()
    assert "<script>" not in page and "<img" not in page and "&lt;img src=x&gt;" in page
    assert "Evidence for a person, not a verdict." in page
    sides = re.findall(r'<div class="side-by-side">', page)
    assert sides and 'class="line matched"' in page
    rows = list(csv.reader(io.StringIO((out / "similarity.csv").read_text())))
    assert rows[0][:4] == ["rank", "a", "b", "similarity"]
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
    assert any("'=HYPERLINK(1)" in row[1:3] for row in rows[1:])


def test_bad_input_is_refused_with_a_clear_error(assignment, tmp_path, capsys):
    with pytest.raises(UsageError, match="no such submission"):
        similarity_to_folder(assignment, [tmp_path / "typo"], tmp_path / "out")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="at least two are needed"):
        similarity_to_folder(assignment, [empty], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    code = cli.main(["--course", str(ROOT), "similarity", "01_tensors", str(tmp_path / "typo"), "--out",
                     str(tmp_path / "out")])
    assert code == 2 and "no such submission" in capsys.readouterr().out


def test_checks_similarity_on_the_command_line(class_folder, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["--course", str(ROOT), "similarity", "01_tensors", str(class_folder), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "1 pair(s) at or above 0.5" in printed and "not a verdict" in printed
    assert (out / "similarity.html").is_file() and (out / "similarity.csv").is_file()
