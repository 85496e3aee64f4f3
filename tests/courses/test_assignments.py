"""Every assignment of the course (found, not listed: a new one is held to the same) against its
reference and its stubs; the full proof (each mutant loses only its own question, reruns agree) is
marked slow: `make test-all`."""

from __future__ import annotations

import pytest

from checks.authoring.build import release_files
from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.course.submissions import read_submission
from checks.authoring.verify import verify

from conftest import ASSIGNMENTS, REPO


def assert_reference_100_and_stubs_0(root, name):
    """The reference scores 100 and the stubs (the release's files) 0; shared with the tests of a
    course that `checks new` wrote."""
    assignment = load_assignment(root, name)
    sources = [Source.from_files("reference", read_submission(assignment.solution_dir).files),
               Source.from_files("stubs", release_files(assignment.solution_dir))]
    results = {r.name: r for r in grade_sources(assignment, sources)}
    reference, stubs = results["reference"], results["stubs"]
    assert not reference.error and not stubs.error
    assert reference.score == reference.max_score == 100, [(q.qid, q.feedback) for q in reference.questions if not q.passed]
    assert stubs.score == 0


def assert_verified(root, name, **options):
    """`checks verify`: reference 100, stubs 0, each mutant loses points on its own question only."""
    verdicts = verify(load_assignment(root, name), **options)
    assert all(v.ok for v in verdicts), [f"{v.submission}: {v.detail}" for v in verdicts if not v.ok]
    return verdicts


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_reference_scores_100_and_stubs_0(name):
    assert_reference_100_and_stubs_0(REPO, name)


# appended to 03's reference torch_mlp.py: patches of torch made when the module is imported
PATCHES = """
import torch as _torch

_torch.nn.Module.eval = lambda self: self
_torch.Tensor.argmax = lambda self, *args, **kwargs: _torch.zeros(self.shape[0], dtype=_torch.long)
"""


def test_a_patch_applied_at_import_time_reaches_no_other_question():
    """03's torch_mlp patches torch when imported (evaluation left in training mode, every
    prediction class 0): the questions whose code imports it may suffer, training.evaluate (graded
    on a probe model of the suite's, in a worker handed on from torch_mlp's questions) may not."""
    assignment = load_assignment(REPO, "03_mlp")
    files = read_submission(assignment.solution_dir).files
    patched = {**files, "torch_mlp.py": files["torch_mlp.py"] + PATCHES.encode()}
    results = {r.name: r for r in grade_sources(assignment, [Source.from_files("reference", files),
                                                              Source.from_files("patched", patched)])}
    reference, patched_result = results["reference"], results["patched"]
    assert not reference.error and not patched_result.error
    assert patched_result.question("training.evaluate").score == reference.question("training.evaluate").score == \
        reference.question("training.evaluate").max_score, patched_result.question("training.evaluate").feedback


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_mutant_loses_points_on_its_own_question_only(name):
    assert_verified(REPO, name)


@pytest.mark.slow
def test_twenty_reruns_of_the_reference_give_identical_scores():
    assignment = load_assignment(REPO, "02_autograd")
    files = read_submission(assignment.solution_dir).files
    results = grade_sources(assignment, [Source.from_files(f"run{i}", files) for i in range(20)])
    scores = {tuple((q.qid, q.score) for q in r.questions) for r in results}
    assert len(scores) == 1 and sum(score for _, score in next(iter(scores))) == 100
