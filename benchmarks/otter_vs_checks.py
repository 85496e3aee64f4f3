"""The otter export against `checks grade` on the same student notebooks, in the same run: time,
and the points each tool leaks to tampering.

Writes the otter export of an assignment (`checks export otter --fill`) for N generated
submissions (grade_throughput.generate: reference, stubs, broken, each mutant, in turn) and for
the tampering attacks of tests/sandbox/test_hardening.py that apply to a notebook, each written into the
strides.py answer cell of the stubs (so that the honest score is the stubs' 0):
- numpy: numpy's comparisons patched to say "equal";
- test helpers: the helpers the tests call patched to pass (otter's: checks.exports.kernel.check_case;
  the hidden suite's: checks.suite.expect_equal and friends);
- liar: every function returns an object whose __eq__ is always true;
- otter runner: otter's own test runner patched to record every test case as passed.
Then `otter assign`, `otter run` on each notebook (one after the other, as otter grades), and one
`checks grade` of the same notebooks; prints both times and their ratio, whether the per-question
scores agree, and the points each attack got from each tool above the stubs' honest score.

    python benchmarks/otter_vs_checks.py --assignment 01_tensors -n 20
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from checks.authoring.build import release_files
from checks.course.assignment import find_course_root, load_assignment
from grade_throughput import ROOT, generate

BIN = Path(sys.executable).parent

ATTACKS = {
    "numpy": """
        import numpy
        numpy.array_equal = numpy.allclose = numpy.array_equiv = lambda *a, **k: True
        numpy.testing.assert_allclose = numpy.testing.assert_array_equal = lambda *a, **k: None
    """,
    "test helpers": """
        try:
            import checks.exports.kernel as _kernel
            _kernel.check_case = lambda *a, **k: None
            import checks.suite as _suite
            for _name in ("expect_equal", "fail", "ask_reference"):
                setattr(_suite, _name, lambda *a, **k: None)
        except Exception:
            pass
    """,
    "liar": """
        class _Liar:
            __eq__ = lambda self, other: True
            __ne__ = lambda self, other: False
            __bool__ = lambda self: True
            __hash__ = lambda self: 0
        for _name, _value in list(globals().items()):
            if callable(_value) and not _name.startswith("_") and getattr(_value, "__module__", "") == __name__:
                globals()[_name] = lambda *a, **k: _Liar()
    """,
    "otter runner": """
        try:
            from otter.test_files import exception_test as _et
            from otter.test_files.abstract_test import TestCaseResult as _Result
            def _run(self, env):
                self.test_case_results = [_Result(test_case=tc, message="passed", passed=True) for tc in self.test_cases]
            _et.ExceptionTestFile.run = _run
        except Exception:
            pass
    """,
}


def _run(command: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("CHECKS_COURSE", None)
    run = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=timeout)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{(run.stdout + run.stderr)[-3000:]}")
    return run


def attack_folders(assignment_name: str, into: Path) -> dict[str, Path]:
    """The stubs with each attack appended to the assignment's first file, as .py folders."""
    assignment = load_assignment(find_course_root(ROOT), assignment_name)
    stubs = release_files(assignment.solution_dir)
    folders = {}
    for label, code in {"honest stubs": "", **ATTACKS}.items():
        folder = into / f"attack-{re.sub(r'[^a-z]+', '_', label)}"
        for name in (*assignment.files, "quiz.toml"):
            data = stubs[name] + (textwrap.dedent(code).encode() if name == assignment.files[0] else b"")
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        folders[label] = folder
    return folders


def otter_scores(results: Path) -> dict[str, float]:
    return {t["name"]: t["score"] for t in json.loads(results.read_text())["tests"] if t.get("score") is not None}


def checks_scores(results: Path) -> dict[str, float]:
    return {re.sub(r"[^A-Za-z0-9]", "_", t["name"]): t["score"] for t in json.loads(results.read_text())["tests"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignment", default="01_tensors")
    parser.add_argument("-n", type=int, default=20, help="notebook submissions to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="otter-vs-checks-") as scratch:
        work = Path(scratch)
        timed = generate(args.assignment, args.n, work / "py")
        attacks = attack_folders(args.assignment, work / "py")
        export = work / "export"
        _run([str(BIN / "checks"), "--course", str(ROOT), "export", "otter", args.assignment, "--out", str(export),
              "--fill", *map(str, timed), *map(str, attacks.values())], cwd=work)
        _run([str(BIN / "otter"), "assign", str(export / f"{args.assignment}.ipynb"), str(work / "dist"), "--no-pdfs"],
             cwd=work)
        (zip_path,) = (work / "dist/autograder").glob(f"{args.assignment}-autograder_*.zip")
        notebook = {path.name: export / "submissions" / f"{path.name}.ipynb" for path in [*timed, *attacks.values()]}

        def otter_run(name: str) -> dict[str, float]:
            out = work / "otter" / name
            out.mkdir(parents=True)
            _run([str(BIN / "otter"), "run", "-a", str(zip_path), "-o", str(out), "--no-logo", str(notebook[name])],
                 cwd=work)
            return otter_scores(out / "results.json")

        def checks_grade(names: list[str], out: Path) -> dict[str, dict[str, float]]:
            _run([str(BIN / "checks"), "--course", str(ROOT), "grade", args.assignment,
                  *(str(notebook[n]) for n in names), "--out", str(out)], cwd=work)
            return {n: checks_scores(out / n / "results.json") for n in names}

        names = [path.name for path in timed]
        started = time.perf_counter()
        by_otter = {name: otter_run(name) for name in names}
        otter_s = time.perf_counter() - started
        started = time.perf_counter()
        by_checks = checks_grade(names, work / "grade")
        checks_s = time.perf_counter() - started
        agree = sum(set(by_otter[n]) == set(by_checks[n])
                    and all(abs(by_otter[n][q] - s) <= 0.01 for q, s in by_checks[n].items()) for n in names)
        print(f"{args.assignment}: {len(names)} notebook submissions")
        print(f"  otter run, one after the other: {otter_s:8.1f} s  ({otter_s / len(names):.2f} s a notebook)")
        print(f"  checks grade, one command:      {checks_s:8.1f} s  ({checks_s / len(names):.2f} s a notebook)")
        print(f"  ratio otter / checks:           {otter_s / checks_s:8.2f}")
        print(f"  per-question scores equal (to 0.01) for {agree} of {len(names)} notebooks")

        attack_names = {label: folder.name for label, folder in attacks.items()}
        otter_attacked = {label: sum(otter_run(name).values()) for label, name in attack_names.items()}
        checks_attacked = {label: sum(s.values()) for label, s in
                           zip(attack_names, checks_grade(list(attack_names.values()), work / "grade-attacks").values())}
        honest_otter, honest_checks = otter_attacked.pop("honest stubs"), checks_attacked.pop("honest stubs")
        print(f"\nPoints leaked to tampering (of 100), above the stubs' honest score "
              f"(otter {honest_otter:g}, checks grade {honest_checks:g}):")
        print(f"  {'attack':<14} {'otter':>8} {'checks grade':>13}")
        for label in ATTACKS:
            print(f"  {label:<14} {otter_attacked[label] - honest_otter:8.2f} {checks_attacked[label] - honest_checks:13.2f}")


if __name__ == "__main__":
    main()
