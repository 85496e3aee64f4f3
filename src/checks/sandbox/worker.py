"""The sandbox side: the only module of `checks` that runs next to student code.

A worker is forked from the warm zygote with torch already imported. It writes the submission's
files into a private temp dir, puts it first on sys.path and then answers requests from its
grader: "call strides.numel with these args", or "run this suite driver". Requests are trusted
(they come from the grader); replies are untrusted and travel in the codec's format only.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.abc
import io
import itertools
import json
import linecache
import marshal
import os
import pickle
import random
import resource
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import types
from typing import Any, Container

from checks.sandbox import codec

FRAME_HEADER = struct.Struct("!Q")
OUTPUT_EXCERPT_BYTES = 2000
RETURNED_QUIETLY_HEADER = {"status": "returned", "output": ""}  # most replies: fixed bytes, no JSON work
RETURNED_QUIETLY = json.dumps(RETURNED_QUIETLY_HEADER).encode()
IPC_RMID = 0
# Every random generator the student's code can reach starts each question from this seed, so that
# a submission draws the same numbers, and gets the same score and feedback, each time it is graded
# (torch seeds itself from the OS at import, Python's random on every fork, NumPy's on its import).
STUDENT_SEED = 0
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219}
KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 7, 22
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5
PR_SET_KEEPCAPS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 8, 47, 2
LINUX_CAPABILITY_VERSION_3, CAP_DAC_READ_SEARCH = 0x20080522, 2
CLONE_NEWNS, MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x20000, 0x2, 0x4, 0x4000, 0x40000
# where a process may write besides its home: each is a tmpfs of the worker's own, capped, where it can have one
TEMP_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")


# ---------------------------------------------------------------- framing, shared with the grader

def send_frame(sock: socket.socket, *payloads: bytes) -> None:
    """One length-prefixed frame per payload, in one write: the reader wakes once."""
    sock.sendall(b"".join(FRAME_HEADER.pack(len(payload)) + payload for payload in payloads))


class FrameReader:
    """Reads length-prefixed frames from a socket, taking whatever has arrived in one recv: a
    reply's frames come in one write, so they usually cost one system call instead of four."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def frame(self, limit: int, deadline: float | None = None) -> bytes:
        """The next frame; EOFError when the peer is gone, ValueError when it is too big,
        socket.timeout when it has not come by `deadline` (time.monotonic) if one is given."""
        self._fill(FRAME_HEADER.size, deadline)
        (length,) = FRAME_HEADER.unpack_from(self.buffer)
        if length > limit:
            raise ValueError(f"a value of {length / 2**20:.1f} MiB (the limit is {limit / 2**20:.0f} MiB)")
        end = FRAME_HEADER.size + length
        self._fill(end, deadline)
        data = bytes(self.buffer[FRAME_HEADER.size:end])
        del self.buffer[:end]
        return data

    def _fill(self, size: int, deadline: float | None) -> None:
        while len(self.buffer) < size:
            if deadline is not None:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = self.sock.recv(min(max(size - len(self.buffer), 1 << 16), 1 << 20))
            if not chunk:
                raise EOFError("the sandbox closed the connection")
            self.buffer += chunk


def recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise EOFError("the sandbox closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------- the worker process

class _BlockedImports(importlib.abc.MetaPathFinder):
    """Refuses the listed top-level packages, so that e.g. rules.py cannot lean on torch."""

    def __init__(self, blocked: tuple[str, ...]) -> None:
        self.blocked = blocked

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001 - importlib protocol
        if fullname.split(".")[0] in self.blocked:
            raise ImportError(f"{fullname} is not available to this part of the assignment: "
                              f"write it without {fullname.split('.')[0]}")
        return None


def serve(sock: socket.socket, reader: FrameReader, config: dict, home: str) -> None:
    """Entry point in the forked child: lock ourselves in, then answer requests (read from `sock`
    through `reader`) until EOF. `home` is an empty folder of ours (the zygote removes it)."""
    os.setsid()  # own process group: the grader kills the whole group
    if config.get("cpus") and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, config["cpus"])  # its grader's core: they take turns, never run together
        except OSError:  # that CPU is gone: run anywhere
            pass
    uid = config.get("uid")
    if uid is not None and config.get("temp_bytes"):
        _private_temp(home, config["temp_bytes"])
    for name, data in config["files"].items():
        path = os.path.realpath(os.path.join(home, name))
        if not path.startswith(home + os.sep):
            continue  # course/submissions.py refuses such names already; never write outside home
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    output_path = os.path.join(home, ".output")
    _capture_output(output_path)
    if uid is not None:
        _hand_over(home, uid)
    _apply_limits(config["limits"])
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        if config.get("read_everything"):
            _keep_capabilities()
        os.setuid(uid)  # from here on nothing of root is left: not even the saved uid
        if config.get("read_everything"):
            _read_everything()
        _remove_leftovers(uid)
    os.environ.update(HOME=home, TMPDIR=home)
    tempfile.tempdir = home
    os.chdir(home)
    sys.path.insert(0, home)
    sys.dont_write_bytecode = True
    imports = _ImportBlocks(tuple(config["block_imports"]))
    session = _Session(home, output_path, list(config["files"]), imports)
    while True:
        try:
            request = pickle.loads(reader.frame(1 << 30))  # from the grader: trusted
        except EOFError:
            os._exit(0)
        header, value = session.handle(request)
        encoded = RETURNED_QUIETLY if header == RETURNED_QUIETLY_HEADER else json.dumps(header).encode()
        send_frame(sock, encoded, *([] if value is None else [value]))


def _private_temp(home: str, size: int) -> None:
    """Give this worker (and what it starts) temp space of its own: a mount namespace in which
    /tmp, /var/tmp and /dev/shm are fresh tmpfs of `size` bytes each, its home inside /tmp. A
    student who fills them fills only their own, and all of it vanishes with the worker's
    processes. Needs CAP_SYS_ADMIN (root, and in the jail a capability the zygote holds for
    this); where it cannot, the home stays where it was (RLIMIT_FSIZE per file)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        return
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return  # a namespace of our own, but mounts would reach the zygote's: mount nothing
    options = f"size={size},mode=1777,nr_inodes={max(1024, size // 4096)}".encode()
    mounted = False
    for folder in TEMP_FOLDERS:
        if os.path.isdir(folder) and not os.path.islink(folder):
            done = libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0
            mounted = mounted or (done and folder == "/tmp")
    if mounted and home.startswith("/tmp/"):
        os.makedirs(home, mode=0o711, exist_ok=True)  # the zygote's folder stays, empty, under the old /tmp


def _hand_over(home: str, uid: int) -> None:
    """The sandbox uid owns its home, and nothing else on a writable file system."""
    for folder, _, names in os.walk(home):
        os.chown(folder, uid, uid)
        for name in names:
            os.chown(os.path.join(folder, name), uid, uid)
    os.chmod(home, 0o700)


def _keep_capabilities() -> None:
    """Keep the permitted capabilities across setuid (to be narrowed at once by _read_everything)."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_KEEPCAPS) failed")


def _read_everything() -> None:
    """Keep only CAP_DAC_READ_SEARCH (read any file, never write one), for this process and what
    it executes: the fork level's answer to a Python installation other users cannot read."""
    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(*[1 << CAP_DAC_READ_SEARCH] * 3, 0, 0, 0)  # effective, permitted, inheritable
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0)  # best effort: exec'd children


def _remove_leftovers(uid: int) -> None:
    """Remove what earlier workers of the submission (our uid) may have left in the kernel to
    carry a reference file to us: System V shared memory, queues and semaphores, and keys in
    the uid's keyrings. Only their owner may remove them, so this runs as that uid."""
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = KEYCTL_SYSCALL.get(os.uname().machine)
    if keyctl is not None:
        persistent = libc.syscall(keyctl, KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_USER_KEYRING)
        for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING, persistent):
            if keyring != -1:
                libc.syscall(keyctl, KEYCTL_CLEAR, keyring)
    remove = {"shm": lambda object_id: libc.shmctl(object_id, IPC_RMID, None),
              "msg": lambda object_id: libc.msgctl(object_id, IPC_RMID, None),
              "sem": lambda object_id: libc.semctl(object_id, 0, IPC_RMID)}
    for kind, remove_one in remove.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as table:
                header, *rows = [line.split() for line in table]
        except OSError:  # not Linux
            return
        for row in rows:
            fields = dict(zip(header, row))
            if str(uid) in (fields.get("uid"), fields.get("cuid")):  # its owner now, or its creator
                remove_one(int(row[1]))


def _apply_limits(limits: dict) -> None:
    for name, soft in limits.items():
        kind = getattr(resource, name)
        _, hard = resource.getrlimit(kind)
        new_soft = soft if hard == resource.RLIM_INFINITY else min(soft, hard)
        resource.setrlimit(kind, (new_soft, hard))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write fails instead of killing us


def _capture_output(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)


_MODULES_BY_PACKAGE: dict[str, tuple[str, ...]] = {}


def index_modules() -> None:
    """In the zygote, before it forks: the loaded modules of each top-level package. A worker then
    hides a package without walking all of sys.modules, which would touch (and so copy from the
    zygote) a page for every module name it holds: about 2 ms a worker."""
    by_package: dict[str, list[str]] = {}
    for name in sys.modules:
        by_package.setdefault(name.split(".")[0], []).append(name)
    _MODULES_BY_PACKAGE.clear()
    _MODULES_BY_PACKAGE.update({package: tuple(names) for package, names in by_package.items()})


class _ImportBlocks:
    """The top-level packages the student's code may not import. Their modules loaded already (the
    zygote's torch) are hidden, and come back when a later question of the submission, served by
    this worker, blocks fewer packages (never more: the code run before could have kept them)."""

    def __init__(self, blocked: tuple[str, ...]) -> None:
        self.blocked = frozenset(blocked)
        self.hidden = {name: sys.modules.pop(name) for name in self._loaded(self.blocked)}
        self._install()

    def _install(self) -> None:
        """Refuse the blocked packages' imports from now on; what a later narrowing forgets is
        what comes into sys.modules after this."""
        self.finder = _BlockedImports(tuple(sorted(self.blocked)))
        if self.blocked:
            sys.meta_path.insert(0, self.finder)
        self.modules_at_start = len(sys.modules)

    @staticmethod
    def _loaded(packages: frozenset[str]) -> list[str]:
        if not packages:
            return []
        if not _MODULES_BY_PACKAGE:  # not forked from a zygote that indexed them
            return [name for name in sys.modules if name.split(".")[0] in packages]
        return [name for package in packages for name in _MODULES_BY_PACKAGE.get(package, ()) if name in sys.modules]

    def narrow(self, blocked: tuple[str, ...]) -> bool:
        """Block only `blocked` from now on (False, and nothing changed, when it is not a subset).
        Each module imported since the worker started (or last narrowed) is imported again when next
        asked for, as in a fresh worker: under the old blocks it may have found a package missing
        and kept that.
        (sys.modules keeps the order modules came in: those are the last ones.)"""
        if not self.blocked >= set(blocked):
            return False
        if self.blocked == set(blocked):
            return True
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self.finder)
        for name in list(itertools.islice(reversed(sys.modules), max(0, len(sys.modules) - self.modules_at_start))):
            del sys.modules[name]
        self.blocked = frozenset(blocked)
        sys.modules.update({name: module for name, module in self.hidden.items()
                            if name.split(".")[0] not in self.blocked})
        self.hidden = {name: module for name, module in self.hidden.items() if name.split(".")[0] in self.blocked}
        self._install()
        return True


class _Session:
    """Dispatches requests; every reply is a JSON header plus, for a value, a codec payload."""

    def __init__(self, home: str, output_path: str, files: list[str], imports: _ImportBlocks) -> None:
        self.home = home
        tops = {name.split("/")[0] for name in files}  # strides.py, or a package folder
        self.own_entries = tops | {os.path.basename(output_path)}
        self.own_modules = {name.removesuffix(".py") for name in tops}  # the names they import as
        self.output_path = output_path
        self.imports = imports
        self.drivers: dict[str, types.ModuleType] = {}
        self._start_question()

    def handle(self, request: dict) -> tuple[dict, bytes | None]:
        if request["op"] == "afresh":
            self._start_afresh()
            if not self.imports.narrow(tuple(request["block_imports"])):
                return {"status": "blocks more", "output": self._output()}, None
            self._start_question()  # torch's settings too, once no longer blocked
            return {"status": "afresh", "output": self._output()}, None
        try:
            if request["op"] == "call":
                target = self._student_function(request["module"], request["name"])
            else:
                target = self._driver_function(request)
            result = target(*request["args"], **request["kwargs"])
        except BaseException as error:  # noqa: BLE001 - SystemExit and friends are answers too
            header, payload = self._raised(error), None
        else:
            try:
                header, payload = {"status": "returned"}, codec.encode(result)
            except (codec.UnsupportedType, RecursionError, MemoryError, ValueError) as error:
                header, payload = {"status": "unsupported", "message": str(error)[:500]}, None
        header["output"] = self._output()
        return header, payload

    def _start_question(self) -> None:
        """Note the settings to put back after this question, and seed the generators it may draw from."""
        self.settings = _Settings()
        seed_generators(self.settings.torch)

    def _start_afresh(self) -> None:
        """Between two questions in this worker: the submission's modules (and the suite's
        drivers) are imported again on first use, and what the student's code most likely
        changed elsewhere is put back, so that one question's state does not reach the next."""
        for name in self.own_modules:
            module = sys.modules.get(name)
            if module is None or not str(getattr(module, "__file__", None)).startswith(self.home + os.sep):
                continue  # not imported, or a module of the same name that is not the student's
            del sys.modules[name]
            if hasattr(module, "__path__"):  # a package: its submodules too
                for inner in [inner for inner in sys.modules if inner.startswith(name + ".")]:
                    del sys.modules[inner]
        self.drivers.clear()
        self.settings.restore()
        os.chdir(self.home)
        remove_entries(self.home, keep=self.own_entries)  # what the last question wrote beside the submission

    def _student_function(self, module_name: str, name: str) -> Any:
        module = sys.modules.get(module_name)  # imported by an earlier call: skip importlib's locks
        if module is None:
            try:
                module = importlib.import_module(module_name)
            except BaseException as error:
                raise _ImportFailed(module_name) from error
        if not hasattr(module, name):
            raise _Missing(f"{module_name}.py defines no {name}")
        return getattr(module, name)

    def _driver_function(self, request: dict) -> Any:
        module = self.drivers.get(request["module"])
        if module is None:
            module = types.ModuleType(request["module"])
            module.__file__ = f"<grader driver {request['module']}>"
            exec(marshal.loads(request["code"]), module.__dict__)  # compiled by the grader: trusted
            self.drivers[request["module"]] = module
        return getattr(module, request["name"])

    def _raised(self, error: BaseException) -> dict:
        context = None
        if isinstance(error, _ImportFailed):
            context = f"while importing {error.args[0]}.py"
            error = error.__cause__
        if isinstance(error, _Missing):
            return {"status": "missing", "message": str(error)}
        if isinstance(error, SystemExit):
            message = f"called sys.exit({error.code!r})"
        else:
            try:
                message = str(error)
            except BaseException:  # noqa: BLE001 - a hostile __str__
                message = "<the exception could not be printed>"
        return {
            "status": "raised",
            "type": type(error).__name__[:100],
            "bases": [base.__name__ for base in type(error).__mro__ if base.__module__ == "builtins"],
            "message": message[:1000],
            "context": context,
            "where": self._student_frames(error),
        }

    def _student_frames(self, error: BaseException) -> list[str]:
        """The last three frames in the submission's files (traceback.extract_tb also works out
        every frame's columns: a stub's calls raise hundreds of times a question)."""
        frames = []
        trace = error.__traceback__
        while trace is not None:
            code = trace.tb_frame.f_code
            if code.co_filename.startswith(self.home):
                frames.append((code.co_filename, trace.tb_lineno, code.co_name))
            trace = trace.tb_next
        return [f"{os.path.basename(filename)}:{line} in {name}: {linecache.getline(filename, line).strip()}"[:300]
                for filename, line, name in frames[-3:]]

    def _output(self) -> str:
        """The end of what this call printed; then the file is emptied, so that each call gets
        the whole output budget (RLIMIT_FSIZE)."""
        _flush()
        size = os.path.getsize(self.output_path)
        if not size:
            return ""
        with open(self.output_path, "rb") as handle:
            handle.seek(max(0, size - OUTPUT_EXCERPT_BYTES))
            text = handle.read().decode("utf-8", "replace")
        os.truncate(self.output_path, 0)
        return text


# Interpreter-wide functions a question may hold (a driver can pin the recursion limit), as the
# worker found them: put back for each question, whatever the student's code replaced them with.
_SYS_FUNCTIONS = {name: getattr(sys, name) for name in ("setrecursionlimit", "getrecursionlimit")}


class _Settings:
    """The process-wide settings a student's code is likely to change (torch's default dtype, grad
    mode and threads; alarms; sys.path; the recursion limit), as they were before it ran."""

    def __init__(self) -> None:
        self.path = list(sys.path)
        self.recursion_limit = _SYS_FUNCTIONS["getrecursionlimit"]()
        self.torch = sys.modules.get("torch")  # None where it is blocked: student code cannot reach it then
        if self.torch is not None:
            self.torch_settings = (self.torch.get_default_dtype(), self.torch.is_grad_enabled(),
                                   self.torch.get_num_threads())

    def restore(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        sys.path[:] = self.path
        for name, function in _SYS_FUNCTIONS.items():
            setattr(sys, name, function)
        sys.setrecursionlimit(self.recursion_limit)
        if self.torch is not None:
            dtype, grad_enabled, threads = self.torch_settings
            self.torch.set_default_dtype(dtype)
            self.torch.set_grad_enabled(grad_enabled)
            self.torch.set_num_threads(threads)


def seed_generators(torch: types.ModuleType | None) -> None:
    """Python's, NumPy's global and torch's generators (CUDA's too, in a torch built with it) to
    STUDENT_SEED. `torch`: None where the question blocks it."""
    random.seed(STUDENT_SEED)
    if "numpy.random" in sys.modules:  # the zygote imports it; not where a question blocks numpy
        sys.modules["numpy.random"].seed(STUDENT_SEED)
    if torch is not None:
        torch.default_generator.manual_seed(STUDENT_SEED)
        if torch.cuda._is_compiled():  # noqa: SLF001 - seeded now, or when CUDA starts (lazily): no driver call here
            torch.cuda.manual_seed_all(STUDENT_SEED)


def remove_entries(folder: str, keep: Container[str] = ()) -> None:
    """Remove what is in `folder` but the names in `keep`, as far as we may; links are removed,
    never followed."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name in keep:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the output limit was hit, or the student closed it
            pass


class _ImportFailed(Exception):
    pass


class _Missing(Exception):
    pass
