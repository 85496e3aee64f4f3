"""How fast any grader could grade 02_autograd at best: its deep chains alone, against a fresh pytest.

engine.deep_chain runs the student's engine through two chains of CHAIN_LENGTH ops (CURRICULUM.md:
chains of at least 1,500 ops at the recursion limit of 1,000), forward and backward.
That is the student's code, not the grader's, and a grader cannot skip it: it costs the same in a
warm grader as in a fresh `python -m pytest`. So the fresh figure divided by the chains' figure is
a ceiling on grade_throughput.py's ratio for a submission that runs them, whatever the grader does
(every other question's student code comes on top). Both are CPU seconds, measured here in one
run on the reference solution (the ceiling is also printed for the shorter lengths of SHORTER
below the suite's, where a suite has longer chains than 1,500):

    python benchmarks/deep_chain_bound.py
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

from grade_throughput import ROOT, fresh_processes, generate

ASSIGNMENT = "02_autograd"
SHORTER = (5_000, 3_000, 1_500)


def chain_seconds(drivers: types.ModuleType, test_engine: types.ModuleType, lengths: list[int],
                  repeats: int) -> dict[int, float]:
    """CPU seconds of both deep chains of the suite, cut to each length, run by the reference engine
    in this process (its heap frozen first, as a sandbox worker's is): the median of `repeats`."""
    gc.collect()
    gc.freeze()
    figures = {}
    for length in lengths:
        runs = []
        for _ in range(repeats):
            started = time.process_time()
            for x_data, w_data, ops, *_ in test_engine.DEEP_CHAINS.values():
                drivers.deep_chain(x_data, w_data, ops[:length])
            runs.append(time.process_time() - started)
        figures[length] = statistics.median(runs)
    return figures


def _suite() -> tuple[types.ModuleType, types.ModuleType]:
    """The suite's driver module (which the sandbox runs next to the student's engine) and its
    test_engine (which builds the chains, DEEP_CHAINS, as it is imported); `import engine` finds
    the reference solution's."""
    sys.path[:0] = [str(ROOT / "solutions" / ASSIGNMENT), str(ROOT / "autograder" / ASSIGNMENT)]
    import drivers
    import test_engine
    return drivers, test_engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh-runs", type=int, default=3, help="fresh pytest runs on the reference")
    parser.add_argument("--repeats", type=int, default=5, help="runs of the chains at each length")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="checks-bench-") as temp:
        reference = generate(ASSIGNMENT, 1, Path(temp) / "subs")  # the first variant is the reference
        fresh = statistics.median(fresh_processes(ASSIGNMENT, reference, 1)[1] for _ in range(args.fresh_runs))
    drivers, test_engine = _suite()
    full = test_engine.CHAIN_LENGTH
    chains = chain_seconds(drivers, test_engine, [full, *(n for n in SHORTER if n < full)], args.repeats)
    print(f"{ASSIGNMENT}, reference solution; CPU seconds a submission (medians)")
    print(f"fresh `python -m pytest`: {fresh:.3f} s ({args.fresh_runs} runs)")
    print(f"{'chain length':>12} {'both chains':>12} {'ceiling':>9}")
    for length, seconds in chains.items():
        note = "  (the suite's, CURRICULUM.md's)" if length == full else ""
        print(f"{length:12,} {seconds:12.3f} {fresh / seconds:8.1f}x{note}")
    print("(ceiling: fresh / both chains, the most any grader could gain on a submission that runs them)")


if __name__ == "__main__":
    main()
