"""A README's table of points, generated from the suite: each question's points are written once.

The hidden suite's `@question(..., points=N)` and assignment.toml's `[quiz.*]` keys say what each
question is worth; `checks build` writes the table between `<!-- points:begin -->` and
`<!-- points:end -->` in solutions/<name>/README.md (and so in the release), and `checks verify`
fails where any `| \\`qid\\` | N |` row of the README disagrees with what the suite gives.
"""

from __future__ import annotations

import re
from pathlib import Path

from checks.course.assignment import Assignment, CourseError
from checks.suites.questions import declared_points, declared_questions

README = "README.md"
BEGIN, END = "<!-- points:begin -->", "<!-- points:end -->"
REGION = re.compile(re.escape(BEGIN) + r"\n?(.*?)" + re.escape(END), re.DOTALL)
ROW = re.compile(r"^\|\s*`(?P<qid>[^`|]+)`\s*\|\s*(?P<points>\d+(?:\.\d+)?)\s*\|\s*$", re.MULTILINE)


def assignment_points(assignment: Assignment) -> dict[str, float]:
    """Each question's points, code questions (read from the hidden suite's source, in the order of
    assignment.toml's files) then quiz keys; a CourseError where the suite's are not literal."""
    code = declared_points(assignment.autograder_dir)
    if code is None:
        raise CourseError(f"{assignment.autograder_dir}: a @question's id or points is not written as a literal, "
                          "so the README's points table cannot be generated: write them as numbers (a mapping "
                          "of numbers for an id like \"rules.{op}_backward\"), or remove the points markers")
    return in_table_order(assignment, {**code, **{item.qid: float(item.points) for item in assignment.quiz}})


def in_table_order(assignment: Assignment, points: dict[str, float]) -> dict[str, float]:
    """`points` in the table's order: code questions by their module's place in assignment.toml's
    files, within one in the suite's order of declaration; then the quiz keys in theirs."""
    modules = [Path(file).stem for file in assignment.files]
    declared = declared_questions(assignment.autograder_dir) or []
    quiz = [item.qid for item in assignment.quiz]

    def rank(qid: str) -> tuple[int, int]:
        module = qid.split(".")[0]
        if qid.startswith("quiz."):
            return len(modules) + 1, quiz.index(qid) if qid in quiz else len(quiz)
        return (modules.index(module) if module in modules else len(modules),
                declared.index(qid) if qid in declared else len(declared))
    return {qid: points[qid] for qid in sorted(points, key=rank)}


def points_table(points: dict[str, float]) -> str:
    """The Markdown table: a row per question and the total."""
    rows = [f"| `{qid}` | {value:g} |" for qid, value in points.items()]
    total = round(sum(points.values()), 2)
    return "\n".join(["| question | points |", "|---|---|", *rows, f"| **total** | **{total:g}** |"]) + "\n"


def with_points_table(text: str, points: dict[str, float]) -> str:
    """`text` (a README) with the region between the markers replaced by the table; unchanged
    without markers."""
    return REGION.sub(lambda _: f"{BEGIN}\n{points_table(points)}{END}", text, count=1)


def has_points_region(text: str) -> bool:
    return REGION.search(text) is not None


def readme_points_problems(text: str, points: dict[str, float]) -> list[str]:
    """Where the README's `| \\`qid\\` | N |` rows disagree with `points` (a row of a question the
    suite does not have, in the generated region, too), and a region that is not the table `checks
    build` writes. Empty when they agree."""
    problems = []
    region = REGION.search(text)
    inside = range(region.start(), region.end()) if region else range(0)
    for row in ROW.finditer(text):
        qid, said = row["qid"], float(row["points"])
        if qid in points and points[qid] != said:
            problems.append(f"{qid} {said:g} (the suite: {points[qid]:g})")
        elif qid not in points and row.start() in inside:
            problems.append(f"{qid} is not a question of the suite")
    if region and not problems and region.group(0) != f"{BEGIN}\n{points_table(points)}{END}":
        problems.append("the table between the points markers is not the one generated")
    return problems
