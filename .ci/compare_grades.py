"""Compare `checks grade` output folders score by score: the host's against each image run's.

Prints every difference, and a last line with the scores compared and the sandbox each image run
used; exit status 1 when any score differs. Usage: compare_grades.py HOST_DIR IMAGE_DIR...
"""

import csv
import json
import sys
from pathlib import Path


def scores(folder: Path) -> dict[str, dict[str, str]]:
    with open(folder / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def sandbox(folder: Path) -> str:
    """The isolation level the run used, as results.json records it (its first word: bwrap, fork)."""
    levels = {json.loads(p.read_text())["extra_data"]["sandbox"].split(":")[0] for p in folder.glob("*/results.json")}
    return " and ".join(sorted(levels)) or "none recorded"


def differences(host: dict, image: dict, label: str) -> list[str]:
    found = [f"{label}: {name} only in {'the host' if name in host else 'the image'}"
             for name in sorted(set(host) ^ set(image))]
    for name in sorted(set(host) & set(image)):
        for column, value in host[name].items():
            if value != image[name].get(column):
                found.append(f"{label}: {name} {column}: host {value}, image {image[name].get(column)}")
    return found


def main(host_dir: str, *image_dirs: str) -> int:
    host = scores(Path(host_dir))
    found = [] if host else ["the host graded nothing"]
    runs = []
    for image_dir in map(Path, image_dirs):
        found += differences(host, scores(image_dir), image_dir.name)
        runs.append(f"{image_dir.name} ({sandbox(image_dir)})")
    for line in found:
        print(f"differs: {line}")
    totals = ", ".join(f"{name} {float(row['total']):g}" for name, row in sorted(host.items()))
    print(f"image-check: scores {'differ' if found else 'equal'} for {len(host)} submissions of 01_tensors, "
          f"host vs {' and '.join(runs)}: {totals}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
