"""What a new student types in their first hour works as the docs show it (issue 44): inside a
copy of an assignment (as `checks fetch` writes it), naming the assignment and another folder
checks and packs that folder, described by the copy; no course is needed."""

from __future__ import annotations

import shutil

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
