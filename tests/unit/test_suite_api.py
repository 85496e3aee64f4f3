"""The author API beyond @cases: question ids per parameter, per-file defaults, PyTorch's
refusals as one call, and per-run state that does not leak between tests."""

from __future__ import annotations

import textwrap

import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources
from checks.suite import question, question_defaults

SUITE = {
    "autograder/toy/assignment.toml": """
        files = ["ops.py"]
    """,
    "autograder/toy/test_toy.py": """
        import pytest
        import torch
        from checks.suite import cases, expect_equal, question, question_defaults, reference_or_refusal

        pytestmark = question_defaults(block_imports=("torch",))
        OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b}

        @question("ops.{op}", points={"add": 20, "mul": 30})
        @pytest.mark.parametrize("a, b", [(1, 2), (3, 4)])
        @pytest.mark.parametrize("op", OPS)
        def test_op(student, op, a, b):
            expect_equal(getattr(student.ops, op)(a, b), OPS[op](a, b))

        @question("ops.uses_torch", points=10, block_imports=())
        def test_torch_allowed_here(student):
            expect_equal(student.ops.torch_ok(), True)

        @question("ops.torch_blocked", points=10)
        def test_torch_blocked_by_the_file_default(student):
            expect_equal(student.ops.torch_ok(), False)

        @question("ops.numel", points=30)
        @cases("shape", [(2, 3), (0, 4), (-1, 2), (2, -5)])
        def test_numel(student, shape):
            expected = reference_or_refusal(lambda: torch.empty(shape).numel(), lambda: student.ops.numel(shape),
                                            because=lambda: f"shape {shape} has a negative size")
            expect_equal(student.ops.numel(shape), expected)
    """,
}

GOOD = """
import math

def add(a, b):
    return a + b

def mul(a, b):
    return a * b

def torch_ok():
    try:
        import torch
    except ImportError:
        return False
    return True

def numel(shape):
    if any(n < 0 for n in shape):
        raise ValueError("negative size")
    return math.prod(shape)
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    files = {**SUITE, "solutions/toy/ops.py": GOOD, "assignments/toy/.keep": "",
             "subs/good/ops.py": GOOD,
             "subs/bad_mul/ops.py": GOOD.replace("return a * b", "return a + b"),
             "subs/no_refusal/ops.py": GOOD.replace('raise ValueError("negative size")', "return 0"),
             "subs/wrong_refusal/ops.py": GOOD.replace('raise ValueError("negative size")',
                                                       'raise IndexError("negative size")')}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    names = ["good", "bad_mul", "no_refusal", "wrong_refusal"]
    graded = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs" / n) for n in names], jobs=2)
    return {r.name: r for r in graded}


def test_a_question_id_per_parameter_value_with_its_own_points(results):
    good = results["good"]
    assert not good.error, good.error
    assert {q.qid: q.max_score for q in good.questions} == {
        "ops.add": 20, "ops.mul": 30, "ops.uses_torch": 10, "ops.torch_blocked": 10, "ops.numel": 30}
    assert good.score == 100
    bad = {q.qid: q.score for q in results["bad_mul"].questions}
    assert bad["ops.mul"] < 30 and bad["ops.add"] == 20 and results["bad_mul"].score == 100 - 30 + bad["ops.mul"]


def test_file_defaults_apply_unless_a_question_says_otherwise(results):
    scores = {q.qid: q.score for q in results["good"].questions}
    assert scores["ops.torch_blocked"] == 10 and scores["ops.uses_torch"] == 10


def test_a_refusal_torch_makes_must_be_a_value_error_and_settles_the_case(results):
    numel = {name: results[name].question("ops.numel") for name in ("good", "no_refusal", "wrong_refusal")}
    assert numel["good"].score == 30 and numel["good"].passed_cases == 4
    for name in ("no_refusal", "wrong_refusal"):
        assert numel[name].score == 15 and numel[name].passed_cases == 2, numel[name].feedback
    assert "expected it to raise ValueError (shape (-1, 2) has a negative size; PyTorch refuses it too:" \
        in numel["no_refusal"].feedback
    assert "raised IndexError: negative size; expected ValueError" in numel["wrong_refusal"].feedback


def test_question_options_are_checked_when_written():
    with pytest.raises(TypeError, match="unknown question option block_import"):
        question_defaults(block_import=("torch",))
    mark = question("a.b", points=3, timeout=2)
    assert mark.kwargs == {"qid": "a.b", "points": 3, "timeout": 2}  # what is not given comes from the defaults


def test_a_question_id_that_names_no_parameter_is_a_suite_error(make_course):
    root = make_course({
        "autograder/toy/assignment.toml": 'files = ["ops.py"]\n',
        "autograder/toy/test_toy.py": """
            from checks.suite import expect_equal, question

            @question("ops.{op}", points={"add": 100})
            def test_op(student):
                expect_equal(student.ops.add(1, 2), 3)
        """,
        "solutions/toy/ops.py": GOOD, "assignments/toy/.keep": "", "subs/good/ops.py": GOOD})
    [result] = grade_sources(load_assignment(root, "toy"), [Source.from_path(root / "subs" / "good")], jobs=1)
    assert "names op, which is not a parameter of the test" in result.error


# ---- expect_close: the one comparison every course uses ------------------------------------------

def close_failure(got, expected, **options) -> str:
    from checks.suite import CheckFailed, expect_close
    with pytest.raises(CheckFailed) as failed:
        expect_close(got, expected, **options)
    return str(failed.value)


def test_expect_close_names_a_known_mistake_from_its_alternatives():
    import numpy as np
    want, ones = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.5])
    text = close_failure(ones, want, subject="exp_backward(grad, a): grad_a",
                         alternatives=[(ones, "this is the answer for an upstream grad of all ones.")])
    assert text.startswith("exp_backward(grad, a): grad_a is array([0.5, 0.5, 0.5]")
    assert "3 of 3 values differ" in text and "Likely mistake: this is the answer for an upstream grad" in text


def test_expect_close_explains_a_wrong_shape_and_a_wrong_dtype():
    import numpy as np
    text = close_failure(np.zeros((2, 3)), np.zeros((3,)), shape_hint=lambda shape: f"sum {shape} over dim 0")
    assert "expected shape (3,). It has shape (2, 3). Likely mistake: sum (2, 3) over dim 0" in text
    text = close_failure(np.zeros(3, dtype=np.float32), np.zeros(3), dtype="float64")
    assert "It has dtype float32" in text
    assert "expected a NumPy float64 array" in close_failure([0.0, 0.0, 0.0], np.zeros(3), dtype="float64")


def test_expect_close_on_0_d_values_and_a_diagnosis_that_breaks():
    import numpy as np

    def broken(got):
        raise IndexError("a suite's diagnosis that does not expect this value")

    text = close_failure(np.float64(2.0), np.float64(-2.0), diagnose=broken)
    assert "1 of 1 values differ; max abs error 4 (got 2, expected -2). The values have the opposite sign." in text
    assert "Likely mistake" not in text


def test_allclose_agrees_with_numpy_on_every_edge():
    """Its quick pass may only say True where np.allclose does: infinities, NaNs, signed zeros,
    huge and tiny values, each tolerance, with and without equal_nan."""
    import itertools

    import numpy as np

    from checks.suite import allclose
    values = [0.0, -0.0, 1.0, -1.0, 1e-9, 2e-9, 1 + 1e-8, 1e300, -1e300, np.inf, -np.inf, np.nan]
    for a, b in itertools.product(values, repeat=2):
        for rtol, atol in ((1e-7, 1e-9), (0.0, 0.0), (1e-5, 1e-8)):
            for equal_nan in (False, True):
                x, y = np.array([a, 1.0]), np.array([b, 1.0])
                assert allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan) == \
                    np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), (a, b, rtol, atol, equal_nan)


# ---- calling the student's code: call_or_fail, name_call ----------------------------------------

def raised(type_name: str = "ValueError", message: str = "bad shape", *, stub: bool = False):
    """A StudentRaised as the sandbox reports one (the stub's: raised where the stub raises)."""
    from checks.suite import StudentRaised
    where = ['strides.py:3 in numel: raise NotImplementedError("numel: hint")'] if stub else ["strides.py:7 in numel"]
    return StudentRaised("numel((2, 3))", {"type": type_name, "bases": [type_name, "Exception"],
                                           "message": message, "where": where})


def failure_of(fault, **options) -> str:
    from checks.suite import CheckFailed, call_or_fail

    def call():
        raise fault

    with pytest.raises(CheckFailed) as failed:
        call_or_fail(call, **options)
    return str(failed.value)


def test_call_or_fail_returns_what_the_call_returns_and_names_it():
    from checks.suite import call_or_fail
    from checks.suites.api import current_student

    class Noted:
        last_call = "the engine's summary"

    student = Noted()
    token = current_student.set(student)  # type: ignore[arg-type] - only last_call is read
    try:
        assert call_or_fail(lambda: 6) == 6 and student.last_call == "the engine's summary"
        assert call_or_fail(lambda: (2, 3), text="numel(shape) for a (2, 3) tensor") == (2, 3)
        assert student.last_call == "numel(shape) for a (2, 3) tensor"
    finally:
        current_student.reset(token)


def test_call_or_fail_names_the_call_in_the_students_terms_on_a_line_of_its_own():
    from checks.suites.describe import failed_how
    text = failure_of(raised(), text="t = Tensor([1, 2, 3])")
    assert text.startswith("t = Tensor([1, 2, 3])\nraised ValueError: bad shape\n  at strides.py:7 in numel")
    assert failed_how(text) == failed_how(failure_of(raised(), text="t = Tensor(2.5)"))  # shown once, counted
    assert failure_of(raised()).startswith("numel((2, 3)) raised ValueError: bad shape")  # the engine's words


def test_call_or_fail_says_what_was_expected_and_the_likely_mistake_when_the_code_raised():
    text = failure_of(raised(), expected=(2, 3), because="PyTorch accepts this input",
                      mistake=lambda fault: "a size-0 dim was refused" if fault.is_a(ValueError) else None,
                      note="Sizes may be 0.")
    assert text.split("\n") == ["numel((2, 3)) raised ValueError: bad shape; expected (2, 3): PyTorch accepts this input.",
                                "  at strides.py:7 in numel", "Likely mistake: a size-0 dim was refused",
                                "Sizes may be 0."]
    assert "Likely mistake" not in failure_of(raised("IndexError"), mistake=lambda f: "x" if f.is_a(ValueError) else None)
    assert "expected the shape (2, 3)." in failure_of(raised(), expected=lambda: "the shape (2, 3)")


def test_call_or_fail_adds_nothing_to_a_stub_a_crash_or_a_broken_hint():
    from checks.suite import StudentCrashed
    stub = failure_of(raised("NotImplementedError", "numel: hint", stub=True), expected=6, mistake="m", note="n")
    assert stub == "numel((2, 3)) raised NotImplementedError: numel: hint (still the stub: implement it)"
    crash = failure_of(StudentCrashed("numel((2, 3))", "crashed (segmentation fault)"), text="numel(())",
                       mistake="m", note="n")
    assert crash == "numel(())\ncrashed (segmentation fault)"

    def broken(fault):
        raise KeyError("a suite's hint that does not expect this")

    assert failure_of(raised(), mistake=broken, expected=lambda: 1 / 0).endswith("at strides.py:7 in numel")


def test_later_text_is_made_only_when_a_failure_shows_it_and_reads_as_the_text_itself():
    """A Later (text, subject, note) costs nothing where the case passes; where it fails, the
    feedback is word for word what the plain text gives."""
    import numpy as np

    from checks.suite import Later, call_or_fail, expect_close
    made = []

    def later(text):
        return Later(lambda: made.append(text) or text)

    expect_close(np.ones(3), np.ones(3), subject=later("add_backward(grad, a, b): grad_a"), note=later("n"))
    assert call_or_fail(lambda: 6, text=later("numel(shape)")) == 6
    assert made == []
    options = {"subject": "exp_backward(grad, a): grad_a", "note": "Sizes may be 0."}
    lazily = {name: later(text) for name, text in options.items()}
    assert close_failure(np.zeros(3), np.ones(3), **lazily) == close_failure(np.zeros(3), np.ones(3), **options)
    options = {"text": "t = Tensor([1, 2, 3])", "note": "Sizes may be 0."}
    assert failure_of(raised(), **{name: later(text) for name, text in options.items()}) == \
        failure_of(raised(), **options)
    assert f"{later('x'):>3}" == "  x" and str(later("y")) == "y" and not Later(lambda: "")


# ---- matching known mistakes and seeding cases ---------------------------------------------------

def test_first_match_names_the_first_mistake_the_answer_is_close_to():
    import numpy as np

    from checks.suite import first_match, is_close
    want = np.array([1.0, 2.0])
    mistakes = [(None, "cannot happen here"), (want * 2, "summed, not averaged"), (want * 2, "a second sentence"),
                (-want, "the sign is flipped")]
    assert first_match(want * 2 + 1e-9, mistakes) == "summed, not averaged"
    assert first_match([-1.0, -2.0], mistakes) == "the sign is flipped"
    assert first_match(want, mistakes) is None and first_match("not numbers", mistakes) is None
    assert first_match(want * 2.1, mistakes, rtol=0.1) == "summed, not averaged"
    assert not is_close(None, 1.0) and not is_close([1.0], [1.0, 2.0]) and is_close(np.float32(1.0), 1.0)


def test_case_rng_is_the_same_for_the_same_key_and_differs_between_keys():
    import zlib

    import numpy as np

    from checks.suite import case_rng
    assert case_rng("matmul", (2, 3)).random() == case_rng("matmul", (2, 3)).random()
    assert case_rng("matmul", (2, 3)).random() != case_rng("matmul", (3, 2)).random()
    # whole numbers seed NumPy as default_rng([...]) does; anything else by the crc32 of the key's repr
    assert case_rng(3, 784).random() == np.random.default_rng([3, 784]).random()
    assert case_rng("chain", True).random() == np.random.default_rng(zlib.crc32(repr(("chain", True)).encode())).random()
