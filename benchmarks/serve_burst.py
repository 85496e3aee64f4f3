"""The course server under a deadline burst, against `checks grade` on the same submissions.

In one run, on one machine:
1. `checks grade 01_tensors` on N submission folders (the example students, the reference and the
   stubs, in turn), --jobs J: its wall time, start-up included.
2. `checks serve` on a course with S students, J grading slots, SQLite, one process, warm before
   the burst: S clients at once on loopback upload the same N submissions (N/S each, one after
   another, each waiting for its feedback before the next) through the JSON API: the time from
   the first upload to the last feedback (each client waits with a long poll, as `checks submit`
   does, for what the student may see), and its ratio to (1); then the time until every hidden
   suite is graded too (a staff account watches the queue), and its ratio to (1). Twice: on a
   course that shows the hidden results at once (the default: they are the feedback), and on one
   that shows them after the due date (the feedback is the public checks', which the server runs
   first; the idle figures come from the first).
3. The same burst on the multi-process deployment: a PostgreSQL (Debian's binaries, initdb in a
   temp folder, as tests/postgres.py runs it), a local Dask cluster of J single-threaded workers,
   and two `checks serve --scheduler` processes, the clients split across both; its ratio to (1)
   and to (2). Skipped, saying why, where PostgreSQL cannot run.
4. On each idle deployment: M submissions one at a time, upload to feedback (p50, p95), beside
   the server's own overhead per request: the upload's acknowledgement, a status request, and the
   feedback latency less the grader's own time for that submission (p50, p95).

Against a deployment already running (docs/server-deploy.md: the compose file, or the listed
commands), name its URL(s) and the tokens CSV that `checks roster import` wrote: only (1), the
burst and the idle figures are measured, and nothing is started here.

    python benchmarks/serve_burst.py                  # 300 submissions, 50 clients, 2 slots
    python benchmarks/serve_burst.py -n 60 --clients 10 --idle 10
    python benchmarks/serve_burst.py --url http://127.0.0.1:8080 --tokens course/tokens.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from cluster import local_dask  # noqa: E402
from postgres import PostgresMissing, running_postgres  # noqa: E402
from serving import add_staff, course_folder, folder_zip, start_server  # noqa: E402

EXAMPLES = ROOT / "examples" / "01_tensors"
KINDS = ("ada_lovelace", "ben_bitdiddle", "cy_dee", "reference", "stubs")


def submissions(folder: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        path = folder / f"s{i:03}"
        path.mkdir(parents=True)
        for name in ("strides.py", "broadcasting.py", "quiz.toml"):
            shutil.copy(EXAMPLES / KINDS[i % len(KINDS)] / name, path / name)
        paths.append(path)
    return paths


def grade_baseline(paths: list[Path], out: Path, jobs: int) -> float:
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "checks", "--course", str(ROOT), "grade", "01_tensors", *map(str, paths),
                    "--out", str(out), "--jobs", str(jobs)], check=True, env=environment, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def tokens_of(folder: Path) -> list[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-m", "checks", "roster", "import", str(folder / "roster.csv"), "--tokens",
                    str(folder / "tokens.csv")], check=True, env=environment, stdout=subprocess.DEVNULL)
    return [row["token"] for row in csv.DictReader((folder / "tokens.csv").open())]


def upload_and_wait(http: httpx.Client, data: bytes, timings: dict[str, list[float]] | None = None) -> dict:
    started = time.perf_counter()
    reply = http.post("/api/assignments/01_tensors/submissions", files={"files": ("01_tensors.zip", data)})
    acknowledged = time.perf_counter()
    reply.raise_for_status()
    submission_id = reply.json()["id"]
    while True:  # as `checks submit` waits: a long poll, answered when what the student may see is recorded
        status = http.get(f"/api/submissions/{submission_id}", params={"wait": 25}).json()
        if status.get("settled") or status["status"] not in ("queued", "grading"):
            break
    done = time.perf_counter()
    if timings is not None:
        asked = time.perf_counter()
        http.get(f"/api/submissions/{submission_id}").raise_for_status()
        timings["status"].append(time.perf_counter() - asked)
        timings["ack"].append(acknowledged - started)
        timings["feedback"].append(done - started)
        timings["overhead"].append(done - started - (status.get("result") or status["public"])["seconds"])
    return status


def graded(url: str, staff: str, started: float) -> float:
    """Seconds from `started` until the server's queue is empty: every hidden suite graded too."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {staff}"}, timeout=60) as http:
        while True:
            view = http.get("/api/class").raise_for_status().json()
            if not view["queued"] and not view["grading"]:
                return time.perf_counter() - started
            time.sleep(0.25)


def burst(urls: list[str], tokens: list[str], zips: list[bytes],
          staff: str | None = None) -> tuple[float, float | None]:
    """Every client at once, client i through urls[i % len(urls)]: (seconds to the last feedback,
    seconds until every submission is graded, hidden suites included; None without a staff token).
    Feedback is what `checks submit` waits for: the public checks' result while the hidden ones
    are not shown (the example course's due date is years away), else the grade."""
    per_client = [zips[i::len(tokens)] for i in range(len(tokens))]
    failures: list[str] = []
    barrier = threading.Barrier(len(tokens) + 1)

    def client(url: str, token: str, mine: list[bytes]) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=600) as http:
            barrier.wait()
            for data in mine:
                status = upload_and_wait(http, data)
                # still queued: its hidden suite, behind the feedback
                if status["status"] not in ("done", "queued", "grading"):
                    failures.append(status["status"])

    threads = [threading.Thread(target=client, args=(urls[i % len(urls)], token, mine))
               for i, (token, mine) in enumerate(zip(tokens, per_client))]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} submissions were not graded: {failures[:5]}")
    return elapsed, None if staff is None else graded(urls[0], staff, started)


def burst_line(what: str, n: int, clients: int, times: tuple[float, float | None], baseline: float) -> str:
    feedback, done = times
    line = (f"{what}: {n} submissions from {clients} concurrent clients: last feedback after {feedback:.1f} s; "
            f"ratio to checks grade {feedback / baseline:.2f}")
    if done is not None:
        line += f"; every hidden suite graded after {done:.1f} s, ratio {done / baseline:.2f}"
    return line


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def idle(url: str, token: str, n: int) -> str:
    """n submissions one at a time on an idle server: the lines to print."""
    timings: dict[str, list[float]] = {"ack": [], "status": [], "feedback": [], "overhead": []}
    reference = folder_zip(EXAMPLES / "reference")
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=600) as http:
        upload_and_wait(http, reference)  # the first after a burst: not timed
        for _ in range(n):
            upload_and_wait(http, reference, timings)

    def p(key: str) -> str:
        return (f"p50 {statistics.median(timings[key]) * 1000:.0f} ms, "
                f"p95 {percentile(timings[key], 0.95) * 1000:.0f} ms")
    return (f"  upload to feedback: {p('feedback')}\n"
            f"  server overhead: upload acknowledged {p('ack')}; status request {p('status')}; "
            f"feedback less the grader's own time {p('overhead')}")


def class_course(temp: Path, name: str, clients: int, jobs: int, extra: str = "", policy: str = "") -> Path:
    """A course folder of `clients` students, `jobs` grading slots, no rate limit in the way, a due
    date years away (and `policy`'s other [policy] keys)."""
    roster = [(f"s{i:03}", f"Student {i}", f"s{i}@example.edu") for i in range(clients)]
    (temp / name).mkdir()
    folder = course_folder(temp / name, roster=roster, extra=f"{extra}[rate]\nsubmissions = 1000\n",
                           policy=f'due = "2030-06-30T23:59:00+00:00"\n{policy}')
    text = (folder / "course.toml").read_text().replace("jobs = 1\n", f"jobs = {jobs}\n", 1)
    (folder / "course.toml").write_text(text)
    return folder


# the course policy's two answers to what a student sees before the due date
VISIBILITY = {"hidden results shown at once (the default; no public run)": "",
              "hidden results after the due date (the public checks first)": "show_hidden = \"after_due\"\n"}


def run_sqlite(temp: Path, args: argparse.Namespace, zips: list[bytes], baseline: float) -> float:
    """The burst on one SQLite server under each visibility policy; the idle figures on the first.
    Returns the first burst's seconds to the last feedback."""
    first = None
    for number, (visibility, policy) in enumerate(VISIBILITY.items()):
        folder = class_course(temp, f"sqlite{number}", args.clients, args.jobs, policy=policy)
        tokens, staff = tokens_of(folder), add_staff(folder)
        server = start_server(folder)
        try:
            times = burst([server.url], tokens, zips, staff)
            print(burst_line(f"burst, SQLite, 1 server process, {args.jobs} grading slots (warm pools), {visibility}",
                             args.n, args.clients, times, baseline), flush=True)
            if first is None:
                first = times[0]
                print(f"idle SQLite server, {args.idle} submissions one at a time (each waited for with a long poll):")
                print(idle(server.url, tokens[0], args.idle), flush=True)
        finally:
            server.kill(15)
    return first


def run_postgres(temp: Path, args: argparse.Namespace, zips: list[bytes], baseline: float, single: float) -> None:
    try:
        with running_postgres() as cluster, local_dask(temp / "dask", workers=args.jobs) as dask:
            url = cluster.create("burst")
            folder = class_course(temp, "postgres", args.clients, args.jobs, extra=f'storage = "{url}"\n')
            tokens, staff = tokens_of(folder), add_staff(folder)
            servers = [start_server(folder, args=("--scheduler", dask.scheduler)) for _ in range(args.servers)]
            try:
                urls = [server.url for server in servers]
                # Dask's workers start their warm pools with their first submission: warm them as
                # the SQLite server's pools are warm before its burst (not timed)
                burst(urls, tokens[:args.jobs * 2], [folder_zip(EXAMPLES / "reference")] * (args.jobs * 2), staff)
                times = burst(urls, tokens, zips, staff)
                print(burst_line(f"burst, PostgreSQL, {args.servers} server processes, a local Dask cluster of "
                                 f"{args.jobs} worker(s), hidden results shown at once, clients split across the "
                                 "servers", args.n, args.clients, times, baseline)
                      + f"; feedback's ratio to the SQLite server {times[0] / single:.2f}", flush=True)
                print(f"idle PostgreSQL deployment, {args.idle} submissions one at a time through one server:")
                print(idle(urls[0], tokens[0], args.idle), flush=True)
            finally:
                for server in servers:
                    server.kill(15)
    except PostgresMissing as missing:
        print(f"burst on PostgreSQL: skipped ({missing})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=300, help="submissions in the burst (default 300)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    parser.add_argument("--jobs", type=int, default=2, help="grading slots, Dask workers, and checks grade --jobs "
                                                            "(default 2)")
    parser.add_argument("--servers", type=int, default=2, help="server processes on PostgreSQL (default 2)")
    parser.add_argument("--idle", type=int, default=20, help="submissions timed one at a time (default 20)")
    parser.add_argument("--url", action="append", default=[], metavar="URL",
                        help="a running deployment (repeat for several server processes): measure it only")
    parser.add_argument("--tokens", type=Path, metavar="CSV", help="with --url: the tokens `checks roster import` "
                                                                   "wrote (one client per student, up to --clients)")
    parser.add_argument("--staff-token", metavar="TOKEN", help="with --url: a staff account's token (`checks staff "
                                                                  "add`), to wait until every hidden suite is graded")
    args = parser.parse_args()
    if args.url and not args.tokens:
        parser.error("--url needs --tokens (the CSV `checks roster import` wrote for that course)")
    with tempfile.TemporaryDirectory(prefix="checks-serve-bench-") as temp:
        temp_path = Path(temp)
        paths = submissions(temp_path / "subs", args.n)
        baseline = grade_baseline(paths, temp_path / "grades", args.jobs)
        print(f"checks grade: {args.n} submissions of 01_tensors, --jobs {args.jobs}: {baseline:.1f} s "
              "(start-up included)", flush=True)
        zips = [folder_zip(path) for path in paths]
        if args.url:
            tokens = [row["token"] for row in csv.DictReader(args.tokens.open())][:args.clients]
            # a fresh deployment's graders start their pools with their first submissions (not timed)
            burst(args.url, tokens[:args.jobs * 2], [folder_zip(EXAMPLES / "reference")] * (args.jobs * 2),
                  args.staff_token)
            times = burst(args.url, tokens, zips, args.staff_token)
            print(burst_line(f"burst against {', '.join(args.url)}", args.n, len(tokens), times, baseline), flush=True)
            print(f"idle, {args.idle} submissions one at a time through {args.url[0]}:")
            print(idle(args.url[0], tokens[0], args.idle), flush=True)
            return
        single = run_sqlite(temp_path, args, zips, baseline)
        run_postgres(temp_path, args, zips, baseline, single)


if __name__ == "__main__":
    main()
