"""A real JupyterLab, a real browser: the 01_tensors notebook runs all its cells and shows the
checks table. The screenshot it takes is the README's (CHECKS_UPDATE_SCREENSHOT=1 copies it to
docs/); it always lands in the test's temp dir.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = REPO / "docs" / "jupyterlab-checks.png"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]

pytest.importorskip("jupyterlab", reason="needs the [notebooks] extra (make setup installs it)")
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (make setup installs it)")
pytestmark = [pytest.mark.long,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                               "(apt-get install chromium; .ci/run installs it)")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, log: Path, limit_s: float = 90.0) -> None:
    """Poll the server's status API until it answers (bounded; a server that died is reported)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"jupyter lab exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    pytest.fail(f"jupyter lab did not answer in {limit_s:g} s:\n{log.read_text()[-3000:]}")


def stop(server: subprocess.Popen, started: set[psutil.Process]) -> list[str]:
    """Kill the server's process group and every process it started (kernels run in sessions of
    their own, the checks runner in another); the ones still alive afterwards, if any."""
    try:
        started |= set(psutil.Process(server.pid).children(recursive=True))
    except psutil.NoSuchProcess:
        pass
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait(timeout=30)
    for process in started:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(list(started), timeout=10)
    return [f"{p.pid} {p.name()}" for p in alive]


def test_the_notebook_runs_in_jupyterlab_and_shows_the_checks_table(tmp_path):
    root = tmp_path / "root"
    folder = root / "01_tensors"
    shutil.copytree(REPO / "assignments" / "01_tensors", folder)
    # half done, as a student would be: strides.py written, broadcasting.py still the stub
    shutil.copy(REPO / "solutions" / "01_tensors" / "strides.py", folder / "strides.py")
    (folder / "quiz.toml").write_text("broadcast_numel = 6\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "IPYTHONDIR": str(home / "ipython"),
           "JUPYTER_PLATFORM_DIRS": "1", "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings")}
    # no "get notified about Jupyter news?" pop-up over the screenshot (nothing could be fetched anyway)
    news = home / "lab-settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')
    env.pop("CHECKS_COURSE", None)
    port, token = free_port(), secrets.token_hex(16)
    log = tmp_path / "jupyter.log"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip", "127.0.0.1", f"--port={port}",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
               "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    started: set[psutil.Process] = set()
    with open(log, "wb") as log_file:
        server = subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(f"{base}/api/status?token={token}", server, log)
        shot = tmp_path / "jupyterlab-checks.png"
        with playwright_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 860})
                page.goto(f"{base}/lab/tree/01_tensors/01_tensors.ipynb?token={token}", timeout=90_000)
                page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                                       " && window.jupyterapp.shell.currentWidget.sessionContext"
                                       " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                                       " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
                                       timeout=90_000)
                page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
                table = page.locator(".jp-OutputArea-output table.checks-table")
                table.wait_for(timeout=180_000)
                started |= set(psutil.Process(server.pid).children(recursive=True))
                rows = table.locator("tr[data-question]")
                states = {rows.nth(i).get_attribute("data-question"): rows.nth(i).get_attribute("data-state")
                          for i in range(rows.count())}
                assert states["strides.offset"] == "passed"
                assert states["broadcasting.broadcast_shape"] == "not started"
                assert states["quiz.broadcast_numel"] == "quiz ok"
                assert len(states) == 13, states
                page.locator(".jp-Cell", has=table).last.scroll_into_view_if_needed()
                page.evaluate("() => document.querySelector('.checks-table').scrollIntoView({block: 'center'})")
                page.wait_for_timeout(300)
                page.screenshot(path=str(shot))
            finally:
                browser.close()
        assert shot.stat().st_size > 10_000
        if os.environ.get("CHECKS_UPDATE_SCREENSHOT"):
            shutil.copy(shot, SCREENSHOT)
    finally:
        left = stop(server, started)
    assert not left, f"processes left behind: {left}"
