"""The import rule of src/checks: a module imports only from its own layer or the ones below.

Layers, lowest first, as each subpackage's docstring states. The top-level modules (progress,
pack, the `checks.suite` facade) are the front ends: they may import any layer, and nothing inside
a subpackage may import them. The `checks` command (the cli/ package) sits above them all: it may
import anything, and nothing else of checks imports it but `python -m checks` (__main__.py).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "checks"
LAYERS = ["sandbox", "config", "course", "policy", "suites", "reports", "grading", "similarity", "executors", "notebooks",
          "exports", "lti", "authoring", "server"]
TOP = "cli"  # the command line, above the top-level front ends


def imported_modules(path: Path, package_dir: Path = PACKAGE) -> set[str]:
    """Every `checks...` module that `path` imports, relative imports resolved."""
    found = set()
    package = ["checks", *path.relative_to(package_dir).parent.parts]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "checks" or name.startswith("checks.")}


def layer_of(module: str) -> int | None:
    """The layer index of a `checks.<sub>...` module; None for `checks` itself; len(LAYERS) for the
    top-level front ends, len(LAYERS) + 1 for the cli/ package."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if parts[1] == TOP:
        return len(LAYERS) + 1
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else len(LAYERS)


def upward_imports(path: Path, package_dir: Path = PACKAGE) -> list[str]:
    own = layer_of(".".join(["checks", *path.relative_to(package_dir).with_suffix("").parts]))
    return sorted(name for name in imported_modules(path, package_dir)
                  if (layer := layer_of(name)) is not None and layer > own and name != "checks.__version__")


def test_every_subpackage_is_a_known_layer():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == {*LAYERS, TOP}


@pytest.mark.parametrize("path", sorted([*PACKAGE.glob("*/*.py"), *PACKAGE.glob("*.py")]),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path):
    if path.name == "__main__.py":  # `python -m checks`: the command itself
        assert imported_modules(path) == {"checks.cli", "checks.cli.main"}
        return
    assert upward_imports(path) == [], f"{path.relative_to(PACKAGE)} imports from a layer above its own"


def test_the_command_line_is_the_top_layer():
    """cli/ may import every layer and the top-level front ends; a front end importing it is caught."""
    assert layer_of("checks.cli.grade") > layer_of("checks.progress") > layer_of("checks.server.app")
    assert upward_imports(PACKAGE / "cli" / "grade.py") == []
    assert "checks.progress" in imported_modules(PACKAGE / "cli" / "grade.py")  # so the line above means something


def test_the_rule_catches_an_upward_import(tmp_path):
    """The check itself can fail: a reports module that imports grading, directly or relatively, is caught."""
    fake = tmp_path / "checks"
    (fake / "reports").mkdir(parents=True)
    module = fake / "reports" / "bad.py"
    module.write_text("from checks.grading.batch import grade_to_folder\nfrom ..authoring import verify\n"
                      "from ..suites import scoring\nfrom checks import __version__\n")
    assert upward_imports(module, fake) == ["checks.authoring", "checks.authoring.verify", "checks.grading.batch",
                                            "checks.grading.batch.grade_to_folder"]
    front = fake / "progress.py"  # a top-level front end that imports the command line
    front.write_text("from checks.cli.common import console\n")
    assert upward_imports(front, fake) == ["checks.cli.common", "checks.cli.common.console"]


def import_cycles(package_dir: Path) -> list[set[str]]:
    """The sets of modules under `package_dir` that import one another round in a circle (any
    import, a function's lazy one included), found as the graph's strongly connected components."""
    checks_dir = next(p for p in [package_dir, *package_dir.parents] if p.name == "checks")
    modules = {".".join(p.relative_to(checks_dir.parent).with_suffix("").parts): p for p in package_dir.rglob("*.py")}
    graph = {name: {m for m in imported_modules(path, checks_dir) if m in modules and m != name}
             for name, path in modules.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for other in graph[node]:
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for name in graph:
        if name not in order:
            visit(name)
    return found


def test_the_server_modules_import_one_way():
    """Route modules share helpers through server/pages.py; none imports the app, which imports
    them (issue 44: the circle made every helper the app's and every route module the app's)."""
    assert import_cycles(PACKAGE / "server") == []


def test_the_cycle_check_can_fail(tmp_path):
    fake = tmp_path / "checks" / "server"
    fake.mkdir(parents=True)
    (fake / "app.py").write_text("from checks.server import routes\n")
    (fake / "routes.py").write_text("def f():\n    from checks.server import app\n")
    (fake / "pages.py").write_text("")
    assert import_cycles(fake) == [{"checks.server.app", "checks.server.routes"}]
