"""A wheel of `checks` itself, written from the source tree, for a student's bundle.

Written here rather than by `pip wheel`: that would need setuptools and, with build isolation,
the network; a wheel is a zip of the package with its metadata (PEP 427), and the package is
src/checks only: the engine, never course content (no suite, solution or quiz key lives there).
The same tree gives the same bytes (fixed dates, sorted entries).
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

from checks.exports.hidden import SKIPPED_PARTS

FIXED_TIME = (2020, 1, 1, 0, 0, 0)
PACKAGE_SUFFIXES = (".py", ".j2")  # the modules and report.html's template (package-data in pyproject.toml)


def package_files(project: Path) -> dict[str, bytes]:
    """src/checks as wheel entries (`checks/cli/__init__.py`, ...): its modules and package data, no caches."""
    package = project / "src" / "checks"
    return {f"checks/{path.relative_to(package).as_posix()}": path.read_bytes()
            for path in sorted(package.rglob("*"))
            if path.is_file() and path.suffix in PACKAGE_SUFFIXES
            and not SKIPPED_PARTS & set(path.relative_to(package).parts)}


def metadata(project: Path) -> tuple[str, str, str, str]:
    """(name, version, METADATA, entry_points.txt) from pyproject.toml's [project]."""
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = ["Metadata-Version: 2.1", f"Name: {data['name']}", f"Version: {data['version']}",
             f"Summary: {data.get('description', '')}"]
    if "requires-python" in data:
        lines.append(f"Requires-Python: {data['requires-python']}")
    lines += [f"Requires-Dist: {requirement}" for requirement in data.get("dependencies", [])]
    for extra, requirements in data.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {requirement}; extra == "{extra}"' for requirement in requirements]
    scripts = data.get("scripts", {})
    entry_points = "[console_scripts]\n" + "".join(f"{name} = {target}\n" for name, target in scripts.items())
    return data["name"], data["version"], "\n".join(lines) + "\n", entry_points


def write_wheel(project: Path, out_dir: Path) -> Path:
    """out_dir/<name>-<version>-py3-none-any.whl, installable with `pip install` (no build step)."""
    name, version, meta, entry_points = metadata(project)
    info = f"{name}-{version}.dist-info"
    entries = package_files(project)
    entries[f"{info}/METADATA"] = meta.encode()
    entries[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: checks\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries[f"{info}/entry_points.txt"] = entry_points.encode()
    record = "".join(f"{path},sha256={_digest(data)},{len(data)}\n" for path, data in entries.items())
    entries[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in entries.items():
            entry = zipfile.ZipInfo(path, FIXED_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
