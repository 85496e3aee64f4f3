"""How strongly the sandbox is isolated, and the bubblewrap command line that does it.

With bubblewrap the zygote runs in its own mount, network, IPC and UTS namespaces and sees a
read-only whitelist of the file system: the system, the Python installation and the `checks`
package, nothing of the course (autograder/, solutions/), the submissions or the grader's
output. Started as root, each submission's workers also drop to a uid of their own, so that
process limits count per submission and every process a submission started can be killed.
Without bubblewrap (most Docker containers, a student's laptop) workers are plain forked
processes with resource limits, and still a uid of their own when started as root; they can
read what that uid may read and reach the network. Every report names the level that ran.

The level is asked for as `auto` (the strongest this machine allows), `bwrap` or `fork`: by the
CLI's --isolation, else the CHECKS_ISOLATION environment variable (read by checks.config.settings,
which calls choose() once a run).
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil
import site
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import checks

FORK, BWRAP, AUTO = "fork", "bwrap", "auto"
LEVELS = (AUTO, BWRAP, FORK)
ENV_VARIABLE = "CHECKS_ISOLATION"  # named in messages; read by checks.config.settings only
SANDBOX_UID_BASE = 1_000_000  # + the grading process's pid: one unprivileged uid per submission
# the grading cluster's own packages: a sandbox that imported them could speak the cluster's
# protocol (executors/posture.py); every zygote refuses them and, jailed, holds none of their files
CLUSTER_PACKAGES = ("dask", "distributed")
# the packages withheld by each zygote a batch starts before its suite is collected (others start
# when first asked for): one with torch imported, and one that never imported it
WARM_WITHHELD = ((), ("torch",))
TMP_BYTES = 2 * 2**30  # the jail's /tmp, where the workers' homes are (memory: a tmpfs)


@dataclass(frozen=True)
class Isolation:
    kind: str  # FORK or BWRAP
    per_submission_uid: bool
    description: str
    # fork level, as root, where the Python installation is not readable by other users (say,
    # under /root): the submission's uid keeps the right to read (never to write) any file,
    # without which its imports fail
    reads_everything: bool = False


class IsolationUnavailable(ValueError):
    """The level asked for is unknown, or cannot run on this machine; str() says which and why."""


def choose(level: str = AUTO) -> Isolation:
    """The isolation `level` asks for; `auto` is the strongest this machine allows.
    IsolationUnavailable when the level is unknown, or bwrap is asked for where it cannot run."""
    if level not in LEVELS:
        raise IsolationUnavailable(f"the isolation level is one of {', '.join(LEVELS)}, not {level!r}")
    root = os.geteuid() == 0
    if level == FORK:
        return _fork("asked for", root)
    problem = bwrap_problem()
    if problem is None:
        if root:
            return Isolation(BWRAP, True, "bwrap: namespaces, read-only file system, no network, a uid per submission"
                             + _pid_note())
        return Isolation(BWRAP, False, "bwrap (unprivileged): namespaces, read-only file system, no network" + _pid_note())
    if level == BWRAP:
        raise IsolationUnavailable(f"the bwrap sandbox was asked for but cannot run here: {problem} "
                                   f"(use --isolation fork, or {ENV_VARIABLE}=fork)")
    return _fork(f"no jail because {problem}", root)


def _fork(why: str, root: bool) -> Isolation:
    """Plain forked workers; as root, each submission's run as a uid of their own."""
    what = "a uid per submission and resource limits" if root else "process group and resource limits only"
    hidden = python_hidden_from_others() if root else None
    if hidden is not None and not _may_read_everything():
        what = f"process group and resource limits only, the grader's uid ({hidden} is not readable by other users)"
        return Isolation(FORK, False, f"fork: {what}; no file system or network jail ({why})")
    if hidden is not None:
        what += f" (the uid may read every file: {hidden} is not readable by other users)"
    return Isolation(FORK, root, f"fork: {what}; no file system or network jail ({why})",
                     reads_everything=hidden is not None)


def _may_read_everything() -> bool:
    """Whether we hold CAP_DAC_READ_SEARCH to hand on (Docker's default root does not)."""
    try:
        with open("/proc/self/status") as status:
            effective = next(line for line in status if line.startswith("CapEff:")).split()[1]
    except (OSError, StopIteration, IndexError):
        return False
    return bool(int(effective, 16) & (1 << 2))  # CAP_DAC_READ_SEARCH


def python_hidden_from_others() -> str | None:
    """A folder of the Python installation or the `checks` package that a user other than its
    owner cannot read (a pyenv under /root, say), or None when all of it is readable."""
    wanted = {Path(sys.prefix), Path(sys.base_prefix), Path(sysconfig.get_paths()["stdlib"]),
              Path(checks.__file__).parent, *map(Path, site.getsitepackages())}
    for path in sorted(path.resolve() for path in wanted if path.exists()):
        for folder in [*reversed(path.parents), path]:
            needed = stat.S_IXOTH | (stat.S_IROTH if folder == path else 0)
            try:
                if os.stat(folder).st_mode & needed != needed:
                    return str(folder)
            except OSError:
                return str(folder)
    return None


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap works here, else why not (one probe per process)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    return _probe(_namespaces())


def _probe(namespaces: list[str]) -> str | None:
    """None when bwrap starts with these namespaces and a /proc of its own (as the jail has), else why not."""
    try:
        probe = subprocess.run(["bwrap", *namespaces, "--ro-bind", "/", "/", "--proc", "/proc", "true"],
                               capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap did not start ({error})"
    if probe.returncode != 0:
        return f"bwrap fails here: {probe.stderr.decode(errors='replace').strip()[:200]}"
    return None


@functools.lru_cache(maxsize=1)
def pid_namespace_problem() -> str | None:
    """None when the jail can have a PID namespace of its own here, else why not: in a container
    whose /proc has masked paths (Docker's and podman's default), the kernel refuses the new /proc
    that a PID namespace needs, though the rest of the jail works."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    return _probe([*_base_namespaces(), "--unshare-pid"])


def _pid_note() -> str:
    return "" if pid_namespace_problem() is None else "; no PID namespace (this machine refuses one)"


def _base_namespaces() -> list[str]:
    flags = ["--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    return flags if os.geteuid() == 0 else ["--unshare-user", *flags]


def _namespaces() -> list[str]:
    # a PID namespace of its own where the machine allows one: the jail sees no process but its
    # own (not the grader's command line or environment, not another run's workers), and all in
    # it die with its first process
    return [*_base_namespaces(), *(["--unshare-pid"] if pid_namespace_problem() is None else [])]


def sandbox_environment(home: str) -> dict[str, str]:
    """The whole environment a zygote (and so every worker, whose /proc/self/environ it is) is
    started with, at every level: nothing of the grader's (tokens, CHECKS_*, paths to the course)."""
    package_parent = Path(checks.__file__).resolve().parent.parent
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin",  # what a student's subprocess finds
           "HOME": home,  # each worker sets its own home on top
           "LANG": "C.UTF-8",  # text I/O in UTF-8 whatever the grader's locale
           "PYTHONPATH": str(package_parent),  # the `checks` package the grader runs, not another
           "PYTHONDONTWRITEBYTECODE": "1",  # nothing written beside the package
           # the name getpass gives: a uid of the sandbox's own has no passwd entry, and a library
           # that asks for its user's name fails without one (torch 2.11's compile cache, imported
           # with torch.optim's first step, then fails every later import as "already registered")
           "USER": SANDBOX_USER, "LOGNAME": SANDBOX_USER}
    # which GPU and driver (the GPU image), where CUDA's libraries are, and the thread counts the
    # person running the grader chose for torch and OpenMP: machine settings, no secret
    env.update({key: value for key, value in os.environ.items()
                if key.startswith(("CUDA_", "NVIDIA_")) or key in SANDBOX_VARIABLES})
    return env


SANDBOX_USER = "student"  # what getpass.getuser() says in the sandbox, whatever its uid
# machine settings the grader's environment may hold that torch and OpenMP read (see sandbox_environment)
SANDBOX_VARIABLES = ("LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "PYTORCH_NVML_BASED_CUDA_CHECK")


def package_folders(packages: tuple[str, ...]) -> list[str]:
    """The folders of these top-level packages, found without importing them."""
    folders = []
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        folders += [folder for folder in (spec.submodule_search_locations or []) if os.path.isdir(folder)] if spec else []
    return folders


def bwrap_command(program: list[str], hide: tuple[str, ...] = ()) -> list[str]:
    """bwrap ... program: the jail the zygote (and so every worker) runs in. `hide`: top-level
    packages whose files the jail holds none of (an empty folder in their place)."""
    argv = ["bwrap", *_namespaces(), "--die-with-parent", "--new-session"]
    for name in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    # /tmp holds the workers' homes, under random names; 0711: a worker cannot list the others'
    # (a question graded with a reference must leave nothing behind that a later one could find).
    # It is memory, so capped; the zygote removes a home when its worker dies.
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--ro-bind-try", "/sys", "/sys",
             "--proc", "/proc", "--dev", "/dev", "--perms", "0711", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    for device in sorted(glob.glob("/dev/nvidia*")):  # the GPU image: CUDA needs its device nodes
        argv += ["--dev-bind", device, device]
    for path in _python_paths():
        argv += _parents(path) + ["--ro-bind", str(path), str(path)]
    for folder in package_folders(hide):
        argv += ["--tmpfs", folder, "--remount-ro", folder]
    env = sandbox_environment("/tmp")
    argv += ["--clearenv"] + [flag for key, value in env.items() for flag in ("--setenv", key, value)]
    if os.geteuid() == 0:  # the zygote stays root in the jail only to hand each worker its own uid, and
        # its own temp space (a mount namespace: worker._private_temp); a worker drops them all with its uid
        argv += [flag for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_SYS_ADMIN") for flag in ("--cap-add", cap)]
    return argv + ["--chdir", "/tmp", *program]


def _python_paths() -> list[Path]:
    """The interpreter, its libraries and the `checks` package: nothing else of the disk."""
    candidates = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent,
                  Path(checks.__file__).resolve().parent, *map(Path, site.getsitepackages())}
    existing = sorted(path.resolve() for path in candidates
                      if path.exists() and not path.resolve().is_relative_to("/usr"))  # /usr is bound already
    # keep outermost folders only; bwrap mounts them in order, parents first
    return [path for path in existing if not any(other != path and other in path.parents for other in existing)]


SYSTEM_FOLDERS = ("/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin", "/sys")  # bound in every jail


def shown_in_jail(path: Path) -> bool:
    """Whether the bwrap jail shows `path` to every submission: it lies in a folder the jail binds
    (the system's, the interpreter's, the `checks` package's). What student code must never read
    (the course server's data, the hidden suites a Dask worker unpacks) must lie elsewhere."""
    resolved = Path(path).resolve()
    bound = [Path(folder) for folder in SYSTEM_FOLDERS] + _python_paths()
    return any(resolved == folder or folder in resolved.parents for folder in bound)


def _parents(path: Path) -> list[str]:
    """Missing parents would be created 0700 by bwrap; make them traversable by the sandbox uid."""
    flags: list[str] = []
    for parent in reversed(path.parents[:-1]):
        if str(parent) not in ("/usr", "/etc", "/sys", "/tmp"):
            flags += ["--perms", "0755", "--dir", str(parent)]
    return flags
