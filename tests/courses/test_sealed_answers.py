"""02_autograd's engine questions answer most rule calls from a table the grader computes ahead
(helpers.program_answers, drivers.sealed): it must answer exactly the calls a correct engine makes,
and nothing else. Read as data, without making the call, it must hold no gradient of the graph: an
engine that searched it for a node's gradient would skip the walk the questions grade."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from checks.course.assignment import load_assignment

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, sys
import numpy as np
import torch
import drivers, programs
from helpers import leaf, program_answers, t64, torch_backward, torch_values, v

report = {}
# a tiny graph whose calls are known: L = (a * b).sum()
a, b = np.array([1.5, -2.0]), np.array([0.25, 3.0])
tiny = {"leaves": [leaf("a", a), leaf("b", b)], "steps": [("mul", v(0), v(1)), ("sum", v(2), None, False)]}
here = drivers._answered_here(program_answers(tiny, 3))
product = a * b
summed = here("sum_backward", (np.array(1.0), product, None, False), {})
mul = here("mul_backward", (np.ones(2), a, b), {})
report["tiny"] = [np.asarray(x).tolist() for x in (*summed, *mul)]
report["other_grad"] = here("mul_backward", (np.full(2, 2.0), a, b), {}) is NotImplemented
report["other_input"] = here("mul_backward", (np.ones(2), a + 1e-3, b), {}) is NotImplemented

# every graph of engine.backward_graphs: no value of the table, read as float64, is a gradient
found, entries = 0, 0
for name, make in programs.HANDWRITTEN.items():
    program, output, weights = make()
    answers = program_answers(program, output, weights=weights)
    values = torch_values(program)
    for value in values[len(program["leaves"]):]:
        if value.requires_grad:
            value.retain_grad()
    loss = values[output] if weights is None else (values[output] * t64(weights)).sum()
    loss.backward()
    grads = np.concatenate([value.grad.numpy().ravel() for value in values if value.grad is not None])
    grads = grads[grads != 0]
    for places, data in (entry for entry in answers.values() if entry is not None):
        entries += 1
        readable = np.frombuffer(data, dtype=np.float64)
        found += int(np.isclose(readable[:, None], grads[None, :], rtol=1e-9, atol=0).any())
report["entries"], report["found"] = entries, found
print(json.dumps(report))
"""


def _probe() -> dict:
    folder = load_assignment(REPO, "02_autograd").autograder_dir
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_table_answers_the_calls_a_correct_engine_makes_and_no_other():
    report = _probe()
    # sum_backward: ones of the product's shape; mul_backward: (grad * b, grad * a)
    assert report["tiny"] == [[1.0, 1.0], [0.25, 3.0], [1.5, -2.0]]
    assert report["other_grad"] and report["other_input"]
    # read without the call, the sealed bytes hold none of the graph's gradients
    assert report["entries"] > 20
    assert report["found"] == 0, report
