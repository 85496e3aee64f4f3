"""`checks export student`: the bundle a student gets holds nothing of the staff's (no hidden suite,
solution, mutant or quiz answer, in its files, its zip or its wheel of checks), and works on its
own: from a fresh environment that its setup_env.py makes, `checks test` and `checks pack` run.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from checks.course.assignment import CourseError, load_assignment
from checks.course.solution_regions import Region, split_regions
from checks.exports import runtime
from checks.exports.student import export_student
from conftest import ASSIGNMENTS

ROOT = Path(__file__).resolve().parents[2]
HIDDEN_PARTS = {"autograder", "solutions", "references"}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    return {name: export_student(load_assignment(ROOT, name), out) for name in ASSIGNMENTS}


def bundle_texts(export) -> dict[str, str]:
    """Every file a student receives, as text: the folder's, the zip's and the wheel's members."""
    texts = {}
    for name in export.files:
        data = (export.folder / name).read_bytes()
        if name.endswith(".whl"):
            with zipfile.ZipFile(io.BytesIO(data)) as wheel:
                texts.update({f"{name}!{member}": wheel.read(member).decode("utf-8", "replace")
                              for member in wheel.namelist()})
        texts[name] = data.decode("utf-8", "replace")
    with zipfile.ZipFile(export.zip_path) as archive:
        texts.update({f"zip!{member}": archive.read(member).decode("utf-8", "replace")
                      for member in archive.namelist() if not member.endswith(".whl")})
    return texts


def solution_only_lines(name: str) -> set[str]:
    """The lines of the reference's solution regions (what an answer looks like), less any line the
    reference also has outside them (the stub keeps those) or its README quotes (a hint, by choice)."""
    inside, outside = set(), set()
    for path in (ROOT / "solutions" / name).rglob("*.py"):
        for part in split_regions(path.read_text(), path.name):
            if isinstance(part, Region):
                inside |= {line.strip() for line in part.body}
            else:
                outside.add(part[1].strip())
    readme = (ROOT / "solutions" / name / "README.md").read_text()
    return {line for line in inside - outside if len(line) >= 20 and not line.startswith("#") and line not in readme}


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_bundle_holds_no_hidden_suite_solution_mutant_or_quiz_answer(bundles, name):
    export = bundles[name]
    texts = bundle_texts(export)
    paths = [Path(p.replace("!", "/")) for p in texts]
    assert not [p for p in paths if HIDDEN_PARTS & set(p.parts)]
    hidden_names = {p.name for p in (ROOT / "autograder" / name).iterdir()}
    assert not [p for p in paths if p.name in hidden_names], "a hidden suite's file (or mutants.toml) is in the bundle"
    lines = solution_only_lines(name)
    assert lines, "the reference must differ from its stub, or this test proves nothing"
    leaks = sorted({(where, line) for where, text in texts.items() for line in lines if line in text})
    assert not leaks, f"reference solution lines in the bundle: {leaks[:5]}"
    keys = tomllib.loads((ROOT / "autograder" / name / "assignment.toml").read_text()).get("quiz", {})
    quiz = tomllib.loads((export.folder / "assignments" / name / "quiz.toml").read_text())
    assert set(quiz) == set(keys) and all(value == "" for value in quiz.values())


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_bundle_has_the_release_the_set_up_and_a_zip_of_it_all(bundles, name):
    export = bundles[name]
    release = ROOT / "assignments" / name
    expected = {f"assignments/{name}/{p.relative_to(release).as_posix()}" for p in release.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}
    assert expected <= set(export.files)  # stubs, quiz.toml, public checks, notebook, README, .checks.toml
    assert f"assignments/{name}/{name}.ipynb" in export.files
    assert {"setup_env.py", "constraints.txt", "requirements.txt", "README.md"} <= set(export.files)
    with zipfile.ZipFile(export.zip_path) as archive:
        assert sorted(archive.namelist()) == sorted(f"{export.folder.name}/{f}" for f in export.files)


def test_the_wheel_is_the_engine_alone_with_the_core_dependencies(bundles):
    (wheel,) = (bundles[ASSIGNMENTS[0]].folder / "wheels").glob("checks-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        meta = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert all(n.startswith(("checks/", "checks-")) for n in names)
    assert "checks/cli/__init__.py" in names and "checks/reports/templates/report.html.j2" in names
    core = [line.removeprefix("Requires-Dist: ") for line in meta.splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert core == runtime.core_requirements(ROOT)


def test_the_pins_are_the_graders_and_hold_no_staff_tool(bundles):
    grader = runtime.read_pins(ROOT / "constraints.txt")
    for name in ASSIGNMENTS:
        lines = [line for line in (bundles[name].folder / "constraints.txt").read_text().splitlines()
                 if line and not line.startswith("#")]
        assert "torch==2.13.0" in lines
        core = [line for line in lines if runtime.canonical(line.split("==")[0]) not in runtime.STAFF_TOOLS]
        # the grader's pin wherever constraints.txt has one (setuptools, which torch pulls, it has not)
        assert all(grader.get(runtime.canonical(line.split("==")[0]), line) == line for line in core)
    core = runtime.closure(runtime.core_requirements(ROOT))
    assert not runtime.STAFF_TOOLS & set(core)
    assert {"torch", "numpy", "pytest", "rich"} <= set(core)
    assert (bundles["03_mlp"].folder / "requirements.txt").read_text().splitlines()[1:] == ["scikit-learn"]


def test_a_core_that_pulls_a_staff_tool_is_refused(monkeypatch):
    monkeypatch.setattr(runtime, "core_requirements", lambda project: ["numpy", "distributed"])
    with pytest.raises(CourseError, match="distributed"):
        runtime.runtime_pins(ROOT)


def test_a_release_with_a_quiz_answer_is_refused(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(ROOT / "assignments" / "01_tensors", course / "assignments" / "01_tensors")
    quiz = course / "assignments" / "01_tensors" / "quiz.toml"
    quiz.write_text(quiz.read_text().replace('broadcast_numel = ""', "broadcast_numel = 6"))
    with pytest.raises(CourseError, match="broadcast_numel"):
        export_student(load_assignment(course, "01_tensors"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_cli_writes_the_bundle(tmp_path):
    result = subprocess.run([sys.executable, "-m", "checks", "--course", str(ROOT), "export", "student",
                             "01_tensors", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "01_tensors-student" / "setup_env.py").is_file()
    assert (tmp_path / "01_tensors-student.zip").is_file()


def _du_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


@pytest.mark.slow
def test_from_a_fresh_environment_checks_test_and_pack_work_in_the_bundle(tmp_path):
    """The bundle's one-command set-up, in a new virtualenv that sees nothing of this one (no system
    site-packages, no PYTHONPATH): `checks test` then passes the reference and `checks pack` packs it.
    torch comes from pip's own settings (a wheel folder or mirror), not from the Internet's CUDA build."""
    export = export_student(load_assignment(ROOT, "01_tensors"), tmp_path)
    bundle = export.folder
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV", "CHECKS"))}
    env.update(CHECKS_TORCH_INDEX="", PIP_RETRIES="0", PIP_DEFAULT_TIMEOUT="20")
    setup = subprocess.run([sys.executable, "setup_env.py"], cwd=bundle, env=env, capture_output=True, text=True,
                           timeout=1200)
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    venv = bundle / ".venv"
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    python, checks_cli = venv / "bin" / "python", venv / "bin" / "checks"
    where = subprocess.run([python, "-c", "import checks; print(checks.__file__)"], env=env, capture_output=True,
                           text=True, check=True).stdout
    assert where.startswith(str(venv)), where  # the wheel's checks, not this repository's
    installed = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], env=env, capture_output=True,
                               text=True, check=True).stdout
    names = {runtime.canonical(line.split("==")[0]) for line in installed.splitlines()}
    assert not runtime.STAFF_TOOLS & names and "torch" in names

    folder = bundle / "assignments" / "01_tensors"
    stubs = subprocess.run([checks_cli, "test", "01_tensors"], cwd=bundle, env=env, capture_output=True, text=True,
                           timeout=600)
    assert stubs.returncode == 1 and "0 of 12 questions pass" in stubs.stdout, stubs.stdout + stubs.stderr
    for name in ("strides.py", "broadcasting.py"):
        shutil.copy(ROOT / "solutions" / "01_tensors" / name, folder / name)
    quiz = folder / "quiz.toml"
    quiz.write_text(quiz.read_text().replace('broadcast_numel = ""', "broadcast_numel = 6"))
    passed = subprocess.run([checks_cli, "test"], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    packed = subprocess.run([checks_cli, "pack"], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert packed.returncode == 0, packed.stdout + packed.stderr
    with zipfile.ZipFile(folder / "01_tensors.zip") as archive:
        assert sorted(archive.namelist()) == ["broadcasting.py", "quiz.toml", "strides.py"]
    print(f"student environment: {_du_mib(venv):.0f} MiB")  # beside the staff one: make setup's .venv
