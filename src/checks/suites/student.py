"""The `student` object a suite calls: `student.strides.numel((2, 3))` runs in the sandbox.

Each reply is turned into plain data or into a StudentFault whose message a student can act on:
what was called, and what happened instead of a value.
"""

from __future__ import annotations

import functools
import inspect
import marshal
import pickle
import re
import sys
from pathlib import Path
from typing import Any, Callable

from checks.sandbox import codec
from checks.sandbox.accounting import MemoryWatch
from checks.sandbox.supervisor import (ReplyRefused, SandboxUnavailable, Worker, WorkerConfig, WorkerDied,
                                      WorkerTimedOut, Zygote)
from checks.suites.budgets import TimeBudget
from checks.suites.describe import Later, summarize_call


MAX_HANGS = 2  # a function that hung, or sent back too much, this often in one question is not called again there
# a reply this small is read in microseconds: one that overran the question's budget is still the
# value (the call's own time is what ran out, and the next call says so)
READ_FREELY_BYTES = 64 * 1024
SEND_AHEAD_BYTES = 64 * 1024  # calls sent ahead at once, at most (and at most Worker.send_capacity)


class StudentFault(Exception):
    """The student's code did not return a value; str() is the feedback line.

    `call` says what was called and `outcome` what happened instead of a value, so that a suite
    can name the call in the student's terms and keep the engine's account of the rest.
    """

    def __init__(self, call: str | Callable[[], str], outcome: str) -> None:
        """`call` may be a function that says it, run only when the fault is described: most
        faults are expected ones (a ValueError the check asked for) and are never shown."""
        self._call = call
        self.outcome = outcome
        super().__init__()

    @property
    def call(self) -> str:
        if callable(self._call):
            self._call = self._call()
        return self._call

    def __str__(self) -> str:
        return f"{self.call} {self.outcome}"


_FRAME = re.compile(r"[^:]*:\d+ in ([\w<>]+): ")  # worker._student_frames: "file.py:12 in name: code"
_NAMED = re.compile(r"([A-Za-z_][\w.]*): ")  # a stub's message: "SGD.step: hint"


class StudentRaised(StudentFault):
    def __init__(self, call: str | Callable[[], str], header: dict) -> None:
        """`header` as the worker writes it (worker._Session._raised); MalformedReply when a field
        is not what the worker sends: student code wrote that reply itself."""
        self.type_name = _text(header, "type", 100) or "Exception"
        self.bases = frozenset(_texts(header, "bases", 100))
        self.message = _text(header, "message", 1000)
        self.context = _text(header, "context", 200)
        self.where = _texts(header, "where", 300)[-3:]
        self.output = _text(header, "output", 2000)
        super().__init__(call, self._describe())

    @property
    def is_stub(self) -> bool:
        """Raised by an untouched stub (not, say, by torch's own NotImplementedError): a stub says
        `<function>: <hint>` (checks build) from that very function, so a NotImplementedError that
        names another function, raised elsewhere (a helper of the student's), is the code's own."""
        if not (self.type_name == "NotImplementedError" and not self.context and bool(self.where)
                and "raise NotImplementedError(" in self.where[-1]):
            return False
        frame = _FRAME.match(self.where[-1])
        named = _NAMED.match(self.message)
        return frame is None or named is None or named.group(1).split(".")[-1] == frame.group(1)

    def is_a(self, exception_type: type[BaseException]) -> bool:
        """Whether the student's exception is (a subclass of) this builtin exception type."""
        return exception_type.__name__ in self.bases

    def _describe(self) -> str:
        text = f"raised {self.type_name}"
        if self.context:
            text += f" {self.context}"
        if self.message:
            text += f": {self.message}"
        if self.is_stub:
            return text + " (still the stub: implement it)"
        if self.where:
            text += "\n  at " + "\n  at ".join(self.where)
        if self.output.strip():
            text += f"\n  it printed: {_excerpt(self.output)}"
        return text


class MissingFunction(StudentFault):
    pass


class StudentCrashed(StudentFault):
    pass


class StudentTimeout(StudentFault):
    pass


class UnsupportedReturn(StudentFault):
    pass


class ReturnTooLarge(UnsupportedReturn):
    """Plain data, but more than may come back (codec.MAX_ITEMS, MAX_DEPTH, MAX_PAYLOAD_BYTES)."""


def _costly_outcome(outcome: str) -> str:
    """What a costly call did, said of the earlier calls: "did not finish within 10 s", "returned
    a value too large", without the advice after it."""
    return outcome.split(" (", 1)[0].split(";", 1)[0].replace("returned a value", "returned values", 1)


def _excerpt(output: str, limit: int = 300) -> str:
    """The end of what the student's code printed: the part nearest the failure."""
    output = output.strip()
    return output if len(output) <= limit else "..." + output[-limit:]


class MalformedReply(ValueError):
    """A reply the worker never sends: the student's code wrote it to the worker's socket."""


def _text(header: dict, key: str, limit: int) -> str:
    """A str field of a reply header ("" when absent), cut to `limit`."""
    value = header.get(key)
    if value is None:
        return ""
    if type(value) is not str:
        raise MalformedReply(f"its `{key}` is {type(value).__name__}, not text")
    return value[:limit]


def _texts(header: dict, key: str, limit: int) -> list[str]:
    """A list-of-str field of a reply header ([] when absent), each cut to `limit`."""
    value = header.get(key)
    if value is None:
        return []
    if type(value) is not list or not all(type(item) is str for item in value):
        raise MalformedReply(f"its `{key}` is not a list of text")
    return [item[:limit] for item in value]


class SubmissionWorkers:
    """Where a submission's questions get their workers: the last question's, handed on while it
    is healthy (a fork and its set-up saved, about 15 ms a question), else a fresh one."""

    def __init__(self, zygote: Zygote, *, hand_on: bool = True) -> None:
        """`hand_on=False`: a fresh worker for every question (assignment.toml's
        `fresh_worker_per_question`)."""
        self.zygote = zygote
        self.hand_on = hand_on
        self._idle: tuple[WorkerConfig, Worker] | None = None
        self._unavailable = ""  # why the sandbox could not start a worker: the later calls fail at once
        self.pids: set[int] = set()  # every worker it started: each leads a session of the submission's processes
        self.memory: MemoryWatch | None = None  # the submission's, started with its first worker

    def watch_memory(self, memory: MemoryWatch) -> None:
        """Account the memory of the workers started from now on (a new submission's) with `memory`."""
        self.stop_watching()
        self.pids = set()
        self.memory = memory

    def stop_watching(self) -> None:
        if self.memory is not None:
            self.memory.stop()

    def why_killed(self) -> str:
        """Why the submission's processes were killed from outside ("" if they were not), once."""
        return self.memory.take_reason() if self.memory is not None else ""

    def take(self, config: WorkerConfig) -> Worker:
        """A worker holding `config`: the idle one if it can serve it (WorkerConfig.serves) and is
        fit for another question (Worker.start_afresh), else a fresh one."""
        if self._idle is not None:
            (idle_config, worker), self._idle = self._idle, None
            # the drivers its last questions were sent stay in its keeper, for every question after
            if idle_config.serves(config) and \
                    worker.start_afresh({name: _driver_code(name) for name in worker.given - worker.held},
                                        None if idle_config.same_layout(config) else config):
                return worker
            worker.kill()
        return self.fresh(config)

    def fresh(self, config: WorkerConfig) -> Worker:
        """A newly forked worker, never a handed-on one. Once the sandbox could not start one, the
        submission is not graded: the calls after fail at once instead of waiting on it again."""
        if self._unavailable:
            raise SandboxUnavailable(self._unavailable)
        try:
            worker = self.zygote.spawn(config)
        except SandboxUnavailable as error:
            self._unavailable = str(error)
            raise
        self.pids.add(worker.pid)
        if self.memory is not None and not self.memory.running:
            self.memory.start()
        return worker

    def give_back(self, config: WorkerConfig, worker: Worker) -> None:
        """The question is over: keep its worker for the next one, if it is still there."""
        self.close()
        if self.hand_on and worker.alive:
            self._idle = (config, worker)
        else:
            worker.kill()

    def close(self) -> None:
        if self._idle is not None:
            self._idle[1].kill()
            self._idle = None


class QuestionSandbox:
    """The worker that serves one question, taken on first use and replaced after a crash."""

    def __init__(self, workers: SubmissionWorkers, config: WorkerConfig, timeout: float,
                 budget: TimeBudget | None = None, qid: str = "", *, cap_stack: bool = False) -> None:
        """`timeout`: per call; `budget`: the submission's time, of which `qid` spends; `cap_stack`:
        each question process is capped (sandbox/stack_cap.py) before any call reaches it."""
        self.workers = workers
        self.config = config
        self.timeout = timeout
        self.budget = budget or TimeBudget()
        self.qid = qid
        self.cap_stack = cap_stack
        self.stack_capped = False  # whether the last question process took the cap
        self.worker: Worker | None = None
        # per function, the calls that cost the grader dearly (a timeout, a value too large to take) and
        # the fault that says how the last did; after MAX_HANGS its calls fail at once, not run
        self.hangs: dict[str, int] = {}
        self.how_costly: dict[str, StudentFault] = {}
        self.ahead: list[_SentAhead] = []  # calls sent ahead (send_ahead), in the order the worker answers them

    def send_ahead(self, calls: list[tuple[str, dict]]) -> None:
        """Send these calls (key, message) in one write, ahead of the checks that will ask for them:
        the worker answers each in turn while the grader checks the answers before it, instead of a
        round trip each. Only for calls that do not depend on what runs between them (a pure
        function of its arguments): a call asked for that was not sent ahead runs after these."""
        self._read_ahead(len(self.ahead))
        self.ahead.clear()  # the last test's, never asked for
        try:
            worker = self._worker()
        except (SandboxUnavailable, WorkerTimedOut, WorkerDied):
            return  # each call says so when it is made
        # all of them must fit in the socket at once: the worker may be busy sending a large reply
        budget, size, wire = min(SEND_AHEAD_BYTES, worker.send_capacity), 0, []
        for key, message in calls:
            if self.hangs.get(key, 0) >= MAX_HANGS:
                break  # refused when asked for, without running (see request)
            request = _pickle(message)
            data, driver = _wire(worker, message, request)
            size += len(data)
            if size > budget and self.ahead:
                break
            if driver:
                worker.given.add(driver)
            self.ahead.append(_SentAhead(message, request))
            wire.append(data)
        try:
            with self.budget.spending(self.qid):
                worker.send(wire, self._limit())
        except (WorkerTimedOut, WorkerDied):
            self.ahead.clear()  # the calls run one by one when asked for, in a fresh worker

    def request(self, key: str, describe: Callable[[], str], message: dict) -> Any:
        """Send `message`; its value, or a StudentFault naming the call as `describe()` says."""
        if self.hangs.get(key, 0) >= MAX_HANGS:
            last = self.how_costly[key]
            raise type(last)(describe, f"was not run: {MAX_HANGS} earlier calls like it "
                                       f"{_costly_outcome(last.outcome)}")
        ran_out = self.budget.ran_out(self.qid)
        if ran_out:
            raise StudentTimeout(describe, f"was not run: {ran_out}")
        try:
            with self.budget.spending(self.qid):
                header, payload = self._exchange(message)
                value = self._read(describe, header, payload)  # reading a value is the question's time too
        except WorkerTimedOut:
            ran_out = self.budget.ran_out(self.qid)
            if ran_out:  # the budget, not the call's own limit: the worker was stopped
                raise StudentTimeout(describe, f"did not finish: {ran_out}") from None
            raise self._costly(key, StudentTimeout(describe, f"did not finish within {self.timeout:g} s (an infinite "
                                                           "loop, or far too slow); it was stopped")) from None
        except ReplyRefused as refused:
            raise self._costly(key, ReturnTooLarge(describe, f"sent back {refused}; return smaller, "
                                                           "plain values")) from None
        except WorkerDied:
            killed = self.workers.why_killed()
            if killed:
                raise StudentCrashed(describe, f"was stopped: {killed}") from None
            deep = (", or calls nested deeper than this check allows (it holds the stack to a few hundred levels)"
                    if self.stack_capped else "")
            raise StudentCrashed(describe, f"crashed the sandbox process: os._exit, a fatal signal or a memory "
                                           f"or CPU limit{deep}; the calls after it ran in a fresh one") from None
        ran_out = self.budget.ran_out(self.qid)
        if ran_out and value.payload_bytes > READ_FREELY_BYTES:
            raise StudentTimeout(describe, f"returned a value too large to read within the time limit: {ran_out}")
        if isinstance(value.fault, ReturnTooLarge):
            self._costly(key, value.fault)
        return value.result()

    def _costly(self, key: str, fault: StudentFault) -> StudentFault:
        """Note a call of `key` that cost the grader dearly (see MAX_HANGS); the fault, to raise."""
        self.hangs[key] = self.hangs.get(key, 0) + 1
        self.how_costly[key] = fault
        return fault

    def _read(self, describe: Callable[[], str], header: dict, payload: bytes | None) -> "_Read":
        """The reply read into a value or a fault, to be raised once its time is counted."""
        try:
            return _Read(_value_or_fault(describe, header, payload), None, len(payload or b""))
        except (StudentRaised, MissingFunction) as fault:
            return _Read(None, fault, len(payload or b""))
        except StudentFault as fault:
            if header.get("status") != "unsupported":  # the worker refused its own value: it is fit for the next
                self._kill()  # whatever sent that may have sent more: start the next call afresh
            return _Read(None, fault, len(payload or b""))
        except Exception as error:  # noqa: BLE001 - a reply the parser cannot read was forged: the student's fault
            self._kill()
            detail = str(error) if isinstance(error, MalformedReply) else type(error).__name__
            return _Read(None, StudentCrashed(describe, f"sent back a malformed reply ({detail}); it was refused, and "
                                                        "the calls after it ran in a fresh sandbox process"), 0)

    def _exchange(self, message: dict) -> tuple[dict, bytes | None]:
        """The worker's reply to `message`: sent ahead already, or sent now, after the calls sent
        ahead (whose replies are read first and kept for when they are asked for)."""
        # the same objects make the same call (the case built its arguments once); else the same bytes
        match = next((index for index, call in enumerate(self.ahead) if call.made_of(message)), None)
        request = None
        if match is None:
            request = _pickle(message)
            match = next((index for index, call in enumerate(self.ahead) if call.request == request), None)
        self._read_ahead(len(self.ahead) if match is None else match + 1)
        if match is not None and match < len(self.ahead):
            call = self.ahead[match]
            del self.ahead[:match + 1]  # those before it were not asked for
            return call.outcome()
        worker = self._worker()
        data, driver = _wire(worker, message, request or _pickle(message))
        if driver:
            worker.given.add(driver)
        worker.send([data], self._limit())
        return worker.reply(self._limit())

    def _read_ahead(self, count: int) -> None:
        """Read the replies of the first `count` calls sent ahead, in the order they come. A worker
        that fails to give one is gone: the calls after that one are dropped, to run afresh."""
        for call in self.ahead[:count]:
            if not call.answered:
                call.read(self.worker, self._limit())
                if not call.replied:
                    self.ahead = [other for other in self.ahead if other.answered]
                    return

    def _limit(self) -> float:
        """The next wait's limit: the call's own, or what is left of the time budget if less."""
        return self.budget.limit(self.qid, self.timeout)

    def _worker(self) -> Worker:
        if self.worker is None:
            with self.budget.not_counting():
                self.worker = self.workers.take(self.config)
                self._cap(self.worker)
        elif not self.worker.alive:
            # it crashed, hung or sent what was refused, as the submission's code made it: starting
            # the fresh one for the calls after is the question's time (else a call that crashes
            # every time keeps the grader forking workers outside every budget)
            with self.budget.spending(self.qid):
                self.worker = self.workers.fresh(self.config)
                self._cap(self.worker)
        return self.worker

    def _cap(self, worker: Worker) -> None:
        """Cap a fresh question process's stack (cap_stack), as its first request: none of the
        student's code has run in it. Where the kernel cannot, the question runs uncapped."""
        if self.cap_stack:
            worker.send([_pickle({"op": "cap_stack"})], self._limit())
            header, payload = worker.reply(self._limit())
            self.stack_capped = header.get("status") == "returned" and codec.decode(payload) is None

    def _kill(self) -> None:
        self.ahead.clear()  # their answers came from the worker that misbehaved: asked again afresh
        if self.worker is not None:
            self.worker.kill()

    def close(self) -> None:
        if self.worker is not None:
            if any(not call.answered for call in self.ahead):
                self.worker.kill()  # still answering calls nobody asked for: not fit to hand on
            self.ahead.clear()
            self.workers.give_back(self.config, self.worker)
            self.worker = None


class _Read:
    """A reply read: its value, or the fault to raise in its place; and how big it came."""

    def __init__(self, value: Any, fault: StudentFault | None, payload_bytes: int) -> None:
        self.value, self.fault, self.payload_bytes = value, fault, payload_bytes

    def result(self) -> Any:
        if self.fault is not None:
            raise self.fault
        return self.value


def _pickle(message: dict) -> bytes:
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def _wire(worker: Worker, message: dict, pickled: bytes) -> tuple[bytes, str | None]:
    """`message` (`pickled`) as `worker` gets it, and the suite driver module whose code it carries:
    a driver's code goes with the first run of its module only (tens of kilobytes), and the worker
    keeps it until it starts afresh (the caller notes it in worker.given once it is sent)."""
    if message["op"] != "run" or message["module"] in worker.given:
        return pickled, None
    return _pickle({**message, "code": _driver_code(message["module"])}), message["module"]


class _SentAhead:
    """A call sent ahead: its message and pickled request, and once read, its reply or why none came."""

    def __init__(self, message: dict, request: bytes) -> None:
        self.message = message
        self.request = request
        self._reply: tuple[dict, bytes | None] | None = None
        self._failure: Exception | None = None

    def made_of(self, message: dict) -> bool:
        """Whether `message` is this call made of the very same argument objects: then it is the
        same call without pickling it again (megabytes of arrays, in 03_mlp) to compare."""
        ours = self.message
        return (message.keys() == ours.keys()
                and all(message[key] == ours[key] for key in ("op", "module", "name"))
                and len(message["args"]) == len(ours["args"])
                and all(a is b for a, b in zip(message["args"], ours["args"]))
                and message["kwargs"].keys() == ours["kwargs"].keys()
                and all(value is ours["kwargs"][key] for key, value in message["kwargs"].items()))

    @property
    def answered(self) -> bool:
        return self.replied or self._failure is not None

    @property
    def replied(self) -> bool:
        return self._reply is not None

    def read(self, worker: Worker | None, timeout: float) -> None:
        try:
            if worker is None:
                raise WorkerDied()
            self._reply = worker.reply(timeout)
        except (WorkerTimedOut, WorkerDied, ReplyRefused) as failure:
            self._failure = failure

    def outcome(self) -> tuple[dict, bytes | None]:
        """The reply, or the failure a call made now would have met (it is raised)."""
        if self._reply is None:
            raise self._failure or WorkerDied()
        return self._reply


def _value_or_fault(describe: Callable[[], str], header: dict, payload: bytes | None) -> Any:
    status = header.get("status")
    if status == "returned" and payload is not None:
        try:
            return codec.decode(payload)
        except codec.TooLarge as error:
            raise ReturnTooLarge(describe, f"returned a value {error}; return smaller, plain values") from None
        except codec.UnsupportedType as error:
            raise UnsupportedReturn(describe, f"returned an unsupported type: {error}") from None
    if status == "raised":
        raise StudentRaised(describe, header)
    if status == "missing":
        raise MissingFunction(describe, f"could not run: {_text(header, 'message', 300)}")
    if status == "unsupported":
        message = _text(header, "message", 300)
        if message.startswith(codec.TOO_LARGE):
            raise ReturnTooLarge(describe, f"returned a value {message}; return smaller, plain values")
        raise UnsupportedReturn(describe, f"returned an unsupported type: {message} "
                                          "(return plain Python values, NumPy arrays or tensors)")
    raise StudentCrashed(describe, "sent back a malformed reply")


class Student:
    """Reaches the submission's modules through a QuestionSandbox."""

    def __init__(self, sandbox: QuestionSandbox, modules: frozenset[str]) -> None:
        self._sandbox = sandbox
        self._modules = modules
        self._last_call: str | Later | tuple[str, tuple, dict] = ""
        self.last_result: Any = None
        # the last call returned a value (not a fault): a check that then raises met that value
        self.returned = False
        self._noting = False  # in send_ahead: calls are noted, not made

    @property
    def last_call(self) -> str:
        """A short summary of the last call (`numel((2, 3))`), written when first asked for: most
        calls pass and are never described, and big arguments take a while to summarize."""
        if isinstance(self._last_call, tuple):
            self._last_call = summarize_call(*self._last_call)
        elif isinstance(self._last_call, Later):
            self._last_call = str(self._last_call)
        return self._last_call

    @last_call.setter
    def last_call(self, text: "str | Later") -> None:
        self._last_call = text

    def __getattr__(self, module: str) -> "_ModuleProxy":
        if module.startswith("_") or module not in self._modules:
            if not self._modules:
                raise AttributeError(f"the suite asks for the student module {module!r}, but the assignment names no "
                                     f"student files: add `files = [\"{module}.py\"]` to its assignment.toml")
            raise AttributeError(f"the suite asks for the student module {module!r}, which is not among the "
                                 f"assignment's files ({', '.join(sorted(self._modules))}): add \"{module}.py\" to "
                                 "`files` (or `provided`) in its assignment.toml, or correct the suite")
        return _ModuleProxy(self, module)

    def call(self, module: str, name: str, args: tuple, kwargs: dict) -> Any:
        self._last_call, self.last_result = (name, args, kwargs), None
        message = {"op": "call", "module": module, "name": name, "args": args, "kwargs": kwargs}
        describe = functools.partial(summarize_call, name, args, kwargs)  # this call, even after the next
        return self._request(f"{module}.{name}", describe, message)

    def run(self, driver: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run a suite driver (a top-level function of a suite helper module) in the sandbox."""
        self._last_call, self.last_result = (driver.__name__, args, kwargs), None
        message = {"op": "run", "module": driver.__module__, "name": driver.__name__, "args": args, "kwargs": kwargs}
        describe = functools.partial(summarize_call, driver.__name__, args, kwargs)
        return self._request(f"driver {driver.__name__}", describe, message)

    def send_ahead(self, cases: list[Callable[[], Any]]) -> None:
        """Send the first call each of `cases` makes to the sandbox at once, ahead of running them
        (QuestionSandbox.send_ahead). Each case runs up to that call, which is noted, not made: the
        code before a case's first call must change nothing."""
        calls = []
        self._noting = True
        try:
            for case in cases:
                try:
                    case()
                except _Noted as noted:
                    calls.append((noted.key, noted.message))
                except KeyboardInterrupt:
                    raise
                except BaseException:  # noqa: BLE001 - it fails, or skips, before any call: again when run
                    pass
        finally:
            self._noting = False
            self._last_call, self.last_result = "", None
        self._sandbox.send_ahead(calls)

    def _request(self, key: str, describe: Callable[[], str], message: dict) -> Any:
        if self._noting:
            raise _Noted(key, message)
        self.returned = False
        self.last_result = self._sandbox.request(key, describe, message)
        self.returned = True
        return self.last_result


class _Noted(BaseException):
    """Ends a case run by Student.send_ahead at its first call (a BaseException, which the checks'
    own `except Exception` lets through)."""

    def __init__(self, key: str, message: dict) -> None:
        super().__init__(key)
        self.key, self.message = key, message


def compile_drivers(folders: set[Path], tests: set[str]) -> None:
    """Compile ahead every module loaded from these folders but the `tests` themselves (the suite
    helper modules, any of which may hold drivers): once before a batch forks its grading
    processes, instead of once in each of them."""
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name not in tests and path and Path(path).parent in folders:
            try:
                _driver_code(name)
            except (OSError, TypeError, SyntaxError):  # no source to read: compiled when run, if ever
                continue


@functools.lru_cache(maxsize=None)
def _driver_code(module_name: str) -> bytes:
    """A suite helper module's bytecode, compiled once per grading process instead of once per
    sandbox (milliseconds each); the sandbox runs it as the module `module_name`. Compiled without
    docstrings (optimize=2; no source goes either): student code can reach the module through its
    frames, and what a hidden check says of itself is not for it to read or print."""
    source = inspect.getsource(sys.modules[module_name])
    return marshal.dumps(compile(source, f"<grader driver {module_name}>", "exec", optimize=2))


class _ModuleProxy:
    def __init__(self, student: Student, module: str) -> None:
        self._student = student
        self._module = module

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._student.call(self._module, name, args, kwargs)

        call.__name__ = name
        return call
