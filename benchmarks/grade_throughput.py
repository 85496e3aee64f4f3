"""Grading throughput: the warm forking grader against a fresh `python -m pytest` per submission.

Both run the same hidden suite on generated submissions (reference, stubs, each mutant, and a
broken file, in turn), with the same number of submissions in flight, in the same run. The warm
grader grades all N, start-up included, as a class would be graded; a fresh process costs the
same for every submission, so it runs on an even sample of them (--fresh-n):

    python benchmarks/grade_throughput.py --assignment 01_tensors -n 200 --fresh-n 16 --jobs 2
"""

from __future__ import annotations

import argparse
import itertools
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from checks.grading.batch import BatchListener, grade_to_folder
from checks.authoring.build import release_files
from checks.course.assignment import find_course_root, load_assignment
from checks.course.submissions import read_submission
from checks.authoring.verify import load_mutants

ROOT = Path(__file__).resolve().parents[1]


def generate(assignment_name: str, count: int, into: Path) -> list[Path]:
    """`count` submission folders cycling through correct, stub, mutant and broken variants."""
    assignment = load_assignment(find_course_root(ROOT), assignment_name)
    reference = read_submission(assignment.solution_dir).files
    first_file = assignment.files[0]
    variants = [("correct", reference), ("stubs", release_files(assignment.solution_dir)),
                ("broken", {**reference, first_file: b"def broken(:\n"})]
    variants += [(f"mutant-{m.name}", m.apply(reference)) for m in load_mutants(assignment)]
    paths = []
    for index, (label, files) in zip(range(count), itertools.cycle(variants)):
        folder = into / f"s{index:03d}-{label}"
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        paths.append(folder)
    return paths


def warm(assignment_name: str, paths: list[Path], jobs: int, out: Path) -> tuple[float, float]:
    """(seconds in all, seconds until the first submission was graded)."""
    assignment = load_assignment(find_course_root(ROOT), assignment_name)
    started = time.perf_counter()
    first: list[float] = []

    class FirstResult(BatchListener):
        def graded(self, result, done, total):  # noqa: ANN001 - BatchListener's signature
            if not first:
                first.append(time.perf_counter() - started)

    summary = grade_to_folder(assignment, paths, out, jobs=jobs, regrade=True, listener=FirstResult())
    elapsed = time.perf_counter() - started
    assert len(summary.graded) == len(paths) and not summary.failed, [r.error for r in summary.failed]
    return elapsed, first[0]


def fresh_processes(assignment_name: str, paths: list[Path], jobs: int) -> float:
    suite = ROOT / "autograder" / assignment_name

    def one(path: Path) -> None:
        subprocess.run([sys.executable, "-m", "pytest", str(suite), "-q", "-p", "checks.suites.standalone",
                        "-p", "no:cacheprovider", "--submission", str(path), "--rootdir", str(suite), "-c", "/dev/null"],
                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, paths))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01_tensors")
    parser.add_argument("-n", type=int, default=200, help="submissions the warm grader grades")
    parser.add_argument("--fresh-n", type=int, default=16, help="of those, how many the fresh processes grade")
    parser.add_argument("--jobs", type=int, default=2, help="submissions in flight, for both methods")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="checks-bench-") as temp:
        paths = generate(args.assignment, args.n, Path(temp) / "subs")
        sample = paths[::max(1, len(paths) // args.fresh_n)][:args.fresh_n]
        warm_seconds, first_seconds = warm(args.assignment, paths, args.jobs, Path(temp) / "out")
        warm_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        fresh_seconds = fresh_processes(args.assignment, sample, args.jobs)
        fresh_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    warm_rate, fresh_rate = warm_seconds / len(paths), fresh_seconds / len(sample)
    print(f"{args.assignment}: {args.jobs} submissions in flight")
    print(f"  warm forking grader   {len(paths):4d} submissions {warm_seconds:7.2f} s  "
          f"{warm_rate:6.3f} s/submission  "
          f"(first result after {first_seconds:.1f} s)  peak RSS: parent {self_peak:.0f} MiB, "
          f"largest child {warm_peak:.0f} MiB")
    print(f"  fresh pytest process  {len(sample):4d} submissions {fresh_seconds:7.2f} s  "
          f"{fresh_rate:6.3f} s/submission  "
          f"peak RSS: largest process {fresh_peak:.0f} MiB")
    print(f"  speed-up              {fresh_rate / warm_rate:7.1f}x")


if __name__ == "__main__":
    main()
