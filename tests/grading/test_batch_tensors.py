"""Batch grading of the real 01_tensors assignment: bad zips cost only themselves, and a run
killed with SIGKILL, re-run, ends with the same gradebook as a run left alone."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from contextlib import closing
from pathlib import Path

import pytest

from checks import cli
from checks.grading.batch import expand_submission_paths, grade_to_folder
from checks.course.assignment import load_assignment
from checks.reports.gradebook import DB_FILE, Gradebook
from checks.authoring.verify import load_mutants

from conftest import REPO

ASSIGNMENT = load_assignment(REPO, "01_tensors")
SOLUTION_FILES = {name: (ASSIGNMENT.solution_dir / name).read_bytes() for name in (*ASSIGNMENT.files, "quiz.toml")}


def students(gradebook_csv: Path) -> list[dict]:
    """gradebook.csv's rows of submissions (the line under the header holds the maxima)."""
    rows = list(csv.DictReader(gradebook_csv.open()))
    assert rows[0]["submission"] == "Points Possible", rows[0]
    return rows[1:]


def write_zip(path: Path, entries: dict[str, bytes], *, symlink: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = 0o120777 << 16
            archive.writestr(info, "/etc/passwd")
    return path


def test_a_bad_zip_costs_only_that_submission_and_says_why(tmp_path):
    subs = tmp_path / "subs"
    shutil.copytree(ASSIGNMENT.solution_dir, subs / "good")
    (subs / "junk.zip").write_bytes(b"this is not a zip file")
    write_zip(subs / "escapes.zip", {**SOLUTION_FILES, "../../evil.py": b"import os"})
    write_zip(subs / "many.zip", {f"f{k}.py": b"" for k in range(201)})
    write_zip(subs / "linked.zip", {f"linked/{name}": data for name, data in SOLUTION_FILES.items()},
              symlink="linked/secret.py")
    out = tmp_path / "out"
    summary = grade_to_folder(ASSIGNMENT, expand_submission_paths([subs]), out, jobs=2)

    assert not summary.failed, [r.error for r in summary.failed]  # the student's problem, not the grader's
    rows = {row["submission"]: row for row in students(out / "gradebook.csv")}
    assert {name: float(row["total"]) for name, row in rows.items()} == {
        "good": 100, "linked": 100, "junk": 0, "escapes": 0, "many": 0}
    assert {name: row["status"] for name, row in rows.items()} == {
        "good": "graded", "linked": "graded", "junk": "refused", "escapes": "refused", "many": "graded"}
    reasons = {"junk": "junk.zip is not a readable zip file", "escapes": "would land outside the submission folder"}
    for name, reason in reasons.items():
        assert reason in rows[name]["reason"]
        results = json.loads((out / name / "results.json").read_text())
        assert results["score"] == 0 and any(reason in w for w in results["extra_data"]["warnings"]), results
        assert "could not be read" in results["output"] and reason in results["output"]
        feedback = (out / name / "feedback.md").read_text()
        assert f"About your submission:\n\n- The submission could not be read: " in feedback and reason in feedback
    many = json.loads((out / "many" / "results.json").read_text())["extra_data"]["warnings"]
    assert "strides.py is missing from the submission" in many  # 201 files no longer refuse it: it has none of ours
    linked = json.loads((out / "linked" / "results.json").read_text())
    assert any("secret.py: a symlink, ignored" in w for w in linked["extra_data"]["warnings"])
    assert not (tmp_path / "evil.py").exists() and not (out.parent / "evil.py").exists()
    report = (out / "report.html").read_text()
    assert re.search(r'<table id="refused">.*escapes.*junk.*</table>', report, re.S)


def test_junk_is_skipped_and_an_oversized_file_costs_only_the_questions_that_read_it(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    venv = {f"cluttered/.venv/lib/python3.11/site-packages/pkg/m{k}.py": b"raise SystemExit" for k in range(300)}
    write_zip(subs / "cluttered.zip", {**{f"cluttered/{n}": d for n, d in SOLUTION_FILES.items()}, **venv,
                                       "cluttered/data.bin": b"\0" * (30 * 10**6), "cluttered/.DS_Store": b"\0",
                                       "__MACOSX/cluttered/._strides.py": b"\0"})
    for name, big in (("bigquiz", "quiz.toml"), ("bigstrides", "strides.py")):
        shutil.copytree(ASSIGNMENT.solution_dir, subs / name)
        with open(subs / name / big, "ab") as grown:  # still valid TOML and Python: only its size is wrong
            grown.write(b"\n" + b"#" * (30 * 10**6))
    out = tmp_path / "out"
    summary = grade_to_folder(ASSIGNMENT, expand_submission_paths([subs]), out, jobs=2)

    assert not summary.failed, [r.error for r in summary.failed]
    by_name = {r.name: r for r in summary.results}
    cluttered = by_name["cluttered"]
    assert cluttered.score == 100 and not cluttered.refused
    skipped = [w for w in cluttered.warnings if w.startswith("skipped")]
    assert len(skipped) == 1 and len(cluttered.warnings) == 1 and ".venv/" in skipped[0]  # one line for the junk

    quiz = by_name["bigquiz"]
    assert quiz.score == 96 and quiz.question("quiz.broadcast_numel").score == 0
    assert "quiz.toml is 29 MiB; the limit is 5 MiB per file, so it was not read" in \
        quiz.question("quiz.broadcast_numel").feedback
    strides = by_name["bigstrides"]
    lost = {q.qid for q in strides.questions if q.score < q.max_score}
    assert lost == {q.qid for q in strides.questions if q.qid.startswith("strides.")} and strides.score == 28
    assert "strides.py is 29 MiB; the limit is 5 MiB per file, so it was not read" in \
        strides.question("strides.view").feedback
    assert all(not q.refused for q in (quiz, strides))
    feedback = (out / "bigstrides" / "feedback.md").read_text()
    assert "strides.py is 29 MiB" in feedback and "strides.py is missing" not in feedback


# ---------------------------------------------------------------- SIGKILL and resume


def make_class(folder: Path) -> list[Path]:
    """Eight submissions: the reference, the stubs, and six mutants (two of them zipped)."""
    shutil.copytree(ASSIGNMENT.solution_dir, folder / "reference")
    shutil.copytree(ASSIGNMENT.release_dir, folder / "stubs")
    seen: set[str] = set()
    mutants = [m for m in load_mutants(ASSIGNMENT) if not (m.question in seen or seen.add(m.question))][:6]
    for k, mutant in enumerate(mutants):
        files = mutant.apply(SOLUTION_FILES)
        if k < 2:
            write_zip(folder / f"{mutant.name}.zip", {f"{mutant.name}/{n}": d for n, d in files.items()})
        else:
            (folder / mutant.name).mkdir()
            for name, data in files.items():
                (folder / mutant.name / name).write_bytes(data)
    return expand_submission_paths([folder])


def grade_command(subs: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "checks", "--course", str(REPO), "grade", "01_tensors", str(subs),
            "--out", str(out), "--jobs", "2"]


def graded_folders(out: Path) -> int:
    return len(list(out.glob("*/results.json")))


def gradebook_contents(out: Path) -> dict:
    """Everything the gradebook says about the grades, leaving out when and how fast."""
    with closing(sqlite3.connect(out / DB_FILE)) as db:
        submissions = db.execute("SELECT name, assignment, status, score, max_score, error, warnings, devices, "
                                 "sandbox, source, fingerprint, grader_version FROM submissions ORDER BY name").fetchall()
        questions = db.execute("SELECT * FROM questions ORDER BY submission, position").fetchall()
    results = {}
    for path in sorted(out.glob("*/results.json")):
        data = json.loads(path.read_text())
        data.pop("execution_time")
        data["extra_data"].pop("graded_at")
        results[path.parent.name] = data
    feedback = {path.parent.name: path.read_text().rsplit("Checked on", 1)[0] for path in out.glob("*/feedback.md")}
    return {"csv": (out / "gradebook.csv").read_text(), "submissions": submissions, "questions": questions,
            "results": results, "feedback": feedback}


def test_a_batch_killed_with_sigkill_and_run_again_ends_as_if_never_interrupted(tmp_path):
    subs = tmp_path / "subs"
    paths = make_class(subs)
    assert len(paths) == 8
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}

    whole = tmp_path / "whole"
    done = subprocess.run(grade_command(subs, whole), capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    killed = tmp_path / "killed"
    log = (tmp_path / "killed.log").open("w")
    process = subprocess.Popen(grade_command(subs, killed), stdout=log, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)
    deadline = time.monotonic() + 600
    while graded_folders(killed) == 0 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)  # the grader itself, as `kill -9` would
    process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)  # its orphaned grading children, so they do not slow the re-run
    except ProcessLookupError:
        pass
    assert process.returncode == -signal.SIGKILL
    with closing(sqlite3.connect(killed / DB_FILE)) as db:
        committed = db.execute("SELECT count(*) FROM submissions").fetchone()[0]
        assert db.execute("SELECT status, finished_at FROM runs").fetchall() == [("running", None)]
    assert 0 < graded_folders(killed) < 8 and 0 < committed < 8, (graded_folders(killed), committed)

    again = subprocess.run(grade_command(subs, killed), capture_output=True, text=True, env=env, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{committed} of 8 already graded, skipped" in again.stdout
    with closing(sqlite3.connect(killed / DB_FILE)) as db:
        assert db.execute("SELECT status, graded FROM runs ORDER BY id").fetchall() == [
            ("running", 0), ("finished", 8 - committed)]

    expected, got = gradebook_contents(whole), gradebook_contents(killed)
    assert got["csv"] == expected["csv"]
    assert got["submissions"] == expected["submissions"]
    assert got["questions"] == expected["questions"]
    assert got["results"] == expected["results"]
    assert got["feedback"] == expected["feedback"]
    rows = list(csv.DictReader(io.StringIO(expected["csv"])))[1:]  # [0]: the maxima
    assert {row["submission"]: float(row["total"]) for row in rows}["reference"] == 100
    assert {row["submission"]: float(row["total"]) for row in rows}["stubs"] == 0
    assert all(0 < float(row["total"]) < 100 for row in rows if row["submission"] not in ("reference", "stubs"))
    assert not list(killed.rglob("*.tmp"))


# ---------------------------------------------------------------- the grader's own failures


def cli_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}


def descendants(root: int) -> set[int]:
    """Every living process below `root` (its children, theirs, ...)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def kill_zygotes_below(root: int) -> int:
    """SIGKILL the zygote below `root`: the Python process that holds a zygote's spawn socket
    (checks-zygote-*/spawn.sock) whatever the isolation level; a jail's bwrap then exits by itself.
    The sandbox itself is gone, as when it cannot start."""
    with open("/proc/net/unix") as table:
        inodes = {f"socket:[{fields[6]}]" for fields in (line.split() for line in list(table)[1:])
                  if len(fields) > 7 and "checks-zygote-" in fields[7] and fields[7].endswith("spawn.sock")}
    killed = 0
    for pid in descendants(root):
        try:
            held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            is_python = "python" in os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if held & inodes and is_python:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def test_a_sandbox_that_is_unavailable_is_no_grade_exits_1_and_a_rerun_grades_it(tmp_path):
    subs = tmp_path / "subs"
    for name in ("ada", "ben"):
        (subs / name).mkdir(parents=True)
        for file, data in SOLUTION_FILES.items():
            (subs / name / file).write_bytes(data)
    out = tmp_path / "out"
    process = subprocess.Popen(grade_command(subs, out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=cli_env())
    killed = 0
    deadline = time.monotonic() + 600
    while process.poll() is None and time.monotonic() < deadline:  # killed once there, and again if it comes back
        killed += kill_zygotes_below(process.pid)
        time.sleep(0.01)
    process.kill()
    output = process.communicate()[0]
    assert killed >= 1 and process.returncode == 1, output[-3000:]
    assert "could not grade ada: the sandbox was unavailable" in " ".join(output.split())
    rows = {row["submission"]: row for row in students(out / "gradebook.csv")}
    for row in rows.values():  # a correct submission: no 4/100 for the quiz, no score at all
        assert (row["status"], row["total"], row["quiz.broadcast_numel"] if "quiz.broadcast_numel" in row else "") == (
            "not graded", "", ""), row
        assert "sandbox was unavailable" in row["reason"]
    with closing(sqlite3.connect(out / DB_FILE)) as db:
        assert db.execute("SELECT DISTINCT status FROM submissions").fetchall() == [("grader_error",)]
    report = (out / "report.html").read_text()
    assert re.search(r'<div>0<span>graded</span>', report) and "mean score" not in report
    assert re.search(r'<table id="grader-errors">.*ada.*ben.*</table>', report, re.S)

    again = subprocess.run(grade_command(subs, out), capture_output=True, text=True, env=cli_env(), timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "ada: the grader failed on it last time, grading it again" in again.stdout
    rows = {row["submission"]: row for row in students(out / "gradebook.csv")}
    assert {name: (row["status"], row["total"]) for name, row in rows.items()} == {
        "ada": ("graded", "100.0"), "ben": ("graded", "100.0")}


def test_a_second_run_into_the_same_folder_stops_at_once_and_the_first_is_untouched(tmp_path, capsys):
    subs = tmp_path / "subs"
    paths = make_class(subs)
    out = tmp_path / "out"
    first = subprocess.Popen(grade_command(subs, out)[:-2] + ["--jobs", "1"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=cli_env())
    deadline = time.monotonic() + 300
    while not (out / DB_FILE).exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    started = time.monotonic()
    second = cli.main(["--course", str(REPO), "grade", "01_tensors", str(subs), "--out", str(out), "--regrade"])
    took = time.monotonic() - started
    still_running = first.poll() is None
    output = first.communicate(timeout=600)[0]
    assert still_running, "the first run ended before the second tried: the test proved nothing"
    message = " ".join(capsys.readouterr().out.split())
    assert second == 2 and took < 10, (second, took)
    assert f"{out} is in use by another `checks grade` run (process {first.pid})" in message
    assert first.returncode == 0, output[-3000:]
    rows = students(out / "gradebook.csv")
    assert len(rows) == len(paths) and {row["status"] for row in rows} == {"graded"}
    with closing(sqlite3.connect(out / DB_FILE)) as db:  # the second run wrote nothing, not even a run
        assert db.execute("SELECT status, graded FROM runs").fetchall() == [("finished", len(paths))]


def test_a_run_that_hits_the_file_size_limit_stops_and_the_rerun_completes_it(tmp_path):
    subs = tmp_path / "subs"
    paths = make_class(subs)
    whole = tmp_path / "whole"
    done = subprocess.run(grade_command(subs, whole), capture_output=True, text=True, env=cli_env(), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    Gradebook(tmp_path / "empty" / DB_FILE, "01_tensors")
    empty, full = (tmp_path / "empty" / DB_FILE).stat().st_size, (whole / DB_FILE).stat().st_size
    limit = empty + (full - empty) // 3  # the gradebook outgrows it early in the batch

    def limit_file_size() -> None:  # in the child, before it runs checks: writes past `limit` fail (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    limited = tmp_path / "limited"
    stopped = subprocess.run(grade_command(subs, limited)[:-2] + ["--jobs", "1"], capture_output=True, text=True,
                             env=cli_env(), timeout=600, preexec_fn=limit_file_size)
    message = " ".join(stopped.stdout.split())
    assert stopped.returncode == 1, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    assert f"stopped: could not write to {limited}" in message and "run the same command again" in message
    assert "Traceback" not in stopped.stdout + stopped.stderr
    with closing(sqlite3.connect(limited / DB_FILE)) as db:
        committed = db.execute("SELECT count(*) FROM submissions").fetchone()[0]
    assert 0 < committed < len(paths), committed  # what was graded before the limit stays

    again = subprocess.run(grade_command(subs, limited), capture_output=True, text=True, env=cli_env(), timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{committed} of {len(paths)} already graded, skipped" in again.stdout
    expected, got = gradebook_contents(whole), gradebook_contents(limited)
    for part in ("csv", "submissions", "questions", "results", "feedback"):
        assert got[part] == expected[part], part
    assert not list(limited.rglob("*.tmp"))
