"""Where a Dask worker unpacks the courses it grades (hidden suites and solutions): in the worker's
own Dask folder, which Dask purges after a worker killed before its teardown, unless the bwrap jail
would show that folder to student code; then in the system temp folder, as before."""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("distributed")

import checks  # noqa: E402
from checks.executors.worker import GradingPlugin  # noqa: E402
from checks.sandbox import jail  # noqa: E402


def test_what_the_jail_shows_is_the_system_the_interpreter_and_the_package(tmp_path):
    assert jail.shown_in_jail(Path(checks.__file__).parent / "anything")
    assert jail.shown_in_jail(Path(sys.prefix) / "scratch") and jail.shown_in_jail(Path("/usr/lib"))
    assert not jail.shown_in_jail(tmp_path) and not jail.shown_in_jail(Path("/"))


@pytest.mark.parametrize("inside_the_jail", [False, True])
def test_a_worker_unpacks_courses_in_its_own_folder_unless_the_jail_shows_it(tmp_path, inside_the_jail):
    scratch = Path(checks.__file__).parent if inside_the_jail else tmp_path / "worker-1"
    scratch.mkdir(exist_ok=True)
    plugin = GradingPlugin()
    plugin.setup(SimpleNamespace(local_directory=str(scratch)))
    try:
        folder = plugin._dir
        assert (folder.parent == scratch) is not inside_the_jail and not jail.shown_in_jail(folder)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # the workers' user only
    finally:
        plugin.teardown(None)
    assert not folder.exists()
