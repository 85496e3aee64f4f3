"""Whether a Dask worker may grade strangers' code: student code must never reach the cluster's
control plane (the scheduler, the workers, the nannies), which runs anything it is sent as the
worker's user, outside the sandbox.

A worker may grade when its sandbox has no network (the `bwrap` level), or, at the `fork` level,
when the cluster authenticates its members and the sandbox holds nothing to authenticate with:
distributed's mutual TLS (`tls://` addresses, encryption required) with keys the sandbox's uid
cannot read (a uid per submission, which cannot read every file), and no address of the
scheduler on the command line of the worker or its parents (visible to every uid in /proc).
Everything else is refused with the reason, by the driver before a run (`checks grade
--scheduler`, `checks serve --scheduler`) and by each worker before it grades (one that joins
later). The sandbox refuses to import distributed or dask at any level (sandbox/supervisor.py).

At the fork level the cluster's web pages are the sandbox's to read too: the scheduler's
dashboard and info pages (plain HTTP, on every interface) list the workers, the tasks and their
logs. So a cluster with a worker at that level must serve none of them (`dashboard_problem`, which
asks for them as student code would).

Nothing here imports distributed: `worker_problem` reads a worker's attributes only.
"""

from __future__ import annotations

import http.client
import os
import stat
from dataclasses import dataclass
from typing import Any

from checks.sandbox import jail



@dataclass(frozen=True)
class WorkerPosture:
    """What decides whether a worker may grade: its sandbox level and its place in the cluster."""
    isolation: jail.Isolation
    scheduler: str  # the scheduler's address as the worker reaches it
    listening: str  # the worker's own address
    require_encryption: bool
    keys: dict[str, str | None]  # the worker's CA, certificate and key: a path, PEM text or None
    command_lines: tuple[str, ...]  # the worker's and its parents', as any uid reads them in /proc


def problem(posture: WorkerPosture) -> str | None:
    """None when student code graded on this worker cannot reach the cluster, else why it could."""
    isolation = posture.isolation
    if isolation.kind == jail.BWRAP:
        return None  # the jail has a network namespace of its own: no route to anything
    why = (f"it grades at the fork level ({isolation.description}), where student code shares the "
           "worker's network")
    if not isolation.per_submission_uid or isolation.reads_everything:
        who = ("the grader's own uid" if not isolation.per_submission_uid
               else "a uid that may read every file")
        return (f"{why} as {who}: it could read the cluster's keys or the worker's memory and run code "
                "on every worker. Grade on Dask with bubblewrap (the bwrap level), or run the workers as "
                "root with the Python installation readable by other users and the cluster on TLS")
    if not (posture.scheduler.startswith("tls://") and posture.listening.startswith("tls://")
            and posture.require_encryption):
        return (f"{why}, and the cluster does not authenticate its members (the scheduler at "
                f"{_scheme(posture.scheduler)}, this worker at {_scheme(posture.listening)}, encryption "
                f"{'required' if posture.require_encryption else 'not required'}): anything that reaches its "
                "port may run code on every worker. Put the cluster on distributed's TLS "
                "(distributed.comm.require-encryption and tls ca-file, cert and key for every role; "
                "docs/server-deploy.md), or grade with bubblewrap")
    for role in ("ca_file", "cert", "key"):
        value = posture.keys.get(role)
        if not value and role != "key":
            return f"{why}, and the worker has no TLS {role.replace('_', ' ')}: it cannot prove it is a member"
    for role, value in posture.keys.items():
        if not value or "\n" in value:
            continue  # the PEM text itself (distributed's test): in the worker's memory, which another uid cannot read
        readable = _readable_by_others(value, secret=role == "key" or not posture.keys.get("key"))
        if readable:
            return f"{why}, and its TLS {role} {value} {readable}: student code could join the cluster with it"
    host_port = posture.scheduler.split("://", 1)[-1]
    for line in posture.command_lines:
        if host_port and host_port in line:
            return (f"{why}, and the scheduler's address ({host_port}) is on the command line of the worker "
                    "or its parent, which every uid reads in /proc: give it in $DASK_SCHEDULER_ADDRESS or a "
                    "scheduler file only the worker's user can read")
    return None


def _scheme(address: str) -> str:
    return address.split("://", 1)[0] + "://" if "://" in address else repr(address)


def _readable_by_others(path: str, *, secret: bool) -> str:
    """Why another uid could read (or swap) this file, or "" when it cannot. A certificate may be
    world-readable; a key (or a certificate file that holds the key) may not."""
    try:
        info = os.stat(path)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if secret and info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
        return f"is readable by other users (mode {stat.S_IMODE(info.st_mode):o})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return ""


def posture_of(dask_worker: Any, isolation: jail.Isolation) -> WorkerPosture:
    """The posture of a running distributed.Worker whose pools grade at `isolation`."""
    security = dask_worker.security
    cert = security.tls_worker_cert
    keys = {"ca_file": security.tls_ca_file, "cert": cert, "key": security.tls_worker_key}
    return WorkerPosture(isolation, str(dask_worker.scheduler.address), str(dask_worker.address),
                         bool(security.require_encryption), keys, _command_lines())


def _command_lines() -> tuple[str, ...]:
    """This process's command line and its parents', up to the first that is not ours to read."""
    lines, pid = [], os.getpid()
    while pid > 1 and len(lines) < 16:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                lines.append(file.read().replace(b"\0", b" ").decode(errors="replace"))
            with open(f"/proc/{pid}/stat", "rb") as file:
                pid = int(file.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return tuple(lines)


def worker_problem(dask_worker: Any) -> str | None:
    """On a worker: None when its pools may grade strangers' code, else why not (see `problem`)."""
    from checks.config.settings import Settings

    try:
        isolation = Settings.from_environment().isolation
    except Exception as error:  # noqa: BLE001 - an impossible level (CHECKS_ISOLATION=bwrap without bwrap)
        return f"its sandbox cannot start: {error}"
    return problem(posture_of(dask_worker, isolation))


# pages of distributed's HTTP servers that tell about the cluster (its members, tasks and logs)
CLUSTER_PAGES = ("/info/main/workers.html", "/json/identity.json", "/status", "/info/main/logs.html", "/metrics")


def dashboard_problem(host: str, port: int, timeout: float = 3.0) -> str | None:
    """None when the HTTP server at host:port serves none of CLUSTER_PAGES, else which it serves."""
    for path in CLUSTER_PAGES:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            connection.request("GET", path)
            if connection.getresponse().status == 200:
                return (f"its web server at http://{host}:{port} serves {path} to anyone on the machine, student "
                        "code at the fork level included (the cluster's members, tasks and logs): start it with "
                        "--no-dashboard and distributed.scheduler.http.routes (and .worker.http.routes) limited to "
                        "distributed.http.health (docs/server-deploy.md)")
        except (OSError, http.client.HTTPException):
            continue  # nothing answers there: nothing to read
        finally:
            connection.close()
    return None


def worker_level(dask_worker: Any) -> str:
    """On a worker: the level its pools grade at (jail.BWRAP or jail.FORK)."""
    from checks.config.settings import Settings

    return Settings.from_environment().isolation.kind
