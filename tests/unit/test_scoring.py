import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from checks.suites.scoring import Adjustment, CaseResult, QuestionResult, SubmissionResult, score_cases


def case(test, passed, points=10.0, all_or_nothing=False, message="", qid="q.one"):
    return CaseResult(qid, test, points, all_or_nothing, passed, message)


def test_partial_credit_is_the_share_of_cases_passed():
    (q,) = score_cases([case("t", True), case("t", True), case("t", False, message="bad"), case("t", True)])
    assert (q.score, q.max_score, q.passed_cases, q.total_cases) == (7.5, 10.0, 3, 4)


def test_all_or_nothing_tests_earn_nothing_unless_every_case_passes():
    (q,) = score_cases([case("t", True, all_or_nothing=True), case("t", False, all_or_nothing=True)])
    assert q.score == 0.0


def test_a_question_is_worth_the_sum_of_its_test_functions():
    (q,) = score_cases([case("a", True, points=4), case("b", False, points=6, message="no")])
    assert (q.score, q.max_score) == (4.0, 10.0)


def test_feedback_lists_a_few_distinct_failures_and_counts_the_rest():
    cases = [case("t", False, message=f"f({i}) returned {i}; expected {i + 1}.") for i in range(10)]
    (q,) = score_cases(cases)
    lines = q.feedback.splitlines()
    assert lines[0] == "10 of 10 checks failed."
    assert lines[1:4] == ["- f(0) returned 0; expected 1.", "- f(1) returned 1; expected 2.", "- f(2) returned 2; expected 3."]
    assert lines[4] == "- ... and 7 more failing cases."


def test_cases_that_failed_the_same_way_are_shown_once():
    stub = "raised NotImplementedError: numel: multiply the sizes (still the stub: implement it)"
    cases = [case("t", False, message=f"numel({shape}) {stub}") for shape in ["(2, 3)", "()", "(0,)"]]
    (q,) = score_cases(cases)
    assert q.feedback.splitlines()[1:] == [f"- numel((2, 3)) {stub} (2 more cases failed the same way)"]


def test_questions_keep_their_order_and_stay_separate():
    results = score_cases([case("a", True, qid="x"), case("b", False, qid="y", message="no")])
    assert [(q.qid, q.score) for q in results] == [("x", 10.0), ("y", 0.0)]


def test_a_fault_after_a_scenario_is_shown_once_whatever_the_scenario():
    """A suite that names its scenario on a line of its own (`call_or_fail` with a `text`)
    collapses as a call does: a missing engine.py fails every case the same way, shown once."""
    missing = "raised ModuleNotFoundError: No module named 'engine'"
    hint = "A view must be a recorded op like any other."
    scenarios = ["While running t = Tensor([1, 2, 3]):", "While running t = Tensor(2.5, requires_grad=True):",
                 "Forward pass of a = Tensor(<array of shape (2, 3)>); t0 = a + b", "After x.T; L.backward()"]
    (q,) = score_cases([case("t", False, message=f"{s}\n{missing}") for s in scenarios])
    assert q.feedback.splitlines()[1:] == [f"- {scenarios[0]}", f"{missing} (3 more cases failed the same way)"]
    (q,) = score_cases([case("t", False, message=f"{s}\n{missing}\n{hint}") for s in scenarios[:2]])
    assert q.feedback.splitlines()[1:] == [f"- {scenarios[0]}", f"{missing} (1 more case failed the same way)", hint]


def test_different_faults_or_different_values_after_a_scenario_stay_apart():
    (q,) = score_cases([case("t", False, message="While running a:\nraised ValueError: bad a"),
                        case("t", False, message="While running b:\nraised KeyError: 'b'"),
                        case("t", False, message="After a: a.grad is None; expected its gradient."),
                        case("t", False, message="After b: b.grad is None; expected its gradient.")])
    assert "same way" not in q.feedback and len(q.feedback.splitlines()) == 1 + 4 + 2


_text = st.text(max_size=8)
_questions = st.builds(
    QuestionResult, qid=_text, score=st.floats(0, 10), max_score=st.floats(0, 10), feedback=_text,
    passed_cases=st.integers(0, 5), total_cases=st.integers(0, 5), not_started=st.booleans(),
    parts=st.lists(st.fixed_dictionaries({"points": st.floats(0, 5), "all_or_nothing": st.booleans(),
                                          "passed": st.lists(st.booleans(), max_size=4)}), max_size=3),
    diagnoses=st.none() | st.lists(_text, max_size=3))
_results = st.builds(
    SubmissionResult, name=_text, assignment=_text, questions=st.lists(_questions, max_size=4),
    devices=st.lists(_text, max_size=2), sandbox=_text, sandbox_uid=st.none() | st.integers(0, 2**31),
    seconds=st.floats(0, 100), warnings=st.lists(_text, max_size=3), error=_text, refused=_text, student_id=_text,
    submitted_at=_text, adjustments=st.lists(st.builds(Adjustment, _text, st.floats(-5, 5), _text, _text, _text),
                                             max_size=2))


@given(_results)
def test_a_result_as_a_dict_is_what_asdict_gives_copied_and_reads_back_the_same(result):
    """to_dict is written out for speed: it must give dataclasses.asdict's dict, share no list or
    dict with the result (the server keeps and changes what it gets), and read back equal."""
    data = result.to_dict()
    assert data == dataclasses.asdict(result)
    assert SubmissionResult.from_dict(data) == result
    for question in data["questions"]:
        question["parts"].append({"changed": True})
        for part in question["parts"][:-1]:
            part["passed"].append(None)
        if question["diagnoses"] is not None:
            question["diagnoses"].append("changed")
    data["warnings"].append("changed")
    data["devices"].append("changed")
    assert result.to_dict() == dataclasses.asdict(result)  # the result itself is unchanged
