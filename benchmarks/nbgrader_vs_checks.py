"""`nbgrader autograde` of the nbgrader export against `checks grade`, on the same notebooks, in one run.

Time: N student notebooks (reference, stubs, the bundled examples, then mutants, written with
`checks export nbgrader --fill`) graded by `nbgrader autograde` (one batch: each notebook run in
its kernel, whose grading cells call checks) and by `checks grade` on the same
submitted/<student>/ folders (answer cells read, never run in a kernel), with 1 job and the default.

Leaks: the tampering attacks of tests/sandbox/test_hardening.py that apply to a notebook, each an answer
cell (wrong code, which earns nothing honestly) plus the attack, and one attack only nbgrader's
way of reading a grade allows: numpy patched, checks' test helpers patched in the kernel, the
grading call (kernel.score) patched, objects whose __eq__ is always true, and the kernel's display
of a float replaced. Leaked points = the attack's score minus the same wrong code's without it.
The grading cells run in the student's kernel, so nothing in the export can stop what runs there.

    python benchmarks/nbgrader_vs_checks.py                 # 01_tensors, 20 notebooks
    python benchmarks/nbgrader_vs_checks.py --assignment 02_autograd -n 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from checks.authoring.build import release_files
from checks.authoring.verify import load_mutants
from checks.course.assignment import load_assignment
from checks.course.submissions import read_submission
from checks.exports.nbgrader import grade_id
from checks.grading.session import named_files

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 3600

# appended to the first student file's stub-like wrong code; each is wrapped so that the file still
# imports where the attack cannot work (in checks' sandbox there is no IPython, no kernel.score)
ATTACKS = {
    "control (wrong code, no attack)": "",
    "patches numpy": """
        import numpy, numpy.testing
        numpy.array_equal = numpy.allclose = numpy.isclose = lambda *a, **k: True
        numpy.testing.assert_allclose = numpy.testing.assert_array_equal = lambda *a, **k: None
    """,
    "patches checks' test helpers": """
        import checks.suite, checks.suites.api
        for _module in (checks.suite, checks.suites.api):
            for _name in ("expect_equal", "expect_close", "fail"):
                setattr(_module, _name, lambda *a, **k: None)
    """,
    "patches the grading call (kernel.score)": """
        import checks.exports.kernel as _kernel
        _result = _kernel.question_result
        _kernel.score = lambda assignment, qid: _result(assignment, qid).max_score
    """,
    "__eq__ always true": """
        class _Liar:
            __eq__ = lambda self, other: True
            __ne__ = lambda self, other: False
            __bool__ = lambda self: True
        for _name, _value in list(globals().items()):
            if callable(_value) and not _name.startswith("_") and getattr(_value, "__module__", None) == __name__:
                globals()[_name] = lambda *a, **k: _Liar()
    """,
    "replaces the display of a float (nbgrader reads the grade from it)": """
        get_ipython().display_formatter.formatters["text/plain"].for_type(
            float, lambda value, printer, cycle: printer.text("full marks"))
    """,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01_tensors")
    parser.add_argument("-n", type=int, default=20, help="notebooks in the timed batch")
    parser.add_argument("--only", choices=["time", "leaks"], default=None, help="run one part only")
    parser.add_argument("--keep", action="store_true", help="keep the work folder and print where it is")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nbgrader-vs-checks-"))
    env = _environment(work)
    try:
        if args.only != "leaks":
            timing(args.assignment, args.n, work / "timing", env)
        if args.only != "time":
            leaks(args.assignment, work / "leaks", env)
    finally:
        if args.keep:
            print(f"work folder: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def timing(name: str, count: int, work: Path, env: dict[str, str]) -> None:
    folders = _write(_honest(name, count), work / "py")
    course = _export(name, folders, work / "course", env)
    _run([sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force"], course, env)
    nbgrader_s = _run([sys.executable, "-m", "nbgrader", "autograde", name, "--create", "--force"], course, env)
    notebooks = sorted((course / "submitted").iterdir())
    checks_s = {}
    for jobs in ("1", None):
        out = work / f"grades-{jobs or 'default'}"
        command = [sys.executable, "-m", "checks", "--course", str(ROOT), "grade", name, *map(str, notebooks),
                   "--out", str(out), *(["--jobs", jobs] if jobs else [])]
        checks_s[f"--jobs {jobs}" if jobs else f"(default jobs, {os.cpu_count()} cores)"] = _run(command, ROOT, env)
    by_nbgrader, by_checks = _nbgrader_scores(course, name), _checks_scores(work / "grades-1")
    differ = [student for student in by_checks
              if any(abs(by_nbgrader[student][grade_id(q)] - points) > 0.01 for q, points in by_checks[student].items())]
    print(f"\n== time: {len(notebooks)} notebooks of {name} ==")
    print(f"nbgrader autograde (one batch)     {nbgrader_s:8.1f} s   {nbgrader_s / len(notebooks):6.2f} s a notebook")
    for jobs, seconds in checks_s.items():
        print(f"checks grade {jobs:<22}{seconds:8.1f} s   {seconds / len(notebooks):6.2f} s a notebook   "
              f"nbgrader / checks = {nbgrader_s / seconds:5.2f}")
    print(f"per-question points that differ between the two: {len(differ)} notebook(s) {differ}")


def leaks(name: str, work: Path, env: dict[str, str]) -> None:
    assignment = load_assignment(ROOT, name)
    stubs = {n: data for n, data in release_files(assignment.solution_dir).items() if n in named_files(assignment)}
    first = assignment.files[0]
    wrong = _wrong_code(stubs[first].decode())
    labels = {f"attack{index}": label for index, label in enumerate(ATTACKS)}
    submissions = {}
    for key, label in labels.items():
        attack = ATTACKS[label]
        guarded = "\ntry:\n" + textwrap.indent(textwrap.dedent(attack).strip(), "    ") + "\nexcept Exception:\n    pass\n"
        submissions[key] = {**stubs, first: (wrong + (guarded if attack else "")).encode()}
    folders = _write(submissions, work / "py")
    course = _export(name, folders, work / "course", env)
    _run([sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force"], course, env)
    _run([sys.executable, "-m", "nbgrader", "autograde", name, "--create", "--force"], course, env)
    notebooks = sorted((course / "submitted").iterdir())
    _run([sys.executable, "-m", "checks", "--course", str(ROOT), "grade", name, *map(str, notebooks),
          "--out", str(work / "grades")], ROOT, env)
    by_nbgrader = {s: sum(g.values()) for s, g in _nbgrader_scores(course, name).items()}
    by_checks = {s: sum(g.values()) for s, g in _checks_scores(work / "grades").items()}
    control = "attack0"
    print(f"\n== leaks: points over the same wrong code without the attack ({name}, out of 100) ==")
    print(f"{'attack (in an answer cell)':<70}{'nbgrader':>10}{'checks grade':>14}")
    for key, label in labels.items():
        if key == control:
            print(f"{label:<70}{by_nbgrader[key]:>10.2f}{by_checks[key]:>14.2f}   (scores, not leaks)")
        else:
            print(f"{label:<70}{by_nbgrader[key] - by_nbgrader[control]:>10.2f}"
                  f"{by_checks[key] - by_checks[control]:>14.2f}")


def _honest(name: str, count: int) -> dict[str, dict[str, bytes]]:
    """`count` .py submissions: the reference, the stubs, the bundled examples, then mutants in turn."""
    assignment = load_assignment(ROOT, name)
    named = named_files(assignment)
    reference = {n: data for n, data in read_submission(assignment.solution_dir).files.items() if n in named}
    variants = {"reference": reference,
                "stubs": {n: data for n, data in release_files(assignment.solution_dir).items() if n in named}}
    examples = ROOT / "examples" / name
    for folder in sorted(examples.iterdir()) if examples.is_dir() else []:
        if folder.name not in variants:
            variants[folder.name] = {n: d for n, d in read_submission(folder, named).files.items() if n in named}
    mutants = load_mutants(assignment)
    while len(variants) < count and mutants:
        mutant = mutants[(len(variants)) % len(mutants)]
        variants[f"mutant{len(variants):02d}_{mutant.name}"] = mutant.apply(reference)
    return dict(list(variants.items())[:count])


def _wrong_code(stub: str) -> str:
    """The stub with every `raise NotImplementedError(...)` line returning None instead: wrong
    answers that import, so that an attack after them runs."""
    lines = [line.split("raise NotImplementedError")[0] + "return None" if "raise NotImplementedError" in line
             else line for line in stub.splitlines()]
    return "\n".join(lines) + "\n"


def _write(submissions: dict[str, dict[str, bytes]], into: Path) -> list[Path]:
    for label, files in submissions.items():
        for file_name, data in files.items():
            (into / label / file_name).parent.mkdir(parents=True, exist_ok=True)
            (into / label / file_name).write_bytes(data)
    return [into / label for label in submissions]


def _export(name: str, folders: list[Path], course: Path, env: dict[str, str]) -> Path:
    _run([sys.executable, "-m", "checks", "--course", str(ROOT), "export", "nbgrader", name, "--out", str(course),
          "--fill", *map(str, folders)], ROOT, env)
    return course


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds `command` took; stops the benchmark, with its output, when it fails."""
    started = time.perf_counter()
    run = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=TIMEOUT_S, start_new_session=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command[:6])} ... failed ({run.returncode}):\n{(run.stdout + run.stderr)[-3000:]}")
    return time.perf_counter() - started


def _environment(work: Path) -> dict[str, str]:
    """nbgrader's kernel `python3` is this Python (a kernelspec in a private JUPYTER_PATH)."""
    spec = work / "jupyter/kernels/python3/kernel.json"
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                "display_name": "Python 3 (ipykernel)", "language": "python"}))
    env = {key: value for key, value in os.environ.items() if key != "CHECKS_COURSE"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # nbgrader runs alembic
    return {**env, "JUPYTER_PATH": str(work / "jupyter"), "PYTHONWARNINGS": "ignore"}


def _nbgrader_scores(course: Path, name: str) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {s.student_id: {g.name: g.score for nb in s.notebooks for g in nb.grades}
                for s in gradebook.assignment_submissions(name)}


def _checks_scores(out: Path) -> dict[str, dict[str, float]]:
    return {p.parent.name: {t["name"]: t["score"] for t in json.loads(p.read_text())["tests"]}
            for p in out.glob("*/results.json")}


if __name__ == "__main__":
    main()
