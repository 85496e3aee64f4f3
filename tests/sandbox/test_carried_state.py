"""What one question could leave for a later question or submission outside its files (issue 43,
found by a fresh attacker given only the docs): kernel keys made readable by anyone (left by a
submission's last question, read by the next submission's, in the same batch or a later one),
extended attributes, ACLs and inode flags on the submission's home (and io_uring, which sets
them past a filter on the calls), the times and modes of what stays, the order its folder lists
its files in, and sockets of a
submission graded at the same time (an abstract unix name, a port on 127.0.0.1).

Each case runs at every isolation level this machine has (bwrap where it runs, fork always).
"""

from __future__ import annotations

import os

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.sandbox import jail
from checks.sandbox.supervisor import WorkerConfig, Zygote
from checks.suites.student import QuestionSandbox, Student, SubmissionWorkers

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]

CARRIER = '''
import ctypes, fcntl, os, platform, struct

libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(platform.machine(), (None, None))
RINGS = (-3, -4, -5)  # the session, user and user session keyrings
HOME = os.environ["HOME"]
OUTPUT = os.path.join(HOME, ".output")
TIMES = (123_000_000_000, 456_000_000_000)
# a POSIX ACL that names a user (owner rwx, user 424242 rwx, group r-x, mask rwx, others r-x)
ACL = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in
                                      ((1, 7, 0xFFFFFFFF), (2, 7, 424242), (4, 5, 0xFFFFFFFF),
                                       (0x10, 7, 0xFFFFFFFF), (0x20, 5, 0xFFFFFFFF)))


def put():
    """Leave a note every way that is not a file; what the kernel let through."""
    made = []
    if ADD_KEY:
        for ring in RINGS:
            key = libc.syscall(ADD_KEY, b"user", b"checks-carried", b"note", 4, ctypes.c_int(ring))
            if key > 0:
                libc.syscall(KEYCTL, 5, key, 0x3F3F3F3F)  # KEYCTL_SETPERM: anyone may find and read it
                made.append(f"key in {ring}")
        ring = libc.syscall(ADD_KEY, b"keyring", b"checks-mailbox", None, 0, ctypes.c_int(-5))
        if ring > 0:
            libc.syscall(KEYCTL, 5, ring, 0x3F3F3F3F)  # a keyring anyone may link keys into
            made.append("keyring")
    for name, value in (("user.checks", b"note"), ("system.posix_acl_access", ACL)):
        try:
            os.setxattr(HOME, name, value)
            made.append(name)
        except OSError:
            pass
    fd = libc.syscall(425, 8, ctypes.create_string_buffer(120))  # io_uring_setup: its IORING_OP_SETXATTR passes any filter
    if fd >= 0:
        made.append("io_uring")
    folder = os.open(HOME, os.O_RDONLY)
    try:
        fcntl.ioctl(folder, 0x40086602, struct.pack("l", 0x40))  # FS_IOC_SETFLAGS: chattr +d
        made.append("inode flags")
    except OSError:
        pass
    finally:
        os.close(folder)
    for path in (HOME, OUTPUT):  # refused to none: set back after the question
        os.utime(path, ns=TIMES)
    os.chmod(OUTPUT, 0o640)
    mine = os.path.join(HOME, "carry.py")  # the same bytes and times, in a new entry of the folder
    with open(mine, "rb") as handle:
        data, status = handle.read(), os.stat(mine)
    os.unlink(mine)
    with open(mine, "wb") as handle:
        handle.write(data)
    os.utime(mine, ns=(status.st_atime_ns, status.st_mtime_ns))
    return made


def listing():
    """The home's entries, in the order the kernel lists them."""
    return os.listdir(HOME)


def find():
    """Whatever of put's a later question or submission can still find."""
    found = []
    try:
        found += [line for line in open("/proc/keys").read().splitlines() if "checks-" in line]
    except OSError:
        pass
    if KEYCTL:
        for ring in RINGS:
            key = libc.syscall(KEYCTL, 10, ctypes.c_int(ring), b"user", b"checks-carried", 0)  # KEYCTL_SEARCH
            if key > 0:
                found.append(f"key in {ring}")
    found += [name for name in os.listxattr(HOME) if name.startswith("user.")]
    try:
        acl = os.getxattr(HOME, "system.posix_acl_access")
        found += ["an ACL"] if struct.pack("<I", 424242) in acl else []
    except OSError:
        pass
    found += [path for path in (HOME, OUTPUT) if os.stat(path).st_mtime_ns == TIMES[1]]
    found += ["output mode"] if os.stat(OUTPUT).st_mode & 0o777 != 0o600 else []
    folder = os.open(HOME, os.O_RDONLY)
    try:
        flags = struct.unpack("l", fcntl.ioctl(folder, 0x80086601, struct.pack("l", 0)))[0]  # FS_IOC_GETFLAGS
        found += ["inode flags"] if flags & 0x40 else []
    except OSError:
        pass
    finally:
        os.close(folder)
    return found
'''

CARRY_SUITE = {
    "autograder/carry/assignment.toml": 'files = ["carry.py"]\n',
    "autograder/carry/test_carry.py": """
        from checks.suite import question, expect_equal

        SEEN = {}

        @question("carry.find", points=10)
        def test_find(student):
            SEEN["listing"] = student.carry.listing()
            expect_equal(student.carry.find(), [])

        @question("carry.put", points=10)
        def test_put(student):
            expect_equal(student.carry.put(), [])

        @question("carry.again", points=10)
        def test_again(student):
            expect_equal(student.carry.find(), [])
            expect_equal(student.carry.listing(), SEEN["listing"])

        @question("carry.last", points=10)
        def test_last(student):
            student.carry.put()  # what a submission's last question leaves
    """,
    "assignments/carry/.keep": "",
    "solutions/carry/carry.py": "",
}


@pytest.mark.parametrize("level", LEVELS)
def test_no_key_attribute_or_time_carries_a_note_to_a_later_question_or_submission(make_course, level):
    """The kernel refuses keys and extended attributes to every question (a seccomp filter the
    keeper installs): a key readable by anyone, left by a submission's last question, reached the
    next submission's, in this batch or a later one, and an attribute on the home each later
    question of the worker. The times of the home and its output are set back after each question."""
    root = make_course({**CARRY_SUITE, "subs/a_first/carry.py": CARRIER, "subs/b_second/carry.py": CARRIER})
    assignment = load_assignment(root, "carry")
    for run in range(2):  # the second batch finds nothing of the first's either
        sources = [Source.from_path(root / "subs" / name) for name in ("a_first", "b_second")]
        results = {result.name: result for result in grade_sources(assignment, sources, jobs=1,
                                                                     isolation=jail.choose(level))}
        for result in results.values():
            assert not result.error, result.error
            for qid in ("carry.find", "carry.put", "carry.again"):
                assert result.question(qid).passed, (run, result.name, qid, result.question(qid).feedback)


NEIGHBOUR = '''
import socket

KEPT = []


def listen():
    """An abstract unix name and a port on 127.0.0.1, kept open while this question runs."""
    named = socket.socket(socket.AF_UNIX)
    named.bind("\\0checks-neighbour")
    named.listen()
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    port.listen()
    KEPT.extend((named, port))
    return port.getsockname()[1]


def reach(port):
    """Which of listen's this process can connect to."""
    reached = []
    for family, address, name in ((socket.AF_UNIX, "\\0checks-neighbour", "name"),
                                  (socket.AF_INET, ("127.0.0.1", port), "port")):
        try:
            with socket.socket(family) as client:
                client.settimeout(2)
                client.connect(address)
                reached.append(name)
        except OSError:
            pass
    return reached
'''


@pytest.mark.parametrize("level", LEVELS)
def test_a_submission_graded_at_the_same_time_is_out_of_reach_of_the_network(level):
    """Each worker has a network namespace of its own, its loopback up: a question reaches its own
    sockets, and none of a worker serving another submission meanwhile (the workers of a zygote
    shared its namespace, jailed or not: two submissions of a batch talked over both)."""
    config = WorkerConfig(files={"neighbour.py": NEIGHBOUR.encode()})
    with Zygote(jail.choose(level)) as zygote:
        listening, other = (Student(QuestionSandbox(SubmissionWorkers(zygote), config, timeout=30),
                                    frozenset({"neighbour"})) for _ in range(2))
        port = listening.neighbour.listen()
        assert listening.neighbour.reach(port) == ["name", "port"]  # the test can tell
        assert other.neighbour.reach(port) == []
        for student in (listening, other):
            student._sandbox.close()


PROCESSES = '''
import os


def others():
    """The processes in /proc of any uid but this one's (as the kernel shows them to it)."""
    seen = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                owner = os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue
            if owner != os.getuid():
                seen.append(owner)
    return sorted(set(seen))
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="a submission has a uid and a mount namespace of its own as root only")
@pytest.mark.parametrize("level", LEVELS)
def test_a_question_sees_no_process_of_another_uid(make_course, level):
    """Its /proc shows the processes of its own uid only: not the grader's, the zygote's, nor
    those of a submission graded at the same time (a fresh attacker read their ids and command
    lines, jailed as well)."""
    root = make_course({
        "autograder/procs/assignment.toml": 'files = ["procs.py"]\n',
        "autograder/procs/test_procs.py": """
            from checks.suite import question, expect_equal

            @question("procs.others", points=10)
            def test_others(student):
                expect_equal(student.procs.others(), [])
        """,
        "assignments/procs/.keep": "",
        "solutions/procs/procs.py": "",
        "subs/a/procs.py": PROCESSES,
        "subs/b/procs.py": PROCESSES,
    })
    sources = [Source.from_path(root / "subs" / name) for name in ("a", "b")]
    for result in grade_sources(load_assignment(root, "procs"), sources, jobs=2, isolation=jail.choose(level)):
        question = result.question("procs.others")
        assert question.passed and not result.error, (result.name, result.error, question.feedback)
