"""docs/policy.md's walkthrough, step by step, on a copy of the example course (examples/course
and 01_tensors): a due date, a grace day asked for, on time / late with a grace day / late
without, an extension, a regrade request answered, Canvas and Moodle CSV, and the scores posted
to the simulated LTI platform."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

from checks import cli

REPO = Path(__file__).resolve().parents[2]
STUDENTS = ("ada_lovelace", "ben_bitdiddle", "cy_dee")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """The parts of the repository the walkthrough uses, copied; the current folder is its root."""
    for part in ("autograder/01_tensors", "assignments/01_tensors", "solutions/01_tensors", "examples/01_tensors",
                 "examples/course"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("records", "lti", "data"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def checks(*argv: str) -> int:
    return cli.main(["--course", "examples/course", *argv])


def gradebook() -> dict[str, dict[str, str]]:
    return {row["submission"]: row for row in csv.DictReader(io.StringIO(Path("grades/policy/gradebook.csv").read_text()))}


GRADE = ["grade", "01_tensors", *(f"examples/01_tensors/{name}" for name in STUDENTS), "--out", "grades/policy",
         "--submitted-at", "examples/course/submitted-at.csv"]


def test_the_walkthrough(repo, capsys):
    with open("autograder/01_tensors/assignment.toml", "a") as config:
        config.write("\n[policy]\ndue = 2030-06-30T23:59:00     # in the course's time zone, Europe/Zurich\n")
    assert checks("policy") == 0
    assert "01_tensors: release -, due 2030-06-30T23:59+02:00 (Europe/Zurich); late penalty 10 % per day, cap 50 %" \
        in capsys.readouterr().out
    assert checks("grace", "request", "01_tensors", "s002", "--days", "1", "--yes", "--by", "s002") == 0
    assert "s002 has 2 grace days left; spend 1 on 01_tensors?" in capsys.readouterr().out

    assert checks(*GRADE) == 0, capsys.readouterr().out
    rows = gradebook()
    assert {name: rows[name]["total"] for name in STUDENTS} == {"ada_lovelace": "100.0", "ben_bitdiddle": "93.74",
                                                                "cy_dee": "50.4"}
    assert rows["ben_bitdiddle"]["reason"] == "late policy, no points: 1 grace day spent"
    assert "3 days at 10 % each, 30 %" in rows["cy_dee"]["reason"] and rows["cy_dee"]["raw"] == "72.0"

    assert checks("extension", "grant", "01_tensors", "s003", "--until", "2030-07-03T12:00", "--reason",
                  "medical note seen", "--by", "tina") == 0
    assert checks(*GRADE) == 0
    assert gradebook()["cy_dee"]["total"] == "72.0"

    assert cli.main(["regrade-request", "01_tensors", "broadcasting.broadcast_strides", "--student", "s002",
                     "--message", "my strides are right for a size-1 dimension"]) == 0
    (request,) = Path(".").glob("regrade-01_tensors-s002-*.json")
    assert checks("regrade", "collect", str(request), "--by", "tina") == 0
    request_id = request.stem.rsplit("-", 1)[1]
    assert checks("regrade", "answer", request_id, "--reply", "Right: the check was too strict.", "--adjust", "2.62",
                  "--by", "tina") == 0
    assert checks(*GRADE) == 0
    ben = gradebook()["ben_bitdiddle"]
    assert (ben["raw"], ben["adjustment"], ben["total"]) == ("93.74", "2.62", "96.36")
    assert "Right: the check was too strict." in Path("grades/policy/ben_bitdiddle/feedback.md").read_text()

    capsys.readouterr()
    assert checks("export", "canvas", "grades/policy", "--lms-assignment-id", "4711") == 0
    canvas = list(csv.reader(io.StringIO(Path("grades/policy/canvas.csv").read_text())))
    assert canvas[0][-1] == "Strides and broadcasting (4711)"
    assert [(row[1], row[-1]) for row in canvas[2:]] == [("1001", "100.0"), ("1002", "96.36"), ("1003", "72.0")]
    assert checks("export", "moodle", "grades/policy") == 0
    moodle = list(csv.reader(io.StringIO(Path("grades/policy/moodle.csv").read_text())))
    assert [(row[3], row[4]) for row in moodle[1:]] == [("ada@example.edu", "100.0"), ("ben@example.edu", "96.36"),
                                                       ("cy@example.edu", "72.0")]


def test_the_walkthrough_posts_to_the_simulated_platform(repo, capsys):
    pytest.importorskip("pylti1p3", reason="the `lms` extra (PyLTI1p3) is not installed")
    from checks.lti.keys import tool_key
    from lti_platform import LEARNER, main, running

    assert main  # tests/lti_platform.py is also what docs/policy.md runs by hand
    with open("autograder/01_tensors/assignment.toml", "a") as config:
        config.write("\n[policy]\ndue = 2030-06-30T23:59:00\n")
    assert checks(*GRADE) == 0
    assert checks("lti", "key") == 0
    assert '"kty": "RSA"' in capsys.readouterr().out
    with running(tool_key(Path("examples/course")).jwks(), "https://checks.example.edu/lti/launch") as platform:
        platform.members = [{"user_id": uid, "name": name, "email": "", "roles": [LEARNER], "status": "Active"}
                            for uid, name in (("1001", "Ada"), ("1002", "Ben"), ("1003", "Cy"))]
        with open("examples/course/course.toml", "a") as config:
            config.write(f'\n[lti]\nissuer = "{platform.issuer}"\nclient_id = "checks-tool"\n'
                         f'deployment_ids = ["deployment-1"]\nauth_login_url = "{platform.url}/auth"\n'
                         f'auth_token_url = "{platform.url}/token"\nkey_set_url = "{platform.url}/jwks"\n'
                         f'launch_url = "https://checks.example.edu/lti/launch"\n'
                         f'memberships_url = "{platform.url}/nrps"\nlineitems_url = "{platform.url}/lineitems"\n')
        assert checks("lti", "post", "grades/policy", "--label", "Strides and broadcasting") == 0
        assert sorted((s["userId"], s["scoreGiven"]) for s in platform.scores) == [
            ("1001", 100.0), ("1002", 84.37), ("1003", 50.4)]  # no grace day asked for here
        assert checks("lti", "roster") == 0
        assert "added 0, kept 3" in capsys.readouterr().out
