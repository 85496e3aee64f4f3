"""Choosing the isolation level: --isolation wins over CHECKS_ISOLATION, auto is the strongest
this machine allows, and bwrap where it cannot run is a clear error, never a silent fork."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checks import cli
from checks.config.errors import UsageError
from checks.config.settings import Settings
from checks.sandbox import jail

COURSE = {
    "autograder/one/assignment.toml": 'files = ["one.py"]\n',
    "autograder/one/test_one.py": "",
    "assignments/one/one.py": "def one():\n    return 1\n",
    "assignments/one/tests/test_one.py": """
        from checks.suite import question, expect_equal

        @question("one.one", points=1)
        def test_one(student):
            expect_equal(student.one.one(), 1)
    """,
}


@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    """A PATH without bubblewrap, as in most Docker containers."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    jail.bwrap_problem.cache_clear()
    yield
    jail.bwrap_problem.cache_clear()


def test_the_option_wins_over_the_variable_and_auto_is_the_default():
    assert Settings.from_environment({}).isolation_level == jail.AUTO
    assert Settings.from_environment({jail.ENV_VARIABLE: "FORK"}).isolation_level == jail.FORK
    assert Settings.from_environment({jail.ENV_VARIABLE: "FORK"}, isolation=jail.BWRAP).isolation_level == jail.BWRAP
    assert Settings.from_environment({jail.ENV_VARIABLE: "fork"}).isolation.kind == jail.FORK
    with pytest.raises(UsageError, match="CHECKS_ISOLATION='chroot'.*auto, bwrap, fork"):
        Settings.from_environment({jail.ENV_VARIABLE: "chroot"})
    with pytest.raises(jail.IsolationUnavailable, match="auto, bwrap, fork, not 'chroot'"):
        jail.choose("chroot")


def test_no_module_below_the_front_ends_reads_the_environment_s_settings():
    """Only config/settings.py names the CHECKS_* variables to read them; the rest is handed a Settings."""
    package = Path(cli.__file__).parents[1]  # src/checks
    readers = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                     if re.search(r"environ(\.get)?[\[(]\s*[\"']CHECKS_|getenv\([\"']CHECKS_", path.read_text()))
    assert readers == ["exports/student_setup.py"]  # setup_env.py of a student's bundle: runs before checks exists


def test_auto_falls_back_to_fork_and_says_why_but_bwrap_asked_for_is_an_error(no_bwrap):
    chosen = jail.choose()
    assert chosen.kind == jail.FORK and "bubblewrap (bwrap) is not installed" in chosen.description
    with pytest.raises(jail.IsolationUnavailable, match="bwrap sandbox was asked for but cannot run here"):
        jail.choose(jail.BWRAP)


def test_the_cli_refuses_bwrap_where_it_cannot_run_and_runs_what_the_option_asks(no_bwrap, make_course,
                                                                                  monkeypatch, capsys):
    root = make_course(COURSE)
    monkeypatch.setenv(jail.ENV_VARIABLE, jail.BWRAP)  # main() sets it from --isolation: restored after the test
    assert cli.main(["--course", str(root), "test", "one"]) == 2
    assert "bwrap sandbox was asked for but cannot run here" in capsys.readouterr().out
    assert cli.main(["--course", str(root), "grade", "one", str(root / "assignments/one"),
                     "--out", str(root / "out")]) == 2
    assert not (root / "out").exists()  # refused before anything was written
    assert cli.main(["--course", str(root), "test", "one", "--isolation", "fork"]) == 0
    assert "1 of 1 questions pass" in capsys.readouterr().out


@pytest.mark.skipif(jail.bwrap_problem() is not None, reason="bubblewrap cannot run here")
def test_where_a_pid_namespace_is_refused_the_jail_goes_on_without_one_and_says_so(monkeypatch):
    """A container's masked /proc refuses the new /proc a PID namespace needs (podman's default):
    the jail then has no PID namespace, and the level's description (results.json) says so,
    rather than every zygote failing to start."""
    real = jail._probe
    monkeypatch.setattr(jail, "_probe", lambda flags: "bwrap fails here: Can't mount proc on /newroot/proc"
                        if "--unshare-pid" in flags else real(flags))
    jail.pid_namespace_problem.cache_clear()
    try:
        assert "--unshare-pid" not in jail._namespaces()
        assert jail.choose(jail.BWRAP).description.endswith("no PID namespace (this machine refuses one)")
    finally:
        jail.pid_namespace_problem.cache_clear()  # asked again, unpatched, by the next caller
