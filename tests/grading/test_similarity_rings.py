"""A copy ring is seen however large it is: five, ten or twenty submissions holding the same code
were once dropped whole as "common to the class" (more than 10 % and more than 4 submissions),
while three were flagged at 1.00. Starter code and the class's real idioms are still left out, and
the page says what was."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from checks.course.assignment import load_assignment
from checks.similarity.compare import Code, compare
from checks.similarity.fingerprints import fingerprints
from checks.similarity.run import similarity_to_folder
from similarity_helpers import disguise

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "01_tensors"
FILES = ("strides.py", "broadcasting.py")
HONEST = ("ada_lovelace", "cy_dee", "reference", "stubs")


@pytest.mark.parametrize("size", [5, 10, 20])
def test_a_ring_of_identical_or_disguised_copies_is_flagged_pair_by_pair(size, tmp_path):
    folder = tmp_path / "class"
    for name in (*HONEST, "ben_bitdiddle"):
        shutil.copytree(EXAMPLES / name, folder / name)
    ring = ["ben_bitdiddle"]
    for k in range(1, size):  # half verbatim, half disguised (renamed, recommented, reordered)
        copy = folder / f"copy_{k:02d}"
        copy.mkdir()
        for name in FILES:
            source = (EXAMPLES / "ben_bitdiddle" / name).read_text()
            (copy / name).write_text(source if k % 2 else disguise(source, seed=k))
        ring.append(copy.name)
    run = similarity_to_folder(load_assignment(ROOT, "01_tensors"), [folder], tmp_path / "out")
    flagged = {frozenset((p.a, p.b)) for p in run.flagged}
    wanted = {frozenset((a, b)) for i, a in enumerate(ring) for b in ring[i + 1:]}
    assert wanted <= flagged, f"{len(wanted - flagged)} ring pairs not flagged"
    assert not [pair for pair in flagged if not pair <= set(ring)]  # no honest student is dragged in
    assert run.comparison.rings == [tuple(sorted(ring))]
    page = (tmp_path / "out" / "similarity.html").read_text()
    assert f"{size} submissions share most of their code with each other" in page


def _independent_function(rng: random.Random, name: str) -> str:
    """A function of its own shape: what a student who wrote it alone would hand in."""
    def expression(depth: int) -> str:
        if depth == 0:
            return rng.choice(["a", "b", "c", str(rng.randrange(2, 9)), "len(a)", "a[0]", "b.shape[0]"])
        form = rng.randrange(6)
        left, right = expression(depth - 1), expression(depth - 1)
        return [f"({left} + {right})", f"({left} * {right})", f"max({left}, {right})", f"({left} - {right})",
                f"abs({left})", f"({left} // {right} if {right} else {left})"][form]
    lines = [f"def {name}(a, b, c):"]
    for k in range(rng.randrange(3, 6)):
        lines.append(f"    t{k} = {expression(3)}")
    lines.append(f"    return {expression(2)}")
    return "\n".join(lines) + "\n"


IDIOM = '''
def numel(shape):
    count = 1
    for size in shape:
        count *= size
    return count
'''


def test_an_idiom_most_of_the_class_writes_alike_is_still_left_out_and_the_page_says_so():
    rng = random.Random(3)
    codes = []
    for k in range(30):  # everyone writes numel the same way, and the rest alone
        source = IDIOM + "\n\n" + "\n\n".join(_independent_function(rng, f"f{j}") for j in range(6))
        codes.append(Code(f"s{k:02d}", {"mine.py": source}, fingerprints({"mine.py": source})))
    comparison = compare(codes, [])
    assert comparison.left_out_common > 0 and comparison.rings == []
    assert all(pair.similarity < 0.5 for pair in comparison.pairs)
    idiom = {f.hash for f in fingerprints({"mine.py": IDIOM})}
    assert not any(idiom & kept for kept in comparison.kept.values())
