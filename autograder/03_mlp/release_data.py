"""What `checks build` adds to the release of 03_mlp: tests/softmax_mistakes.json, what the
grader's models of the softmax cross-entropy mistakes (softmax_mistakes.py) give on the public
cases, so that the public checks name those mistakes without holding their code (whose last
steps are the graded answer). The public cases are the public checks' own (softmax_case,
SOFTMAX_SCALES in tests/test_public.py): one list, not two.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from softmax_mistakes import unstable_ways, wrong_ones


def _public_checks(tests_dir: Path):
    """tests/test_public.py, imported with its folder's modules importable (and forgotten after)."""
    before = set(sys.modules)
    sys.path.insert(0, str(tests_dir))
    try:
        spec = importlib.util.spec_from_file_location("checks_release_test_public_03", tests_dir / "test_public.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    finally:
        sys.path.remove(str(tests_dir))
        for name in set(sys.modules) - before:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(str(tests_dir)):
                del sys.modules[name]


def table(tests_dir: Path) -> dict[str, list]:
    """Scale of a public case (as text) -> [[loss, grad_logits, mistake], ...] of the wrong ones."""
    public = _public_checks(tests_dir)
    found = {}
    for scale in public.SOFTMAX_SCALES:
        logits, y = public.softmax_case(scale)
        logits_t = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
        loss_t = F.cross_entropy(logits_t, torch.tensor(y))
        loss_t.backward()
        found[f"{scale:g}"] = [[loss, np.asarray(grad).tolist(), mistake] for loss, grad, mistake in
                               wrong_ones(unstable_ways(logits, y), loss_t.item(), logits_t.grad.numpy())]
    return found


def files(solution_dir: Path) -> dict[str, bytes]:
    """The release's files computed here (course-relative to the release folder)."""
    text = json.dumps(table(solution_dir / "tests"), sort_keys=True, indent=1) + "\n"
    return {"tests/softmax_mistakes.json": text.encode("utf-8")}
