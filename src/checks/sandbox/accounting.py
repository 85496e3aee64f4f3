"""The memory of all a submission's processes together, accounted while it is graded.

RLIMIT_DATA caps each process; a submission that starts many processes (or daemons) could still
take the machine's memory from its neighbours. A thread in the grading process sums, a few times
a second, the private memory of every process of the submission (its uid where it has one of its
own, else the sessions of its workers) and kills them all when the sum passes the cap. The
question running then says "memory limit". No cgroup is needed (most containers have none we
may write), at the price of a check every POLL_SECONDS: a burst between two checks is bounded
only by the per-process limit.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable

from checks.sandbox.supervisor import kill_uid, processes_where, read_status, status_field

POLL_SECONDS = 0.1
KIB = 1024


class MemoryWatch:
    """Sums and caps one submission's memory; `start` when it starts, `stop` when it ends."""

    def __init__(self, cap_bytes: int, uid: int | None, sessions: Callable[[], set[int]]) -> None:
        """`uid`: the submission's own, else None; `sessions`: the pids of its workers, each the
        id of a session its processes are in (used where it has no uid of its own)."""
        self.cap_bytes = cap_bytes
        self.uid = uid
        self.sessions = sessions
        self.tripped = ""  # why its processes were killed, until the question that met it says so
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        self._stopped.clear()
        self._thread = threading.Thread(target=self._watch, name="checks-memory-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def take_reason(self) -> str:
        """Why the submission's processes were last killed ("" if they were not), once."""
        reason, self.tripped = self.tripped, ""
        return reason

    def _watch(self) -> None:
        while not self._stopped.wait(POLL_SECONDS):
            found = self._processes()
            # resident anonymous memory first (read with the scan; counts pages still shared with
            # the zygote); only over the cap is each process's own share worked out
            if sum(_kib(status, b"RssAnon") for status in found.values()) * KIB <= self.cap_bytes:
                continue
            used = sum(_private_kib(pid) for pid in found) * KIB
            if used > self.cap_bytes:
                self.tripped = (f"memory limit: the submission's processes together used {used / 2**20:.0f} MiB "
                                f"(the limit is {self.cap_bytes / 2**20:.0f} MiB); they were stopped")
                self._kill(list(found))

    def _processes(self) -> dict[int, bytes]:
        """The submission's processes, each with its /proc/PID/status: those of its uid, else those
        in its workers' sessions (every process on the machine is looked at, ten times a second:
        only the one field is read)."""
        if self.uid is not None:
            wanted, key = {str(self.uid).encode()}, b"Uid"
        else:
            wanted, key = {str(pid).encode() for pid in self.sessions()}, b"NSsid"
        return processes_where(lambda status: _first_value(status, key) in wanted) or {}

    def _kill(self, pids: list[int]) -> None:
        if self.uid is not None:
            kill_uid(self.uid)
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _first_value(status: bytes, key: bytes) -> bytes | None:
    """The first word of the `key:` line of a /proc/PID/status (its real uid for Uid), or None."""
    words = (status_field(status, key) or b"").split()
    return words[0] if words else None


def _kib(status: bytes, key: bytes) -> int:
    """A size field (kB) of a /proc/PID/status; 0 where it has none."""
    try:
        return int(_first_value(status, key) or 0)
    except ValueError:
        return 0


def _private_kib(pid: int) -> int:
    """Memory the process holds alone (not shared with the zygote it forked from), swap included."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            lines = rollup.read().decode(errors="replace").splitlines()
    except OSError:
        return _kib(read_status(pid), b"RssAnon")
    total = 0
    for line in lines:
        key, _, rest = line.partition(":")
        if key in ("Private_Dirty", "Swap"):
            total += int(rest.split()[0])
    return total
