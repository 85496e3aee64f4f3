"""`checks similarity`: every pair of a class's submissions ranked by shared code (evidence for a
person, never a verdict)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table
from rich.text import Text

from checks.cli import common
from checks.course.assignment import load_assignment
from checks.reports.render import plain


def add_commands(commands: argparse._SubParsersAction, assignment_help: str) -> None:
    similar = common.command(
        commands, "similarity", "rank pairs of submissions by shared code (evidence, not a verdict)",
        "Compare every pair of submissions' Python code, robust to renamed identifiers, reformatting, "
        "comments and reordered functions, with the starter code and the class's common idioms left "
        "out. Writes DIR/similarity.csv (every pair sharing code, ranked) and DIR/similarity.html (the "
        "ranking and the top pairs' matched regions side by side). Runs no student code. A high score "
        "is evidence for a person to weigh, never a verdict.",
        "  checks similarity 01_tensors submissions/* --out similarity/01_tensors\n"
        "  checks similarity 01_tensors canvas.zip --out similarity/01_tensors --threshold 0.6")
    similar.add_argument("assignment", help=assignment_help)
    similar.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                         help="a folder, .zip or notebook per student (or a folder that holds only them), as for grade")
    similar.add_argument("--out", type=Path, required=True, metavar="DIR", help="where to write the CSV and the page")
    similar.add_argument("--threshold", type=float, default=0.5, metavar="S",
                         help="mark pairs at or above this similarity, 0 to 1 (default: 0.5)")
    similar.add_argument("--show", type=common.positive_int, default=30, metavar="N",
                         help="pairs whose matched regions the page shows (default: 30)")
    similar.set_defaults(run=_similarity)


def _similarity(root: Path, args: argparse.Namespace) -> int:
    from checks.similarity.run import similarity_to_folder

    assignment = load_assignment(root, args.assignment)
    given = [p for pattern in args.submissions for p in common.unquoted_glob(pattern)]
    run = similarity_to_folder(assignment, given, args.out, threshold=args.threshold, shown=args.show)
    for name, why in sorted(run.skipped.items()):
        common.console.print(plain(f"not compared: {name} {why}"))
    table = Table(title=f"most similar pairs (of {len(run.comparison.pairs)} sharing code)", title_justify="left")
    for column, justify in (("a", "left"), ("b", "left"), ("similarity", "right"), ("shared", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for pair in run.comparison.pairs[:10]:
        table.add_row(plain(pair.a), plain(pair.b), f"{pair.similarity:.2f}", str(pair.shared),
                      style="red" if pair.similarity >= run.threshold else None)
    common.console.print(table)
    common.console.print(Text(f"similarity {assignment.name}: {len(run.codes)} submissions compared in "
                              f"{run.seconds:.1f} s; {len(run.flagged)} pair(s) at or above {run.threshold:g}; "
                              f"{args.out / 'similarity.html'} and similarity.csv (evidence for a person, not a "
                              "verdict)"), soft_wrap=True)
    return 0
