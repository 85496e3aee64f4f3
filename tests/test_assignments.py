"""Every assignment's hidden suite against its reference and its stubs; the full proof (each
mutant loses only its own question, reruns agree) is marked slow: `make test-all`."""

from __future__ import annotations

import pytest

from checks.authoring.build import release_files
from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.course.submissions import read_submission
from checks.authoring.verify import verify

from conftest import REPO

LATER_ASSIGNMENTS = ["02_autograd", "03_mlp"]  # 01_tensors: test_tensors_course.py


@pytest.mark.parametrize("name", LATER_ASSIGNMENTS)
def test_reference_scores_100_and_stubs_0(name):
    assignment = load_assignment(REPO, name)
    sources = [Source.from_files("reference", read_submission(assignment.solution_dir).files),
               Source.from_files("stubs", release_files(assignment.solution_dir))]
    results = {r.name: r for r in grade_sources(assignment, sources)}
    reference, stubs = results["reference"], results["stubs"]
    assert not reference.error and not stubs.error
    assert reference.score == reference.max_score == 100, [(q.qid, q.feedback) for q in reference.questions if not q.passed]
    assert stubs.score == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", LATER_ASSIGNMENTS)
def test_every_mutant_loses_points_on_its_own_question_only(name):
    verdicts = verify(load_assignment(REPO, name))
    assert all(v.ok for v in verdicts), [f"{v.submission}: {v.detail}" for v in verdicts if not v.ok]


@pytest.mark.slow
def test_twenty_reruns_of_the_reference_give_identical_scores():
    assignment = load_assignment(REPO, "02_autograd")
    files = read_submission(assignment.solution_dir).files
    results = grade_sources(assignment, [Source.from_files(f"run{i}", files) for i in range(20)])
    scores = {tuple((q.qid, q.score) for q in r.questions) for r in results}
    assert len(scores) == 1 and sum(score for _, score in next(iter(scores))) == 100
