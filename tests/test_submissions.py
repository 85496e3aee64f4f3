import os
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


def test_zip_bombs_are_refused_with_a_message(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_TOTAL_BYTES", 1000)
    with pytest.raises(SubmissionError, match="refused"):
        read_submission(make_zip(tmp_path / "bomb.zip", {f"f{i}.py": "0" * 600 for i in range(3)}))


def test_unreadable_inputs_say_why(tmp_path):
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(SubmissionError, match="not a readable zip"):
        read_submission(tmp_path / "junk.zip")
    with pytest.raises(SubmissionError, match="does not exist"):
        read_submission(tmp_path / "missing")
