"""On a machine with a GPU: 03_mlp's device checks run on cuda too, the reference keeps full marks
and a mutant that builds on the wrong device loses its question. Skipped without CUDA (run them
with `pytest -m cuda` where torch sees a GPU)."""

from __future__ import annotations

import pytest
import torch

from checks.authoring.verify import load_mutants
from checks.course.assignment import load_assignment
from checks.course.submissions import read_submission
from checks.grading.session import Source, grade_sources

from conftest import REPO

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")]


def test_03_mlp_is_graded_on_cuda_with_the_reference_at_full_marks():
    assignment = load_assignment(REPO, "03_mlp")
    reference = read_submission(assignment.solution_dir).files
    mutants = {m.name: m for m in load_mutants(assignment)}
    sources = [Source.from_files("reference", reference)]
    sources += [Source.from_files(name, m.apply(reference)) for name, m in mutants.items() if "device" in name]
    results = {r.name: r for r in grade_sources(assignment, sources)}
    assert "cuda" in results["reference"].devices and "cpu" in results["reference"].devices
    assert results["reference"].score == 100, [(q.qid, q.feedback) for q in results["reference"].questions
                                               if not q.passed]
    for name, mutant in mutants.items():
        if name in results:
            lost = {q.qid for q in results[name].questions if q.score < q.max_score}
            assert lost == {mutant.question}, (name, lost)


def test_checks_grade_device_cuda_keeps_every_forked_grader_able_to_use_the_gpu(tmp_path):
    """`--device cuda` asks whether there is a GPU before any grader is forked: asked of CUDA
    itself, that made every forked grader fail with "Cannot re-initialize CUDA in forked subprocess"."""
    import json
    import os
    import subprocess
    import sys

    out = tmp_path / "grades"
    subprocess.run([sys.executable, "-c", "import sys; from checks.cli import main; sys.exit(main())", "grade",
                    "03_mlp", str(REPO / "solutions" / "03_mlp"), "--out", str(out), "--device", "cuda"],
                   check=True, cwd=REPO, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    results = json.loads((out / "03_mlp" / "results.json").read_text())
    assert results["extra_data"]["devices"] == ["cpu", "cuda"]
    assert results["score"] == 100, [(t["name"], t["output"][:300]) for t in results["tests"]
                                     if t["score"] < t["max_score"]]
