"""The first ten minutes with the command line, as a student and as a TA type it: `checks test` on
stubs, on a copy outside the course, with a broken quiz or a misnamed file; `checks pack`; the last
line of grade and verify; every --help; feedback.md and feedback.html read by people."""

from __future__ import annotations

import argparse
import html
import io
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from checks import cli
from checks.course.assignment import MARKER_FILE, load_assignment
from checks.course.submissions import missing_files
from checks.reports.render import feedback_html, feedback_markdown
from checks.suites.scoring import QuestionResult, SubmissionResult

from conftest import REPO, course_assignments

RELEASE = REPO / "assignments/01_tensors"
SOLUTION = REPO / "solutions/01_tensors"
BEN = REPO / "examples/01_tensors/ben_bitdiddle"


def run(monkeypatch, *argv: str, cwd: Path | None = None) -> tuple[int, str]:
    """`checks ARGV...` in this process, printed 200 columns wide; (exit status, what it printed)."""
    out = io.StringIO()
    monkeypatch.setattr(cli.common, "console", Console(file=out, width=200, highlight=False))
    monkeypatch.delenv("CHECKS_COURSE", raising=False)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    return cli.main(list(argv)), out.getvalue()


def student_copy(tmp_path: Path, *, solved: bool = True, quiz: str | None = 'broadcast_numel = 6\n') -> Path:
    """A student's copy of the 01_tensors release, outside the course: solved or still the stubs."""
    copy = tmp_path / "my-work" / "01_tensors"
    shutil.copytree(RELEASE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if solved:
        for name in ("strides.py", "broadcasting.py"):
            shutil.copy(SOLUTION / name, copy / name)
    if quiz is not None:
        (copy / "quiz.toml").write_text(quiz)
    return copy


# ---------------------------------------------------------------- checks test (students)


def test_the_quiz_has_a_row_per_question_on_its_form_never_its_correctness(tmp_path, monkeypatch):
    copy = student_copy(tmp_path, quiz='broadcast_numel = "six"\n')
    code, out = run(monkeypatch, "test", "01_tensors", cwd=copy)
    assert code == 1
    assert re.search(r"quiz\.broadcast_numel .*✗.*expected a number, got 'six'", out)
    assert "12 of 12 questions pass their public checks; 0 of 1 quiz answers present and well-formed." in out

    (copy / "quiz.toml").write_text("broadcast_numel = [\n")  # a TOML syntax error
    code, out = run(monkeypatch, "test", "01_tensors", cwd=copy)
    assert code == 1 and "quiz.toml is not valid TOML" in out

    (copy / "quiz.toml").write_text("broadcast_numel = 5\n")  # well-formed, and wrong: the key stays hidden
    code, out = run(monkeypatch, "test", "01_tensors", cwd=copy)
    assert code == 0
    assert re.search(r"quiz\.broadcast_numel .*✓.*answered \(number\); it is marked when graded", out)
    assert "1 of 1 quiz answers present and well-formed" in out


def test_untouched_stubs_are_one_short_row_each(monkeypatch):
    code, out = run(monkeypatch, "test", "01_tensors", "--course", str(REPO))  # --course after the command
    assert code == 1
    assert out.count("not started") == 12
    assert "NotImplementedError: numel" not in out and "still the stub" not in out  # the hints stay in the files
    assert "Not started: 12 questions still raise the stub's NotImplementedError" in out
    assert len(out.splitlines()) <= 30, out


def test_each_failure_is_shown_once_in_the_details(monkeypatch):
    code, out = run(monkeypatch, "--course", str(REPO), "test", "01_tensors", str(BEN))
    assert code == 1
    assert re.search(r"strides\.unravel .*3/4 .*✗.*1 of 4 checks failed: see below", out)
    assert out.count("unravel(6, (2, 3)) returned (0, 0)") == 1
    assert re.search(r"strides\.numel .*✓ .*passed", out)


def test_in_a_copy_checks_test_needs_no_name_and_runs_only_the_questions_named(tmp_path, monkeypatch):
    copy = student_copy(tmp_path, solved=False)
    code, out = run(monkeypatch, "test", cwd=copy / "tests")  # the copy's marker names the assignment
    assert code == 1 and "public checks of 01_tensors on" in out and out.count("not started") == 12, out
    code, out = run(monkeypatch, "test", "strides.offset", "quiz.broadcast_numel", cwd=copy)
    rows = [line.split()[1] for line in out.splitlines() if line.startswith("│")]
    assert rows == ["strides.offset", "quiz.broadcast_numel"], out
    assert "0 of 1 questions pass their public checks; 1 of 1 quiz answers" in out
    code, out = run(monkeypatch, "test", "01_tensors", "strides.ofset", cwd=copy)
    assert code == 2 and out.startswith("error: 01_tensors has no question 'strides.ofset' (did you mean "
                                        "strides.offset?); its questions: strides.numel,"), out
    code, out = run(monkeypatch, "test", "numel", cwd=copy)  # a bare word in a copy: its question
    assert code == 2 and "no question 'numel' (did you mean strides.numel?)" in out, out
    code, out = run(monkeypatch, "test", cwd=tmp_path)
    assert code == 2 and "name the assignment: `checks test ASSIGNMENT`" in out, out


def test_the_words_of_checks_test_are_read_one_way():
    from checks.course.selection import TestRequest, read_test_words

    names = ["01_tensors", "02_autograd"]
    assert read_test_words(["01_tensors"], names) == TestRequest("01_tensors")
    assert read_test_words(["01_tensors", "/tmp/x", "strides.numel"], names) == TestRequest(
        "01_tensors", Path("/tmp/x"), ("strides.numel",))
    assert read_test_words(["sub.zip"], names) == TestRequest(None, Path("sub.zip"))
    assert read_test_words(["strides.numel", "quiz.a"], names) == TestRequest(None, None, ("strides.numel", "quiz.a"))
    here = ["strides.numel", "strides.offset"]
    assert read_test_words(["numel"], names, questions_here=here) == TestRequest(None, None, ("numel",))
    assert read_test_words(["02_autograd"], names, questions_here=here) == TestRequest("02_autograd")
    with pytest.raises(Exception, match=r"no assignment '01_tensor' here \(did you mean 01_tensors\?\)"):
        read_test_words(["01_tensor"], names)


def test_a_path_that_does_not_exist_is_one_error_line(monkeypatch, tmp_path):
    code, out = run(monkeypatch, "--course", str(REPO), "test", "01_tensors", str(tmp_path / "nosuch"))
    assert code == 2
    assert out.strip() == f"error: {tmp_path / 'nosuch'} does not exist"


@pytest.mark.parametrize("layout, hint", [
    ({"strides.PY": "strides.py"}, "strides.py is missing; found strides.PY: rename it to strides.py"),
    ({"Strides.py": "strides.py"}, "strides.py is missing; found Strides.py: rename it to strides.py"),
    ({"strides.py.txt": "strides.py"}, "strides.py is missing; found strides.py.txt: rename it to strides.py"),
    ({"work/strides.py": "strides.py", "work/broadcasting.py": "broadcasting.py"},
     "strides.py is missing; found work/strides.py: move it to the top of the folder"),
])
def test_a_misnamed_file_is_pointed_out(layout, hint):
    files = {"quiz.toml": b"", "strides.py": b"", "broadcasting.py": b""}
    for found, wanted in layout.items():
        files[found] = files.pop(wanted)
    assert hint in missing_files(("strides.py", "broadcasting.py"), files)


def test_checks_test_and_grade_feedback_name_the_misnamed_file(tmp_path, monkeypatch):
    copy = student_copy(tmp_path)
    (copy / "strides.py").rename(copy / "strides.PY")
    code, out = run(monkeypatch, "test", "01_tensors", cwd=copy)
    assert code == 1 and "warning: strides.py is missing; found strides.PY: rename it to strides.py" in out

    code, out = run(monkeypatch, "--course", str(REPO), "grade", "01_tensors", str(copy), "--out",
                    str(tmp_path / "grades"))
    assert code == 0
    assert "found strides.PY: rename it to strides.py" in (tmp_path / "grades/01_tensors/feedback.md").read_text()


def test_a_copy_outside_the_course_is_checked_from_inside_it(tmp_path):
    """As a student types it, in a fresh process: no course around, no CHECKS_COURSE."""
    copy = student_copy(tmp_path)
    env = {key: value for key, value in os.environ.items() if key != "CHECKS_COURSE"}
    env.update(PYTHONPATH=str(REPO / "src"), COLUMNS="200")
    checks = [sys.executable, "-m", "checks"]
    inside = subprocess.run([*checks, "test", "01_tensors"], cwd=copy / "tests", env=env, capture_output=True,
                            text=True, timeout=300)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert f"public checks of 01_tensors on {copy}" in inside.stdout
    assert "12 of 12 questions pass their public checks; 1 of 1 quiz answers present and well-formed." in inside.stdout

    elsewhere = subprocess.run([*checks, "test", "01_tensors"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=300)
    assert elsewhere.returncode == 2 and "no course found" in elsewhere.stdout and "--course" in elsewhere.stdout


def test_a_copy_of_another_assignment_says_which_it_is(tmp_path, monkeypatch):
    copy = student_copy(tmp_path)
    code, out = run(monkeypatch, "pack", "02_autograd", cwd=copy)
    assert code == 2 and f"{copy} is a copy of 01_tensors, not of 02_autograd: here, use `checks pack 01_tensors`" in out


def test_build_writes_a_marker_with_the_files_and_answer_kinds_never_the_answers(make_course):
    from checks.authoring.build import build

    root = make_course({"solutions/toy/good.py": "x = 1\n", "solutions/toy/quiz.toml": "n = 7\nok = true\n",
                        "autograder/toy/assignment.toml": 'title = "Toy"\nfiles = ["good.py"]\n'
                                                          "[quiz.n]\nanswer = 7\npoints = 1\n"
                                                          "[quiz.ok]\nanswer = true\npoints = 1\n"})
    build(root, ["toy"])
    marker = (root / "assignments/toy" / MARKER_FILE).read_text()
    assert 'assignment = "toy"' in marker and 'files = ["good.py"]' in marker
    assert 'n = "number"' in marker and 'ok = "true or false"' in marker and "7" not in marker
    assert "[stubs]" not in marker  # good.py leaves nothing to write
    assert build(root, ["toy"], check=True) == []


# ---------------------------------------------------------------- checks pack


def test_pack_writes_exactly_the_graded_files_and_grades_the_same_as_the_folder(tmp_path, monkeypatch):
    work = tmp_path / "ben"
    shutil.copytree(BEN, work)
    (work / "notes.ipynb").write_text("{}")  # what a student's folder also holds: it stays out
    (work / "__pycache__").mkdir()
    upload = tmp_path / "upload" / "ben_zip.zip"
    code, out = run(monkeypatch, "--course", str(REPO), "pack", "01_tensors", str(work), "--out", str(upload))
    assert code == 0, out
    assert zipfile.ZipFile(upload).namelist() == ["strides.py", "broadcasting.py", "quiz.toml"]
    assert f"wrote {upload}, with 3 files" in out and "strides.py (" in out

    code, out = run(monkeypatch, "--course", str(REPO), "grade", "01_tensors", str(work), str(upload),
                    "--out", str(tmp_path / "grades"))
    assert code == 0
    rows = (tmp_path / "grades/gradebook.csv").read_text().splitlines()
    folder_row, zip_row = (next(r for r in rows if r.startswith(f"{name},")) for name in ("ben", "ben_zip"))
    assert folder_row.split(",")[2:] == zip_row.split(",")[2:] and "93.74" in folder_row  # [1]: the student id
    assert out.rstrip().splitlines()[-1] == "grade 01_tensors: 2 graded now, 0 already graded; mean 93.7 of 100 over 2"


def test_pack_refuses_a_missing_file_or_a_malformed_quiz_and_writes_nothing(tmp_path, monkeypatch):
    copy = student_copy(tmp_path, quiz='broadcast_numel = "six"\n')
    code, out = run(monkeypatch, "pack", "01_tensors", cwd=copy)
    assert code == 1 and "quiz.toml: broadcast_numel: expected a number, got 'six'" in out
    (copy / "quiz.toml").write_text('broadcast_numel = ""\n')
    (copy / "broadcasting.py").rename(copy / "broadcasting.py.txt")
    code, out = run(monkeypatch, "pack", "01_tensors", cwd=copy)
    assert code == 1 and "broadcasting.py is missing; found broadcasting.py.txt: rename it" in out
    assert not (copy / "01_tensors.zip").exists()

    (copy / "broadcasting.py.txt").rename(copy / "broadcasting.py")
    code, out = run(monkeypatch, "pack", "01_tensors", cwd=copy)  # an unanswered quiz is packed, with a word
    assert code == 0 and "quiz: no answer yet for broadcast_numel (packed anyway)" in out
    assert (copy / "01_tensors.zip").is_file()


def test_pack_warns_in_one_line_when_a_file_is_still_the_untouched_stub(tmp_path, monkeypatch):
    """Still packed, with one line that names the files where nothing is implemented yet; a file
    with one function written is not untouched, whatever the others."""
    copy = student_copy(tmp_path, solved=False)
    code, out = run(monkeypatch, "pack", "01_tensors", cwd=copy)
    warning = [line for line in out.splitlines() if line.startswith("warning:")]
    assert code == 0 and (copy / "01_tensors.zip").is_file(), out
    assert warning == ["warning: nothing implemented yet in strides.py and broadcasting.py: every function there "
                       "still raises the stub's NotImplementedError (packed anyway)"], out
    stub = (copy / "strides.py").read_text()
    start = stub.index("    raise NotImplementedError('numel:")
    (copy / "strides.py").write_text(stub[:start] + "    return 6\n" + stub[stub.index("\n", start) + 1:])
    code, out = run(monkeypatch, "pack", "01_tensors", cwd=copy)
    assert code == 0 and "warning: nothing implemented yet in broadcasting.py: every function" in out, out
    shutil.copy(SOLUTION / "broadcasting.py", copy / "broadcasting.py")
    code, out = run(monkeypatch, "pack", "01_tensors", cwd=copy)
    assert code == 0 and "nothing implemented" not in out, out


def test_untouched_is_decided_by_the_release_record_else_by_public_names():
    from checks.course.stubs import stub_functions, untouched

    stub = ('def _given(x):\n    return x\n\n\nclass T:\n    def __init__(self):\n'
            '        raise NotImplementedError("T.__init__: store it")\n\n    def __repr__(self):\n        return "T"\n\n'
            '    def add(self, o):\n        """Doc."""\n        raise NotImplementedError("T.add: add")\n')
    assert stub_functions(stub) == ["T.__init__", "T.add"]
    assert untouched(stub, ["T.__init__", "T.add"]) and untouched(stub, None)
    started = stub.replace('raise NotImplementedError("T.__init__: store it")', "self.x = 1")
    assert not untouched(started, ["T.__init__", "T.add"])  # the record knows __init__ was a stub
    assert untouched(started, None)  # without one, a dunder is taken for a given helper
    assert not untouched(stub.replace('raise NotImplementedError("T.add: add")', "return 1"), None)
    own = stub.replace('"T.add: add"', '"not for negative numbers"')  # a student's own NotImplementedError
    assert stub_functions(own) == ["T.__init__"] and not untouched(own, ["T.__init__", "T.add"])
    assert stub_functions("def broken(:\n") is None and not untouched("def broken(:\n", None)


# ---------------------------------------------------------------- TAs and authors

TOY_SOLUTION = """\
def add(a, b):
    # BEGIN SOLUTION hint: add them
    return a + b
    # END SOLUTION
"""
TOY_SUITE = """\
from checks.suite import cases, expect_equal, question

@question("good.add", points=90)
@cases("a", [1, 2, 3])
def test_add(student, a):
    expect_equal(student.good.add(a, 1), a + 1)
"""


@pytest.mark.parametrize("question, held", [("good.add", "10 of 10 hold"), ("good.other", "9 of 10 hold")])
def test_verify_ends_with_one_line_and_fails_when_one_does_not_hold(make_course, monkeypatch, question, held):
    root = make_course({"solutions/toy/good.py": TOY_SOLUTION, "solutions/toy/quiz.toml": "answer = 6\n",
                        "assignments/toy/tests/test_public.py": TOY_SUITE,
                        "autograder/toy/assignment.toml": 'files = ["good.py"]\n[quiz.answer]\nanswer = 6\npoints = 10\n',
                        "autograder/toy/test_toy.py": TOY_SUITE,
                        "autograder/toy/mutants.toml": '[[mutant]]\nname = "minus"\nquestion = "good.add"\n'
                                                       'file = "good.py"\nfind = "a + b"\nreplace = "a - b"\n'
                                                       f'[[mutant]]\nname = "times"\nquestion = "{question}"\n'
                                                       'file = "good.py"\nfind = "a + b"\nreplace = "a * b"\n'})
    code, out = run(monkeypatch, "verify", "toy", "--course", str(root))
    assert out.rstrip().splitlines()[-1] == f"verify toy: {held}"
    assert code == (0 if held == "10 of 10 hold" else 1)


@pytest.mark.parametrize("command", ["test", "pack", "grade", "build", "verify"])
def test_every_help_has_a_description_argument_help_and_examples(command, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert "\nexamples:\n  checks " in text and f"checks {command}" in text.split("examples:")[1]
    assert ", ".join(course_assignments(REPO)) in text  # the known assignments, as the course has them
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    assert sub.description and len(sub.description) > 60
    assert all(action.help for action in sub._actions), [a.dest for a in sub._actions if not a.help]


# ---------------------------------------------------------------- feedback for people


def rendered_text(markdown: str) -> str:
    page = MarkdownIt("commonmark").enable("table").render(markdown)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_feedback_reads_without_stray_backslashes_and_links_as_html(tmp_path, monkeypatch):
    examples = REPO / "examples/01_tensors"
    out_dir = tmp_path / "grades"
    code, _ = run(monkeypatch, "--course", str(REPO), "grade", "01_tensors", str(examples / "stubs"),
                  str(examples / "cy_dee"), "--out", str(out_dir))
    assert code == 0
    for name in ("stubs", "cy_dee"):
        text = rendered_text((out_dir / name / "feedback.md").read_text())
        assert "\\" not in text and "`" not in text, text
    assert "No answer for broadcast_numel in quiz.toml." in rendered_text((out_dir / "stubs/feedback.md").read_text())
    assert "broadcast_numel = 3 is not the right answer." in rendered_text((out_dir / "cy_dee/feedback.md").read_text())

    report = (out_dir / "report.html").read_text()
    assert 'href="cy_dee/feedback.html"' in report and "feedback.md\"" not in report
    page = (out_dir / "cy_dee/feedback.html").read_text()
    assert "<h1>01_tensors: feedback for cy_dee</h1>" in page and "<table>" in page and "<script" not in page


def test_feedback_html_keeps_student_text_as_text():
    hostile = "1 of 2 checks failed.\n- f() raised ValueError: <script>alert(1)</script> <img src=x onerror=y>"
    result = SubmissionResult("<b>ben</b>", "01_tensors", [QuestionResult("q", 0.0, 4.0, hostile, 1, 2)])
    page = feedback_html(feedback_markdown(result), title="01_tensors: feedback for <b>ben</b>")
    assert "<script" not in page and "<img" not in page and "<b>ben" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;ben&lt;/b&gt;" in page
    raw = feedback_html("<script>x</script>\n", title="t")  # raw HTML in the markdown itself is not passed on
    assert "<script>x" not in raw


def test_pack_refuses_a_file_the_grader_would_not_read(tmp_path, monkeypatch):
    copy = student_copy(tmp_path)
    with (copy / "strides.py").open("a") as source:
        source.write("# padding\n" * 700_000)  # about 7 MiB: over the grader's 5 MiB a file
    code, out = run(monkeypatch, "pack", "01_tensors", cwd=copy)
    assert code == 1 and "strides.py is 6 MiB; the grader reads files up to 5 MiB" in out
    assert not (copy / "01_tensors.zip").exists()


@pytest.mark.parametrize("argv, unknown, nearest", [
    (["grade", "01_tensors", "examples/01_tensors", "--outt", "grades"], "--outt", "--out"),
    (["test", "01_tensors", "--devise=cpu"], "--devise", "--device"),
    (["verify", "01_tensors", "--jbos", "2"], "--jbos", "--jobs"),
])
def test_an_unknown_option_is_named_first_with_the_nearest_known(argv, unknown, nearest, capsys, monkeypatch):
    """Not "the following arguments are required: --out", which sends a TA after the wrong flag."""
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert f"unknown option {unknown} (did you mean {nearest}?)" in capsys.readouterr().err


def test_test_and_verify_take_device_as_grade_does(monkeypatch):
    """`--device cpu` leaves the GPU out of a student's own run too; `--device cuda` where there is
    none is one error line, before anything runs."""
    monkeypatch.setenv("CHECKS_DEVICE", "auto")  # cli.main sets it: put back after this test
    parser = cli._parser()
    for command in (["test", "01_tensors"], ["verify", "01_tensors"], ["grade", "01_tensors", "x", "--out", "o"]):
        assert parser.parse_args([*command, "--device", "cpu"]).device == "cpu"
    monkeypatch.setattr(cli.zygote, "cuda_available", lambda: False)
    code, out = run(monkeypatch, "test", "01_tensors", "--device", "cuda", cwd=REPO)
    assert code == 2 and "--device cuda: torch sees no CUDA device here" in out
