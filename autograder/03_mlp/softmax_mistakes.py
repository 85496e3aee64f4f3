"""The ways of computing softmax cross-entropy that break on large logits, modelled in the grader.

Never released: a model's last steps are the numerically stable softmax that
numpy_mlp.softmax_cross_entropy is graded on. The hidden suite hands what they give on each case
to diagnoses.softmax_cross_entropy (`mistakes`); release_data.py releases what they give on the
public cases, as data (tests/softmax_mistakes.json), so the public checks name the same mistakes
in the same words without the code.
"""

from __future__ import annotations

import numpy as np

# the mistakes, by the name diagnoses.SOFTMAX_MISTAKES says each in
OVERFLOW, GLOBAL_MAX, LOG_OF_UNDERFLOW = "overflow", "global_max", "log_of_underflow"


def unstable_ways(logits, y) -> list[tuple[float, np.ndarray, str]]:
    """(loss, grad_logits, mistake) of each way of computing softmax cross-entropy that breaks on
    large logits, run on the case's own logits: a non-finite or wrong answer is blamed on one of
    these only when that mistake gives the same answer (the diagnosis checks its premise)."""
    logits = np.asarray(logits, dtype=np.float64)
    y = np.asarray(y).astype(np.int64)
    batch, rows = logits.shape[0], np.arange(logits.shape[0])
    found = []
    with np.errstate(all="ignore"):
        for shift, mistake in ((0.0, OVERFLOW), (logits.max(), GLOBAL_MAX),
                               (logits.max(axis=1, keepdims=True), LOG_OF_UNDERFLOW)):
            shifted = logits - shift
            exps = np.exp(shifted)
            probs = exps / exps.sum(axis=1, keepdims=True)
            via_log = shifted - np.log(exps.sum(axis=1, keepdims=True))
            ways = [(np.log(probs), probs), (via_log, np.exp(via_log))]
            if mistake is LOG_OF_UNDERFLOW:
                ways = ways[:1]  # with the row's max subtracted, only the log of the softmax breaks
            for log_probs, soft in ways:
                grad = soft.copy()
                grad[rows, y] -= 1.0
                found.append((float(-log_probs[rows, y].mean()), grad / batch, mistake))
    return found


def wrong_ones(found, expected_loss, expected_grad) -> list[tuple[float, np.ndarray, str]]:
    """Those of `found` that are wrong on this case (a mistake that gives the right answer here
    explains no wrong one, and the release holds no answer)."""
    with np.errstate(all="ignore"):
        return [(loss, grad, mistake) for loss, grad, mistake in found
                if not (np.allclose(loss, expected_loss, rtol=1e-7, atol=1e-9)
                        and np.allclose(grad, expected_grad, rtol=1e-7, atol=1e-9))]
