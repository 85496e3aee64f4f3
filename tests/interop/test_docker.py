"""docker/: the grading images' recipes. They are built and run for real by `make image-check`
(CI); here, what can be checked without building: hadolint, and that nothing of CI's machine
leaks into them (they must build unchanged with plain `docker build` elsewhere)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from checks.cli.common import unquoted_glob
from conftest import REPO

DOCKERFILES = [REPO / "docker/cpu/Dockerfile", REPO / "docker/gpu/Dockerfile"]


def test_dockerfiles_pass_hadolint():
    hadolint = shutil.which("hadolint") or str(Path(__import__("sys").executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (make setup installs it: the `dev` extra)")
    run = subprocess.run([hadolint, *map(str, DOCKERFILES)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_has_a_public_base_a_non_root_user_and_checks_as_entrypoint(dockerfile):
    text = dockerfile.read_text()
    base = re.search(r"^ARG BASE=(\S+)$", text, re.M)
    assert base and "/" not in base.group(1).split(":")[0].removeprefix("nvidia/")  # a Docker Hub image
    assert re.search(r"^FROM \$\{BASE\}$", text, re.M)
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert 'ENTRYPOINT ["checks"]' in text
    for quirk in ("localhost/", "runc", "mmdebstrap", "/wheels", "ulimit"):
        assert quirk not in text, f"{quirk} is CI's business (.ci/image.sh), not the recipe's"


def test_a_pattern_no_shell_expanded_matches_as_the_shell_would(tmp_path):
    # `docker run IMAGE grade 01_tensors '/subs/*'`: the entrypoint runs without a shell
    for name in ("b", "a"):
        (tmp_path / name).mkdir()
    assert unquoted_glob(tmp_path / "*") == [tmp_path / "a", tmp_path / "b"]
    assert unquoted_glob(tmp_path / "a") == [tmp_path / "a"]
    assert unquoted_glob(tmp_path / "nothing*") == [tmp_path / "nothing*"]  # then reported as missing


def test_the_server_image_runs_checks_serve_with_a_health_check():
    """docker/serve builds on the CPU image: `checks serve` on port 8000, /healthz as its health check."""
    dockerfile = REPO / "docker/serve/Dockerfile"
    text = dockerfile.read_text()
    assert re.search(r"^HEALTHCHECK .*\n.*/healthz", text, re.M)
    assert 'CMD ["serve", "/course"' in text and "EXPOSE 8000" in text
    # root, on purpose and said so: each submission is graded as a uid of its own, which only root
    # hands out, and checks serve refuses to grade as a user that submissions would share
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user[-1].split(":")[0] in ("0", "root") and "a uid of its own" in text
    hadolint = shutil.which("hadolint") or str(Path(__import__("sys").executable).parent / "hadolint")
    if Path(hadolint).exists():
        run = subprocess.run([hadolint, str(dockerfile)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stdout + run.stderr
