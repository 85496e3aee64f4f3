"""Every pair of submissions, scored by the fingerprints they share, and where they share them.

A fingerprint of the starter code (the stubs the course released) is no one's: it is left out of
every submission first, so the starter alone scores nothing. A fingerprint that a large part of
the class shares (more than COMMON_SHARE of the submissions, and more than COMMON_MIN of them)
is an idiom the exercise calls for, not evidence of copying, and is left out too (as MOSS does),
unless the very submissions that share it share most of their code with each other: a group
that holds at least RING_SHARE of each member's fingerprints together is a copy ring, the
strongest signal there is, however large it is, and its fingerprints count.

A pair's similarity is the share of their fingerprints they hold in common (2|A∩B| / (|A| + |B|),
0 to 1), with each side's share beside it: a submission copied whole into a larger one shows as
all of one side. Pairs are counted with NumPy over an inverted index (fingerprint -> submissions),
never by comparing every pair's files: 1,000 submissions of an assignment take seconds.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from checks.similarity.fingerprints import Fingerprint

COMMON_SHARE = 0.10
COMMON_MIN = 4
RING_SHARE = 0.5


@dataclass(frozen=True)
class Code:
    """One submission's code and fingerprints, starter and common ones not yet left out."""

    name: str
    files: dict[str, str]  # the .py files compared, as text
    prints: list[Fingerprint]


@dataclass(frozen=True)
class Region:
    """A stretch of code two submissions share: lines of a file in each (1-based, inclusive)."""

    file_a: str
    first_a: int
    last_a: int
    file_b: str
    first_b: int
    last_b: int
    fingerprints: int  # shared fingerprints inside it


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    shared: int  # fingerprints in common (after the starter and common ones are left out)
    size_a: int  # fingerprints of each
    size_b: int

    @property
    def similarity(self) -> float:
        return 2 * self.shared / (self.size_a + self.size_b) if self.size_a + self.size_b else 0.0

    @property
    def share_a(self) -> float:
        """Of a's fingerprints, the share b holds too."""
        return self.shared / self.size_a if self.size_a else 0.0

    @property
    def share_b(self) -> float:
        return self.shared / self.size_b if self.size_b else 0.0


@dataclass(frozen=True)
class Comparison:
    pairs: list[Pair]  # every pair sharing anything, most similar first
    sizes: dict[str, int]  # each submission's fingerprints that count
    left_out_common: int  # distinct fingerprints left out as common to the class
    kept: dict[str, set[int]]  # each submission's fingerprints that count
    common_above: int = COMMON_MIN  # a fingerprint held by more submissions than this was common
    rings: list[tuple[str, ...]] = ()  # groups too large for COMMON_* that share most of their code: kept


def compare(codes: list[Code], starter: list[Fingerprint]) -> Comparison:
    """Score every pair of `codes` (see the module's docstring)."""
    starter_hashes = {f.hash for f in starter}
    own = [{f.hash for f in code.prints} - starter_hashes for code in codes]
    holders: dict[int, list[int]] = defaultdict(list)
    for index, hashes in enumerate(own):
        for value in hashes:
            holders[value].append(index)
    limit = max(COMMON_MIN, math.ceil(COMMON_SHARE * len(codes)))
    widely_held = {value: frozenset(who) for value, who in holders.items() if len(who) > limit}
    rings = _rings(widely_held, own)
    common = {value for value, who in widely_held.items() if who not in rings}
    kept = [hashes - common for hashes in own]
    counts = _pair_counts([who for value, who in holders.items() if value not in common and len(who) > 1], len(codes))
    pairs = [Pair(codes[i].name, codes[j].name, shared, len(kept[i]), len(kept[j])) for (i, j), shared in counts.items()]
    pairs.sort(key=lambda p: (-p.similarity, -p.shared, p.a, p.b))
    return Comparison(pairs, {code.name: len(k) for code, k in zip(codes, kept)}, len(common),
                      {code.name: k for code, k in zip(codes, kept)}, limit,
                      sorted(tuple(sorted(codes[i].name for i in ring)) for ring in rings))


def _rings(widely_held: dict[int, frozenset[int]], own: list[set[int]]) -> set[frozenset[int]]:
    """The groups of submissions that hold, together and no one else, at least RING_SHARE of every
    member's fingerprints: copied code, not an idiom, however many copied it."""
    together: dict[frozenset[int], int] = defaultdict(int)
    for who in widely_held.values():
        together[who] += 1
    return {who for who, count in together.items() if count >= RING_SHARE * min(len(own[i]) for i in who)}


def _pair_counts(postings: list[list[int]], n: int) -> dict[tuple[int, int], int]:
    """For each pair (i < j) of submissions, how many of the posting lists hold both."""
    chunks, size, found = [], 0, defaultdict(int)

    def flush() -> None:
        if not chunks:
            return
        codes = np.concatenate(chunks)
        values, counts = np.unique(codes, return_counts=True)
        for value, count in zip(values.tolist(), counts.tolist()):
            found[divmod(value, n)] += count
        chunks.clear()

    for who in postings:
        members = np.array(sorted(who), dtype=np.int64)
        i, j = np.triu_indices(len(members), k=1)
        chunks.append(members[i] * n + members[j])
        size += len(i)
        if size > 5_000_000:
            flush()
            size = 0
    flush()
    return dict(found)


def shared_regions(a: Code, b: Code, shared: set[int], *, gap: int = 2) -> list[Region]:
    """Where a and b share fingerprints: runs of nearby shared fingerprints in one file of each,
    merged into stretches of lines (fingerprints at most `gap` lines apart join), longest first."""
    in_b: dict[int, list[Fingerprint]] = defaultdict(list)
    for f in b.prints:
        if f.hash in shared:
            in_b[f.hash].append(f)
    links = sorted(((fa, fb) for fa in a.prints if fa.hash in shared for fb in in_b.get(fa.hash, ())[:1]),
                   key=lambda pair: (pair[0].file, pair[1].file, pair[0].first_line, pair[1].first_line))
    regions: list[list] = []  # [file_a, first_a, last_a, file_b, first_b, last_b, count]
    for fa, fb in links:
        for region in regions:
            if (region[0] == fa.file and region[3] == fb.file and fa.first_line <= region[2] + gap
                    and region[1] - gap <= fa.last_line and fb.first_line <= region[5] + gap
                    and region[4] - gap <= fb.last_line):
                region[1], region[2] = min(region[1], fa.first_line), max(region[2], fa.last_line)
                region[4], region[5] = min(region[4], fb.first_line), max(region[5], fb.last_line)
                region[6] += 1
                break
        else:
            regions.append([fa.file, fa.first_line, fa.last_line, fb.file, fb.first_line, fb.last_line, 1])
    made = [Region(*region) for region in regions]
    made.sort(key=lambda r: (-r.fingerprints, r.file_a, r.first_a))
    return made
