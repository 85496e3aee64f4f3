"""Every name is data, and every submission costs only itself (DESIGN.md, "The trust boundary"; issue 29,
sections 1 and 2): a submission's name, or the names, number, nesting and sizes of the files in it,
never abort a batch, poison a later run on the same --out, or put two students in one folder; what
cannot be read is refused alone, with the reason, checked before anything is unpacked. The readers
and the batch are checked with a stand-in grader; one real `checks grade` of an honest submission
beside every hostile kind, run twice on the same --out, runs at each isolation level."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import struct
import textwrap
import warnings
import zipfile
import zlib
from pathlib import Path

import pytest

from checks import cli
from checks.course import submissions
from checks.course.assignment import Assignment
from checks.course.submissions import SubmissionError, read_submission
from checks.grading.batch import fingerprint, grade_to_folder
from checks.reports.render import remove_stale_temp_files
from checks.sandbox import jail
from checks.suites.scoring import QuestionResult, SubmissionResult
from test_inert_outputs import CONTROL, COURSE, FORMULA_START, REPORT_TAGS, Tags

# ---------------------------------------------------------------- makers


def folder(parent: Path, name: bytes | str, files: dict[bytes | str, bytes]) -> Path:
    """A folder named by raw bytes (os.fsencode: names that are not UTF-8 too), with its files."""
    root = os.path.join(os.fsencode(parent), os.fsencode(name))
    for relative, data in files.items():
        path = os.path.join(root, os.fsencode(relative))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    os.makedirs(root, exist_ok=True)
    return Path(os.fsdecode(root))


def zipped(path: Path, members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": on purpose
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return path


def many_entry_zip(path: Path, count: int) -> Path:
    """A zip of `count` empty stored files, written by hand: zipfile takes seconds for 100,000s."""
    local, central, offset = [], [], 0
    crc = zlib.crc32(b"")
    for k in range(count):
        name = f"f{k}".encode()
        header = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, 0, 0, len(name), 0) + name
        central.append(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, 0, 0, len(name), 0, 0, 0,
                                   0, 0, offset) + name)
        local.append(header)
        offset += len(header)
    directory = b"".join(central)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF), min(count, 0xFFFF), len(directory),
                      offset, 0)
    path.write_bytes(b"".join(local) + directory + end)
    return path


def deep_folder(root: Path, depth: int) -> Path:
    """`root` with a .py file `depth` folders down (through directory descriptors: past PATH_MAX too)."""
    root.mkdir(parents=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("x.py", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return root


def remove_deep(root: Path) -> None:
    """shutil.rmtree (and so pytest's cleanup) recurses: past ~1000 levels it raises RecursionError.
    So lift the nest one level at a time, removing the top."""
    while (root / "d").is_dir():
        os.rename(root / "d", root / "top")
        if (root / "top" / "d").is_dir():
            os.rename(root / "top" / "d", root / "d")
        shutil.rmtree(root / "top")


# ---------------------------------------------------------------- the batch, with a stand-in grader

def stand_in(assignment, sources, *, jobs=None):
    """Scores 1 point per .py file read (up to 3), so that each submission's grade is its own."""
    for source in sources:
        try:
            files = source.load().files
        except SubmissionError as error:
            made = SubmissionResult(source.name, assignment.name, [QuestionResult("q", 0.0, 3.0, str(error), 0, 1)])
            made.refused = str(error)
            yield made
            continue
        score = float(min(3, sum(name.endswith(".py") for name in files)))
        yield SubmissionResult(source.name, assignment.name, [QuestionResult("q", score, 3.0, "", 1, 1)],
                               sandbox="stand-in")


HOSTILE_NAMES = [b"\xff", b"\\xff", b"a\nb\x1b[31m\r", b"=cmd|' /C calc'!A0", b"\xff" * 250, "é" * 127,
                 b"gradebook.csv", b"gradebook.lock", b"gradebook.sqlite-wal", b"results.json", b"feedback.md",
                 b"report.html", b"REPORT.HTML", b"checks-zygote-1", b".gradebook.csv.1.tmp", b".hidden",
                 b"Alice", b"alice", "caf\u00e9".encode(), "cafe\u0301".encode()]


def test_no_name_aborts_a_batch_merges_two_students_or_poisons_a_rerun(tmp_path):
    subs = tmp_path / "subs"
    paths = [folder(subs, name, {f"m{k}.py": b"" for k in range(1 + n % 3)}) for n, name in enumerate(HOSTILE_NAMES)]
    assignment = Assignment("toy", tmp_path)
    out = tmp_path / "out"
    for _ in range(2):  # the second run skips them all, and writes every file again where it differs
        summary = grade_to_folder(assignment, paths, out, grader=stand_in)
    assert len(summary.skipped) == len(paths) and len(summary.records) == len(paths)
    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == len(paths)  # one each: none merged, none in the way of the grader's files
    assert len({name.casefold() for name in os.listdir(out)}) == len(os.listdir(out))  # apart on macOS too
    for name in ("gradebook.csv", "report.html", "gradebook.sqlite", "gradebook.lock"):
        assert (out / name).is_file()
    scores = {r.name: r.score for r in summary.results}
    assert sorted(scores.values()) == sorted(float(1 + n % 3) for n in range(len(paths)))  # each kept its grade
    renamed = [r for r in summary.results if r.warnings and r.warnings[0].startswith("submitted as")]
    assert len(renamed) >= 12 and all("graded as" in r.warnings[0] for r in renamed)
    rows = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert len(rows) == len(paths) + 2  # the header, the maxima, and a row each
    assert not any(cell.startswith(FORMULA_START) or CONTROL.search(cell) for row in rows for cell in row)


def test_files_inside_named_in_any_bytes_do_not_stop_the_batch(tmp_path):
    sub = folder(tmp_path, "x", {b"m.py": b"", b"\xff.py": b"", b"a\nb.py": b"", b"\x1b[2J.py": b"",
                                 b"d\xfe/n.py": b""})
    assert fingerprint(sub) != ""  # it used to raise UnicodeEncodeError, which stopped the batch (exit 2)
    read = read_submission(sub)
    assert sorted(read.files) == sorted(["a\nb.py", "m.py", "\x1b[2J.py"])
    assert sum("not UTF-8, ignored" in w for w in read.warnings) == 2
    summary = grade_to_folder(Assignment("toy", tmp_path), [sub], tmp_path / "out", grader=stand_in)
    assert summary.results[0].score == 3


def test_temp_file_names_in_the_output_folder_are_never_a_folder_removed(tmp_path):
    (tmp_path / ".gradebook.csv.1.tmp").mkdir()
    (tmp_path / ".report.html.2.tmp").write_text("stale")
    remove_stale_temp_files(tmp_path)  # used to raise IsADirectoryError on every later run
    assert (tmp_path / ".gradebook.csv.1.tmp").is_dir() and not (tmp_path / ".report.html.2.tmp").exists()


# ---------------------------------------------------------------- zips and folders

@pytest.mark.parametrize("members, why", [
    ([("a.py", b"1"), ("a.py", b"2")], "holds a.py twice"),
    ([("a.py", b"1"), ("./a.py", b"2")], "holds a.py twice"),
    ([("s/a.py", b"1"), ("s\\a.py", b"2")], "holds s/a.py twice"),
    ([("x.py", b""), ("x.py/y.py", b"")], "both as a file and as a folder"),
    ([("d/" * 33 + "a.py", b"")], "more than 32 deep"),
])
def test_a_zip_whose_entries_clash_or_nest_too_deep_is_refused(tmp_path, members, why):
    archive = zipped(tmp_path / "s.zip", members)
    with pytest.raises(SubmissionError, match=why):
        read_submission(archive)


def claiming(path: Path, member: int, unpacked: int) -> Path:
    """The zip at `path`, its directory claiming `unpacked` bytes for its `member`-th entry (as a bomb's
    does, at a ratio deflate reaches only on gigabytes of zeros, which take seconds to write)."""
    data = bytearray(path.read_bytes())
    at = -1
    for _ in range(member + 1):
        at = data.index(b"PK\x01\x02", at + 1)
    data[at + 24:at + 28] = struct.pack("<L", unpacked)
    path.write_bytes(bytes(data))
    return path


def test_a_zip_bomb_is_refused_from_its_directory(tmp_path):
    ratio = claiming(zipped(tmp_path / "ratio.zip", [("a.py", b""), ("z.bin", b"\0" * 2**20)], zipfile.ZIP_DEFLATED),
                     1, 300 * 2**20)
    with pytest.raises(SubmissionError, match="would unpack to 300 MiB from 0.0 MiB .*a zip bomb"):
        read_submission(ratio)
    huge = claiming(zipped(tmp_path / "huge.zip", [("a.py", b""), ("data.bin", b"0123456789")]), 1, 0xFFFFFF00)
    with pytest.raises(SubmissionError, match="would unpack to 4,096 MiB"):
        read_submission(huge)
    junk = zipped(tmp_path / "junk.zip", [("a.py", b""), ("zeros.bin", b"\0" * (30 * 2**20))], zipfile.ZIP_DEFLATED)
    assert list(read_submission(junk, ("a.py",)).files) == ["a.py"]  # 30 MiB of zeros: junk, skipped unread


def test_hundreds_of_thousands_of_entries_are_refused_before_the_zip_is_parsed(tmp_path, monkeypatch):
    archive = many_entry_zip(tmp_path / "many.zip", 200_000)
    parsed = []
    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", lambda self: parsed.append(1))
    with pytest.raises(SubmissionError, match="more than 10,000 entries"):
        read_submission(archive)
    assert not parsed


def test_a_folder_with_too_many_entries_is_refused_while_listed(tmp_path):
    many = folder(tmp_path, "many", {"a.py": b""})
    for k in range(10_000):  # submissions.MAX_ENTRIES
        (many / f"f{k}").touch()
    with pytest.raises(SubmissionError, match="more than 10,000 files and folders"):
        read_submission(many)


def test_a_zip_that_is_not_what_it_says_is_refused_not_a_grader_failure(tmp_path):
    archive = zipped(tmp_path / "u8.zip", [("a.py", b""), ("\u00e9.py", b"")])
    archive.write_bytes(archive.read_bytes().replace("\u00e9.py".encode(), b"\xff\xfe.py"))  # flagged UTF-8
    with pytest.raises(SubmissionError, match="not a readable zip"):
        read_submission(archive)


def test_a_member_named_too_long_for_a_file_system_is_skipped_with_a_warning(tmp_path):
    read = read_submission(zipped(tmp_path / "l.zip", [("a.py", b""), ("b" * 300 + ".py", b""),
                                                       (("c" * 200 + "/") * 6 + "e.py", b"")]))
    assert list(read.files) == ["a.py"]
    assert sum("a name too long for a file system, ignored" in w for w in read.warnings) == 2


def test_nested_folders_are_refused_past_the_cap_and_never_overflow_the_stack(tmp_path):
    with pytest.raises(SubmissionError, match="more than 32 deep"):
        read_submission(deep_folder(tmp_path / "deep", 33))
    abyss = deep_folder(tmp_path / "abyss", 1100)
    try:
        assert fingerprint(abyss) != ""  # os.walk recursed: RecursionError stopped the whole batch
        with pytest.raises(SubmissionError, match="more than 32 deep"):
            read_submission(abyss)
    finally:
        remove_deep(abyss)


def test_links_in_a_folder_are_skipped_with_a_warning_files_and_folders_alike(tmp_path):
    sub = folder(tmp_path, "s", {"a.py": b""})
    os.symlink("/etc", sub / "etc")
    os.symlink("/etc/passwd", sub / "p.py")
    read = read_submission(sub)
    assert list(read.files) == ["a.py"]
    assert "etc: a symlink, ignored" in read.warnings and "p.py: a symlink, ignored" in read.warnings


def test_notebooks_are_read_within_one_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_NOTEBOOK_BYTES", 1500)
    monkeypatch.setattr(submissions, "MAX_NOTEBOOKS_BYTES", 2500, raising=False)
    sub = folder(tmp_path, "nb", {f"n{k}.ipynb": b"{" * 1000 for k in range(6)})
    reads = []
    real = submissions._read_capped
    monkeypatch.setattr(submissions, "_read_capped", lambda path, cap: reads.append(path) or real(path, cap))
    with pytest.raises(SubmissionError, match="the notebooks before it took"):
        read_submission(sub, ("mod.py",))
    assert len(reads) == 2


# ---------------------------------------------------------------- one real batch, twice, at each isolation level

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
HONEST = textwrap.dedent(COURSE["subs/honest/mod.py"]).encode()
QUIZ = COURSE["subs/honest/quiz.toml"].encode()


def hostile_class(subs: Path) -> dict[str, str]:
    """Every hostile kind beside subs/honest: {path: 'graded' or the start of its refusal}."""
    kinds: dict[str, str] = {}
    for name in (b"\xff", b"\\xff", b"a\nb\x1b[31m\r", b"\xff" * 250, b"gradebook.csv", b"gradebook.lock",
                 b"results.json", b"feedback.md", b"report.html", b"checks-sandbox-1", b".gradebook.csv.1.tmp",
                 b"Alice", b"alice", "caf\u00e9".encode(), "cafe\u0301".encode()):
        kinds[str(folder(subs, name, {b"mod.py": HONEST, b"\xff.py": b"", b"a\nb.py": b""}))] = "graded"
    linked = folder(subs, "linked", {"mod.py": HONEST})
    os.symlink("/etc", linked / "etc")
    os.symlink("/etc/passwd", linked / "quiz.toml")
    kinds[str(linked)] = "graded"
    kinds[str(zipped(subs / "dup.zip", [("mod.py", HONEST), ("mod.py", b"")]))] = "dup.zip holds mod.py twice"
    kinds[str(zipped(subs / "dot.zip", [("mod.py", HONEST), ("./mod.py", b"")]))] = "dot.zip holds mod.py twice"
    kinds[str(claiming(zipped(subs / "bomb.zip", [("mod.py", HONEST), ("z", b"\0" * 2**20)], zipfile.ZIP_DEFLATED),
                       1, 2**31))] = "bomb.zip would unpack"
    kinds[str(many_entry_zip(subs / "many.zip", 20_000))] = "many.zip holds more than"
    many = folder(subs, "many", {"mod.py": HONEST})
    for k in range(10_000):  # submissions.MAX_ENTRIES
        (many / f"f{k}").touch()
    kinds[str(many)] = "many holds more than"
    (deep_folder(subs / "deep", 40) / "mod.py").write_bytes(HONEST)  # a .py on top: one submission, not a folder of them
    kinds[str(subs / "deep")] = "deep nests folders"
    return kinds


def grade(root: Path, level: str, out: Path, paths: list[str], capsys) -> tuple[int, str]:
    code = cli.main(["--course", str(root), "grade", "toy", *paths, "--out", str(out), "--isolation", level])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("level", LEVELS)
def test_a_real_batch_of_every_hostile_kind_beside_an_honest_one_runs_twice(level, make_course, monkeypatch, capsys):
    monkeypatch.setenv(jail.ENV_VARIABLE, level)  # main() sets it from --isolation: restored after the test
    root = make_course(COURSE)
    subs = root / "subs"
    kinds = hostile_class(subs)
    paths = [str(subs / "honest"), *kinds]
    out = root / "grades"
    code, shown = grade(root, level, out, paths, capsys)
    assert code == 0, shown
    last = shown.rstrip().splitlines()[-1]
    assert last.startswith(f"grade toy: {len(paths)} graded now, 0 already graded; mean "), last
    code, shown = grade(root, level, out, paths, capsys)  # the same command again, on the same --out
    assert code == 0, shown
    assert shown.rstrip().splitlines()[-1].startswith(f"grade toy: 0 graded now, {len(paths)} already graded")

    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == len(paths)  # each its own folder: none merged, none in the grader's way
    results = {p.name: json.loads((p / "results.json").read_text(encoding="utf-8")) for p in folders}
    for folder_path in folders:
        assert Tags((folder_path / "feedback.html").read_text(encoding="utf-8")).tags
        assert (folder_path / "feedback.md").read_text(encoding="utf-8").startswith("# toy: feedback for ")
    assert Tags((out / "report.html").read_text(encoding="utf-8")).tags <= REPORT_TAGS
    rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))[1:]  # [0]: maxima
    assert len(rows) == len(paths) and {row["status"] for row in rows} == {"graded", "refused"}
    refused = sorted(row["reason"] for row in rows if row["status"] == "refused")
    expected = sorted(why for why in kinds.values() if why != "graded")
    assert sorted(next((e for e in expected if r.startswith(e)), r) for r in refused) == expected, refused
    assert not any(r["extra_data"]["error"] for r in results.values())  # none is a grader failure
    graded = [r for r in results.values()
              if not any(w.startswith("The submission could not be read") for w in r["extra_data"]["warnings"])]
    assert len(graded) == 1 + sum(why == "graded" for why in kinds.values())
    assert all(r["score"] >= 15 for r in graded)  # the hostile names keep their grades (no quiz: 15 of 18)

    alone = root / "alone"
    code, _ = grade(root, level, alone, [str(subs / "honest")], capsys)
    assert code == 0
    assert json.loads((alone / "honest/results.json").read_text())["score"] == results["honest"]["score"] == 18
