"""sandbox/stack_cap.py: the kernel, not the interpreter, holds how deep a capped process may call.

Each case runs in a fresh interpreter (a cap is for good), inside in_own_chunk as a question
process runs: what recursion gets through with the cap, and without it, whatever recursion limit
the code sets; and that code that loops, allocates and forks is untouched.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import textwrap

import pytest

from checks.sandbox import zygote

PRELUDE = """
import os, sys
import numpy as np  # imported before the cap, as in a zygote, its BLAS on one thread
from checks.sandbox import stack_cap

def recurse(depth):
    return 0 if depth == 0 else 1 + recurse(depth - 1)

def nested(depth):
    if depth:
        yield from nested(depth - 1)
    yield depth

def main():
{body}

sys.setrecursionlimit(1_000_000)
stack_cap.in_own_chunk(main)
"""


def run(body: str, *, cap: bool = True) -> subprocess.CompletedProcess:
    lines = ["    assert stack_cap.cap() is None"] * cap + textwrap.indent(textwrap.dedent(body), "    ").splitlines()
    environment = {**os.environ, **{name: "1" for name in zygote.BLAS_THREADS}}  # as in a zygote
    return subprocess.run([sys.executable, "-c", PRELUDE.format(body="\n".join(lines))], capture_output=True,
                          text=True, timeout=60, env=environment)


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"),
                                reason="the filter knows Linux on x86-64 and aarch64")


def test_code_that_loops_allocates_and_forks_is_untouched_by_the_cap():
    done = run("""
        total = sum(recurse(50) for _ in range(20_000))  # shallow calls, many times
        big = np.zeros(4_000_000) + 1.0  # 32 MB, mapped by malloc
        many = {i: str(i) for i in range(300_000)}  # pymalloc's arenas
        pid = os.fork()  # a process, not a thread: allowed
        if pid == 0:
            os._exit(7)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
        product = np.ones((300, 300)) @ np.ones((300, 300))
        print(total, big.sum(), len(many), product[0, 0])
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1000000", "4000000.0", "300000", "300.0"]


@pytest.mark.parametrize("depth", [2_000, 20_000])
def test_recursion_deeper_than_a_few_hundred_calls_fails_whatever_the_recursion_limit(depth):
    capped = run(f"""
        print(recurse(100))
        try:
            recurse({depth})
        except (SystemError, MemoryError) as error:
            print("stopped", type(error).__name__)
    """)
    assert capped.returncode == 0, capped.stderr
    assert capped.stdout.split()[:2] == ["100", "stopped"]
    free = run(f"print(recurse({depth}))", cap=False)  # the same at the same limit, uncapped
    assert free.returncode == 0 and free.stdout.strip() == str(depth), free.stderr


def test_recursion_in_generators_crashes_the_process():
    crashed = run("print(sum(nested(20_000)))")
    assert crashed.returncode == -signal.SIGSEGV, (crashed.returncode, crashed.stdout, crashed.stderr)
    assert run("print(sum(nested(20_000)))", cap=False).returncode == 0


def test_recursion_in_c_code_alone_is_held_by_the_c_stack_left_whatever_it_had_grown_to():
    """Iterators nested 50,000 deep push no Python frame and need a few MiB of C stack: far more
    than C_HEADROOM, though far less than the 8 MiB an uncapped process may grow its stack to."""
    body = """
        import itertools
        nested = iter((1,))
        for _ in range(50_000):
            nested = itertools.chain(nested, ())
        print(next(nested))
    """
    assert run(body).returncode == -signal.SIGSEGV
    free = run(body, cap=False)
    assert free.returncode == 0 and free.stdout.strip() == "1", free.stderr


def test_the_capped_code_has_room_for_small_objects_in_pymalloc():
    """pymalloc's arenas are 1 MiB, which the filter refuses; the cap leaves pools free instead:
    else small objects go to malloc, each after a failed attempt to map an arena (a system call)."""
    done = run("""
        sys._debugmallocstats()
        objects = [(i, str(i)) for i in range(20_000)]  # some 2 MiB of small objects
        sys._debugmallocstats()
    """)
    assert done.returncode == 0, done.stderr
    in_blocks = [int(line.split("=")[1].replace(",", "")) for line in done.stderr.splitlines()
                 if line.startswith("# bytes in allocated blocks")]
    assert len(in_blocks) == 2 and in_blocks[1] - in_blocks[0] > 1 << 20, in_blocks


def test_no_thread_starts():
    done = run("""
        import threading
        try:
            threading.Thread(target=recurse, args=(3_000,)).start()
        except RuntimeError as error:
            print("refused:", error)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: can't start new thread"), done.stdout


def test_a_frame_too_large_for_the_room_left_is_given_no_chunk_of_its_own():
    """A function of 66,000 locals would get a 1 MiB chunk, and room for 1,500 calls after it."""
    body = """
        source = "def large(call):\\n    return call()\\n    if 0:\\n" + "".join(f"        w{i} = 0\\n" for i in range(66_000))
        namespace = {}
        exec(source, namespace)
        try:
            print(namespace["large"](lambda: recurse(1_500)))
        except (SystemError, MemoryError) as error:
            print("stopped", type(error).__name__)
    """
    capped, free = run(body), run(body, cap=False)
    assert capped.returncode == 0 and capped.stdout.startswith("stopped"), capped.stdout + capped.stderr
    assert free.returncode == 0 and free.stdout.strip() == "1500", free.stdout + free.stderr
