"""plain_fork: the grader's forks of a one-thread process skip CPython's at-fork hooks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# run in a fresh interpreter: a pytest-xdist worker runs threads of its own, and plain_fork then
# falls back to os.fork (which the script checks too)
SCRIPT = textwrap.dedent("""
    import json, os, random, sys, threading
    from checks.sandbox.forking import plain_fork

    hooked = []
    os.register_at_fork(after_in_child=lambda: hooked.append(True))

    def child_says(**options):
        read_end, write_end = os.pipe()
        pid = plain_fork(**options)
        if pid == 0:
            os.write(write_end, json.dumps({"hook": bool(hooked), "draw": random.random()}).encode())
            os._exit(0)
        os.close(write_end)
        os.waitpid(pid, 0)
        with os.fdopen(read_end) as said:
            return json.loads(said.read())

    random.seed(7)
    expected = random.Random(7).random()
    facts = {"alone": child_says(), "alone, not reseeded": child_says(reseed_random=False)}
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    facts["beside a thread"] = child_says(reseed_random=False)
    stop.set()
    thread.join()
    import _thread, time  # a thread threading does not count (execnet's, in a pytest-xdist worker)
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(done.acquire, ())
    time.sleep(0.05)
    facts["beside a _thread thread"] = child_says(reseed_random=False)
    done.release()
    facts["parent draws"] = random.random()
    facts["expected"] = expected
    print(json.dumps(facts))
""")


@pytest.fixture(scope="module")
def facts() -> dict:
    """What the script's children said, run once for the module's tests."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_a_plain_fork_skips_the_at_fork_hooks_only_while_one_thread_runs(facts):
    """A hook registered with os.register_at_fork does not run in a plain_fork child of a process
    with one thread, and does where a second thread runs (os.fork's answer to held locks)."""
    assert not facts["alone"]["hook"] and not facts["alone, not reseeded"]["hook"]
    assert facts["beside a thread"]["hook"]
    # a plain fork beside a thread threading cannot see once left a CI child waiting for a GIL forever
    assert facts["beside a _thread thread"]["hook"]


def test_a_plain_fork_reseeds_pythons_generator_unless_told_not_to(facts):
    """As os.fork does, the child's random draws are its own; with reseed_random=False it draws what
    its parent would (a question process starts from its keeper's seeded generator)."""
    assert facts["alone, not reseeded"]["draw"] == facts["expected"] == facts["parent draws"]
    assert facts["alone"]["draw"] != facts["expected"]
