"""Serving never gives student code the server's secrets (issue 44): a real `checks serve` at each
isolation level on this machine either refuses to start, saying why, or grades a submission that
tries to read every file of data/, the tokens and the LTI private key, and gets none of them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from serving import REFERENCE, REPO, course_folder, folder_zip, import_roster, start_server, submit, wait_graded

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

PROBE = '''
import os
def _probe(paths, folders):
    seen = []
    for folder in folders:
        try:
            seen.append("LISTED:" + folder + "=" + ",".join(sorted(os.listdir(folder))))
        except OSError as error:
            seen.append("DENIED:" + folder + ":" + type(error).__name__)
    for path in paths:
        try:
            with open(path, "rb") as handle:
                seen.append("READ:" + path + "=" + repr(handle.read(40)))
        except OSError as error:
            seen.append("DENIED:" + path + ":" + type(error).__name__)
    return " ; ".join(seen)
PROBED = _probe(%r, %r)
print(PROBED)
raise RuntimeError("PROBE " + PROBED)
'''


def _secrets(folder: Path, root: Path) -> tuple[list[str], list[str]]:
    """Every file of data/ (the session key, the database, the uploads), the tokens, the LTI key;
    the hidden suite, the solution and the roster of the course (`root`: its assignments)."""
    files = sorted(str(p) for p in (folder / "data").rglob("*") if p.is_file())
    files += [str(folder / "tokens.csv"), str(folder / "lti" / "tool-private.pem"), str(folder / "roster.csv"),
              str(root / "autograder" / "01_tensors" / "test_strides.py"),
              str(root / "solutions" / "01_tensors" / "strides.py")]
    folders = [str(folder / "data"), str(folder / "data" / "uploads"), str(folder / "lti"), str(root / "autograder"),
               str(root / "solutions")]
    return files, folders


@pytest.fixture
def outside_tmp():
    """A folder outside the system temp dir, in the repository's ignored build/: a worker at the
    fork level has /tmp of its own, which would hide a course kept there and prove nothing."""
    (REPO / "build").mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=REPO / "build", prefix="test-confinement-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.parametrize("level", ["fork", pytest.param("auto", marks=pytest.mark.long)])
def test_a_submission_cannot_read_the_servers_state_or_serve_refuses(outside_tmp, level):
    if level == "fork" and os.geteuid() != 0:
        pytest.skip("the fork level's uid per submission needs root (not root: refused, tested below)")
    root = outside_tmp / "root"  # a course of its own, every file readable by all as a checkout leaves it
    for part in ("assignments/01_tensors", "autograder/01_tensors", "solutions/01_tensors"):
        shutil.copytree(REPO / part, root / part)
    folder = course_folder(outside_tmp, course=root)
    tokens = import_roster(folder)
    (folder / "lti").mkdir()
    key = folder / "lti" / "tool-private.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nSECRETKEYMATERIAL\n")
    key.chmod(0o600)
    (folder / "data").chmod(0o755)  # as an operator's `mkdir -p` leaves it: readable by all
    try:
        server = start_server(folder, args=("--isolation", level))
    except AssertionError as exited:  # this machine cannot grade without showing data/: it says why, serves nothing
        text = str(exited)
        assert "refuses to grade here" in text and "may read" in text and "Instead," in text, text
        assert "serving" not in text  # refused before the startup line claims it serves
        return
    try:
        assert f"sandbox: {level if level != 'auto' else ''}" in server.log.read_text()  # the startup line names it
        with server.client(tokens["s001"]) as http:
            first = submit(http, folder_zip(REFERENCE))  # an upload of another student's lies in data/ too
            assert first.status_code == 202, first.text
            wait_graded(http, first.json()["id"])
        files, folders = _secrets(folder, root)
        assert any(name.endswith("session.key") for name in files) and any("/uploads/" in f for f in files)
        probe = outside_tmp / "probe"
        probe.mkdir()
        for name in ("broadcasting.py", "quiz.toml"):
            (probe / name).write_bytes((REFERENCE / name).read_bytes())
        (probe / "strides.py").write_text(PROBE % (files, folders))
        with server.client(tokens["s002"]) as http:
            reply = submit(http, folder_zip(probe))
            assert reply.status_code == 202, reply.text
            graded = wait_graded(http, reply.json()["id"])
            shown = json.dumps(graded) + http.get(f"/submissions/{graded['id']}").text
    finally:
        server.kill(15)
    assert "READ:" not in shown and "LISTED:" not in shown, shown[:4000]
    assert "DENIED:" in shown, f"the probe did not run: {shown[:2000]}"  # it ran, and was refused
    assert "SECRETKEYMATERIAL" not in shown
    session_key = (folder / "data" / "session.key").read_text().strip()
    assert session_key[:20] not in shown
    assert (folder / "data").stat().st_mode & 0o077 == 0 or level != "fork"
    if level == "fork":  # what only staff read is no other user's now (their group keeps theirs)
        for private in (root / "autograder", root / "solutions", folder / "roster.csv"):
            assert private.stat().st_mode & 0o007 == 0, private


def test_only_levels_that_hide_the_servers_state_may_serve():
    """The rule itself, for the levels this machine cannot start: the server's own uid (not root,
    or Docker's root) and read-anything rights are refused; bwrap and a uid of its own are not."""
    from checks.sandbox.jail import BWRAP, FORK, Isolation
    from checks.server.confinement import grading_problem

    assert grading_problem(Isolation(FORK, False, "fork: process group and resource limits only")) is not None
    assert grading_problem(Isolation(FORK, True, "fork: a uid per submission", reads_everything=True)) is not None
    assert grading_problem(Isolation(FORK, True, "fork: a uid per submission")) is None
    assert grading_problem(Isolation(BWRAP, False, "bwrap (unprivileged)")) is None
    assert grading_problem(Isolation(BWRAP, True, "bwrap")) is None


def test_serving_refuses_a_data_folder_the_jail_shows(tmp_path):
    """At the bwrap level, data/ inside a folder the jail binds (the Python installation) is refused."""
    from checks.course.assignment import CourseError
    from checks.sandbox import jail
    from checks.server.config import load_config
    from checks.server.confinement import secure

    inside = Path(jail.__file__).resolve().parents[1]  # the checks package, which the jail binds
    folder = course_folder(tmp_path, extra=f'data = "{inside / "checks-data-never-made"}"\n')
    with pytest.raises(CourseError, match="the bwrap jail shows"):
        secure(load_config(folder), jail.Isolation(jail.BWRAP, True, "bwrap"))


def test_at_the_fork_level_what_only_staff_read_is_kept_from_every_other_user(tmp_path):
    """Found by a fresh attacker: at the fork level (a uid per submission), a submission read the
    hidden suite and the solution, which every user could read, and could have handed in the
    solution's code. Serving takes every other user's access from the hidden suites, the
    solutions, the records, the LTI folder and the roster (their group keeps theirs), or refuses
    where it cannot, naming the path. (`checks serve` itself refuses the fork level on a machine
    whose Python other users cannot read, as the test above finds on such a machine.)"""
    from checks.course.assignment import CourseError
    from checks.sandbox import jail
    from checks.server.config import load_config
    from checks.server.confinement import secure

    root = tmp_path / "root"
    for part in ("assignments/01_tensors", "autograder/01_tensors", "solutions/01_tensors"):
        shutil.copytree(REPO / part, root / part)
    folder = course_folder(tmp_path, course=root)
    (folder / "records").mkdir(mode=0o755)
    private = [root / "autograder", root / "solutions", folder / "records", folder / "roster.csv"]
    for path in private:
        path.chmod(0o775 if path.is_dir() else 0o664)
    fork = jail.Isolation(jail.FORK, True, "fork as root, a uid per submission")
    changed = secure(load_config(folder), fork)
    assert [oct(path.stat().st_mode & 0o777) for path in private] == ["0o770", "0o770", "0o770", "0o660"]
    assert all(any(str(path) in line for line in changed) for path in private), changed
    assert secure(load_config(folder), fork) == []  # nothing left to change
    (root / "solutions").chmod(0o755)
    real_chmod = os.chmod

    def read_only(path, mode, *args, **kwargs):
        if str(path) == str(root / "solutions"):
            raise OSError(30, "Read-only file system")
        return real_chmod(path, mode, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "chmod", read_only)
        with pytest.raises(CourseError, match=r"every user may read .*solutions.*Read-only file system.*chmod o-rwx"):
            secure(load_config(folder), fork)
