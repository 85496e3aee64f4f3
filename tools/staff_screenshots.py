"""The screenshots of docs/analytics.md, taken again: Playwright driving the system Chromium.

Three scenes, each built in a temp folder from the bundled course and examples:

1. docs/images/analytics-report.png: `checks grade 01_tensors examples/01_tensors`, report.html's
   "What the class got wrong" (the common mistakes, the failures no diagnosis explains, the plots);
2. docs/images/regrade-report.png: the same batch graded again after ben_bitdiddle handed in a
   new broadcasting.py and the hidden suite gave strides.numel 6 points instead of 4 (a copy of
   the course, changed), report.html's "What the latest regrade changed";
3. docs/images/similarity.png: `checks similarity` on the examples plus mallory, a disguised copy
   of ada_lovelace's work (tests/similarity_helpers.disguise), the top of similarity.html.

    python tools/staff_screenshots.py                       # needs /usr/bin/chromium and playwright
    python tools/staff_screenshots.py --chromium /path/to/chromium
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from similarity_helpers import disguise  # noqa: E402

from checks import cli  # noqa: E402

IMAGES = ROOT / "docs" / "images"
EXAMPLES = ("ada_lovelace", "ben_bitdiddle", "cy_dee", "reference", "stubs")


def copy_course(where: Path) -> Path:
    """The course's 01_tensors (autograder, release, solutions) and its examples, copied: links followed."""
    course = where / "course"
    for part in ("autograder", "assignments", "solutions"):
        shutil.copytree(ROOT / part / "01_tensors", course / part / "01_tensors")
    for name in EXAMPLES:
        shutil.copytree(ROOT / "examples" / "01_tensors" / name, where / "class" / name)
    return course


def grade(course: Path, classroom: Path, out: Path, *extra: str) -> None:
    code = cli.main(["--course", str(course), "grade", "01_tensors", str(classroom), "--out", str(out), *extra])
    if code != 0:
        raise SystemExit(f"checks grade exited with {code}")


def shoot(browser, page_file: Path, image: Path, *, start: str, end: str | None = None, width: int = 1200,
          height: int = 1500) -> None:
    """A screenshot of `page_file` from the element `start` (a CSS selector) down to `end`'s bottom,
    or `height` pixels."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(page_file.as_uri())
    top = page.locator(start).bounding_box()["y"] - 10
    if end is not None:
        box = page.locator(end).bounding_box()
        height = min(height, box["y"] + box["height"] + 20 - top)
    image.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(image), full_page=True, clip={"x": 0, "y": top, "width": width, "height": height})
    page.close()
    print(f"wrote {image.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium to drive")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="checks-screenshots-") as temp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        where = Path(temp)
        course = copy_course(where)
        classroom, out = where / "class", where / "grades"
        grade(course, classroom, out)
        shoot(browser, out / "report.html", IMAGES / "analytics-report.png", start="#mistakes-heading",
              end="#mistakes")

        shutil.copy(ROOT / "solutions" / "01_tensors" / "broadcasting.py", classroom / "ben_bitdiddle")
        suite = course / "autograder" / "01_tensors" / "test_strides.py"
        suite.write_text(suite.read_text().replace('@question("strides.numel", points=4)',
                                                   '@question("strides.numel", points=6)'))
        grade(course, classroom, out, "--regrade")
        shoot(browser, out / "report.html", IMAGES / "regrade-report.png", start="#regrade-heading", end="#regrade")

        (classroom / "mallory").mkdir()
        for name in ("strides.py", "broadcasting.py"):
            (classroom / "mallory" / name).write_text(disguise((classroom / "ada_lovelace" / name).read_text(), seed=7))
        similarity = where / "similarity"
        if cli.main(["--course", str(course), "similarity", "01_tensors", str(classroom), "--out", str(similarity)]):
            raise SystemExit("checks similarity failed")
        shoot(browser, similarity / "similarity.html", IMAGES / "similarity.png", start="h1", height=1400, width=1300)
        browser.close()


if __name__ == "__main__":
    main()
