"""Hostile submissions, one per kind of attack, graded together in one batch.

Each submission has an honest `honest.py` and an `attack.py` whose `run` does the attack. The
hidden question `attack.run` is only passed by returning a secret written in the hidden test
file, so reading the suite would earn its points. Every attack must cost exactly that question:
`honest.add` and the quiz are graded normally, and nothing outside the sandbox changes.

The batch is graded once at every isolation level this machine has (bwrap where it runs, fork
always), so that a machine with bubblewrap still proves the fork level. What only the jail
gives (the course hidden, no network, nothing shared between uids in /tmp) is tested at bwrap only.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import textwrap
import time
from pathlib import Path

import pytest

from checks.sandbox import jail
from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.reports.render import write_submission_reports

SECRET = secrets.token_hex(8)
JAILED = jail.bwrap_problem() is None and jail.choose(jail.BWRAP).per_submission_uid
needs_jail = pytest.mark.skipif(not JAILED, reason="needs the bubblewrap jail as root (.ci/run installs bubblewrap)")
LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
DEADLINE = 10.0  # seconds: what should happen at once may take this long on a loaded machine, no longer
# only meaningful jailed: the fork level neither hides the course nor cuts the network (README)
JAIL_ONLY = ("reads_the_suite", "uses_network")
# only meaningful with a uid per submission (root): a fork swarm of the grader's own uid would starve it
UID_ONLY = ("fork_swarm",)

SUITE = {
    "autograder/toy/assignment.toml": """
        files = ["honest.py", "attack.py"]
        [quiz.answer]
        answer = 6
        points = 10
    """,
    "autograder/toy/test_toy.py": f"""
        import pytest
        from checks.suite import question, expect_equal

        SECRET = "{SECRET}"

        @question("honest.add", points=60)
        @pytest.mark.parametrize("a", [1, 2, 3])
        def test_add(student, a):
            expect_equal(student.honest.add(a, 1), a + 1)

        @question("attack.run", points=30, timeout=5)
        def test_attack(student, context):
            expect_equal(student.attack.run(context), SECRET)

        @pytest.fixture
        def context():
            import os
            return {{"root": os.environ["TOY_ROOT"], "port": int(os.environ["TOY_PORT"])}}
    """,
}

HONEST = "def add(a, b):\n    return a + b\n"

ATTACKS = {
    # tampering
    "patches_libraries": """
        import builtins, numpy, pytest, json
        numpy.array_equal = numpy.allclose = lambda *a, **k: True
        pytest.approx = lambda *a, **k: True
        json.loads = lambda *a, **k: "{secret}"
        builtins.str = lambda *a, **k: "{secret}"
        def run(context):
            return "not the secret"
    """,
    "lying_objects": """
        import numpy
        class Liar:
            __eq__ = lambda self, other: True
            __bool__ = lambda self: True
            __len__ = lambda self: 16
            __iter__ = lambda self: iter("0" * 16)
            __array__ = lambda self, *a, **k: numpy.zeros(1)
        class LyingArray(numpy.ndarray):
            __eq__ = lambda self, other: True
        class LyingStr(str):
            __eq__ = lambda self, other: True
        def run(context):
            return [Liar(), numpy.zeros(3).view(LyingArray), LyingStr("x")][int(context["port"]) % 3]
    """,
    "pickle_payload": """
        import gc, json, pickle, socket, struct
        class Boom:
            def __reduce__(self):
                return (exec, ("open('{marker}', 'w')",))
        def run(context):
            sock = next(o for o in gc.get_objects() if isinstance(o, socket.socket) and o.fileno() >= 0)
            for frame in (json.dumps({"status": "returned"}).encode(), pickle.dumps(Boom())):
                sock.sendall(struct.pack("!Q", len(frame)) + frame)
            return "{secret}"[::-1]
    """,
    "nested_header": """
        import gc, socket, struct
        def run(context):
            sock = next(o for o in gc.get_objects() if isinstance(o, socket.socket) and o.fileno() >= 0)
            frame = b"[" * 900_000
            sock.sendall(struct.pack("!Q", len(frame)) + frame)
            return "{secret}"[::-1]
    """,
    # escapes
    "exits": """
        import os
        def run(context):
            os._exit(0)
    """,
    "kills_parent": """
        import os, signal
        def run(context):
            for target in (lambda: os.kill(os.getppid(), signal.SIGKILL),
                           lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL),
                           lambda: os.kill(1, signal.SIGKILL)):
                try:
                    target()
                except OSError:
                    pass
            return "still here"
    """,
    "segfaults": """
        import ctypes
        def run(context):
            return ctypes.string_at(0)
    """,
    "ignores_sigterm": """
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        def run(context):
            while True:
                pass
    """,
    "hogs_memory": """
        def run(context):
            hog = bytearray(8 * 2**30)
            return len(hog)
    """,
    "fork_swarm": """
        import os
        def run(context):
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
    """,
    "daemon": """
        import os, time
        def run(context):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    for _ in range(300):
                        for target in (context["root"] + "/grades/daemon/results.json", "/tmp/checks-daemon"):
                            try:
                                with open(target, "w") as handle:
                                    handle.write("pwned")
                            except OSError:
                                pass
                        time.sleep(0.1)
                os._exit(0)
            return "daemon started"
    """,
    # reading and writing
    "reads_the_suite": """
        import os, re
        def run(context):
            for folder, _, names in os.walk(context["root"]):
                for name in names:
                    try:
                        found = re.search(r'SECRET = "(\\w+)"', open(os.path.join(folder, name)).read())
                    except OSError:
                        continue
                    if found:
                        return found.group(1)
            return "found nothing"
    """,
    "writes_outside": """
        import os
        def run(context):
            written = []
            for target in (context["root"] + "/autograder/toy/test_toy.py", context["root"] + "/planted.txt",
                           "/tmp/checks-planted", os.path.expanduser("~/../planted")):
                try:
                    with open(target, "a") as handle:
                        handle.write("pwned")
                    written.append(target)
                except OSError:
                    pass
            return written
    """,
    "uses_network": """
        import socket
        def run(context):
            with socket.create_connection(("127.0.0.1", context["port"]), timeout=2) as conn:
                conn.sendall(b"exfiltrated")
                return conn.recv(100).decode()
    """,
    # volume
    "floods_output": """
        import sys
        def run(context):
            chunk = "x" * 2**20
            for _ in range(300):
                print(chunk)
            return "{secret}"[::-1]
    """,
    "huge_return": """
        import numpy
        def run(context):
            return numpy.zeros(5_000_000)
    """,
}


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text).replace("{secret}", SECRET))


def processes_of(uids: set) -> list[str]:
    """The pids of every process running as one of `uids`."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            uid_line = next(line for line in status.read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(uid_line.split()[1]) in uids:
            found.append(status.parent.name)
    return found


def wait_for(condition, deadline: float = DEADLINE):
    """Poll `condition` until it is true or `deadline` seconds have passed; its last value."""
    give_up = time.monotonic() + deadline
    while not (value := condition()) and time.monotonic() < give_up:
        time.sleep(0.05)
    return value


@pytest.fixture(scope="module", params=LEVELS)
def batch(request, tmp_path_factory):
    level = request.param
    isolation = jail.choose(level)
    root = tmp_path_factory.mktemp(f"course-{level}")
    marker = Path(f"/tmp/checks-pwned-{SECRET}-{level}")  # a name of this run's own: nothing earlier can poison it
    for relative, text in SUITE.items():
        write(root / relative, text)
    (root / "assignments/toy").mkdir(parents=True)
    write(root / "solutions/toy/honest.py", HONEST)
    submissions = {name: {"attack.py": attack.replace("{marker}", str(marker))} for name, attack in ATTACKS.items()}
    submissions["latin1_source"] = {"attack.py": "def run(context):\n    return 'caf\xe9'\n".encode("latin-1")}
    submissions["nested_quiz"] = {"attack.py": "def run(context):\n    return 1\n",
                                  "quiz.toml": "answer = " + "[" * 5000 + "]" * 5000}
    for name, files in submissions.items():
        write(root / "subs" / name / "honest.py", HONEST)
        write(root / "subs" / name / "quiz.toml", "answer = 6\n")
        for filename, text in files.items():
            write(root / "subs" / name / filename, text)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    os.environ.update(TOY_ROOT=str(root), TOY_PORT=str(listener.getsockname()[1]))
    assignment = load_assignment(root, "toy")
    sources = [Source.from_path(root / "subs" / name) for name in submissions]
    results = {r.name: r for r in grade_sources(assignment, sources, jobs=2, isolation=isolation)}
    out = root / "grades"
    for result in results.values():
        write_submission_reports(out, result)
    written = {path: path.read_bytes() for path in out.rglob("*.json")}
    uids = {result.sandbox_uid for result in results.values()} - {None}
    # a surviving daemon would go on writing: the files are compared once no process is left
    wait_for(lambda: not processes_of(uids))
    survivors = processes_of(uids)
    received = []
    try:
        while True:
            conn, _ = listener.accept()
            received.append(conn.recv(100))
    except OSError:
        pass
    unpickled = marker.exists()
    marker.unlink(missing_ok=True)
    yield {"root": root, "level": level, "isolation": isolation, "results": results, "written": written,
           "received": received, "uids": uids, "survivors": survivors, "unpickled": unpickled}
    listener.close()
    for planted in ("/tmp/checks-planted", "/tmp/checks-daemon"):  # what the fork level lets a worker write
        Path(planted).unlink(missing_ok=True)


@pytest.mark.parametrize("name", [*ATTACKS, "latin1_source"])
def test_an_attack_costs_exactly_its_question(batch, name):
    if name in JAIL_ONLY and batch["level"] != jail.BWRAP:
        pytest.skip("the fork level does not hide the course or cut the network (README: isolation levels)")
    if name in UID_ONLY and not batch["isolation"].per_submission_uid:
        pytest.skip("needs a uid per submission (run as root)")
    result = batch["results"][name]
    scores = {q.qid: q for q in result.questions}
    assert not result.error, result.error
    assert scores["attack.run"].score == 0, scores["attack.run"].feedback
    assert scores["honest.add"].passed, scores["honest.add"].feedback
    assert scores["quiz.answer"].passed, scores["quiz.answer"].feedback


@pytest.mark.parametrize("name, words", [
    ("lying_objects", "unsupported type"), ("pickle_payload", "unsupported type"),
    ("nested_header", "malformed reply"), ("exits", "crashed"),
    ("segfaults", "crashed"), ("ignores_sigterm", "did not finish"), ("hogs_memory", "MemoryError"),
    ("huge_return", "MiB"), ("latin1_source", "attack.py does not compile"),  # once, the warning says where
])
def test_the_feedback_says_what_happened(batch, name, words):
    assert words in batch["results"][name].question("attack.run").feedback


def test_a_deeply_nested_quiz_costs_only_the_quiz(batch):
    scores = {q.qid: q for q in batch["results"]["nested_quiz"].questions}
    assert scores["quiz.answer"].score == 0 and "quiz.toml" in scores["quiz.answer"].feedback
    assert scores["honest.add"].passed


def test_output_floods_reach_the_results_only_as_an_excerpt(batch):
    results_file = batch["root"] / "grades/floods_output/results.json"
    assert results_file.stat().st_size < 20_000
    assert "x" * 50 in json.loads(results_file.read_text())["tests"][1]["output"]


def test_nothing_was_unpickled_in_the_grader(batch):
    assert "unsupported type" in batch["results"]["pickle_payload"].question("attack.run").feedback  # it ran
    assert not batch["unpickled"]


def test_no_process_of_a_submission_survives_and_no_grader_file_changed(batch):
    if not batch["isolation"].per_submission_uid:
        pytest.skip("needs a uid per submission (run as root) to find a submission's processes")
    assert None not in {result.sandbox_uid for result in batch["results"].values()}
    assert batch["survivors"] == []
    assert {path: path.read_bytes() for path in batch["written"]} == batch["written"]
    assert not (batch["root"] / "grades/daemon/results.json").read_text().startswith("pwned")
    assert "pwned" not in (batch["root"] / "autograder/toy/test_toy.py").read_text()
    assert not (batch["root"] / "planted.txt").exists()


def test_the_jail_hides_the_course_and_blocks_writes_and_network(batch):
    if batch["level"] != jail.BWRAP or not JAILED:
        pytest.skip("only the bwrap jail (as root) hides the course, /tmp and the network")
    assert "found nothing" in batch["results"]["reads_the_suite"].question("attack.run").feedback
    assert not (batch["root"] / "planted.txt").exists() and not Path("/tmp/checks-planted").exists()
    assert "pwned" not in (batch["root"] / "autograder/toy/test_toy.py").read_text()
    assert batch["received"] == []
    assert batch["results"]["reads_the_suite"].sandbox.startswith("bwrap")


THIEF = '''
import ctypes, glob, os, socket, time

STASH_KEY = 0x5EC2E7
KEYCTL = {"x86_64": 250}.get(os.uname().machine)  # add_key and request_key are the two before it


def keyrings(libc):
    """The uid's keyrings that outlive a process: its user, user session and persistent ones."""
    persistent = libc.syscall(KEYCTL, 22, -1, ctypes.c_int(-4))  # KEYCTL_GET_PERSISTENT
    return [ring for ring in (-4, -5, persistent) if ring != -1]


def steal(secret):
    """Hide what this question was given for the questions after."""
    secret = secret.encode()
    os.chmod(os.environ["HOME"], 0o755)
    for folder in (os.environ["HOME"], "/tmp", "/dev/shm", "/var/tmp", "/run", "/dev"):
        try:
            with open(os.path.join(folder, "stash"), "wb") as handle:
                handle.write(secret)
            os.chmod(os.path.join(folder, "stash"), 0o644)
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(STASH_KEY, 4096, 0o1666)  # IPC_CREAT, readable by all: outlives us
    if segment >= 0:
        ctypes.memmove(libc.shmat(segment, None, 0), secret, len(secret))
    queue = libc.mq_open(b"/checks-stash", os.O_CREAT | os.O_WRONLY, 0o666, None)  # POSIX queues outlive us too
    if queue >= 0:
        libc.mq_send(queue, secret, len(secret), 0)
    if KEYCTL:  # a key in each of the uid's keyrings: its user, user session and persistent ones
        for ring in keyrings(libc):
            libc.syscall(KEYCTL - 2, b"user", b"checks-stash", secret, len(secret), ctypes.c_int(ring))
    if os.fork() == 0:  # a daemon that hands it on
        os.setsid()
        server = socket.socket(socket.AF_UNIX)
        server.bind("\\0checks-stash")
        server.listen()
        while True:
            conn, _ = server.accept()
            conn.sendall(secret)
            conn.close()
    time.sleep(0.3)
    return "stashed"


def find():
    found = []
    places = ("/tmp/**", "/dev/shm", "/var/tmp", "/run", "/dev")
    for path in [found for place in places for found in glob.glob(place + "/stash", recursive=True)]:
        try:
            found.append(open(path).read())
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(STASH_KEY, 0, 0)
    if segment >= 0:
        found.append(ctypes.string_at(libc.shmat(segment, None, 0)).decode())
    for ring in keyrings(libc) if KEYCTL else ():
        key = libc.syscall(KEYCTL, 10, ctypes.c_int(ring), b"user", b"checks-stash", 0)  # KEYCTL_SEARCH
        if key > 0:
            value = ctypes.create_string_buffer(100)
            libc.syscall(KEYCTL, 11, key, value, 100)  # KEYCTL_READ
            found.append(value.value.decode())
    queue = libc.mq_open(b"/checks-stash", os.O_RDONLY)
    if queue >= 0:
        message = ctypes.create_string_buffer(1 << 16)
        if libc.mq_receive(queue, message, len(message), None) > 0:
            found.append(message.value.decode())
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.connect("\\0checks-stash")
            found.append(client.recv(100).decode())
    except OSError:
        pass
    return found
'''


LOCKER = """
import os

PLACES = ("/tmp", "/var/tmp", "/dev/shm", os.environ["HOME"])


def plant():
    \"\"\"In each temp folder and the home: folders locked at every level, holding a file and a link
    to a folder (a helper's attack from the docs carried notes from question to question so).\"\"\"
    planted = []
    for place in PLACES:
        top = os.path.join(place, "carried")
        inner = os.path.join(top, "inner", "deeper")
        try:
            os.makedirs(inner)
        except PermissionError:  # /var/tmp, jailed: not writable at all
            continue
        with open(os.path.join(inner, "note"), "w") as handle:
            handle.write("from the last question")
        os.symlink(place, os.path.join(top, "inner", "link"))
        for folder in (inner, os.path.dirname(inner), top):
            os.chmod(folder, 0)
        planted.append(place)
    return planted


def find():
    return [place for place in PLACES if os.path.lexists(os.path.join(place, "carried"))]
"""


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.skipif(os.geteuid() != 0, reason="temp space of its own needs root (a mount namespace per worker)")
def test_a_locked_folder_in_temp_space_is_gone_before_the_next_question(make_course, level):
    """The next question, given a reference or not, finds nothing of what the last one locked in
    its temp folders or its home."""
    root = make_course({
        "autograder/lock/assignment.toml": 'files = ["locker.py", "good.py"]\n',
        "autograder/lock/test_lock.py": """
            from checks.suite import question, expect_equal

            @question("locker.plant", points=40)
            def test_plant(student):
                planted = student.locker.plant()
                assert {"/tmp", "/dev/shm"} <= set(planted) and len(planted) >= 3, planted

            @question("locker.find", points=30)
            def test_find(student):
                expect_equal(student.locker.find(), [])

            @question("locker.find_beside_a_reference", points=30, use_reference=("good.py",))
            def test_find_beside_a_reference(student):
                expect_equal(student.locker.find(), [])
        """,
        "solutions/lock/good.py": "",
        "assignments/lock/.keep": "",
        "subs/s/locker.py": LOCKER,
        "subs/s/good.py": "",
    })
    [result] = grade_sources(load_assignment(root, "lock"), [Source.from_path(root / "subs/s")], jobs=1,
                             isolation=jail.choose(level))
    for question in result.questions:
        assert question.passed, (question.qid, question.feedback)


@needs_jail
def test_nothing_of_a_reference_outlives_its_question(make_course):
    """No file, process, shared memory or key of a question may carry what it was given to the
    next question of its worker, or to a question graded in another worker. (The questions given
    no reference run before any that is given one: the last finder here is given another
    reference file, which puts it after the thief.)"""
    root = make_course({
        "autograder/leak/assignment.toml": 'files = ["good.py", "thief.py"]\n',
        "autograder/leak/test_leak.py": """
            from checks.suite import question, expect_equal

            @question("thief.steal", points=40, use_reference=("good.py",))
            def test_steal(student):
                expect_equal(student.thief.steal("{SECRET}"), "stashed")

            @question("thief.find_next", points=30, use_reference=("good.py",))
            def test_find_next(student):  # the same worker, handed on
                expect_equal(student.thief.find(), [])

            @question("thief.find", points=30, use_reference=("other.py",))
            def test_find(student):
                expect_equal(student.thief.find(), [])
        """.replace("{SECRET}", SECRET),
        "solutions/leak/good.py": f"SECRET = '{SECRET}'\n",
        "solutions/leak/other.py": "",
        "assignments/leak/.keep": "",
        "subs/thief/good.py": "SECRET = 'mine'\n",
        "subs/thief/thief.py": THIEF,
    })
    [result] = grade_sources(load_assignment(root, "leak"), [Source.from_path(root / "subs/thief")], jobs=1,
                             isolation=jail.choose(jail.BWRAP))
    for qid in ("thief.steal", "thief.find_next", "thief.find"):
        assert result.question(qid).passed, result.question(qid).feedback


SEEKER = '''
import gc, os, sys


def seek(secret):
    """Everything of the reference this question's process can reach: the module that stands in for
    it, its functions' code, every object in memory, and every file in its home and temp space (at
    the fork level the rest of the file system is the host's: docs/trust-boundary.md)."""
    import good
    found = [f"attribute {name}" for name in dir(good) if name == "SECRET"]
    for value in vars(good).values():
        code = getattr(value, "__code__", None)
        if code is not None and secret in repr(code.co_consts) + repr(code.co_names):
            found.append(f"code of {value.__name__}")
    found += ["an object in memory" for item in gc.get_objects() if isinstance(item, str) and secret in item
              and item is not secret][:1]
    for root in (os.environ["HOME"], os.getcwd(), *sys.path[:1], "/tmp", "/var/tmp", "/dev/shm"):
        for folder, subfolders, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    if os.path.getsize(path) < 1 << 20:
                        with open(path, "rb") as handle:
                            if secret.encode() in handle.read():
                                found.append(path)
                except OSError:
                    pass
    return found
'''


@pytest.mark.parametrize("level", LEVELS)
def test_a_reference_never_enters_the_sandbox(make_course, level):
    """A question graded beside a reference module (use_reference) gets a stand-in that the grader
    answers: the student's code can call it, and finds nothing of the reference's code or data in
    its module, its process or any file it may read (issue 43: the answer key stays out of reach)."""
    secret = secrets.token_hex(12)
    root = make_course({
        "autograder/ref/assignment.toml": 'files = ["good.py", "seeker.py"]\n',
        "autograder/ref/test_ref.py": """
            from checks.suite import question, expect_equal

            @question("good.answered", points=50, use_reference=("good.py",))
            def test_answered(student):
                expect_equal(student.run(reveal), "SECRET")

            @question("seeker.nothing", points=50, use_reference=("good.py",), timeout=60)  # it walks its files
            def test_nothing(student):
                expect_equal(student.seeker.seek("SECRET"), [])

            def reveal():
                import good
                return good.reveal()
        """.replace("SECRET", secret),
        "solutions/ref/good.py": f"SECRET = '{secret}'\n\n\ndef reveal():\n    return SECRET\n",
        "assignments/ref/.keep": "",
        "subs/seeker/good.py": "SECRET = 'mine'\n",
        "subs/seeker/seeker.py": SEEKER,
    })
    [result] = grade_sources(load_assignment(root, "ref"), [Source.from_path(root / "subs/seeker")], jobs=1,
                             isolation=jail.choose(level))
    for qid in ("good.answered", "seeker.nothing"):
        assert result.question(qid).passed, result.question(qid).feedback


def test_the_graders_answers_to_stand_ins_are_the_calls_time_and_costly_ones_are_refused(make_course):
    """What the grader spends answering a stand-in's calls counts in the call's time limit (a call
    that keeps it answering is stopped, the student's timeout), and a call whose answer would cost
    much (inputs that broadcast to 10^8 values) is refused before it is computed (issue 43)."""
    root = make_course({
        "autograder/ask/assignment.toml": 'files = ["asker.py", "helper.py"]\n',
        "autograder/ask/test_ask.py": """
            from checks.suite import question, expect_equal

            @question("asker.many", points=50, use_reference=("helper.py",), timeout=3)
            def test_many(student):
                expect_equal(student.asker.many(), "done")

            @question("asker.huge", points=50, use_reference=("helper.py",))
            def test_huge(student):
                expect_equal(student.asker.huge(), "refused")
        """,
        "solutions/ask/helper.py": "import time\n\n\ndef slow(*arrays):\n    time.sleep(0.2)\n    return 1\n",
        "assignments/ask/.keep": "",
        "subs/s/helper.py": "",
        "subs/s/asker.py": """
import numpy as np


def many():
    import helper
    for _ in range(100):  # 20 s of the grader's time, asked for in one call of 3
        helper.slow()
    return "done"


def huge():
    import helper
    try:
        helper.slow(np.ones((1, 1, 100, 1000)), np.ones((1000, 1, 1, 1)), np.ones((1, 1000, 1, 1)))
    except ValueError as error:
        return "refused" if "at most" in str(error) else str(error)
    return "answered"
""",
    })
    [result] = grade_sources(load_assignment(root, "ask"), [Source.from_path(root / "subs/s")], jobs=1)
    many = result.question("asker.many")
    assert not many.passed and "did not finish" in many.feedback and "grader error" not in many.feedback, many.feedback
    assert result.question("asker.huge").passed, result.question("asker.huge").feedback
    assert result.seconds < 30, result.seconds


def test_a_reference_that_defines_a_class_is_refused_as_the_suites_error(make_course):
    """A class cannot be answered from outside the sandbox: the question says so, as the suite's
    error (never the student's), instead of a stand-in without it."""
    root = make_course({
        "autograder/cls/assignment.toml": 'files = ["model.py"]\n',
        "autograder/cls/test_cls.py": """
            from checks.suite import question, expect_equal

            @question("model.uses", points=100, use_reference=("model.py",))
            def test_uses(student):
                expect_equal(student.model.size(), 3)
        """,
        "solutions/cls/model.py": "class Net:\n    pass\n\n\ndef size():\n    return 3\n",
        "assignments/cls/.keep": "",
        "subs/s/model.py": "def size():\n    return 3\n",
    })
    [result] = grade_sources(load_assignment(root, "cls"), [Source.from_path(root / "subs/s")], jobs=1)
    feedback = result.question("model.uses").feedback
    assert not result.question("model.uses").passed
    assert "grader error" in feedback and "defines Net" in feedback, feedback


FILLER = '''
import os, time


def fill():
    """Write into the home until the disk is full: how many MiB went in."""
    chunk, written = b"x" * 2**20, 0
    locked = os.path.join(os.environ["HOME"], "locked")
    os.makedirs(locked)
    try:
        while written < 256:
            with open(os.path.join(locked, f"{written}.bin"), "wb") as handle:
                handle.write(chunk)
            written += 1
    except OSError:
        pass
    os.chmod(locked, 0)  # the zygote must still be able to remove it
    return written


def free_within(seconds, mib):
    """Whether `mib` MiB are free in the home's file system within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while True:
        stats = os.statvfs(os.environ["HOME"])
        if stats.f_bavail * stats.f_frsize // 2**20 > mib or time.monotonic() > deadline:
            return stats.f_bavail * stats.f_frsize // 2**20 > mib
        time.sleep(0.05)
'''


@needs_jail
def test_a_full_home_costs_nothing_after_its_worker(make_course, monkeypatch):
    """The jail's /tmp is capped, and so is each worker's own (temp_mib), which goes with it: one
    submission cannot fill it for the rest of the batch."""
    monkeypatch.setattr(jail, "TMP_BYTES", 64 * 2**20)
    root = make_course({
        "autograder/fill/assignment.toml": 'files = ["filler.py"]\ntemp_mib = 60\n',
        "autograder/fill/test_fill.py": """
            from checks.suite import question

            @question("filler.fill", points=50)
            def test_fill(student):
                assert student.filler.fill() < 64

            # given a reference file: graded after test_fill, in a fresh worker
            @question("filler.free", points=50, use_reference=("spare.py",))
            def test_free(student):
                assert student.filler.free_within(10.0, 48)
        """,
        "assignments/fill/.keep": "",
        "solutions/fill/spare.py": "",
        "subs/filler/filler.py": FILLER,
    })
    [result] = grade_sources(load_assignment(root, "fill"), [Source.from_path(root / "subs/filler")], jobs=1,
                             isolation=jail.choose(jail.BWRAP))
    assert result.question("filler.fill").passed, result.question("filler.fill").feedback
    assert result.question("filler.free").passed, result.question("filler.free").feedback


KILLER = '''
import os, signal, time


def _zygote():
    """The process that forked our keeper (whose question process we are)."""
    with open(f"/proc/{os.getppid()}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def kill_zygote():
    """Kill the zygote, and make sure it is gone before answering."""
    zygote = _zygote()
    os.kill(zygote, signal.SIGKILL)
    while _zygote() == zygote:
        time.sleep(0.01)
    return "killed it"


def stop_zygote():
    os.kill(_zygote(), signal.SIGSTOP)
    return "stopped it"


def add(a, b):
    return a + b
'''


def test_a_zygote_killed_or_stopped_by_a_worker_is_started_again(make_course):
    """Where workers share the zygote's uid (fork or bwrap, not root) they can kill or stop it:
    its supervisor starts another, and only the question that did it is lost. Run here with a
    shared uid on purpose (as root the zygote's uid protects it)."""
    root = make_course({
        "autograder/zyg/assignment.toml": 'files = ["killer.py"]\nfresh_worker_per_question = true\n',
        "autograder/zyg/test_zyg.py": """
            from checks.suite import question, expect_equal

            @question("killer.kill", points=30, timeout=20)
            def test_kill(student):
                expect_equal(student.killer.kill_zygote(), "alive")

            @question("killer.stop", points=30, timeout=20)
            def test_stop(student):
                expect_equal(student.killer.stop_zygote(), "alive")

            @question("killer.add", points=40, timeout=20)
            def test_add(student):
                expect_equal(student.killer.add(1, 2), 3)
        """,
        "assignments/zyg/.keep": "",
        "subs/killer/killer.py": KILLER,
        "subs/honest/killer.py": KILLER.replace('"killed it"', '"alive"').replace('''os.kill(_zygote(), signal.SIGSTOP)
    return "stopped it"''', 'return "alive"').replace("os.kill(zygote, signal.SIGKILL)", "return 'alive'"),
    })
    shared_uid = jail.Isolation(jail.FORK, False, "fork: a uid shared with the zygote (as when not root)")
    sources = [Source.from_path(root / "subs" / name) for name in ("killer", "honest")]
    results = {r.name: r for r in grade_sources(load_assignment(root, "zyg"), sources, jobs=1, isolation=shared_uid)}
    killer, honest = results["killer"], results["honest"]
    assert not killer.error and not honest.error, killer.error + honest.error
    assert "returned 'killed it'" in killer.question("killer.kill").feedback
    assert "returned 'stopped it'" in killer.question("killer.stop").feedback
    assert killer.question("killer.add").passed, killer.question("killer.add").feedback
    assert honest.score == 100, [q.feedback for q in honest.questions]


def test_a_submission_uid_at_the_fork_level_imports_what_the_zygote_did_not(make_course):
    """As root, a fork-level worker runs as the submission's uid: it must still be able to import
    the standard library and site-packages, wherever Python is installed (a pyenv under /root)."""
    root = make_course({
        "autograder/imp/assignment.toml": 'files = ["late.py"]\n',
        "autograder/imp/test_imp.py": """
            from checks.suite import question, expect_equal

            @question("late.third", points=100)
            def test_third(student):
                expect_equal(student.late.third(), "1/3")
        """,
        "assignments/imp/.keep": "",
        "subs/late/late.py": "def third():\n    import fractions, zipapp\n    return str(fractions.Fraction(1, 3))\n",
    })
    isolation = jail.choose(jail.FORK)
    [result] = grade_sources(load_assignment(root, "imp"), [Source.from_path(root / "subs/late")], jobs=1,
                             isolation=isolation)
    assert result.sandbox_uid is not None or not isolation.per_submission_uid
    assert result.question("late.third").passed, result.question("late.third").feedback


LEAVER = '''
import os, time


def leave_a_daemon(pid_file):
    """Start a process that leaves our process group and outlives us: a daemon."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(pid_file, "w") as handle:
                handle.write(str(os.getpid()))
            time.sleep(60)
        os._exit(0)
    while not os.path.exists(pid_file):  # it is on its own before we answer
        time.sleep(0.01)
    return "left one"
'''


def test_a_daemon_of_a_worker_that_shares_the_zygotes_uid_is_killed(make_course, tmp_path):
    """Without a uid per submission nothing can kill by uid: the zygote, whose orphans such
    daemons become, kills them. Run with a shared uid on purpose."""
    pid_file = tmp_path / "daemon.pid"
    root = make_course({
        "autograder/dmn/assignment.toml": 'files = ["leaver.py"]\n',
        "autograder/dmn/test_dmn.py": f"""
            from checks.suite import question, expect_equal

            @question("leaver.leave", points=100)
            def test_leave(student):
                expect_equal(student.leaver.leave_a_daemon({str(pid_file)!r}), "left one")
        """,
        "assignments/dmn/.keep": "",
        "subs/leaver/leaver.py": LEAVER,
    })
    shared_uid = jail.Isolation(jail.FORK, False, "fork: a uid shared with the zygote (as when not root)")
    [result] = grade_sources(load_assignment(root, "dmn"), [Source.from_path(root / "subs/leaver")], jobs=1,
                             isolation=shared_uid)
    assert result.question("leaver.leave").passed, result.question("leaver.leave").feedback
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text())
    daemon = int(pid_file.read_text())

    def gone() -> bool:
        try:
            return Path(f"/proc/{daemon}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
        except OSError:
            return True

    assert wait_for(gone), f"the daemon {daemon} outlived its submission"
