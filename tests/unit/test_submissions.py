import os
import tracemalloc
import zipfile

import pytest

from checks.course import submissions
from checks.course.submissions import SubmissionError, read_submission


def make_zip(path, entries, symlink=None):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (0o120777 << 16)
            archive.writestr(info, "/etc/passwd")
    return path


def make_zip_deflated(path, entries):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def test_a_zip_of_the_folder_is_read_as_its_contents(tmp_path):
    sub = read_submission(make_zip(tmp_path / "alice.zip", {"alice/strides.py": "x = 1", "alice/quiz.toml": ""}))
    assert sub.name == "alice" and sorted(sub.files) == ["quiz.toml", "strides.py"]


@pytest.mark.parametrize("entry", ["../evil.py", "/abs/evil.py", "a/../../evil.py", "C:/evil.py"])
def test_entries_that_escape_the_folder_refuse_the_zip(tmp_path, entry):
    with pytest.raises(SubmissionError, match="outside the submission folder"):
        read_submission(make_zip(tmp_path / "bob.zip", {"ok.py": "", entry: "x"}))


def test_symlinks_in_zips_and_folders_are_ignored(tmp_path):
    sub = read_submission(make_zip(tmp_path / "c.zip", {"a.py": "x"}, symlink="link.py"))
    assert list(sub.files) == ["a.py"] and "symlink" in sub.warnings[0]
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.py").write_text("x")
    os.symlink("/etc/passwd", folder / "secret.py")
    assert list(read_submission(folder).files) == ["a.py"]


NAMED = ("strides.py", "broadcasting.py", "quiz.toml")
WORK = {"strides.py": b"x = 1\n", "broadcasting.py": b"import helpers\n", "quiz.toml": b"a = 1\n",
        "helpers.py": b"y = 2\n"}


def write_folder(root, files):
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_junk_beside_the_named_files_is_skipped_with_one_warning_not_refused(tmp_path):
    junk = {f".venv/lib/python3.11/site-packages/pkg/m{k}.py": b"" for k in range(300)}
    junk |= {"__MACOSX/._strides.py": b"\0", ".ipynb_checkpoints/strides-checkpoint.py": b"",
             ".DS_Store": b"\0", "notes.txt": b"hello", "venv/bin/activate": b""}
    folder = write_folder(tmp_path / "alice", {**WORK, **junk})
    with open(folder / "data.bin", "wb") as big:  # 30 MB, never read
        big.truncate(30 * 10**6)
    archive = make_zip(tmp_path / "alice.zip", {f"alice/{name}": data for name, data in {**WORK, **junk}.items()}
                       | {"alice/data.bin": b"\0" * (30 * 10**6)})
    for path in (folder, archive):
        sub = read_submission(path, NAMED)
        assert sub.files == WORK and not sub.unread, path  # the extra module helpers.py too
        assert len(sub.warnings) == 1 and sub.warnings[0].startswith("skipped, as the assignment does not use them")
        assert ".venv/" in sub.warnings[0] and "__MACOSX/" in sub.warnings[0] and "2 more" in sub.warnings[0]


def test_a_named_file_over_the_cap_is_not_read_and_costs_only_itself(tmp_path):
    folder = write_folder(tmp_path / "bob", WORK)
    with open(folder / "quiz.toml", "wb") as big:
        big.truncate(28 * 2**20)
    sub = read_submission(folder, NAMED)
    assert sorted(sub.files) == ["broadcasting.py", "helpers.py", "strides.py"]
    assert sub.unread == {"quiz.toml": "quiz.toml is 28 MiB; the limit is 5 MiB per file, so it was not read"}
    assert any(w.startswith("quiz.toml is 28 MiB") for w in sub.warnings)


def test_a_zip_bomb_is_refused_from_its_directory_and_never_inflated(tmp_path):
    bomb = make_zip_deflated(tmp_path / "bomb.zip", {**WORK, "strides.py": b"#" * (300 * 2**20)})
    assert bomb.stat().st_size < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(SubmissionError, match="would unpack to 300 MiB .*a zip bomb"):
            read_submission(bomb, NAMED)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < submissions.MAX_FILE_BYTES, peak  # 300 MiB were never in memory


def test_a_member_over_the_cap_below_a_bomb_is_never_inflated_past_the_cap(tmp_path):
    archive = make_zip_deflated(tmp_path / "big.zip", {**WORK, "strides.py": b"#" * (8 * 2**20)})
    tracemalloc.start()
    try:
        sub = read_submission(archive, NAMED)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * submissions.MAX_FILE_BYTES, peak
    assert "strides.py" not in sub.files and "so it was not read" in sub.unread["strides.py"]
    assert sub.files["broadcasting.py"] == WORK["broadcasting.py"]


def test_extra_modules_past_the_caps_are_skipped_not_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_TOTAL_BYTES", 1000)
    extra = {f"extra{k:03}.py": b"0" * 100 for k in range(250)}
    sub = read_submission(write_folder(tmp_path / "carol", {**WORK, **extra}), NAMED)
    assert set(WORK) <= set(sub.files) and sum(map(len, sub.files.values())) <= 1000
    assert len(sub.files) < len(WORK) + 10 and not sub.unread
    assert any(w.startswith("not read, over the limits: extra") for w in sub.warnings)


def test_without_named_files_every_file_is_read_within_the_caps(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_FILES", 3)
    sub = read_submission(write_folder(tmp_path / "d", {**WORK, "README.md": b"#"}))
    assert len(sub.files) == 3 and any("over the limits" in w for w in sub.warnings)


def test_unreadable_inputs_say_why(tmp_path):
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(SubmissionError, match="not a readable zip"):
        read_submission(tmp_path / "junk.zip")
    with pytest.raises(SubmissionError, match="does not exist"):
        read_submission(tmp_path / "missing")
