"""The IPython extension: `%load_ext checks`, then `%checks test [ASSIGNMENT] [QUESTION...]` (as
`checks test` reads them: `%checks test`, `%checks test 01_tensors`, `%checks test strides.offset`),
`%checks submit [ASSIGNMENT]` (`checks submit` on the notebook's folder, to the course server the
student signed in to with `checks login`), and `%%checks file NAME`, the first line of an answer cell in an exported notebook (nbgrader, otter).

The checks run in a child process (runner.py) on the notebook's folder, the kernel's working
folder, through the same engine as `checks test`; the kernel only waits for it (with a time
limit, killing its whole process group on a limit or an interrupt) and shows what it wrote back.
So a student's exception, hang or sys.exit costs a row of the table, never the kernel.

An answer cell runs in the kernel as the module it stands for (`%%checks file rules.py` is
`import rules` for the cells below it), and its public names land in the notebook's namespace;
ANSWERS keeps the last source of each file, which the exports' grading cells grade.
"""

from __future__ import annotations

import json
import linecache
import os
import signal
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from checks.config.settings import NOTEBOOK_TIMEOUT_S, Settings
from checks.notebooks.display import ChecksReport

from checks.course.answer_cells import ANSWER_LINE

USAGE = ("usage: %checks test [ASSIGNMENT] [QUESTION...]   (all questions, or those named, such as strides.offset)\n"
         "       %checks submit [ASSIGNMENT]   (submit this folder to the course server: `checks login URL` first)\n"
         f"       {ANSWER_LINE.format(name='NAME')}   (first line of an answer cell: the rest is the file NAME)")
ANSWERS: dict[str, str] = {}  # file name -> the source of its answer cell, as last run in this kernel
# the whole run, start-up included; each student call has its own, much shorter, limit inside


def load_ipython_extension(ipython: Any) -> None:
    """Register `%checks` (IPython calls this for `%load_ext checks`)."""
    ipython.register_magic_function(checks_magic, magic_kind="line_cell", magic_name="checks")


def checks_magic(line: str, cell: str | None = None) -> None:
    """%checks test [ASSIGNMENT] [QUESTION...]: run the public checks on this notebook's folder and
    show the table (the words mean what they mean to `checks test`).
    %%checks file NAME: the cell is the file NAME (see run_answer_cell)."""
    from IPython.display import display

    words = line.split()
    if cell is not None:
        if len(words) != 2 or words[0] != "file":
            print(USAGE)
            return
        run_answer_cell(words[1], cell)
        return
    if words and words[0] == "submit":
        print(run_submit(Path.cwd(), words[1:], timeout=Settings.from_environment().notebook_timeout))
        return
    if not words or words[0] != "test":
        print(USAGE)
        return
    display(run_checks(Path.cwd(), words[1:], timeout=Settings.from_environment().notebook_timeout))


def run_submit(folder: Path, words: Sequence[str] = (), *, timeout: float | None = None) -> str:
    """`checks submit [ASSIGNMENT]` on `folder`, in a child process (the same command, packing and
    feedback as in a terminal); what it printed, as plain text."""
    timeout = timeout or NOTEBOOK_TIMEOUT_S
    environment = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "100"}
    environment.pop("FORCE_COLOR", None)
    child = subprocess.Popen([sys.executable, "-m", "checks", "submit", *words], cwd=folder,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=environment, start_new_session=True)
    try:
        output, _ = child.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        _kill_group(child)
        return f"the submission did not finish in {timeout:g} s and was stopped; `checks submit` says more"
    return output.decode("utf-8", errors="replace").rstrip()


def run_answer_cell(name: str, code: str, namespace: dict | None = None) -> types.ModuleType | None:
    """Keep `code` as the answer for file `name`; a .py file is also run as its module (replacing
    any earlier one in sys.modules), its public names copied into `namespace` (the notebook's)."""
    ANSWERS[name] = code
    if not name.endswith(".py"):
        return None
    if namespace is None:
        from IPython import get_ipython

        shell = get_ipython()
        namespace = shell.user_ns if shell is not None else {}
    module_name = Path(name).stem
    module = types.ModuleType(module_name)
    module.__file__ = str(Path.cwd() / name)
    sys.modules[module_name] = module
    filename = f"<answer cell {name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)  # for tracebacks
    exec(compile(code, filename, "exec"), module.__dict__)
    namespace.update({key: value for key, value in vars(module).items() if not key.startswith("_")})
    namespace[module_name] = module
    return module


def run_checks(folder: Path, words: Sequence[str] | str | None = None, *, timeout: float | None = None) -> ChecksReport:
    """The public checks of `folder` (all questions, or those `words` name: what followed
    `%checks test`, or one question id), run in a child process."""
    words = [words] if isinstance(words, str) else list(words or [])
    timeout = timeout or NOTEBOOK_TIMEOUT_S
    with tempfile.TemporaryDirectory(prefix="checks-notebook-") as scratch:
        out, log = Path(scratch) / "report.json", Path(scratch) / "log.txt"
        command = [sys.executable, "-m", "checks.notebooks.runner", str(folder), str(out)]
        with open(log, "wb") as log_file:
            child = subprocess.Popen(command + words, cwd=folder,
                                     stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                     start_new_session=True)
            try:
                child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(child)
                return ChecksReport("checks", problem=f"the checks did not finish in {timeout:g} s and were stopped")
            except KeyboardInterrupt:
                _kill_group(child)
                return ChecksReport("checks", problem="interrupted: the checks were stopped")
        try:
            return ChecksReport.from_runner(json.loads(out.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            tail = log.read_text(encoding="utf-8", errors="replace")[-2000:].strip()
            return ChecksReport("checks", problem=f"the checks could not run (exit status {child.returncode}; "
                                                  f"this is not your score):\n{tail}")


def _kill_group(child: subprocess.Popen) -> None:
    """Stop the runner and everything it started. The sandbox's jail runs in a session of its own,
    and its workers as another uid, so the process group is not enough: the runner's whole tree is
    frozen first (so that nothing new is forked), then killed, group and all."""
    import psutil

    frozen: set[psutil.Process] = set()
    try:
        tree = [psutil.Process(child.pid)]
        for _ in range(3):  # a process forked while we walked is caught by the next walk
            found = [p for p in tree + _descendants(tree[0]) if p not in frozen]
            if not found:
                break
            for process in found:
                _quietly(process.suspend)
            frozen.update(found)
    except psutil.NoSuchProcess:
        pass
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for process in frozen:
        _quietly(process.kill)
    child.wait()
    psutil.wait_procs(list(frozen), timeout=5)


def _descendants(process: Any) -> list[Any]:
    import psutil

    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _quietly(action: Any) -> None:
    """Signal a process that may have ended meanwhile."""
    import psutil

    try:
        action()
    except psutil.NoSuchProcess:
        pass
