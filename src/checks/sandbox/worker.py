"""The sandbox side: the only module of `checks` that runs next to student code.

A worker is forked from the warm zygote with torch already imported. It writes the submission's
files into a private temp dir, puts it first on sys.path, locks itself in, and from then on is the
submission's *keeper*: it never runs student code itself, but forks a question process for each
question, which answers requests from its grader ("call strides.numel with these args", "run this
suite driver"). Between two questions the keeper kills the last question process and everything it
started, and forks the next from its own untouched state: nothing the student's code imported,
patched or left running reaches another question. Requests are trusted (they come from the
grader); replies are untrusted and travel in the codec's format only.
"""

from __future__ import annotations

import _imp
import _thread
import collections
import contextlib
import ctypes
import fcntl
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import linecache
import marshal
import os
import pickle
import platform
import random
import resource
import shutil
import signal
import select
import socket
import struct
import sys
import tempfile
import time
import types
import warnings
from typing import Any, Callable, Container

from checks.sandbox import codec, seccomp, stack_cap
from checks.sandbox.cores import take_turns_on
from checks.sandbox.forking import plain_fork
from checks.sandbox.stand_ins import exception_type
from checks.sandbox.framing import RETURNED_QUIETLY, RETURNED_QUIETLY_HEADER, FrameReader, recv_exact, send_frame

OUTPUT_EXCERPT_BYTES = 2000
IPC_RMID = 0
# shmctl's SHM_INFO, msgctl's MSG_INFO and semctl's SEM_INFO: the command, and which int of the
# struct it fills counts the namespace's objects of that kind (used_ids, msgpool, semusz)
IPC_COUNTS = {"shm": (14, 0), "msg": (12, 0), "sem": (19, 7)}
# Every random generator the student's code can reach starts each question from this seed, so that
# a submission draws the same numbers, and gets the same score and feedback, each time it is graded
# (torch seeds itself from the OS at import, Python's random on every fork, NumPy's on its import).
STUDENT_SEED = 0
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219}
KEYCTL_CLEAR, KEYCTL_READ, KEYCTL_GET_PERSISTENT = 7, 11, 22
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5
PR_SET_KEEPCAPS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 8, 47, 2
LINUX_CAPABILITY_VERSION_3, CAP_DAC_READ_SEARCH = 0x20080522, 2
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET = 0x08000000, 0x10000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
# what could carry a question's state past its process, in the kernel rather than in its files:
# keys (a keyring of another uid's, left writable, keeps them from every clear) and extended
# attributes (POSIX ACLs among them) of the folders a worker keeps; and io_uring, which sets
# attributes without those calls (a filter sees none of what its queue does). Refused to every question
CARRIER_CALLS = ("add_key", "request_key", "keyctl", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
                 "lremovexattr", "fremovexattr", "setxattrat", "removexattrat", "file_setattr",
                 "io_uring_setup", "io_uring_enter", "io_uring_register")
# the ioctls that set an inode's flags (chattr's), its fsxattr or its generation: metadata too
CARRIER_IOCTLS = (0x40086602, 0x40046602, 0x401C5820, 0x40087602, 0x40047602)  # FS_IOC(32)_SETFLAGS, FSSETXATTR, (32)_SETVERSION
OUTPUT_MODE = 0o600
# the System V limits of a worker's own IPC namespace (kernel.shmmax and friends are per namespace):
# its shared memory is capped like its temp space (temp_bytes), its queues and semaphores are few
IPC_LIMITS = {"shmmni": "64", "msgmni": "16", "msgmnb": "16384", "sem": "64 1024 32 16"}
DEFAULT_IPC_SHM_BYTES = 256 * 2**20  # where no temp_bytes is given
CLONE_NEWNS, MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x20000, 0x2, 0x4, 0x4000, 0x40000
MS_RDONLY, MS_REMOUNT, MS_BIND, MNT_DETACH, MS_NOEXEC = 0x1, 0x20, 0x1000, 0x2, 0x8
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
CHECKED_HASH_PYC = (3).to_bytes(4, "little")  # PEP 552's flags of the bytecode the grader compiles (with_bytecode)
AFRESH = b"afresh"  # the grader's word to the keeper, on the control socket: end this question, start the next
END_QUESTION_SECONDS = 2.0  # at most, for a question's processes to be gone; else the keeper gives up
# where a process may write besides its home: each is a tmpfs of the worker's own, capped, where it can have one
# every folder any user may write (a file left there is found by the next question or submission):
# each a fresh tmpfs of the worker's own where it can have one (_private_temp); /var/lock is a
# link to /run/lock on most systems, and a folder of its own on some
TEMP_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")


# ---------------------------------------------------------------- the worker process

class _BlockedImports(importlib.abc.MetaPathFinder):
    """Refuses the listed top-level packages, so that e.g. rules.py cannot lean on torch."""

    def __init__(self, blocked: tuple[str, ...]) -> None:
        self.blocked = blocked

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001 - importlib protocol
        if fullname.split(".")[0] in self.blocked:  # as if not installed: optional uses of it then go without
            raise ModuleNotFoundError(f"{fullname} is not available to this part of the assignment: "
                                      f"write it without {fullname.split('.')[0]}", name=fullname)
        return None


def serve(sock: socket.socket, reader: FrameReader, control: socket.socket, config: dict, home: str) -> None:
    """Entry point in the forked child: lock ourselves in, then keep the submission's questions:
    the first one's requests come on `sock` (read through `reader`), the grader's word between
    questions on `control`. `home` is an empty folder of ours (the zygote removes it)."""
    os.setsid()  # own process group: the grader kills the whole group
    if config.get("cpus"):
        take_turns_on(config["cpus"])  # its grader's core: they take turns, never run together
    uid = config.get("uid")
    kept = _private_temp(home, config["temp_bytes"]) if uid is not None and config.get("temp_bytes") else None
    if kept is not None:  # a mount namespace of our own: a /proc of our own in it
        _proc_of_its_own_uid()
    own_ipc = _own_namespaces(config.get("temp_bytes") or DEFAULT_IPC_SHM_BYTES)
    laid_out = _Home(home, config["files"], kept)
    _capture_output(laid_out.output_path)
    if uid is not None:
        _hand_over(home, uid)
        laid_out.stamp_again()  # changing owners changed each file's ctime
    _apply_limits(config["limits"])
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        if config.get("read_everything"):
            _keep_capabilities()
        os.setuid(uid)  # from here on nothing of root is left: not even the saved uid
        if config.get("read_everything"):
            _read_everything()
        _KernelObjects(uid, own_ipc).remove()  # what earlier workers of the submission (its uid) left
    os.environ.update(HOME=home, TMPDIR=home)
    tempfile.tempdir = home
    os.chdir(home)
    sys.path.insert(0, home)
    sys.dont_write_bytecode = True
    refuse_imports(tuple(config["block_imports"]))
    # where the kernel will not refuse them (another architecture), the keyrings are cleared instead
    keys_refused = seccomp.refuse_calls(CARRIER_CALLS, CARRIER_IOCTLS) is None
    finders = _Finders(laid_out, config.get("stand_ins") or {})
    seed_generators(sys.modules.get("torch"))  # never drawn from here: each question process starts from this state
    os.register_at_fork(after_in_child=lambda: random.seed(STUDENT_SEED))  # Python's own reseeds from the OS
    _keep(sock, reader, control, laid_out, finders, _KernelObjects(uid, own_ipc, keys_refused))


class _Home:
    """The submission's folder, laid out by the keeper, and put back the same way before each
    question: what the last one wrote, printed or left in temp space goes, and a file of the
    submission it changed is written again."""

    def __init__(self, path: str, files: dict[str, bytes], temp_kept: tuple[str, ...] | None) -> None:
        """`temp_kept`: None where the temp folders are not this worker's own; else the folders
        of the Python installation mounted, read-only, in them (_private_temp), which stay."""
        self.path = path
        self.output_path = os.path.join(path, ".output")
        os.close(os.open(self.output_path, os.O_WRONLY | os.O_CREAT, OUTPUT_MODE))  # first: listed first, always
        self._hold(files)
        self.temp_kept = temp_kept
        self.stamps = {target: self._write(target, data) for target, data in self.files.items()}
        status = os.stat(path)
        self.times = (status.st_atime_ns, status.st_mtime_ns)  # each folder's and the output's, after every question

    def _hold(self, files: dict[str, bytes]) -> None:
        """`files` by the path each is written to, and every path the home holds as laid out
        (`expected`: True for a folder, False for a file)."""
        self.files = {}
        for name, data in files.items():
            target = os.path.realpath(os.path.join(self.path, name))
            if target.startswith(self.path + os.sep):  # course/submissions.py refuses others already
                self.files[target] = data
        folders = set()
        for target in self.files:
            parent = os.path.dirname(target)
            while parent != self.path and parent.startswith(self.path + os.sep):
                folders.add(parent)
                parent = os.path.dirname(parent)
        self.expected = {**dict.fromkeys(self.files, False), self.output_path: False, **dict.fromkeys(folders, True)}

    def lay_out_anew(self, files: dict[str, bytes]) -> None:
        """Hold `files` from the next clear-up on (the grader's, for the questions after): a file
        no longer given goes, and one that is new or holds other bytes is written."""
        previous, stamps = self.files, self.stamps
        self._hold(files)
        self.stamps = {target: stamps.get(target) if previous.get(target) == data else None
                       for target, data in self.files.items()}

    @staticmethod
    def _write(target: str, data: bytes) -> tuple[int, int, int] | None:
        """Write a file of the submission (again); its stamp, to tell later whether it changed."""
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)  # never written through: it may be a link now
            with open(target, "xb") as handle:
                handle.write(data)
            return _stamp(target)
        except OSError:  # the question after finds it missing, as the student's code left it
            return None

    def stamp_again(self) -> None:
        """Take each file's stamp again (before any student code ran), as its metadata changed."""
        self.stamps = {target: None if stamp is None else _stamp(target) for target, stamp in self.stamps.items()}

    def clear_up(self) -> None:
        """Put the submission's folders back exactly as they were laid out: anything new in them
        goes (bytecode a question wrote into __pycache__ too), every file of the submission that
        changed is written again, and what was printed is emptied."""
        os.chdir(self.path)
        _remove_all_but(self.path, self.expected)
        with contextlib.suppress(OSError):  # a question may have removed it: what it prints after is lost
            os.truncate(self.output_path, 0)
            os.chmod(self.output_path, OUTPUT_MODE)
        if any(_stamp(target) != stamp or stamp is None for target, stamp in self.stamps.items()):
            # every file laid out again, in the same order: the folders' listing says nothing of
            # which ones a question changed (a fresh attacker read it in the next question)
            _remove_all_but(self.path, {self.output_path: False})
            self.stamps = {target: self._write(target, data) for target, data in self.files.items()}
        if self.temp_kept is not None:  # the temp folders are this worker's own, to empty
            for folder in TEMP_FOLDERS:
                if os.path.isdir(folder) and not os.path.islink(folder):
                    # all but the home (cleared above) and the installation's folders (read-only:
                    # never walked), and the ways down to them
                    _clear_around(folder, [path for path in (self.path, *self.temp_kept)
                                           if path.startswith(folder + os.sep)])
        # times a question set on what stays (a file it touched is written again above): the same
        # after every question, whatever they said
        for kept in (self.path, self.output_path, *(path for path, is_folder in self.expected.items() if is_folder)):
            with contextlib.suppress(OSError):
                os.utime(kept, ns=self.times, follow_symlinks=False)


class _SubmissionModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the submission's top-level modules from the bytecode the grader compiled for them,
    which the keeper holds as code objects: each question process is new, and finding the file,
    reading it again, hashing it against its bytecode and unmarshalling it was a good part of its
    start. The file is the one the keeper wrote (its stamp says so); one that changed, or a path a
    question put in front of the home, is imported the usual way."""

    def __init__(self, home: _Home) -> None:
        self.home = home
        self.modules: dict[str, tuple[str, types.CodeType]] = {}  # name -> (source path, its code)
        for target in home.files:
            name = os.path.relpath(target, home.path)
            bytecode = importlib.util.cache_from_source(target)
            if name.endswith(".py") and os.sep not in name and bytecode in home.files:
                header = home.files[bytecode][:8]
                if header[:4] == importlib.util.MAGIC_NUMBER and header[4:8] == CHECKED_HASH_PYC:
                    # unmarshalled here, once, not in every question (runs none of it: a question
                    # process then only executes it, and shares the keeper's copy until it writes)
                    code = marshal.loads(memoryview(home.files[bytecode])[16:])
                    _imp._fix_co_filename(code, target)  # as importlib does: frames and tracebacks name the file
                    self.modules[name[:-3]] = (target, code)

    @classmethod
    def install(cls, home: _Home) -> "_SubmissionModules":
        """Ahead of the path search, after the finders of built-in and frozen modules (which win
        over a file of the same name, as without this one)."""
        position = next((i for i, finder in enumerate(sys.meta_path) if finder is importlib.machinery.PathFinder),
                        len(sys.meta_path))
        finder = cls(home)
        sys.meta_path.insert(position, finder)
        return finder

    def import_now(self, name: str) -> types.ModuleType | None:
        """Import `name` as importlib would through this finder, less its search of sys.meta_path
        and its module locks (a question's first call names the module, on its one thread); None
        where find_spec declines."""
        spec = self.find_spec(name)
        if spec is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec._initializing = True  # as importlib marks a module while it runs
        try:
            self.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        finally:
            spec._initializing = False
        return sys.modules.get(name, module)  # a module may put another in its place, as importlib allows

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001 - importlib protocol
        found = self.modules.get(fullname)
        if found is None or path is not None or sys.path[:1] != [self.home.path]:
            return None
        source, _ = found
        stamp = self.home.stamps.get(source)
        if stamp is None or _stamp(source) != stamp:
            return None
        return importlib.util.spec_from_file_location(fullname, source, loader=self)

    def create_module(self, spec):  # noqa: ANN001, ANN201 - importlib protocol: the default module
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        exec(self.modules[module.__name__][1], module.__dict__)


class _Finders:
    """The keeper's import finders: the submission's modules (the grader's bytecode) and the
    stand-ins; made again where the grader lays the home out anew."""

    def __init__(self, home: _Home, stand_ins: dict[str, list[str]]) -> None:
        self.modules: _SubmissionModules | None = None
        self.stand_ins: _StandInModules | None = None
        self.replace(home, stand_ins)

    def replace(self, home: _Home, stand_ins: dict[str, list[str]]) -> None:
        """Install the finders of `home` and `stand_ins` in place of those installed before."""
        sys.meta_path[:] = [finder for finder in sys.meta_path if finder not in (self.modules, self.stand_ins)]
        self.modules, self.stand_ins = _SubmissionModules.install(home), _StandInModules.install(stand_ins)


def _remove_all_but(folder: str, expected: dict[str, bool]) -> None:
    """Remove from `folder`, as far as we may, every entry that is not in `expected` (a path, and
    whether it is a folder) or not of that kind; links are removed, never followed."""
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)  # a question may have locked it
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        wanted, is_folder = expected.get(entry.path), _is_folder(entry)
        if wanted is True and is_folder:
            _remove_all_but(entry.path, expected)
        elif wanted is False and not is_folder:
            continue
        else:
            _remove_path(entry.path, is_folder)


def _is_folder(entry: os.DirEntry) -> bool:
    """A folder itself, not a link to one (an entry that vanished or cannot be read: not a folder)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _remove_path(path: str, is_folder: bool) -> None:
    """Remove a file, link or folder, however a question locked the folders in it."""
    if not is_folder:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    _unlock_tree(path)
    shutil.rmtree(path, ignore_errors=True)


def _unlock_tree(folder: str) -> None:
    """Make `folder` and every folder below it ours to read and empty, each before it is read (a
    question may have locked any of them); links are never followed, nor unlocked (chmod would
    reach what they point to). No question runs meanwhile: nothing can swap a folder for a link.
    A loop, not a recursion: no tree is too deep for it."""
    pending = [folder]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError):
            os.chmod(current, 0o700)
        try:
            with os.scandir(current) as entries:
                pending += [entry.path for entry in entries if _is_folder(entry)]
        except OSError:  # gone, or a path too long to name
            continue


def _clear_around(folder: str, kept: list[str]) -> None:
    """Remove what is in `folder` but the paths `kept` below it, and the folders on the way to them."""
    ways: dict[str, list[str]] = {}
    for path in kept:
        ways.setdefault(os.path.relpath(path, folder).split(os.sep)[0], []).append(path)
    remove_entries(folder, keep=set(ways))
    for name, paths in ways.items():
        below = os.path.join(folder, name)
        if below not in paths and os.path.isdir(below) and not os.path.islink(below):
            _clear_around(below, paths)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    """The C library, loaded once: the keeper's copy is every question process's, so that a
    question's first prctl costs no dlopen (a process a question, on the grading hot path)."""
    return ctypes.CDLL(None, use_errno=True)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        status = os.lstat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_ctime_ns  # a change time no process can set back


def _keep(sock: socket.socket, reader: FrameReader, control: socket.socket, home: _Home,
          finders: "_Finders", kernel_objects: "_KernelObjects") -> None:
    """The keeper's loop: fork a question process, then wait for the grader's word on `control`
    (a socket no question process holds). AFRESH, the suite drivers to hold from now on and, where
    the next questions are given other files or stand-ins (a reference's stand-in in place of the
    student's module), those: kill the question's processes, load the drivers (_hold_drivers), lay
    the home out anew, clear up (files, temp space, and what the question left in the kernel:
    `kernel_objects`), and fork the next question, whose requests come on a new socket sent to the
    grader with the reply, and the names of the drivers it holds after. EOF (the grader is done):
    exit."""
    _adopt_orphans()
    keeper = os.getpid()
    handed: socket.socket | None = None  # the grader's end of the next question's socket
    while True:
        pid = plain_fork(reseed_random=False)  # the question starts from the keeper's seeded generators
        if pid == 0:
            control.close()
            if handed is not None:
                handed.close()
            _die_with(keeper)
            _answer(sock, reader, home, finders.modules)
        sock.close()
        if handed is not None:
            try:
                socket.send_fds(control, [AFRESH], [handed.fileno()])
                send_frame(control, json.dumps(sorted(_DRIVERS)).encode())
            except OSError:
                os._exit(0)
            handed.close()
        try:
            word = recv_exact(control, len(AFRESH))
            # the drivers to hold from now on, and the layout: from the grader, trusted
            afresh = pickle.loads(FrameReader(control).frame(1 << 30)) if word == AFRESH else {}
        except (EOFError, OSError):
            word = b""
        if word != AFRESH or not _end_question(pid):
            _end_question(pid)
            os._exit(0)
        _hold_drivers(afresh["drivers"])  # before the clear-up, which empties what they printed
        if afresh["layout"] is not None:
            home.lay_out_anew(afresh["layout"]["files"])
            finders.replace(home, afresh["layout"]["stand_ins"])
        home.clear_up()
        kernel_objects.remove()
        sock, handed = socket.socketpair()
        reader = FrameReader(sock)


def _answer(sock: socket.socket, reader: FrameReader, home: _Home, modules: _SubmissionModules) -> None:
    """A question process: answer the grader's requests until it closes the socket."""
    global _ASKING
    try:
        session = _Session(home.path, home.output_path, modules)
        _ASKING = asking = _Asking(sock, reader)
        _serve(sock, asking, session)
    finally:
        os._exit(0)


def _serve(sock: socket.socket, asking: "_Asking", session: "_Session", request: dict | None = None) -> None:
    """Answer `request`, then each request after it. A capped question (stack_cap) answers its
    first one, the cap, and all the others from a data-stack chunk of its own: what its code may
    use is then known."""
    while True:
        if request is None:
            try:
                request = asking.next_request()
            except EOFError:
                return
        if request["op"] == "cap_stack" and not session.capped:
            session.capped = True
            stack_cap.in_own_chunk(_serve, sock, asking, session, request)
            return
        header, value = session.handle(request)
        encoded = RETURNED_QUIETLY if header == RETURNED_QUIETLY_HEADER else json.dumps(header).encode()
        send_frame(sock, encoded, *([] if value is None else [value]))
        request = None


# ---------------------------------------------------------------- suite drivers the keeper holds

_DRIVERS: dict[str, types.ModuleType] = {}  # loaded by the keeper: every question after it has them


def _hold_drivers(drivers: dict[str, bytes]) -> None:
    """Load suite driver modules (name: the bytecode the grader compiled) in the keeper, so that
    the questions after it do not each unmarshal and run them (a millisecond and a half and some
    350 page faults a question, for 02's). The grader sends a driver a question used; its top level
    runs here, while no student code can run, with nothing importable that is not imported yet (a
    submission's module, a withheld package): a driver that needs more is left to each question,
    as before."""
    if not drivers:
        return
    finders, sys.meta_path = sys.meta_path, []  # only what sys.modules holds already
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ImportWarning: sys.meta_path is empty
            for name, code in drivers.items():
                try:
                    _DRIVERS[name] = _driver_module(name, code)
                except BaseException:  # noqa: BLE001 - SystemExit too: left to each question, which reports it
                    continue
    finally:
        sys.meta_path = finders
        _flush()
    seed_generators(sys.modules.get("torch"))  # as if nothing had run: each question starts from this state


def _driver_module(name: str, code: bytes) -> types.ModuleType:
    """A suite driver module run from the bytecode the grader compiled (trusted), in the keeper
    (_hold_drivers) or in the question that first runs it."""
    module = types.ModuleType(name)
    module.__file__ = f"<grader driver {name}>"
    exec(marshal.loads(code), module.__dict__)
    return module


# ---------------------------------------------------------------- stand-ins: modules the grader answers

class _Asking:
    """A question process's line to its grader for stand-ins' calls (stand_ins.py): a call goes out
    as an "asks" reply while the request that made it runs, and waits for the grader's answer;
    requests sent ahead that come first wait their turn."""

    def __init__(self, sock: socket.socket, reader: FrameReader) -> None:
        self.sock, self.reader = sock, reader
        self.pending: collections.deque[dict] = collections.deque()
        self.lock = _thread.allocate_lock()  # one call at a time, whatever thread makes it

    def next_request(self) -> dict:
        return self.pending.popleft() if self.pending else pickle.loads(self.reader.frame(1 << 30))  # trusted

    def ask(self, module: str, name: str, args: tuple, kwargs: dict) -> Any:
        try:
            payload = codec.encode([list(args), kwargs])
        except (codec.UnsupportedType, RecursionError, ValueError) as error:
            raise TypeError(f"{module}.{name}() was given {error}; {module} is answered by the grader, which "
                            "takes plain data (NumPy arrays, numbers, tuples, lists, slices)") from None
        with self.lock:
            send_frame(self.sock, json.dumps({"status": "asks", "module": module, "name": name}).encode(), payload)
            while True:
                message = pickle.loads(self.reader.frame(1 << 30))  # from the grader: trusted
                if message.get("op") == "answer":
                    break
                self.pending.append(message)
        if "raised" in message:
            kind, text = message["raised"]
            raise exception_type(kind)(text)
        return message["value"]


_ASKING: _Asking | None = None  # the question process's, once it answers requests


def _stand_in(module: types.ModuleType, name: str) -> Callable[..., Any]:
    """`module.name`, answered by the grader. A driver may answer some calls itself, from data the
    grader computed (module.answer_here(name, args, kwargs), NotImplemented for the others)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        here = module.__dict__.get("answer_here")
        if here is not None:
            answer = here(name, args, kwargs)
            if answer is not NotImplemented:
                return answer
        if _ASKING is None:
            raise RuntimeError(f"{module.__name__}.{name}() is answered by the grader, and none is listening")
        return _ASKING.ask(module.__name__, name, args, kwargs)
    call.__name__ = call.__qualname__ = name
    call.__module__ = module.__name__
    return call


class _StandInModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports each stand-in module the worker was given (name: its function names) ahead of
    everything else: the submission's own file of that name is not there (the grader leaves it out)."""

    def __init__(self, modules: dict[str, list[str]]) -> None:
        self.modules = modules

    @classmethod
    def install(cls, modules: dict[str, list[str]]) -> "_StandInModules | None":
        if not modules:
            return None
        finder = cls(modules)
        sys.meta_path.insert(0, finder)
        return finder

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001 - importlib protocol
        if path is None and fullname in self.modules:
            return importlib.util.spec_from_loader(fullname, self, origin="answered by the grader")
        return None

    def create_module(self, spec):  # noqa: ANN001, ANN201 - importlib protocol: the default module
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__doc__ = f"{module.__name__}: each function is answered by the grader, outside the sandbox."
        for name in self.modules[module.__name__]:
            setattr(module, name, _stand_in(module, name))


def _end_question(question: int) -> bool:
    """Kill the question process and every process it started: those still below it, and those
    that left it and so became the keeper's (a subreaper's) children. True once none is left."""
    deadline = time.monotonic() + END_QUESTION_SECONDS
    while time.monotonic() < deadline:
        children = _children() or ([question] if _exists(question) else [])
        if not children:
            return True
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            _reap(pid, deadline)
    return False


def _children() -> list[int]:
    try:
        with open(f"/proc/self/task/{os.getpid()}/children", "rb") as children:
            return [int(pid) for pid in children.read().split()]
    except OSError:  # not Linux
        return []


def _exists(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False


def _reap(pid: int, deadline: float) -> None:
    """Wait (until `deadline` at most) for a killed child to exit, and reap it."""
    try:
        exited = os.pidfd_open(pid)
    except (AttributeError, OSError):
        exited = None
    if exited is not None:
        select.select([exited], [], [], max(0.0, deadline - time.monotonic()))
        os.close(exited)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _adopt_orphans() -> None:
    """What a question process leaves behind (a daemon that left it) becomes the keeper's child,
    to be killed with the question, not init's."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(PR_SET_CHILD_SUBREAPER, 1)


def _die_with(keeper: int) -> None:
    """A question process is killed with its keeper; if that is gone already, it exits."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != keeper:
        os._exit(0)


def _private_temp(home: str, size: int) -> tuple[str, ...] | None:
    """Give this worker (and what it starts) temp space of its own: a mount namespace in which
    /tmp, /var/tmp, /dev/shm and the lock folders (TEMP_FOLDERS) are fresh tmpfs of `size` bytes
    each, its home inside /tmp. A
    student who fills them fills only their own, and all of it vanishes with the worker's
    processes. Needs CAP_SYS_ADMIN (root, and in the jail a capability the zygote holds for
    this); where it cannot, the home stays where it was (RLIMIT_FSIZE per file). The Python
    installation and the folders imports come from stay visible, read-only, where they lie
    under one of those folders (a virtualenv in /tmp): a fresh tmpfs over them would hide every
    module not imported yet. None where /tmp is not its own, else the folders kept so (which
    clearing up between questions leaves alone)."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return None
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return None  # a namespace of our own, but mounts would reach the zygote's: mount nothing
    folders = [folder for folder in TEMP_FOLDERS if os.path.isdir(folder) and not os.path.islink(folder)]
    kept = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in _imports_under(folders)}  # before they are covered
    options = f"size={size},mode=1777,nr_inodes={max(1024, size // 4096)}".encode()
    try:
        mounted = [folder for folder in folders
                   if libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0]
        for path, handle in kept.items():
            os.makedirs(path, exist_ok=True)
            source, target = f"/proc/self/fd/{handle}".encode(), path.encode()
            if (libc.mount(source, target, None, MS_BIND | MS_REC, None) != 0
                    or libc.mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY, None) != 0):
                for folder in reversed(mounted):  # the imports would fail: no temp space of its own, then
                    libc.umount2(folder.encode(), MNT_DETACH)
                return None
    finally:
        for handle in kept.values():
            os.close(handle)
    if "/tmp" in mounted and home.startswith("/tmp/"):
        os.makedirs(home, mode=0o711, exist_ok=True)  # the zygote's folder stays, empty, under the old /tmp
    return tuple(kept) if "/tmp" in mounted else None


def _proc_of_its_own_uid() -> None:
    """Mount a /proc that shows the submission's code only the processes of its own uid
    (hidepid=invisible): not those of a submission graded at the same time, nor the grader's
    (their ids and command lines were in reach, jailed and not). Only where each mount of proc is
    an instance of its own (Linux 5.8): before, its options were every mount's, the machine's too.
    Best effort: where it cannot be mounted, /proc stays as it was."""
    try:
        version = tuple(int(part) for part in platform.release().split(".")[:2])
    except ValueError:
        return
    if version >= (5, 8):
        _libc().mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"hidepid=invisible")


def _imports_under(folders: list[str]) -> list[str]:
    """The Python installation's folders and sys.path's that lie under one of `folders`, the
    outermost of each only."""
    found = sorted({os.path.realpath(path) for path in (sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path)
                    if path and os.path.isdir(path)})
    inside = [path for path in found if any(path.startswith(folder + os.sep) for folder in folders)]
    return [path for path in inside if not any(path.startswith(other + os.sep) for other in inside)]


def _hand_over(home: str, uid: int) -> None:
    """The sandbox uid owns its home, and nothing else on a writable file system."""
    for folder, _, names in os.walk(home):
        os.chown(folder, uid, uid)
        for name in names:
            os.chown(os.path.join(folder, name), uid, uid)
    os.chmod(home, 0o700)


def _keep_capabilities() -> None:
    """Keep the permitted capabilities across setuid (to be narrowed at once by _read_everything)."""
    if _libc().prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_KEEPCAPS) failed")


def _read_everything() -> None:
    """Keep only CAP_DAC_READ_SEARCH (read any file, never write one), for this process and what
    it executes: the fork level's answer to a Python installation other users cannot read."""
    libc = _libc()
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(*[1 << CAP_DAC_READ_SEARCH] * 3, 0, 0, 0)  # effective, permitted, inheritable
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0)  # best effort: exec'd children


class _KernelObjects:
    """What a submission's code may leave in the kernel for a later question or submission: System
    V shared memory, queues and semaphores, and keys in its uid's keyrings. POSIX message queues
    are refused (RLIMIT_MSGQUEUE), POSIX shared memory lives in /dev/shm (temp space: emptied like
    it), and a memfd dies with the last process that holds it."""

    def __init__(self, uid: int | None, own_namespace: bool, keys_refused: bool = False) -> None:
        """`uid`: the submission's own, else None; `own_namespace`: the IPC namespace is the
        worker's (_own_namespaces), so that every object in it is the submission's;
        `keys_refused`: no question can make a key (CARRIER_CALLS), so none is looked for."""
        self.uid = uid
        self.own_namespace = own_namespace
        self.keys_refused = keys_refused

    def remove(self) -> None:
        """Remove them all, as far as we may: only their creator or owner may, so this runs as
        the submission's uid. In a namespace of its own every System V object is the
        submission's; in a shared one, those its uid made (where it has a uid of its own)."""
        libc = _libc()
        if self.uid is not None and not self.keys_refused:
            keyctl = KEYCTL_SYSCALL.get(os.uname().machine)
            if keyctl is not None:
                persistent = libc.syscall(keyctl, KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_USER_KEYRING)
                for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING, persistent):
                    # cleared where it holds a key (or cannot say): clearing an empty persistent
                    # keyring cost a quarter of a millisecond, at every question's boundary
                    if keyring != -1 and libc.syscall(keyctl, KEYCTL_READ, keyring, None, 0) != 0:
                        libc.syscall(keyctl, KEYCTL_CLEAR, keyring)
        if not self.own_namespace and self.uid is None:
            return  # the grader's uid, in the machine's namespace: nothing here is surely the submission's
        remove = {"shm": lambda object_id: libc.shmctl(object_id, IPC_RMID, None),
                  "msg": lambda object_id: libc.msgctl(object_id, IPC_RMID, None),
                  "sem": lambda object_id: libc.semctl(object_id, 0, IPC_RMID)}
        for kind, remove_one in remove.items():
            if _count_in_namespace(kind) == 0:
                continue  # nothing of that kind anybody's: no table to read (a question's boundary, every time)
            try:
                with open(f"/proc/sysvipc/{kind}") as table:
                    header, *rows = [line.split() for line in table]
            except (OSError, ValueError):  # not Linux
                return
            for row in rows:
                fields = dict(zip(header, row))
                if self.own_namespace or str(self.uid) in (fields.get("uid"), fields.get("cuid")):
                    with contextlib.suppress(ValueError, IndexError):
                        remove_one(int(row[1]))


def _count_in_namespace(kind: str) -> int | None:
    """How many System V objects of `kind` ("shm", "msg", "sem") the IPC namespace holds, whoever
    made them, asked of the kernel in one call (IPC_COUNTS); None where it does not say."""
    command, field = IPC_COUNTS[kind]
    counts = (ctypes.c_int * 16)()
    libc = _libc()
    try:
        answer = libc.semctl(0, 0, command, counts) if kind == "sem" else getattr(libc, f"{kind}ctl")(0, command, counts)
    except (AttributeError, ctypes.ArgumentError):  # not Linux
        return None
    return counts[field] if answer >= 0 else None


def _own_namespaces(shm_bytes: int) -> bool:
    """Give this worker (and what it starts) an IPC namespace of its own, and a network namespace
    where the kernel allows one. In its IPC namespace no System V object or POSIX queue of another
    submission's is visible, everything dies with the worker's last process, and its System V shared
    memory is capped at `shm_bytes` in all (kernel.shmall is per namespace; the memory watch sees
    none of it). Its network namespace has a loopback of its own, brought up: no socket of a
    submission graded at the same time (an abstract unix name, a port on 127.0.0.1) is reachable
    from it, nor any address outside. As root (or with CAP_SYS_ADMIN, jailed) a plain unshare;
    else in a user namespace of our own, our uid and gid mapped to themselves, its capabilities
    dropped at once. Whether the IPC namespace is our own: False where the kernel refuses it (the
    machine's, then: _KernelObjects removes what it can)."""
    libc = _libc()
    uid, gid = os.geteuid(), os.getegid()
    # a user namespace only where a plain unshare is refused; no network one where it alone is
    made = next(((user, network) for user in (0, CLONE_NEWUSER) for network in (CLONE_NEWNET, 0)
                 if libc.unshare(user | CLONE_NEWIPC | network) == 0), None)
    if made is None:
        return False
    user, network = made
    try:
        if user:
            for name, text in (("uid_map", f"{uid} {uid} 1\n"), ("setgroups", "deny"), ("gid_map", f"{gid} {gid} 1\n")):
                with open(f"/proc/self/{name}", "w") as handle:
                    handle.write(text)
        _limit_ipc(shm_bytes)
        if network:
            _loopback_up()
    finally:
        if user:
            _drop_capabilities()  # those a new user namespace gives over itself: the student gets none
    return True


def _loopback_up() -> None:
    """Bring up the loopback of a network namespace of our own, as the machine's is: code that
    talks to itself on 127.0.0.1 works as anywhere, and reaches no other worker. Best effort."""
    request = struct.pack("16sH14x", b"lo", 0)
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        flags = struct.unpack("16sH14x", fcntl.ioctl(probe, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _limit_ipc(shm_bytes: int) -> None:
    """The System V limits of our own IPC namespace, as far as the kernel lets us write them."""
    pages = max(1, shm_bytes // os.sysconf("SC_PAGE_SIZE"))
    for name, value in {"shmmax": str(shm_bytes), "shmall": str(pages), **IPC_LIMITS}.items():
        with contextlib.suppress(OSError):
            with open(f"/proc/sys/kernel/{name}", "w") as handle:
                handle.write(value)


def _drop_capabilities() -> None:
    """No capability left, in this process or what it executes."""
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(0, 0, 0, 0, 0, 0)
    if _libc().capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


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


def refuse_imports(blocked: tuple[str, ...]) -> None:
    """Refuse the `blocked` top-level packages from now on. None of them is loaded: the zygote this
    worker came from never imported them (it refused them too, before its warm-up)."""
    if blocked:
        sys.meta_path.insert(0, _BlockedImports(tuple(sorted(blocked))))


class _Session:
    """Dispatches requests; every reply is a JSON header plus, for a value, a codec payload."""

    def __init__(self, home: str, output_path: str, modules: _SubmissionModules) -> None:
        self.home = home
        self.output_path = output_path
        self.modules = modules
        self.drivers: dict[str, types.ModuleType] = dict(_DRIVERS)
        self.capped = False  # asked to cap its stack (cap_stack): its requests run in a chunk of their own

    def handle(self, request: dict) -> tuple[dict, bytes | None]:
        try:
            if request["op"] == "cap_stack":  # the question's first request: no student code has run here
                result = stack_cap.cap()
            else:
                target = (self._student_function(request["module"], request["name"]) if request["op"] == "call"
                          else self._driver_function(request))
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

    def _student_function(self, module_name: str, name: str) -> Any:
        module = sys.modules.get(module_name)  # imported by an earlier call: skip importlib's locks
        if module is None:
            try:
                module = self.modules.import_now(module_name) or importlib.import_module(module_name)
            except BaseException as error:
                raise _ImportFailed(module_name) from error
        if not hasattr(module, name):
            raise _Missing(f"{module_name}.py defines no {name}")
        return getattr(module, name)

    def _driver_function(self, request: dict) -> Any:
        module = self.drivers.get(request["module"])
        if module is None:
            module = self.drivers[request["module"]] = _driver_module(request["module"], request["code"])
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
    """Remove what is in `folder` but the names in `keep`, as far as we may, folders a question
    locked too; links are removed, never followed."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name not in keep:
                _remove_path(entry.path, _is_folder(entry))


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
