"""The grader's handle on student code: what a fault says, what the sandbox has imported, and
when a worker is handed on from one question to the next."""

from __future__ import annotations

import functools
import os
import pickle
import socket
import subprocess
import sys
import time

import pytest

from checks.sandbox import jail
from checks.course.assignment import CourseError, load_assignment
from checks.sandbox.supervisor import Worker, WorkerConfig, Zygote
from checks.suites.describe import summarize_call
from checks.suites.references import Packed
from checks.suites.student import (MAX_HANGS, QuestionSandbox, Student, StudentCrashed, StudentFault, StudentRaised,
                                   StudentTimeout, SubmissionWorkers, UnsupportedReturn)

from conftest import REPO

PROBE = b"""
import os
import random
import sys
import threading
import time

import numpy
import torch

calls = []  # module state: every question must start without the last one's


def loaded(name):
    return name in sys.modules


def state():
    calls.append(1)
    here = os.path.dirname(os.path.abspath(__file__))
    return {"worker": os.getppid(), "pid": os.getpid(), "calls": len(calls), "random": random.random(),
            "numpy": float(numpy.random.rand()), "torch": torch.rand(1).item(), "dtype": str(torch.get_default_dtype()),
            "grad": torch.is_grad_enabled(), "cwd": os.getcwd(),
            "scratch": os.path.exists(os.path.join(os.environ["HOME"], "scratch")),
            "recursion limit": sys.getrecursionlimit(), "setter": sys.setrecursionlimit.__name__,
            "sum": torch.ones(3).sum().item(), "allclose": bool(numpy.allclose(1.0, 2.0)),
            "eval": torch.nn.Module.eval.__name__, "print": print.__name__, "own file": open(__file__).read()[-9:],
            "left running": sorted(os.listdir(here)).count("beat"), "temp": sorted(os.listdir(os.environ["TMPDIR"])),
            "files": sorted(name for name in os.listdir(here) if name.endswith(".py"))}


def meddle():
    import builtins
    import subprocess
    os.makedirs(os.path.join(os.environ["HOME"], "scratch"))
    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    os.chdir("/")
    sys.setrecursionlimit(50_000)
    sys.setrecursionlimit = lambda limit: None  # and no question after this one may set it again
    # patches of shared modules, a changed file of the submission, a daemon that outlives its parent
    torch.Tensor.sum = lambda self, *args, **kwargs: torch.tensor(42.0)
    numpy.allclose = lambda *args, **kwargs: True
    torch.nn.Module.eval = lambda self: self
    builtins.print = lambda *args, **kwargs: None
    with open(__file__, "a") as handle:
        handle.write("# changed")
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.Popen([sys.executable, "-c", "import time\\nwhile True:\\n    open('beat', 'w').close()\\n    time.sleep(0.01)"],
                     cwd=here, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return state()


def leave_a_thread():
    threading.Thread(target=threading.Event().wait, daemon=True).start()


def hoard(megabytes):
    calls.append(bytearray(megabytes * 2**20))


def loaded(name):
    return name in sys.modules


def half(x):
    if x % 2:
        raise ValueError(f"{x} is odd")
    return x // 2


def echo(value):
    return value
"""


# two modules of the standard library nothing else imports: the zygote is told to import the first
# (a fresh interpreter: sandbox_imports are modules of the Python installation, as torch._dynamo is)
LISTED, UNLISTED = "tabnanny", "mailcap"


@pytest.fixture(scope="module")
def zygote():
    with Zygote(jail.choose(jail.FORK), imports=(LISTED,)) as warm:
        yield warm


CONFIG = WorkerConfig(files={"probe.py": PROBE})


def student_for(zygote: Zygote, workers: SubmissionWorkers | None = None, config: WorkerConfig = CONFIG) -> Student:
    """A question's `student`; questions that share `workers` are one submission's."""
    return Student(QuestionSandbox(workers or SubmissionWorkers(zygote), config, timeout=30), frozenset({"probe"}))


def run_questions(zygote: Zygote, *questions, hand_on: bool = True) -> list[dict]:
    """Each question is (what to call first, config); the state() each question then sees."""
    workers, states = SubmissionWorkers(zygote, hand_on=hand_on), []
    for first, config in questions:
        student = student_for(zygote, workers, config)
        if first:
            getattr(student.probe, first[0])(*first[1:])
        states.append(student.probe.state())
        student._sandbox.close()
    workers.close()
    return states


def test_sandbox_imports_are_imported_before_the_student_code_runs(zygote):
    student = student_for(zygote)
    assert student.probe.loaded(LISTED) is True
    assert student.probe.loaded(UNLISTED) is False


def test_a_fault_names_its_own_call_even_when_described_after_the_next(zygote):
    student = student_for(zygote)
    with pytest.raises(StudentRaised) as first:
        student.probe.half(7)
    assert student.probe.half(8) == 4
    assert str(first.value).startswith("half(7) raised ValueError: 7 is odd")
    assert first.value.call == "half(7)"


def test_sandbox_imports_must_be_a_list_of_names(make_course):
    root = make_course({"autograder/toy/assignment.toml": 'files = ["a.py"]\nsandbox_imports = ["wave"]\n'})
    assert load_assignment(root, "toy").sandbox_imports == ("wave",)
    (root / "autograder/toy/assignment.toml").write_text('files = ["a.py"]\nsandbox_imports = "wave"\n')
    with pytest.raises(CourseError, match="`sandbox_imports` must be a list of module names"):
        load_assignment(root, "toy")


def test_grader_imports_are_what_the_grading_process_imports_before_it_forks_graders(make_course):
    """Default: torch's lazy modules, once a batch; an assignment may name others, or none."""
    root = make_course({"autograder/toy/assignment.toml": 'files = ["a.py"]\n',
                        "autograder/lean/assignment.toml": 'files = ["a.py"]\ngrader_imports = ["wave"]\n'})
    assert load_assignment(root, "toy").grader_imports is None
    assert load_assignment(root, "lean").grader_imports == ("wave",)
    assert load_assignment(REPO, "01_tensors").grader_imports == ()
    script = ("import sys\nfrom checks.sandbox.supervisor import prepare_parent\n"
              "prepare_parent(preload=True, modules={modules})\n"
              "print(sorted(m for m in ('torch._dynamo', 'wave') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for modules, imported in ((None, ["torch._dynamo"]), (("wave",), ["wave"]), ((), [])):
        done = subprocess.run([sys.executable, "-c", script.format(modules=modules)], capture_output=True, text=True,
                              env=env, check=True)
        assert done.stdout.strip() == str(imported), done.stderr
    (root / "autograder/lean/assignment.toml").write_text('files = ["a.py"]\ngrader_imports = "wave"\n')
    with pytest.raises(CourseError, match="`grader_imports` must be a list of module names"):
        load_assignment(root, "lean")


def test_a_worker_is_handed_on_and_the_next_question_starts_as_in_a_fresh_one(zygote):
    fresh = run_questions(zygote, (None, CONFIG))[0]
    first, second, third = run_questions(zygote, (None, CONFIG), (("meddle",), CONFIG), (None, CONFIG))
    assert first["worker"] == second["worker"] == third["worker"]  # handed on
    assert len({first["pid"], second["pid"], third["pid"]}) == 3  # each question in a process of its own
    assert second["dtype"] == "torch.float64" and second["cwd"] == "/" and second["calls"] == 2 and second["scratch"]
    assert second["recursion limit"] == 50_000 and second["setter"] == "<lambda>" and second["sum"] == 42
    assert second["allclose"] and second["eval"] == second["print"] == "<lambda>" and second["own file"] == "# changed"
    assert second["left running"] == 1
    # module state, torch's settings and random state, the working folder and what is in it, the
    # recursion limit and sys.setrecursionlimit itself, patches of torch, numpy and builtins, the
    # submission's own files and the processes it left running: all as in a fresh worker
    same = {key: value for key, value in third.items() if key not in ("worker", "pid", "cwd")}
    assert same == {key: fresh[key] for key in same}
    assert os.path.basename(third["cwd"]).startswith("checks-sandbox-")


def test_a_worker_is_handed_on_whatever_its_question_left_and_to_other_files_laid_out_anew(zygote):
    """Before a question given other files the keeper writes them and removes those no longer
    given (with what the question wrote beside them); a file given new bytes holds them."""
    other = WorkerConfig(files={"probe.py": PROBE, "extra.py": b"# extra"})
    changed = WorkerConfig(files={"probe.py": PROBE + b"# 2nd"})
    states = run_questions(zygote, (("meddle",), CONFIG), (None, other), (None, changed), (None, CONFIG))
    assert len({state["worker"] for state in states}) == 1
    assert [state["files"] for state in states] == [["probe.py"], ["extra.py", "probe.py"], ["probe.py"],
                                                    ["probe.py"]]
    assert [state["own file"] for state in states] == ["# changed", PROBE.decode()[-9:],
                                                       (PROBE + b"# 2nd").decode()[-9:], PROBE.decode()[-9:]]
    for first in (("leave_a_thread",), ("hoard", 300)):
        workers = [state["worker"] for state in run_questions(zygote, (first, CONFIG), (None, CONFIG))]
        assert workers[0] == workers[1], first


def test_a_packed_argument_is_pickled_once_where_it_is_made_and_the_sandbox_gets_its_value(zygote):
    class Counted:
        pickled = 0

        def __reduce__(self):
            Counted.pickled += 1
            return int, (7,)

    packed = Packed([Counted(), "seven"])
    assert Counted.pickled == 1
    student = student_for(zygote)
    for _ in range(2):
        assert student.probe.echo(packed) == [7, "seven"]
    assert Counted.pickled == 1
    assert summarize_call("echo", (Packed([1, 2]),), {"key": Packed("value")}) == "echo([1, 2], key='value')"


GATE = b"""
import gc
import os
import sys


def state():
    try:
        import torch
    except ImportError as error:
        seen = str(error)
    else:
        seen = [torch.rand(1).item(), str(torch.get_default_dtype())]
    try:
        import numpy
    except ImportError:
        numpy = None
    gc.unfreeze()  # the zygote froze its heap: every object it holds, as a student could find them
    held = {str(getattr(type(thing), "__module__", "")).split(".")[0] for thing in gc.get_objects()}
    return {"worker": os.getppid(), "torch": seen, "wave": "wave" in sys.modules, "numpy": numpy is not None,
            "loaded": sorted({name.split(".")[0] for name in sys.modules} & {"torch", "numpy"}),
            "held": sorted(held & {"torch", "numpy"})}


def use_wave():
    import wave  # noqa: F401 - a module the zygote has not imported
"""


def test_a_worker_serves_only_questions_that_withhold_what_its_own_did(zygote):
    """A question that withholds packages has a worker of a zygote that never imported them (not
    even through another package: torch without numpy), handed on only to questions that withhold
    the same; what one question imported is gone in the next."""
    blocked = WorkerConfig(files={"probe.py": GATE}, block_imports=("torch",))
    open_ = WorkerConfig(files={"probe.py": GATE})
    fresh = run_questions(zygote, (None, open_))[0]
    assert fresh["loaded"] == fresh["held"] == ["numpy", "torch"]
    for order in ((blocked, open_), (open_, blocked)):
        first, second = run_questions(zygote, (None, order[0]), (None, order[1]))
        assert first["worker"] != second["worker"]
        withheld = [first, second][order.index(blocked)]
        assert "torch is not available to this part of the assignment" in withheld["torch"]
        assert withheld["loaded"] == withheld["held"] == ["numpy"]
    both = WorkerConfig(files={"probe.py": GATE}, block_imports=("numpy", "torch"))
    first, second = run_questions(zygote, (("use_wave",), both), (None, both))
    assert first["worker"] == second["worker"]
    assert first["wave"] and not second["wave"] and not first["numpy"] and first["loaded"] == first["held"] == []
    no_numpy = WorkerConfig(files={"probe.py": GATE}, block_imports=("numpy",))
    first, second, third = run_questions(zygote, (None, no_numpy), (None, no_numpy), (None, open_))
    assert first["worker"] == second["worker"] != third["worker"]
    assert not first["numpy"] and first["loaded"] == first["held"] == ["torch"]
    assert first["torch"] == fresh["torch"]  # torch works without numpy
    assert third["numpy"]


def test_fresh_worker_per_question_forks_one_each(zygote, make_course):
    first, second = run_questions(zygote, (None, CONFIG), (None, CONFIG), hand_on=False)
    assert first["worker"] != second["worker"]
    root = make_course({"autograder/toy/assignment.toml": 'files = ["a.py"]\nfresh_worker_per_question = true\n'})
    assert load_assignment(root, "toy").fresh_worker_per_question is True
    (root / "autograder/toy/assignment.toml").write_text('files = ["a.py"]\nfresh_worker_per_question = "yes"\n')
    with pytest.raises(CourseError, match="`fresh_worker_per_question` must be true or false"):
        load_assignment(root, "toy")


def test_a_dead_workers_home_is_removed(zygote):
    workers = SubmissionWorkers(zygote)
    student = student_for(zygote, workers)
    home = student.probe.state()["cwd"]
    assert os.path.isdir(home)
    student._sandbox.worker.kill()
    deadline = time.monotonic() + 10
    while os.path.exists(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(home)


FORGER = b'''
import base64, gc, json, socket, struct, time


def forge(header, payload):
    """Write a whole reply of our own to the worker's socket, in its framing, then return honestly."""
    sock = next(o for o in gc.get_objects() if isinstance(o, socket.socket) and o.fileno() >= 0)
    tree = None if payload is None else json.dumps(payload).encode()  # a payload: the tree's length, the tree
    frames = [json.dumps(header).encode()] + ([] if tree is None else [struct.pack("!Q", len(tree)) + tree])
    sock.sendall(b"".join(struct.pack("!Q", len(frame)) + frame for frame in frames))
    return "the honest reply"


def echo(value):
    return value


def hang():
    while True:
        time.sleep(0.01)
'''
RETURNED = {"status": "returned"}
FORGED_REPLIES = {
    "array bytes past the end": (RETURNED, {"a": {"dtype": "float64", "shape": [1], "at": 0}}),
    "tensor values as a list": (RETURNED, {"T": {"array": [1, 2], "dtype": "torch.float32", "device": "cpu",
                                                 "shape": [2]}}),
    "empty shape too large": (RETURNED, {"a": {"dtype": "float64", "shape": [2**39, 2**39, 0], "at": 0}}),
    "str dtype": (RETURNED, {"a": {"dtype": "<U1", "shape": [1], "at": 0}}),
    "raised, where an int": ({"status": "raised", "type": "ValueError", "where": 5}, None),
    "raised, bases a str": ({"status": "raised", "type": "ValueError", "bases": "ValueError"}, None),
    "unknown status": ({"status": "afresh"}, None),
}


@pytest.mark.parametrize("header, payload", FORGED_REPLIES.values(), ids=FORGED_REPLIES.keys())
def test_a_forged_reply_is_refused_and_its_worker_replaced(zygote, header, payload):
    student = Student(QuestionSandbox(SubmissionWorkers(zygote), WorkerConfig(files={"forger.py": FORGER}), timeout=30),
                      frozenset({"forger"}))
    with pytest.raises((StudentCrashed, UnsupportedReturn)) as refused:
        student.forger.forge(header, payload)
    assert "malformed" in str(refused.value) or "dtype" in str(refused.value), str(refused.value)
    assert not student._sandbox.worker.alive  # killed: the frames queued behind the forged ones are never read
    assert student.forger.echo(7) == 7  # the next call, in a fresh worker, gets its own reply


def test_a_function_that_hangs_twice_is_not_called_again_in_that_question(zygote):
    student = Student(QuestionSandbox(SubmissionWorkers(zygote), WorkerConfig(files={"forger.py": FORGER}),
                                      timeout=0.5), frozenset({"forger"}))
    for _ in range(MAX_HANGS):
        started = time.monotonic()
        with pytest.raises(StudentTimeout, match="did not finish within 0.5 s"):
            student.forger.hang()
        assert time.monotonic() - started >= 0.5  # a real hang, stopped at the limit
    started = time.monotonic()
    with pytest.raises(StudentTimeout, match=f"was not run: {MAX_HANGS} earlier calls"):
        student.forger.hang()
    assert time.monotonic() - started < 0.4  # not called: no third wait
    assert student.forger.echo(3) == 3  # other functions still run in that question


AHEAD = b"""
import os

calls = []


def square(x, padding=""):
    calls.append(x)
    if x == 3:
        raise ValueError("three")
    if x == 5:
        while True:
            pass
    if x == 7:
        os._exit(1)
    return x * x


def seen():
    return list(calls)
"""


def ahead_student(zygote: Zygote, timeout: float = 30) -> Student:
    return Student(QuestionSandbox(SubmissionWorkers(zygote), WorkerConfig(files={"ahead.py": AHEAD}), timeout=timeout),
                   frozenset({"ahead"}))


def test_calls_sent_ahead_go_in_one_write_and_are_answered_in_turn(zygote, monkeypatch):
    writes = []
    send = Worker.send

    def counted(worker, requests, timeout):
        writes.append(len(requests))
        send(worker, requests, timeout)

    monkeypatch.setattr(Worker, "send", counted)
    student = ahead_student(zygote)
    student.send_ahead([functools.partial(student.ahead.square, x) for x in (1, 2, 4)])
    assert writes == [3]
    assert [student.ahead.square(x) for x in (1, 2, 4)] == [1, 4, 16]
    assert writes == [3]  # each answer was there already
    assert student.ahead.seen() == [1, 2, 4] and writes == [3, 1]


def test_a_call_sent_ahead_is_known_by_its_argument_objects_else_by_their_bytes(zygote, monkeypatch):
    """The very objects it was sent with: no pickling to compare (megabytes of arrays, in 03_mlp).
    Equal objects that are not the same ones still find its answer, through their bytes."""
    import numpy as np
    from checks.suites import student as student_module

    pickled = []
    pickle_message = student_module._pickle

    def counted(message):
        pickled.append(message["args"])
        return pickle_message(message)

    monkeypatch.setattr(student_module, "_pickle", counted)
    student = ahead_student(zygote)
    values = [np.float64(x) for x in (1, 2, 4)]
    student.send_ahead([functools.partial(student.ahead.square, value) for value in values])
    assert len(pickled) == 3  # once each, to send
    assert student.ahead.square(values[0]) == 1 and len(pickled) == 3
    assert student.ahead.square(np.float64(2)) == 4 and len(pickled) == 4  # equal, not the same: compared as bytes
    assert student.ahead.square(values[2]) == 16 and len(pickled) == 4
    assert len(pickled) == 4 and student.ahead.seen() == [1, 2, 4]  # each answered from what was sent ahead


def test_no_more_is_sent_ahead_than_the_socket_takes_at_once(zygote, monkeypatch):
    """A worker busy sending a large reply reads no request: the grader must not wait on it."""
    writes = []
    send = Worker.send

    def counted(worker, requests, timeout):
        writes.append(sum(map(len, requests)))
        send(worker, requests, timeout)

    monkeypatch.setattr(Worker, "send", counted)
    student = ahead_student(zygote)
    student._sandbox._worker().sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    capacity = student._sandbox.worker.send_capacity
    padded = [10_000 + x for x in range(40)]  # big ints: each request about 40 bytes
    student.send_ahead([functools.partial(student.ahead.square, x, "-" * 200) for x in padded])
    assert writes and writes[0] <= capacity
    assert [student.ahead.square(x, "-" * 200) for x in padded] == [x * x for x in padded]
    assert len(writes) > 1  # the calls that did not fit went one by one


def test_a_call_not_sent_ahead_runs_after_those_that_were(zygote):
    student = ahead_student(zygote)
    student.send_ahead([functools.partial(student.ahead.square, x) for x in (1, 2)])
    assert student.ahead.seen() == [1, 2]
    assert student.ahead.square(2) == 4  # kept for when it was asked for
    assert student.ahead.square(1) == 1  # asked for after a later one: made again
    assert student.ahead.seen() == [1, 2, 1]


def test_a_call_sent_ahead_that_raises_hangs_or_crashes_costs_only_itself(zygote):
    student = ahead_student(zygote, timeout=1)
    numbers = [2, 3, 4, 5, 6, 7, 8]
    student.send_ahead([functools.partial(student.ahead.square, x) for x in numbers])
    outcomes = []
    for x in numbers:
        try:
            outcomes.append(student.ahead.square(x))
        except StudentFault as fault:
            outcomes.append(type(fault).__name__)
    assert outcomes == [4, "StudentRaised", 16, "StudentTimeout", 36, "StudentCrashed", 64]
    assert student.ahead.seen() == [8]  # after the crash, in a fresh worker


HELD_DRIVER = """
import os

print("the driver's top level printed this")
LOADED_IN = os.getpid()


def double(x):
    return 2 * x


def where():
    return {"question": os.getpid(), "keeper": os.getppid(), "loaded in": LOADED_IN,
            "printed before": open(os.path.join(os.environ["HOME"], ".output")).read()}
"""

# a driver whose top level imports a submission's module: a keeper never runs it (the module is
# student code), so each question loads it for itself, as it did before keepers held drivers
GREEDY_DRIVER = """
import os

import marked


def where():
    return {"question": os.getpid(), "loaded in": LOADED_IN, "marked": marked.IMPORTED_IN}


LOADED_IN = os.getpid()
"""

MARKED = WorkerConfig(files={"probe.py": PROBE, "marked.py": b"import os\nIMPORTED_IN = os.getpid()\n"})


def test_a_drivers_code_goes_to_a_worker_once_and_its_keeper_holds_it_for_the_questions_after(
        zygote, monkeypatch, tmp_path):
    (tmp_path / "checks_held_driver.py").write_text(HELD_DRIVER)
    (tmp_path / "checks_greedy_driver.py").write_text(GREEDY_DRIVER)
    (tmp_path / "marked.py").write_text("IMPORTED_IN = None  # the grader's own copy: the sandbox imports the submission's\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import checks_greedy_driver
    import checks_held_driver

    sent = []
    send = Worker.send

    def noted(worker, requests, timeout):
        messages = [pickle.loads(request) for request in requests]
        sent.extend(message["module"] for message in messages if "code" in message)
        send(worker, requests, timeout)

    monkeypatch.setattr(Worker, "send", noted)
    workers = SubmissionWorkers(zygote)
    places = []
    for question in range(3):
        student = student_for(zygote, workers, MARKED)
        assert student.run(checks_held_driver.double, question) == 2 * question
        places.append((student.run(checks_held_driver.where), student.run(checks_greedy_driver.where)))
        student._sandbox.close()
    workers.close()
    (first, greedy), *after = places
    assert first["loaded in"] == first["question"]  # the first question loads the driver itself
    for held, later_greedy in after:
        assert held["loaded in"] == held["keeper"] == first["keeper"]  # then its keeper holds it
        assert held["printed before"] == ""  # what its top level printed there was emptied
        # the greedy driver stays each question's own, and the submission's module is imported
        # in the question only: never in the keeper
        assert later_greedy["loaded in"] == later_greedy["marked"] == later_greedy["question"] == held["question"]
    assert greedy["loaded in"] == greedy["marked"] == greedy["question"]
    # sent to the first question, held after it; the greedy driver to every question
    assert sent == ["checks_held_driver", "checks_greedy_driver", "checks_greedy_driver", "checks_greedy_driver"]
