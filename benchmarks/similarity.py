"""`checks similarity` on 1,000 submissions of 01_tensors: how long reading, fingerprinting and
comparing every pair take, and whether the planted copies still rank first.

The class is generated: each student's strides.py and broadcasting.py take each public function
from one of the bundled solutions (reference, ada_lovelace, ben_bitdiddle, cy_dee) with that
solution's helpers, plus a few helper functions of the student's own (random arithmetic, so that
no two students share them). Every 100th student is a disguised copy of the student before
(tests/similarity_helpers.disguise: renamed, recommented, reformatted, reordered).

    python benchmarks/similarity.py            # 1,000 submissions
    python benchmarks/similarity.py -n 200
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from similarity_helpers import disguise  # noqa: E402

from checks.course.assignment import load_assignment  # noqa: E402
from checks.similarity.compare import compare  # noqa: E402
from checks.similarity.fingerprints import fingerprints  # noqa: E402
from checks.similarity.run import read_codes, similarity_to_folder, starter_files  # noqa: E402

SOURCES = ("reference", "ada_lovelace", "ben_bitdiddle", "cy_dee")
FILES = ("strides.py", "broadcasting.py")


def _functions(source: str) -> tuple[str, dict[str, str]]:
    """A module's head (imports) and its top-level functions' source, by name."""
    tree = ast.parse(source)
    head = "\n".join(ast.get_source_segment(source, node) for node in tree.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))
    return head, {node.name: ast.get_source_segment(source, node) for node in tree.body
                  if isinstance(node, ast.FunctionDef)}


def _own_helper(rng: random.Random, k: int) -> str:
    ops = ["+", "-", "*", "//", "%"]
    lines = [f"def _mine_{k}(a, b):", "    total = a"]
    for _ in range(rng.randrange(6, 14)):
        kind = rng.randrange(3)
        if kind == 0:
            lines.append(f"    total = total {rng.choice(ops)} (b {rng.choice(ops)} {rng.randrange(1, 9)})")
        elif kind == 1:
            lines.append(f"    if total > {rng.randrange(100)}:\n        total = total {rng.choice(ops)} a")
        else:
            lines.append(f"    for i in range({rng.randrange(2, 5)}):\n        b = b {rng.choice(ops)} i")
    lines.append("    return total")
    return "\n".join(lines)


def make_class(folder: Path, n: int, seed: int = 0) -> list[tuple[str, str]]:
    """n submissions under `folder`; the (original, copy) pairs planted."""
    rng = random.Random(seed)
    examples = ROOT / "examples" / "01_tensors"
    parsed = {(source, name): _functions((examples / source / name).read_text()) for source in SOURCES for name in FILES}
    planted = []
    previous: Path | None = None
    for index in range(n):
        student = folder / f"student_{index:04d}"
        student.mkdir()
        if previous is not None and index % 100 == 99:
            for name in FILES:
                (student / name).write_text(disguise((previous / name).read_text(), seed=index))
            planted.append((previous.name, student.name))
        else:
            for name in FILES:
                source = rng.choice(SOURCES)  # one author's helpers; its public functions mixed with others'
                head, functions = parsed[(source, name)]
                chosen = dict(functions)
                for function in [f for f in functions if not f.startswith("_")]:
                    other = parsed[(rng.choice(SOURCES), name)][1]
                    if function in other and all(h in functions for h in _helpers(other[function])):
                        chosen[function] = other[function]
                own = [_own_helper(rng, k) for k in range(3)]
                body = list(chosen.values()) + own
                rng.shuffle(body)
                (student / name).write_text(head + "\n\n\n" + "\n\n\n".join(body) + "\n")
        previous = student
    return planted


def _helpers(source: str) -> set[str]:
    return {node.func.id for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("_")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="submissions (default: 1000)")
    args = parser.parse_args()
    assignment = load_assignment(ROOT, "01_tensors")
    with tempfile.TemporaryDirectory(prefix="checks-similarity-bench-") as temp:
        folder = Path(temp) / "class"
        folder.mkdir()
        started = time.perf_counter()
        planted = make_class(folder, args.n)
        print(f"generated {args.n} submissions ({len(planted)} planted copies) in {time.perf_counter() - started:.1f} s")

        started = time.perf_counter()
        codes, skipped = read_codes(assignment, [folder])
        read = time.perf_counter() - started
        started = time.perf_counter()
        comparison = compare(codes, fingerprints(starter_files(assignment)))
        compared = time.perf_counter() - started
        print(f"read and fingerprinted {len(codes)} submissions: {read:.2f} s; compared every pair "
              f"({len(comparison.pairs)} sharing code): {compared:.2f} s")

        started = time.perf_counter()
        run = similarity_to_folder(assignment, [folder], Path(temp) / "out")
        total = time.perf_counter() - started
        print(f"checks similarity end to end (similarity.csv, similarity.html): {total:.2f} s for {len(run.codes)} "
              f"submissions")

        top = {frozenset((p.a, p.b)) for p in run.comparison.pairs[:len(planted)]}
        found = sum(frozenset(pair) in top for pair in planted)
        lowest = min((p.similarity for p in run.comparison.pairs if frozenset((p.a, p.b)) in map(frozenset, planted)),
                     default=0.0)
        others = max((p.similarity for p in run.comparison.pairs if frozenset((p.a, p.b)) not in map(frozenset, planted)),
                     default=0.0)
        print(f"planted copies among the top {len(planted)} pairs: {found} of {len(planted)}; lowest planted "
              f"similarity {lowest:.2f}, highest other pair {others:.2f}; {len(run.flagged)} pairs at or above "
              f"{run.threshold:g}")


if __name__ == "__main__":
    main()
