"""--worker-wait (how long a Dask cluster may have no worker before what is not graded yet fails)
takes a number of seconds above 0; anything else is a usage error naming the value, for `checks
grade` and `checks serve` alike, and the library refuses it too."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")

from checks import cli  # noqa: E402
from checks.executors.dask_grader import WORKER_WAIT, DaskGrader  # noqa: E402

from conftest import REPO  # noqa: E402


@pytest.mark.parametrize("command", [["grade", "toy", "subs", "--out", "out"], ["serve", "folder"]])
@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf", "nan"])
def test_a_worker_wait_that_is_not_seconds_above_zero_is_a_usage_error(command, value, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main([*command, "--scheduler", "tcp://127.0.0.1:9", "--worker-wait", value])
    assert stopped.value.code == 2
    assert "--worker-wait: " in capsys.readouterr().err


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_the_grader_refuses_a_wait_that_is_not_above_zero(value):
    with pytest.raises(ValueError, match="seconds above 0"):
        DaskGrader(None, worker_wait=value)  # type: ignore[arg-type]  # refused before the client is used


@pytest.mark.parametrize("command", ["grade", "serve"])
def test_the_default_wait_is_the_one_the_help_and_the_docs_give(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    assert f"(default: {WORKER_WAIT:g})" in " ".join(capsys.readouterr().out.split())
    operators = " ".join((REPO / "docs" / "operators.md").read_text().split())
    assert f"`--worker-wait SECONDS` (default {WORKER_WAIT:g})" in operators
