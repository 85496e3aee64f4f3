"""Grading on Dask against the local pool, on this machine, in the same run.

Grades the same generated submissions (grade_throughput.generate: reference, stubs, broken, each
mutant, in turn) four ways, each into a fresh folder with the gradebook written by this process:
the local pool with 1 and with 2 jobs, and a LocalCluster of 1 and of 2 single-threaded worker
processes (`checks grade --scheduler`'s DaskGrader). For each: the time to the first result
(start-up: the warm pools), the steady interval between results after it, and core-seconds per
submission (interval x submissions in flight). The scheduler's overhead per submission is the
1-worker Dask interval minus the 1-job local one (both grade one submission at a time).

    python benchmarks/dask_throughput.py --assignment 01_tensors -n 40
    python benchmarks/dask_throughput.py --assignment 02_autograd -n 12 --local-only
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from distributed import LocalCluster

from checks.course.assignment import find_course_root, load_assignment
from checks.executors.dask_grader import DaskGrader, connect
from checks.grading.batch import BatchListener, grade_to_folder
from grade_throughput import ROOT, generate


class Clock(BatchListener):
    """When each result arrived, from the start of the batch."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.times: list[float] = []

    def graded(self, result, done, total) -> None:  # noqa: ANN001 - BatchListener's signature
        self.times.append(time.perf_counter() - self.start)


def measure(label: str, grade, in_flight: int) -> dict:  # noqa: ANN001 - grade(listener) runs a batch
    clock = Clock()
    summary = grade(clock)
    assert not summary.failed, [r.error for r in summary.failed]
    first, last, count = clock.times[0], clock.times[-1], len(clock.times)
    interval = (last - first) / max(1, count - 1)
    row = {"label": label, "total": last, "first": first, "interval": interval, "core_s": interval * in_flight}
    print(f"{label:<18} {last:7.1f} s in all   first result {first:5.1f} s   then {interval:.3f} s a submission"
          f"   {row['core_s']:.3f} core-s each", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="01_tensors")
    parser.add_argument("-n", type=int, default=40, help="submissions (default 40)")
    parser.add_argument("--local-only", action="store_true", help="only the local pool (per-submission costs)")
    args = parser.parse_args()
    assignment = load_assignment(find_course_root(ROOT), args.assignment)
    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(args.assignment, args.n, Path(tmp) / "subs")
        print(f"{args.n} submissions of {args.assignment}")
        rows = {}
        for jobs in (1, 2):
            rows[f"local {jobs}"] = measure(f"local, {jobs} job(s)", lambda clock, jobs=jobs: grade_to_folder(
                assignment, paths, Path(tmp) / f"local{jobs}", jobs=jobs, listener=clock), jobs)
        if args.local_only:
            return
        for workers in (1, 2):
            with LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                              dashboard_address=None, silence_logs=50) as cluster, \
                    connect(cluster.scheduler_address) as client:
                rows[f"dask {workers}"] = measure(f"dask, {workers} worker(s)", lambda clock: grade_to_folder(
                    assignment, paths, Path(tmp) / f"dask{workers}", grader=DaskGrader(client), listener=clock),
                    workers)
    local1, local2, dask1, dask2 = (rows[k] for k in ("local 1", "local 2", "dask 1", "dask 2"))
    print(f"dask 2 workers / dask 1 worker: {dask1['interval'] / dask2['interval']:.2f}x the throughput")
    print(f"dask 2 workers / local 2 jobs:  {local2['interval'] / dask2['interval']:.2f}x the throughput")
    print(f"scheduler overhead: {1000 * (dask1['interval'] - local1['interval']):+.0f} ms a submission "
          f"(dask 1 worker {dask1['interval']:.3f} s against local 1 job {local1['interval']:.3f} s)")


if __name__ == "__main__":
    main()
