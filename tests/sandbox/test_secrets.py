"""No secret is reachable from student code (issue 29, section 3): the process that runs it holds
no grader variable, no argv naming the course, nothing of the grader's memory, no descriptor but
its own; jailed, no other process is visible; and a module a question withholds is not in the
worker at all, however it is looked for.

Each attack runs at every isolation level this machine has (bwrap where it runs, fork always);
what only bwrap can give is tested there only (see the README's trust boundary)."""

from __future__ import annotations

import importlib.util
import os
import secrets

import pytest

from checks.sandbox import jail
from checks.sandbox.supervisor import WorkerConfig, Zygote
from checks.suites.student import QuestionSandbox, Student, SubmissionWorkers

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
MARK = f"checks-secret-{secrets.token_hex(8)}"  # planted in the grader's environment and memory
PLANTED = {"quiz": [f"{MARK}-quiz-key"]}  # the grader's memory: as an Assignment's quiz keys would be

SPY = b"""
import gc
import os
import sys
import types

MARK = %r


def environment():
    with open("/proc/self/environ", "rb") as environ:
        initial = environ.read().decode(errors="replace")
    return {"os.environ": dict(os.environ), "initial": initial}


def command_lines():
    lines = {}
    for who in ("self", str(os.getppid())):
        with open(f"/proc/{who}/cmdline", "rb") as cmdline:
            lines[who] = cmdline.read().decode(errors="replace")
    return lines


def memory():
    gc.unfreeze()  # the zygote froze its heap: bring it back into view
    found = []
    for thing in gc.get_objects():
        try:
            values = list(thing.values()) if isinstance(thing, dict) else list(thing) if isinstance(thing, (list, tuple)) else []
        except Exception:
            continue
        found += [value for value in values if isinstance(value, str) and value.startswith(MARK) and value.endswith("-quiz-key")]
    return found[:5]


def descriptors():
    seen = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            seen[name] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return seen


def processes():
    seen = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                    seen[name] = cmdline.read().decode(errors="replace")
            except OSError:
                pass
    return seen


def routes(package, library):
    '''Every way to `package` that needs no file of it: what each route found (None where refused).
    `library`: a piece of the path of its compiled libraries.'''
    import builtins
    import importlib
    found = {}
    try:
        found["import"] = __import__(package).__name__
    except ImportError:
        found["import"] = None
    try:
        found["importlib"] = importlib.import_module(package).__name__
    except ImportError:
        found["importlib"] = None
    found["sys.modules"] = [name for name in sys.modules if name.split(".")[0] == package][:3]
    gc.unfreeze()
    found["gc"] = [thing.__name__ for thing in gc.get_objects()
                   if isinstance(thing, types.ModuleType) and thing.__name__.split(".")[0] == package][:3]
    found["gc referents"] = [type(thing).__name__ for finder in sys.meta_path for thing in gc.get_referents(finder)
                             if isinstance(thing, dict) and any(isinstance(value, types.ModuleType)
                             and value.__name__.split(".")[0] == package for value in thing.values())][:3]
    found["attributes"] = sorted({f"{module.__name__}.{key}" for module in list(sys.modules.values())
                                  for key, value in list(getattr(module, "__dict__", {}).items())
                                  if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == package})[:3]
    found["__import__"] = None
    saved = builtins.__import__
    try:
        builtins.__import__ = importlib._bootstrap.__import__
        found["__import__"] = __import__(package).__name__
    except ImportError:
        pass
    finally:
        builtins.__import__ = saved
    with open("/proc/self/maps") as maps:
        found["memory maps"] = sorted({line.split()[-1] for line in maps if library in line})[:3]
    return found


def from_disk(package):
    '''The import blocker removed: `package` from its files, if the worker can read them.'''
    for finder in [finder for finder in sys.meta_path if "Blocked" in type(finder).__name__]:
        sys.meta_path.remove(finder)
    try:
        module = __import__(package)
    except ImportError as error:
        return False
    return hasattr(module, "__version__")  # not an empty folder imported as a namespace package
""" % MARK


@pytest.fixture(scope="module", params=LEVELS)
def zygote(request):
    """A zygote started by a grader whose environment and memory hold a secret."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHECKS_SECRET_TOKEN", MARK)
        patch.setenv("GITHUB_TOKEN", MARK)
        with Zygote(jail.choose(request.param)) as started:
            yield started


def spy(zygote: Zygote, block_imports: tuple[str, ...] = ()):
    config = WorkerConfig(files={"spy.py": SPY}, block_imports=block_imports)
    return Student(QuestionSandbox(SubmissionWorkers(zygote), config, timeout=120), frozenset({"spy"})).spy


def test_the_environment_of_the_worker_holds_no_grader_variable(zygote):
    seen = spy(zygote).environment()
    assert MARK not in repr(seen)
    assert not {name for name in seen["os.environ"] if name.startswith("CHECKS_")}


def test_the_command_lines_of_the_worker_and_its_zygote_name_nothing_of_the_grader(zygote):
    for who, line in spy(zygote).command_lines().items():
        assert "checks.sandbox.zygote" in line, who
        assert "pytest" not in line and "test_secrets" not in line, (who, line)


def test_nothing_of_the_graders_memory_is_in_the_worker(zygote):
    assert PLANTED["quiz"][0].startswith(MARK)  # alive in the grader while the worker looks
    assert spy(zygote).memory() == []


def test_a_worker_holds_no_descriptor_but_its_own(zygote):
    seen = spy(zygote).descriptors()
    home_files = [target for target in seen.values() if target.endswith("/.output")]
    sockets = [target for target in seen.values() if target.startswith("socket:")]
    assert len(home_files) == 2 and len(sockets) == 1, seen  # stdout and stderr; its own line to the grader
    assert set(seen.values()) - set(home_files) - set(sockets) <= {"/dev/null", f"/proc/{0}/fd"} | {
        target for target in seen.values() if target.startswith("/proc/") and target.endswith("/fd")}, seen


@pytest.mark.skipif(jail.bwrap_problem() is not None, reason="only the jail has a PID namespace of its own")
def test_a_jailed_worker_sees_no_process_outside_its_jail():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHECKS_SECRET_TOKEN", MARK)
        with Zygote(jail.choose(jail.BWRAP)) as jailed:
            seen = spy(jailed).processes()
    assert not [line for line in seen.values() if "pytest" in line or MARK in line], seen
    # bwrap's own init (pid 1), the zygote's supervisor, the zygote, this worker's keeper and its
    # question process: none of another run
    assert all(line.endswith("checks.sandbox.zygote\0" + line.split("checks.sandbox.zygote\0")[-1])
               for line in seen.values()), seen
    assert seen["1"].startswith("bwrap\0") and len(seen) <= 5, seen


# each withheld package, and a piece of the path of its compiled libraries
WITHHELD = {"torch": "libtorch", "numpy": "/numpy/"}


@pytest.mark.parametrize("package", WITHHELD)
def test_a_withheld_module_is_not_in_the_worker_by_any_route(zygote, package):
    found = spy(zygote, (package,)).routes(package, WITHHELD[package])
    assert found == {"import": None, "importlib": None, "sys.modules": [], "gc": [], "gc referents": [],
                     "attributes": [], "__import__": None, "memory maps": []}
    assert spy(zygote).routes(package, WITHHELD[package])["gc"]  # the probe finds it where it is not withheld


@pytest.mark.skipif(jail.bwrap_problem() is None, reason="only where the fork level alone runs")
@pytest.mark.parametrize("package", WITHHELD)
def test_the_fork_level_withholds_a_package_from_the_import_system_only(zygote, package):
    """Documented (README, docs/trust-boundary.md): without a jail, code that removes the import
    blocker loads a withheld package from its files. Checked, so that the documentation stays true."""
    if zygote.isolation.kind == jail.BWRAP:
        pytest.skip("the jail hides the files too (the next test)")
    assert spy(zygote, (package,)).from_disk(package) is True


@pytest.mark.parametrize("package", WITHHELD)
def test_jailed_a_withheld_package_has_no_files_either(zygote, package):
    if zygote.isolation.kind != jail.BWRAP:
        pytest.skip("the fork level cannot hide a package's files (README)")
    assert spy(zygote, (package,)).from_disk(package) is False


@pytest.mark.parametrize("package", jail.CLUSTER_PACKAGES)
def test_the_grading_cluster_s_packages_are_withheld_from_every_worker(zygote, package):
    """Issue 49: student code graded on a Dask worker cannot import distributed (or dask) to speak
    the cluster's protocol, even where its question withholds nothing; jailed, their files are gone too."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed here (the `cluster` extra)")
    found = spy(zygote).routes(package, f"/{package}/")
    assert found["import"] is None and found["sys.modules"] == [] and found["memory maps"] == [], found
    if zygote.isolation.kind == jail.BWRAP:
        assert spy(zygote).from_disk(package) is False
