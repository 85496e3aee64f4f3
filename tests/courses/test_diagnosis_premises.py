"""A diagnosis checks its premise: a hint names a mistake only when that mistake, run on the case's
own input, reproduces what the student's code returned; a different mistake with the same symptom
(a non-finite loss, a wrong index) gets its own hint or none. Each mistake below is written out
here, apart from the diagnosis tables (solutions/<name>/tests/diagnoses.py), and run on the case.
And a file that does not compile is said once, not once per call."""

from __future__ import annotations

import numpy as np
import pytest

from checks.course.assignment import load_assignment
from checks.grading.session import Source, _does_not_compile, _one_line_for_uncompiled, grade_sources
from checks.suite import public_module
from checks.suites.scoring import CaseResult
from conftest import REPO

MLP = public_module(str(load_assignment(REPO, "03_mlp").autograder_dir / "reference.py"), "diagnoses")


def _tensor_table():
    """01_tensors' table of mistakes: the grader's own module where it keeps one (tensor_mistakes.py),
    else the public table both suites read."""
    suite = load_assignment(REPO, "01_tensors").autograder_dir
    if (suite / "tensor_mistakes.py").is_file():
        import importlib.util

        spec = importlib.util.spec_from_file_location("premises_tensor_mistakes", suite / "tensor_mistakes.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return public_module(str(suite / "tensor_checks.py"), "diagnoses")


TENSORS = _tensor_table()


def _grader_module(assignment: str, name: str):
    """A module of an assignment's hidden suite, loaded from its file."""
    import importlib.util

    path = load_assignment(REPO, assignment).autograder_dir / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"premises_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOFTMAX_MISTAKES = _grader_module("03_mlp", "softmax_mistakes")  # the grader's models, never released


# ---- 03_mlp: softmax_cross_entropy ---------------------------------------------------------------

def _case(scale, spread=0.0, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(6, 10)) * scale + rng.normal(size=(6, 1)) * spread
    return logits, rng.integers(0, 10, size=6)


def _right(logits, y):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    grad = np.exp(log_probs)
    grad[np.arange(len(y)), y] -= 1
    return -log_probs[np.arange(len(y)), y].mean(), grad / len(y)


def _no_shift(logits, y):
    with np.errstate(all="ignore"):
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        grad = probs.copy()
        grad[np.arange(len(y)), y] -= 1
        return -np.log(probs[np.arange(len(y)), y]).mean(), grad / len(y)


def _log_of_softmax(logits, y):
    """The row's max subtracted, then the log of the softmax: -inf where the label's probability underflows."""
    with np.errstate(all="ignore"):
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        return -np.log(probs[np.arange(len(y)), y]).mean(), None


def _global_max(logits, y):
    with np.errstate(all="ignore"):
        shifted = logits - logits.max()
        probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        grad = probs.copy()
        grad[np.arange(len(y)), y] -= 1
        return -np.log(probs[np.arange(len(y)), y]).mean(), grad / len(y)


def _hint(part, got, logits, y, other=None):
    """The table's hint for one half of an answer, `other` the other half the student returned."""
    at = 0 if part == "loss" else 1
    right = _right(logits, y)
    return MLP.diagnosis("numpy_mlp.softmax_cross_entropy", part=part, logits=logits, expected=right[at],
                         other=other, other_expected=None if other is None else right[1 - at],
                         mistakes=SOFTMAX_MISTAKES.unstable_ways(logits, y))(got)


@pytest.mark.parametrize("mistake, scale, spread, named", [
    (_no_shift, 1000.0, 0.0, MLP.OVERFLOW),
    (_log_of_softmax, 1000.0, 0.0, MLP.LOG_OF_UNDERFLOW),
    (_global_max, 1.0, 2000.0, MLP.GLOBAL_MAX),
], ids=["no shift", "log of an underflowed probability", "one max for the batch"])
def test_a_non_finite_loss_is_blamed_on_the_mistake_that_gives_it(mistake, scale, spread, named):
    logits, y = _case(scale, spread)
    loss, grad = mistake(logits, y)
    assert not np.isfinite(loss)
    assert _hint("loss", loss, logits, y, other=_right(logits, y)[1] if grad is None else grad) == named


def test_the_log_of_an_underflowed_probability_is_not_told_to_subtract_the_max():
    """The issue's case: the student did subtract each row's max, and then took log(softmax)."""
    logits, y = _case(1000.0)
    loss, grad = _log_of_softmax(logits, y)[0], _right(logits, y)[1]  # its gradient is right: exp of log_probs
    assert loss == np.inf
    assert _hint("loss", loss, logits, y, other=grad) == MLP.LOG_OF_UNDERFLOW
    # the loss alone fits both mistakes: both are said, neither as the one cause
    assert _hint("loss", loss, logits, y) == f"{MLP.OVERFLOW} Or: {MLP.LOG_OF_UNDERFLOW}"


def test_a_non_finite_loss_no_mistake_explains_gets_no_hint():
    logits, y = _case(1.0)  # small logits: nothing overflows, whichever way it is computed
    assert _hint("loss", np.inf, logits, y) is None
    assert _hint("loss", np.nan, logits, y) is None


def test_grad_logits_with_nan_is_blamed_only_where_the_unshifted_softmax_gives_that_nan():
    logits, y = _case(1000.0)
    grad = _no_shift(logits, y)[1]
    assert np.isnan(grad).any()
    assert _hint("grad_logits", grad, logits, y) == MLP.OVERFLOW
    other = _right(logits, y)[1].copy()
    other[0, 0] = np.nan  # a NaN from some other mistake
    assert _hint("grad_logits", other, logits, y) is None


# ---- 03_mlp: backward's ReLU mask --------------------------------------------------------------

def _mlp_case(exact_zeros):
    rng = np.random.default_rng(3)
    if exact_zeros:
        params = {"W1": rng.integers(-2, 3, size=(5, 8)) / 2.0, "b1": rng.integers(-2, 3, size=8) / 2.0,
                  "W2": rng.normal(size=(8, 3)), "b2": rng.normal(size=3)}
        X = rng.integers(-2, 3, size=(6, 5)).astype(float)
    else:
        params = {"W1": rng.normal(size=(5, 8)), "b1": rng.normal(size=8), "W2": rng.normal(size=(8, 3)),
                  "b2": rng.normal(size=3)}
        X = rng.normal(size=(6, 5))
    return params, X, rng.normal(size=(6, 3))


def _backward(params, X, grad_logits, mask):
    pre = X @ params["W1"] + params["b1"]
    grad_pre = (grad_logits @ params["W2"].T) * mask(pre)
    return {"W1": X.T @ grad_pre, "b1": grad_pre.sum(axis=0)}


@pytest.mark.parametrize("key", ["W1", "b1"])
def test_a_relu_mask_at_zero_is_named_only_where_an_input_is_exactly_zero(key):
    MASK = "lets the gradient through where its input is exactly 0"
    params, X, grad_logits = _mlp_case(exact_zeros=True)
    right = _backward(params, X, grad_logits, lambda pre: pre > 0)[key]
    leaky = _backward(params, X, grad_logits, lambda pre: pre >= 0)[key]
    assert not np.allclose(leaky, right)
    case = dict(key=key, expected=right, batch=6, mask_at_zero=MLP.grads_relu_mask_at_zero(params, X, grad_logits)[key])
    assert MASK in MLP.diagnosis("numpy_mlp.backward", **case)(leaky)
    assert MLP.diagnosis("numpy_mlp.backward", **case)(right * 1.5) is None
    # continuous inputs: the mask at 0 gives the right answer, so it explains no wrong one
    params, X, grad_logits = _mlp_case(exact_zeros=False)
    right = _backward(params, X, grad_logits, lambda pre: pre > 0)[key]
    case = dict(key=key, expected=right, batch=6, mask_at_zero=MLP.grads_relu_mask_at_zero(params, X, grad_logits)[key])
    wrong = right + 1e-7 * np.abs(right).max()  # fails a 1e-7 check, within first_match's 1e-6 of the mask's value
    assert MLP.diagnosis("numpy_mlp.backward", **case)(wrong) is None


def test_steps_per_epoch_one_too_many_is_named_only_when_batch_size_divides_n():
    assert "one step too many" in MLP.diagnosis("training.steps_per_epoch", n=100, batch_size=10,
                                                drop_last=False)(11)
    assert MLP.diagnosis("training.steps_per_epoch", n=0, batch_size=4, drop_last=False)(1) is not None
    # 105 // 10 == 10: "rounded down" only where that is what rounding down gives
    assert "rounded down" in MLP.diagnosis("training.steps_per_epoch", n=105, batch_size=10, drop_last=False)(10)
    assert MLP.diagnosis("training.steps_per_epoch", n=100, batch_size=10, drop_last=False)(9) is None


# ---- 01_tensors: unravel -----------------------------------------------------------------------

def _row_major(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _column_major(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape, order="F"))


def _unravel_hint(got, flat, shape):
    return TENSORS.diagnosis("strides.unravel", flat=flat, shape=shape, expected=_row_major(flat, shape))(got)


def test_a_column_major_unravel_is_not_called_off_by_one():
    """On (2, 2), flat 1 read column-major is (1, 0): also the row-major index of 2, a neighbour."""
    got = _column_major(1, (2, 2))
    assert got == _row_major(2, (2, 2))
    assert "column-major" in _unravel_hint(got, 1, (2, 2))
    assert "column-major" in _unravel_hint(_column_major(7, (3, 4)), 7, (3, 4))


def test_an_off_by_one_unravel_is_called_so():
    got = _row_major(3, (2, 3))  # flat 2 asked, the index of 3 given
    assert got != _column_major(2, (2, 3))
    assert _unravel_hint(got, 2, (2, 3)) == "off by one: that is the index of element 3, not 2."


# ---- a file that does not compile ----------------------------------------------------------------

def test_a_file_that_does_not_compile_is_named_with_its_line():
    broken = _does_not_compile({"a.py": b"x = 1\ndef f(:\n    pass\n", "b.py": b"y = 2\n", "c.txt": b"("}, ["a.py", "b.py"])
    assert list(broken) == ["a.py"]
    assert broken["a.py"].endswith("at line 2: `def f(:`")
    assert "a.py" in _does_not_compile({"a.py": b"x = 1\x00\n"}, ["a.py"])  # null bytes: ValueError or SyntaxError


def test_each_case_that_failed_on_it_says_it_in_one_same_sentence():
    cases = [CaseResult("q", "t", 1, False, False, f"f({i}) raised SyntaxError while importing a.py: invalid syntax "
                        f"(a.py, line 2); expected {i}") for i in range(3)]
    cases.append(CaseResult("q", "t", 1, False, False, "g(1) returned 2; expected 3."))
    _one_line_for_uncompiled(cases, {"a.py": "invalid syntax at line 2"})
    assert len({case.message for case in cases[:3]}) == 1 and "a.py does not compile" in cases[0].message
    assert cases[3].message == "g(1) returned 2; expected 3."


SUITE = """\
from checks.suite import cases, expect_equal, question

@question("a.double", points=50)
@cases("x", [1, 2, 3, 4])
def test_double(student, x):
    expect_equal(student.a.double(x), 2 * x)

@question("b.triple", points=50)
@cases("x", [1, 2, 3])
def test_triple(student, x):
    expect_equal(student.b.triple(x), 3 * x)
"""


def test_a_submission_with_a_syntax_error_says_so_once(make_course):
    root = make_course({"autograder/toy/assignment.toml": 'files = ["a.py", "b.py"]\n',
                        "autograder/toy/test_toy.py": SUITE, "solutions/toy/a.py": "", "solutions/toy/b.py": ""})
    files = {"a.py": b"def double(x):\n    return 2 * x +\n", "b.py": b"def triple(x):\n    return 3 * x\n"}
    (result,) = grade_sources(load_assignment(root, "toy"), [Source.from_files("broken", files)], jobs=1)
    assert [w for w in result.warnings if "does not compile" in w] == [
        "a.py does not compile: invalid syntax at line 2: `return 2 * x +`. Nothing in it can run, so every check "
        "that uses it fails: fix this first."]
    double = result.question("a.double")
    assert double.score == 0 and double.feedback.count("\n") == 1, double.feedback
    assert "(3 more cases failed the same way)" in double.feedback
    assert result.question("b.triple").passed


# ---- 02_autograd: pow at a == 0 ----------------------------------------------------------------

AUTOGRAD = public_module(str(load_assignment(REPO, "02_autograd").autograder_dir / "helpers.py"), "diagnoses")


def _pow_feedback(got, a, p, grad):
    """What the hidden suite says of `got` for pow_backward(grad, a, p): expect_close with the table's mistakes."""
    from checks.suite import expect_close
    from checks.suites.api import CheckFailed

    with np.errstate(all="ignore"):
        want = np.where(a == 0, 0.0 if p == 0 else p * 0.0 ** (p - 1), p * np.abs(a) ** (p - 1) * np.sign(a) ** (p - 1)) * grad
    try:
        expect_close(got, want, alternatives=AUTOGRAD.mistakes("rules.pow_backward", a=a, p=p, grad=grad)[0])
    except CheckFailed as failed:
        return str(failed)
    return ""


@pytest.mark.parametrize("p", [2, 3])
def test_a_nan_at_zero_is_blamed_on_the_formula_that_gives_it_there(p):
    a = np.array([0.0, 1.5, 0.0, -0.7, 0.0])
    grad = np.array([0.3, -1.2, 0.8, 0.5, 1.1])
    with np.errstate(all="ignore"):
        divided = grad * p * a ** p / a  # p * a**p / a: 0 / 0 at a == 0
    assert "divides 0 by 0" in _pow_feedback(divided, a, p, grad)
    elsewhere = _pow_feedback(np.where(a == 0, 0.0, np.nan), a, p, grad)  # NaN where a is NOT 0: another mistake
    assert elsewhere and "Likely mistake" not in elsewhere


def test_p_zero_at_zero_names_nan_only_where_the_formula_gives_it():
    """With p == 0 the right gradient is all zeros, where expect_close names no mistake at all; the
    table's value for the mistake is still the formula's own, NaN exactly where a == 0."""
    a, grad = np.array([0.0, 1.5, 0.0]), np.array([0.3, -1.2, 0.8])
    sentences = {sentence: value for value, sentence in AUTOGRAD.mistakes("rules.pow_backward", a=a, p=0, grad=grad)[0]}
    value = next(v for s, v in sentences.items() if "treat p == 0 apart" in s)
    assert np.array_equal(np.isnan(value), a == 0)
    assert "Likely mistake" not in _pow_feedback(np.array([np.nan, 0.0, np.nan]), a, 0, grad)
    assert AUTOGRAD.note("rules.pow_backward", a=a, p=0) == "a has zeros here, where PyTorch's derivative is 0 (a ** 0 is constant)."


# ---- "still the stub" ----------------------------------------------------------------------------

def _raised(message, frame):
    from checks.suites.student import StudentRaised

    return StudentRaised("f(1)", {"type": "NotImplementedError", "bases": ["NotImplementedError", "RuntimeError"],
                                  "message": message, "where": [frame]})


def test_still_the_stub_only_where_the_stub_itself_raised():
    assert _raised("numel: multiply the sizes", "strides.py:7 in numel: raise NotImplementedError('numel: m')").is_stub
    assert _raised("SGD.step: hint", "training.py:25 in step: raise NotImplementedError('SGD.step: hint')").is_stub
    # an adapter's or a student's own NotImplementedError, raised in a helper, names another function
    helper = _raised("linear_backward: no such function", "numpy_mlp.py:9 in stub: raise NotImplementedError(f'{n}: x')")
    assert not helper.is_stub and "still the stub" not in str(helper)
    assert not _raised("todo: later", "strides.py:7 in numel: raise NotImplementedError('todo: later')").is_stub
