"""Which Dask workers may grade strangers' code (executors/posture.py, issue 49): a sandbox without
network always; at the fork level only a uid per submission that cannot read every file, on a
cluster with mutual TLS whose keys that uid cannot read, with no scheduler address on a command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.executors.posture import CLUSTER_PAGES, WorkerPosture, dashboard_problem, problem
from checks.sandbox import jail

BWRAP = jail.Isolation(jail.BWRAP, False, "bwrap (unprivileged)")
FORK_UID = jail.Isolation(jail.FORK, True, "fork: a uid per submission")
FORK_SHARED = jail.Isolation(jail.FORK, False, "fork: process group and resource limits only")
FORK_READS_ALL = jail.Isolation(jail.FORK, True, "fork: a uid per submission", reads_everything=True)
PEM = "-----BEGIN CERTIFICATE-----\n..."


def posture(isolation: jail.Isolation, *, scheme: str = "tls", encryption: bool = True,
            keys: dict | None = None, lines: tuple[str, ...] = ("python -m dask worker",)) -> WorkerPosture:
    return WorkerPosture(isolation, f"{scheme}://10.0.0.2:8786", f"{scheme}://10.0.0.3:40000", encryption,
                         keys if keys is not None else {"ca_file": PEM, "cert": PEM, "key": PEM}, lines)


def test_a_sandbox_without_network_may_grade_on_any_cluster():
    assert problem(posture(BWRAP, scheme="tcp", encryption=False, keys={})) is None


def test_the_fork_level_on_tls_with_a_uid_of_its_own_may_grade(tmp_path: Path):
    assert problem(posture(FORK_UID)) is None
    key = tmp_path / "worker.key"
    key.write_text("secret")
    key.chmod(0o600)
    cert = tmp_path / "worker.pem"
    cert.write_text("cert")
    cert.chmod(0o644)
    assert problem(posture(FORK_UID, keys={"ca_file": str(cert), "cert": str(cert), "key": str(key)})) is None


@pytest.mark.parametrize("isolation, words", [(FORK_SHARED, "the grader's own uid"),
                                              (FORK_READS_ALL, "may read every file")])
def test_the_fork_level_sharing_what_it_could_read_is_refused_even_on_tls(isolation, words):
    found = problem(posture(isolation))
    assert found and words in found and "bwrap" in found


def test_a_cluster_without_tls_is_refused_at_the_fork_level():
    assert "does not authenticate" in problem(posture(FORK_UID, scheme="tcp", encryption=False))
    assert "encryption not required" in problem(posture(FORK_UID, encryption=False))


def test_keys_another_uid_could_read_and_an_address_on_a_command_line_are_refused(tmp_path: Path):
    key = tmp_path / "worker.key"
    key.write_text("secret")
    key.chmod(0o644)
    found = problem(posture(FORK_UID, keys={"ca_file": PEM, "cert": PEM, "key": str(key)}))
    assert found and "readable by other users" in found and str(key) in found
    key.chmod(0o600)
    assert problem(posture(FORK_UID, keys={"ca_file": PEM, "cert": str(key), "key": None})) is None
    assert "no TLS cert" in problem(posture(FORK_UID, keys={"ca_file": PEM, "cert": None, "key": None}))
    lines = ("python -m distributed.cli.dask_worker tls://10.0.0.2:8786 --nthreads 1",)
    assert "command line" in problem(posture(FORK_UID, lines=lines))


def test_the_cluster_keys_are_written_once_with_a_key_only_its_owner_reads(tmp_path: Path):
    pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    from distributed.security import Security

    from checks.executors.cluster_keys import write_keys

    assert write_keys(tmp_path / "keys") is True
    modes = {path.name: path.stat().st_mode & 0o777 for path in (tmp_path / "keys").iterdir()}
    assert modes == {"ca.pem": 0o644, "cert.pem": 0o644, "key.pem": 0o600}
    before = (tmp_path / "keys" / "key.pem").read_text()
    assert write_keys(tmp_path / "keys") is False and (tmp_path / "keys" / "key.pem").read_text() == before
    keys = {"ca_file": str(tmp_path / "keys/ca.pem"), "cert": str(tmp_path / "keys/cert.pem"),
            "key": str(tmp_path / "keys/key.pem")}
    assert problem(posture(FORK_UID, keys=keys)) is None
    security = Security(tls_ca_file=keys["ca_file"], tls_worker_cert=keys["cert"], tls_worker_key=keys["key"],
                        require_encryption=True)
    assert security.get_connection_args("worker")["ssl_context"] is not None  # a TLS context distributed accepts


# ---- the cluster's web pages (issue 49: a fork-level sandbox read the scheduler's dashboard)

def _serving(pages: dict[str, int]):
    """An HTTP server on 127.0.0.1 answering each path with its status (404 for the rest)."""
    import http.server
    import threading

    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(pages.get(self.path, 404))
            self.end_headers()
            self.wfile.write(b"<html>workers</html>")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("path", CLUSTER_PAGES)
def test_a_server_with_a_page_about_the_cluster_is_named(path):
    server = _serving({path: 200, "/health": 200})
    try:
        found = dashboard_problem("127.0.0.1", server.server_address[1], timeout=2)
    finally:
        server.shutdown()
        server.server_close()
    assert found is not None and path in found and "--no-dashboard" in found


def test_a_health_check_alone_or_nothing_listening_pass():
    server = _serving({"/health": 200})
    try:
        assert dashboard_problem("127.0.0.1", server.server_address[1], timeout=2) is None
    finally:
        server.shutdown()
        server.server_close()
    assert dashboard_problem("127.0.0.1", server.server_address[1], timeout=2) is None  # closed now
