"""The lesson notebook of an assignment, built from one source kept in solutions/<name>/.

The source is a jupytext percent-format Python file (`# %%` code cells, `# %% [markdown]` text
cells), so that it diffs well in git; the notebook is generated from it and never edited by hand.
The output is deterministic (fixed cell ids, no outputs, no tool versions), so that
`checks build --check` can tell when the notebook is out of date.
"""

from __future__ import annotations

import json
from pathlib import Path

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def lesson_source(solution_dir: Path) -> Path:
    """Where an assignment keeps its notebook's source: solutions/<name>/<name>.py."""
    return solution_dir / f"{solution_dir.name}.py"


def notebook_name(solution_dir: Path) -> str:
    """The notebook's name in the release: <name>.ipynb."""
    return f"{solution_dir.name}.ipynb"


def build_notebook(source: str, name: str = "<lesson>") -> str:
    """The .ipynb text (nbformat 4) of a percent-format source: cells in order, no outputs."""
    import jupytext
    import nbformat

    notebook = jupytext.reads(source, fmt="py:percent")
    notebook.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC,
                                            "language_info": {"name": "python", "pygments_lexer": "ipython3"}})
    for number, cell in enumerate(notebook.cells):
        cell.id = f"{Path(name).stem}-{number:03d}".replace("_", "-")
        cell.metadata = nbformat.from_dict({k: v for k, v in cell.metadata.items() if k == "tags"})
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    notebook.nbformat, notebook.nbformat_minor = 4, 5
    nbformat.validate(notebook)
    return json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
