"""What a new student types in their first hour works as the docs show it (issue 44): inside a
copy of an assignment (as `checks fetch` writes it), naming the assignment and another folder
checks and packs that folder, described by the copy; no course is needed."""

from __future__ import annotations

import shutil

import pytest

from serving import REFERENCE, REPO, checks


def test_in_a_copy_the_assignment_and_another_folder_are_checked_and_packed(tmp_path):
    copy = tmp_path / "01_tensors"
    shutil.copytree(REPO / "assignments" / "01_tensors", copy)  # what `checks fetch 01_tensors` writes
    mine = tmp_path / "my-copy"
    mine.mkdir()
    for name in ("strides.py", "broadcasting.py", "quiz.toml"):
        shutil.copy(REFERENCE / name, mine / name)
    tested = checks("test", "01_tensors", str(mine), cwd=copy)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert f"public checks of 01_tensors on {mine}" in tested.stdout.replace("\n", "")
    packed = checks("pack", "01_tensors", str(mine), "--out", str(tmp_path / "mine.zip"), cwd=copy)
    assert packed.returncode == 0 and (tmp_path / "mine.zip").is_file(), packed.stdout + packed.stderr
    other = checks("test", "02_autograd", str(mine), cwd=copy)  # not what this copy describes: said so
    assert other.returncode == 2 and f"{copy} is a copy of 01_tensors, not of 02_autograd" in \
        other.stdout.replace("\n", ""), other.stdout


def test_checks_grade_in_a_students_install_says_it_is_for_staff(tmp_path):
    """A student's install has the release (assignments/), not the hidden suites: `checks grade`
    said "pytest could not run the suite (exit code 4)" per submission; it now stops at once."""
    shutil.copytree(REPO / "assignments" / "01_tensors", tmp_path / "assignments" / "01_tensors")
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("strides.py", "broadcasting.py", "quiz.toml"):
        shutil.copy(REFERENCE / name, mine / name)
    done = checks("grade", "01_tensors", str(mine), "--out", str(tmp_path / "out"), cwd=tmp_path)
    said = done.stdout.replace("\n", "")
    assert done.returncode == 2 and "has no hidden suite here" in said and "checks test 01_tensors" in said, said
    assert "exit code" not in said and not (tmp_path / "out").exists()


def test_checks_help_in_a_students_install_lists_the_students_commands(tmp_path):
    shutil.copytree(REPO / "assignments" / "01_tensors", tmp_path / "assignments" / "01_tensors")
    listed = checks("--help", cwd=tmp_path).stdout
    commands = {line.split()[0] for line in listed.splitlines() if line.startswith("    ") and line.split()}
    assert {"test", "pack", "submit", "fetch", "login"} <= commands and not commands & {"grade", "serve", "build"}
    assert "--course DIR" in listed
    staff = checks("--help", cwd=REPO).stdout  # the course repository, with its hidden suites
    assert "    grade " in staff and "    serve " in staff
    assert checks("grade", "--help", cwd=tmp_path).returncode == 0  # hidden from the list, not removed


def _wrapped_twice(tmp_path, levels: int = 2):
    """The reference files in a folder, zipped, and that zip zipped again (`levels` zips in all)."""
    import io
    import zipfile

    data = None
    for level in range(levels):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            if data is None:
                for name in ("strides.py", "broadcasting.py", "quiz.toml"):
                    archive.write(REFERENCE / name, f"01_tensors/{name}")
            else:
                archive.writestr(f"level{level}.zip", data)
        data = buffer.getvalue()
    path = tmp_path / f"s001-{levels}.zip"
    path.write_bytes(data)
    return path


def test_checks_grade_reads_a_zip_wrapped_twice_as_the_zip_inside(tmp_path):
    """It scored 0 with "No quiz.toml" though the file was there; a third zip is refused, saying what to do."""
    import csv

    out = tmp_path / "out"
    done = checks("grade", "01_tensors", str(_wrapped_twice(tmp_path)), "--out", str(out), "--course", str(REPO),
                  env={"COLUMNS": "300"}, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [row for row in csv.DictReader((out / "gradebook.csv").open()) if row["submission"] == "s001-2"]
    assert [(row["total"], row["status"]) for row in rows] == [("100.0", "graded")], rows
    assert "holds only level1.zip: the files inside" in (out / "s001-2" / "feedback.md").read_text()
    thrice = tmp_path / "thrice"
    done = checks("grade", "01_tensors", str(_wrapped_twice(tmp_path, 3)), "--out", str(thrice), "--course",
                  str(REPO), env={"COLUMNS": "300"}, timeout=300)
    said = " ".join((done.stdout + done.stderr).split())
    assert "refused: s001-3.zip: level2.zip holds only another zip (level1.zip)" in said and "unzip level2.zip" in said


def test_checks_submit_and_pack_say_what_to_do_with_a_zip(tmp_path):
    """`checks submit` and `checks pack` pack a folder of files: a zip, or a folder holding only a
    zip, is refused before anything is sent, naming what to do (the web page takes the zip itself)."""
    copy = tmp_path / "01_tensors"
    shutil.copytree(REPO / "assignments" / "01_tensors", copy)
    wrapped = _wrapped_twice(tmp_path)
    done = checks("submit", "01_tensors", str(wrapped), cwd=copy, env={"COLUMNS": "300"})
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and "is not a folder" in said and "unzip it and submit the folder" in said, said
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(wrapped, mine / "work.zip")
    for command in ("pack", "submit"):
        done = checks(command, "01_tensors", str(mine), cwd=copy, env={"COLUMNS": "300"})
        said = " ".join((done.stdout + done.stderr).split())
        assert done.returncode != 0 and "holds only work.zip: unzip it there" in said, (command, said)


def test_a_students_command_finds_its_assignment_and_folder_through_the_library(tmp_path, monkeypatch):
    """grading/student_target.py decides what `checks test`, `pack` and `submit` are about; the
    CLI only prints it. Outside any course: the copy names itself, a missing path and a copy of
    another assignment are refused with what to do instead."""
    from checks.course.assignment import CourseError
    from checks.grading.student_target import read_student_words, student_target

    copy = tmp_path / "mine"
    shutil.copytree(REPO / "assignments" / "01_tensors", copy)
    monkeypatch.chdir(copy)
    request = read_student_words(None, ["strides.numel"], "test")
    assert (request.assignment, request.path, request.questions) == ("01_tensors", None, ("strides.numel",))
    assignment, path = student_target(None, request, "test")
    assert assignment.name == "01_tensors" and path == copy.resolve()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(CourseError, match="name the assignment: `checks pack ASSIGNMENT`"):
        read_student_words(None, [], "pack")
    with pytest.raises(CourseError, match="does not exist"):
        student_target(None, read_student_words(None, ["01_tensors", "./nope"], "test"), "test")
    with pytest.raises(CourseError, match="is a copy of 01_tensors, not of 02_autograd: here, use `checks submit 01_tensors`"):
        student_target(None, read_student_words(None, ["02_autograd", str(copy)], "submit"), "submit")
