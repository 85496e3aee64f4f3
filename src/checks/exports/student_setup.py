"""Set up the environment for this assignment, in one command, on Linux, macOS or Windows:

    python3.11 setup_env.py             (Windows: py -3.11 setup_env.py)
    python3.11 setup_env.py --jupyter   (also JupyterLab, for the lesson notebook)

It creates .venv beside this file and installs `checks` (from wheels/) with only what `checks
test` and `checks pack` need: torch (its CPU build), numpy, pytest and a few small libraries, at
the versions the grader uses (constraints.txt). Nothing of the course staff's tools.

`checks export student` copies this file into the bundle as setup_env.py; it uses the standard
library only, since it runs before anything is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Linux and Windows: torch without CUDA's GBs; CHECKS_TORCH_INDEX replaces it ("" for none: a mirror
# or a wheel folder given to pip by its own settings)
TORCH_CPU_INDEX = os.environ.get("CHECKS_TORCH_INDEX", "https://download.pytorch.org/whl/cpu")
JUPYTER = ["jupyterlab", "ipykernel", "psutil"]  # the lesson notebook and its %checks test


def venv_python(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def install_command(python: Path, *, jupyter: bool = False, cuda: bool = False) -> list[str]:
    """pip install of the wheel in wheels/, what requirements.txt adds, pinned by constraints.txt."""
    wheels = sorted(str(path) for path in (HERE / "wheels").glob("*.whl"))
    if not wheels:
        raise SystemExit(f"no wheel of checks in {HERE / 'wheels'}: this bundle is incomplete")
    extra = []
    requirements = HERE / "requirements.txt"
    if requirements.is_file():
        extra = [line.split("#", 1)[0].strip() for line in requirements.read_text(encoding="utf-8").splitlines()]
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-c",
               str(HERE / "constraints.txt"), *wheels, *[e for e in extra if e], *(JUPYTER if jupyter else [])]
    if sys.platform != "darwin" and not cuda and TORCH_CPU_INDEX:  # macOS wheels of torch are CPU-only already
        command[4:4] = ["--extra-index-url", TORCH_CPU_INDEX]
    return command


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    unknown = [word for word in argv if word not in ("--jupyter", "--cuda")]
    if unknown:
        print(f"setup_env.py: unknown option {' '.join(unknown)} (options: --jupyter, --cuda)", file=sys.stderr)
        return 2
    if sys.version_info[:2] != (3, 11):
        print(f"setup_env.py needs Python 3.11 (the grader's), not {sys.version.split()[0]}: run it with "
              "python3.11 (Windows: py -3.11)", file=sys.stderr)
        return 2
    env = HERE / ".venv"
    if not venv_python(env).is_file():
        print(f"creating {env}")
        venv.EnvBuilder(with_pip=True).create(env)
    command = install_command(venv_python(env), jupyter="--jupyter" in argv, cuda="--cuda" in argv)
    print("installing:", " ".join(command[3:]))
    if subprocess.run(command, check=False).returncode != 0:
        print("setup_env.py: pip could not install the environment (above: why); run it again once fixed",
              file=sys.stderr)
        return 1
    activate = r".venv\Scripts\activate" if os.name == "nt" else "source .venv/bin/activate"
    print(f"\nReady. Next:\n  {activate}\n  checks test        (in the assignment's folder, under assignments/)\n"
          "  checks pack        (writes the zip you upload)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
