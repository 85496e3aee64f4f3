"""Grading throughput: the warm forking grader against a fresh `python -m pytest` per submission.

Both run the same hidden suite on generated submissions (reference, stubs, each mutant, and a
broken file, in turn), with the same number of submissions in flight, in the same run, for each
assignment in turn (all three by default). Both are also given in CPU seconds a submission: the
machine's busy time over the phase (/proc/stat; the sandbox's workers are reaped by the kernel, so
no process's own account holds their time), which only other work on the machine changes: run it
on a machine doing nothing else. The warm grader grades all N as a class would be graded, into an output folder (gradebook and reports included); its figure is the steady state,
from the moment every slot has delivered a result to the last one (start-up is printed apart). A
fresh process costs the same for every submission, so it runs on an even sample (--fresh-n).

While the warm grader runs, a separate sampler process adds up the proportional set size (PSS,
/proc/PID/smaps_rollup) of the grader's whole process tree: the grading process, its sandbox
zygote and workers, the session child and the grading children. PSS, not RSS: forked children
share most of their pages, and RSS would count each shared page once per process. Reading
smaps walks each process's page tables: the sampler's own CPU time (some 3 % of the machine's)
is the measurement's, and is taken out of the warm grader's CPU figures.

Last, `checks test 01_tensors` on the reference (the student's command, public suite) is timed
three times, next to a bare `import torch`:

    python benchmarks/grade_throughput.py                       # all three, 200 each, 2 in flight
    python benchmarks/grade_throughput.py --assignment 02_autograd -n 60 --fresh-n 8
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from checks.authoring.build import release_files
from checks.authoring.verify import load_mutants
from checks.course.assignment import find_course_root, load_assignment
from checks.course.submissions import read_submission
from checks.grading.batch import BatchListener, grade_to_folder

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ("01_tensors", "02_autograd", "03_mlp")

# Runs as its own process (never a thread here: the grader forks from this process, and forking
# a process with threads can deadlock the child). Prints the peak, in KiB, when stdin closes.
SAMPLER = r"""
import os, select, sys
root, interval, me = int(sys.argv[1]), float(sys.argv[2]), os.getpid()
def tree():
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid != me:
            found.append(pid)
            todo += children.get(pid, [])
    return found
def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
peak = peak_count = 0
while True:
    pids = tree()
    total = sum(pss(pid) for pid in pids)
    if total > peak:
        peak, peak_count = total, len(pids)
    if select.select([sys.stdin], [], [], interval)[0]:
        break
own = os.times()
print(peak, peak_count, own.user + own.system)
"""


@dataclass
class Figures:
    assignment: str
    jobs: int
    warm_n: int
    warm_total: float
    warm_first: float
    warm_steady: float  # seconds a submission, once every slot has delivered
    warm_cpu: float  # the machine's CPU seconds a submission, the grader's start-up spread over all
    warm_cpu_steady: float  # the same at steady state: what a submission costs once the grader is warm
    fresh_n: int
    fresh_rate: float  # seconds a submission
    fresh_cpu: float  # CPU seconds a submission
    pss_peak_mib: float
    pss_processes: int

    @property
    def ratio(self) -> float:
        return self.fresh_rate / self.warm_steady

    @property
    def cpu_ratio(self) -> float:
        """The same comparison in CPU time, which waiting and scheduling do not change."""
        return self.fresh_cpu / self.warm_cpu


def cpu_seconds() -> float:
    """The machine's busy CPU time so far (/proc/stat): no process's own account has it all, as
    the sandbox's workers are reaped by the kernel (their time reaches no parent). Elsewhere, the
    CPU time of this process and of every child it has waited for."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except (OSError, ValueError):
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def generate(assignment_name: str, count: int, into: Path) -> list[Path]:
    """`count` submission folders cycling through correct, stub, mutant and broken variants, each a
    whole student folder: the release (notebook, public tests) with the student's files in it."""
    assignment = load_assignment(find_course_root(ROOT), assignment_name)
    release = release_files(assignment.solution_dir)
    solution = read_submission(assignment.solution_dir).files
    reference = {name: solution.get(name, data) for name, data in release.items()}
    first_file = assignment.files[0]
    variants = [("correct", reference), ("stubs", release),
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


class PssSampler:
    """The peak of the summed PSS of this process's tree (the sampler itself left out)."""

    def __init__(self, interval: float) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", SAMPLER, str(os.getpid()), str(interval)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def stop(self) -> tuple[float, int, float]:
        """(peak in MiB, how many processes the tree had at that moment, the CPU seconds the
        sampler itself took: reading smaps walks every process's page tables, which is the
        benchmark's work, not the grader's)."""
        output, _ = self.process.communicate("")
        peak_kib, count, own_cpu = output.split()
        return int(peak_kib) / 1024, int(count), float(own_cpu)


def warm(assignment_name: str, paths: list[Path], jobs: int, out: Path,
         pss_interval: float) -> tuple[float, float, float, float, float, float, int]:
    """(seconds in all, until the first result, a submission at steady state, CPU seconds a
    submission in all and at steady state, PSS peak MiB, processes)."""
    assignment = load_assignment(find_course_root(ROOT), assignment_name)
    finished: list[float] = []
    cpu_at: list[float] = []

    class Stamps(BatchListener):
        def graded(self, result, done, total):  # noqa: ANN001 - BatchListener's signature
            finished.append(time.perf_counter())
            cpu_at.append(cpu_seconds())

    sampler = PssSampler(pss_interval)
    started, cpu_before = time.perf_counter(), cpu_seconds()
    try:
        summary = grade_to_folder(assignment, paths, out, jobs=jobs, regrade=True, listener=Stamps())
        elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu_before
    finally:
        peak, count, sampler_cpu = sampler.stop()
    assert len(summary.graded) == len(paths) and not summary.failed, [r.error for r in summary.failed]
    # the sampler's CPU is the measurement's, not the grader's: taken out, at its mean rate
    sampler_rate = sampler_cpu / max(time.perf_counter() - started, 1e-9)
    warm_from = min(jobs, len(finished) - 2)  # every slot has delivered once: the pool is warm
    steady = (finished[-1] - finished[warm_from]) / (len(finished) - 1 - warm_from)
    steady_cpu = (cpu_at[-1] - cpu_at[warm_from] - sampler_rate * (finished[-1] - finished[warm_from])) \
        / (len(cpu_at) - 1 - warm_from)
    return (elapsed, finished[0] - started, steady, (cpu - sampler_rate * elapsed) / len(paths), steady_cpu, peak,
            count)


def fresh_processes(assignment_name: str, paths: list[Path], jobs: int) -> tuple[float, float]:
    """(seconds in all, CPU seconds in all)."""
    suite = ROOT / "autograder" / assignment_name

    def one(path: Path) -> None:
        # the test runner's own plugin (pytest-xdist, for `make test`) is no part of grading
        subprocess.run([sys.executable, "-m", "pytest", str(suite), "-q", "-p", "checks.suites.standalone",
                        "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:xdist.looponfail",
                        "--submission", str(path), "--rootdir", str(suite), "-c", "/dev/null"],
                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

    started, cpu_before = time.perf_counter(), cpu_seconds()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, paths))
    return time.perf_counter() - started, cpu_seconds() - cpu_before


def measure(assignment_name: str, n: int, fresh_n: int, jobs: int, pss_interval: float) -> Figures:
    with tempfile.TemporaryDirectory(prefix="checks-bench-") as temp:
        paths = generate(assignment_name, n, Path(temp) / "subs")
        sample = paths[::max(1, len(paths) // fresh_n)][:fresh_n]
        total, first, steady, warm_cpu, steady_cpu, peak, count = warm(assignment_name, paths, jobs,
                                                                       Path(temp) / "out", pss_interval)
        fresh_seconds, fresh_cpu = fresh_processes(assignment_name, sample, jobs)
    return Figures(assignment_name, jobs, len(paths), total, first, steady, warm_cpu, steady_cpu, len(sample),
                   fresh_seconds / len(sample), fresh_cpu / len(sample), peak, count)


def time_checks_test(runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds of `checks test 01_tensors solutions/01_tensors`, and of `python -c 'import torch'`."""
    checks = Path(sys.executable).with_name("checks")
    command = [str(checks), "test", "01_tensors", str(ROOT / "solutions" / "01_tensors")]
    test_times, import_times = [], []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        test_times.append(time.perf_counter() - started)
        assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        import_times.append(time.perf_counter() - started)
    return test_times, import_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS,
                        help="an assignment to measure (repeat for more; default: all three)")
    parser.add_argument("-n", type=int, default=200, help="submissions the warm grader grades, per assignment")
    parser.add_argument("--fresh-n", type=int, default=16, help="of those, how many the fresh processes grade")
    parser.add_argument("--jobs", type=int, default=2, help="submissions in flight, for both methods")
    parser.add_argument("--pss-interval", type=float, default=0.2, help="seconds between PSS samples")
    parser.add_argument("--test-runs", type=int, default=3, help="timed runs of `checks test 01_tensors` (0: none)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores", flush=True)
    rows = []
    for name in args.assignment or ASSIGNMENTS:
        figures = measure(name, args.n, args.fresh_n, args.jobs, args.pss_interval)
        rows.append(figures)
        print(f"{name}: {figures.warm_n} warm ({figures.warm_total:.1f} s in all, first result after "
              f"{figures.warm_first:.1f} s), {figures.fresh_n} fresh; {args.jobs} in flight", flush=True)
    print()
    print(f"{'':12} {'seconds a submission':^27} {'CPU seconds a submission':^27}")
    print(f"{'assignment':12} {'warm':>8} {'fresh':>8} {'ratio':>9} {'warm':>8} {'fresh':>8} {'ratio':>9} "
          f"{'steady':>8} {'PSS peak':>10}")
    for f in rows:
        print(f"{f.assignment:12} {f.warm_steady:8.3f} {f.fresh_rate:8.3f} {f.ratio:8.1f}x "
              f"{f.warm_cpu:8.3f} {f.fresh_cpu:8.3f} {f.cpu_ratio:8.1f}x {f.warm_cpu_steady:8.3f} "
              f"{f.pss_peak_mib:6.0f} MiB  ({f.pss_processes} processes)")
    print("(steady: the warm grader's CPU seconds a submission once every slot has delivered, start-up left out)")
    if args.test_runs:
        test_times, import_times = time_checks_test(args.test_runs)
        print(f"checks test 01_tensors: {', '.join(f'{t:.2f}' for t in test_times)} s wall "
              f"(import torch alone: {', '.join(f'{t:.2f}' for t in import_times)} s)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
