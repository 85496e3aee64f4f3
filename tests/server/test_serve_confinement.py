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


def _secrets(folder: Path) -> tuple[list[str], list[str]]:
    """Every file of data/ (the session key, the database, the uploads), the tokens, the LTI key."""
    files = sorted(str(p) for p in (folder / "data").rglob("*") if p.is_file())
    files += [str(folder / "tokens.csv"), str(folder / "lti" / "tool-private.pem")]
    folders = [str(folder / "data"), str(folder / "data" / "uploads"), str(folder / "lti")]
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
    folder = course_folder(outside_tmp)
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
        files, folders = _secrets(folder)
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
