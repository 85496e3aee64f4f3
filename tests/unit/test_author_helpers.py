"""What suites used to copy from one another, now in checks.suite: references computed before the
fork only where that is safe (precomputed, per_device), grids of cases (grid), and the lookup of a
table of likely mistakes (diagnosis_table)."""

from __future__ import annotations

import pytest

from checks import suite
from checks.suites import references


def _counting(log):
    def compute(*key, device=None):
        log.append((key, device))
        return sum(key) if device is None else (sum(key), device)
    return compute


def test_the_helpers_are_in_the_author_api():
    assert {"grid", "precomputed", "per_device", "autograd_before_fork", "diagnosis_table"} <= set(suite.__all__)


def test_grid_gives_the_cases_of_stacked_parametrize_the_first_axis_slowest():
    names, rows = suite.grid(("n", [1, 2]), ("a, b", [("x", "y"), ("z", "w")]), ("flag", (True,)))
    assert names == ["n", "a", "b", "flag"]
    assert rows == [(1, "x", "y", True), (1, "z", "w", True), (2, "x", "y", True), (2, "z", "w", True)]
    assert suite.grid(("n", iter([3]))) == (["n"], [(3,)])  # an iterator is read once, as a list


@pytest.mark.parametrize("gpu", [False, True])
def test_a_reference_without_autograd_is_computed_now_on_any_machine(monkeypatch, gpu):
    monkeypatch.setattr(references, "autograd_before_fork", lambda: not gpu)
    log = []
    lookup = suite.precomputed(_counting(log), [(1, 2), (3, 4)], backward=False)
    assert [key for key, _ in log] == [(1, 2), (3, 4)]
    assert lookup(1, 2) == 3 and lookup(3, 4) == 7 and len(log) == 2  # asked again: not computed again


def test_a_backward_reference_waits_for_the_grading_process_where_a_gpu_is_present(monkeypatch):
    monkeypatch.setattr(references, "autograd_before_fork", lambda: False)
    log = []
    lookup = suite.precomputed(_counting(log), [(1, 2), (3, 4)], backward=True)
    assert log == []  # nothing before the fork
    assert lookup(1, 2) == 3 and lookup(1, 2) == 3 and log == [((1, 2), None)]  # once, when first asked
    monkeypatch.setattr(references, "autograd_before_fork", lambda: True)
    log.clear()
    suite.precomputed(_counting(log), [(1, 2)], backward=True)
    assert log == [((1, 2), None)]  # no GPU: computed now, once for every submission


def test_per_device_computes_the_cpu_now_and_another_device_when_asked(monkeypatch):
    monkeypatch.setattr(references, "autograd_before_fork", lambda: True)
    log = []
    lookup = suite.per_device(_counting(log), [(1, 2)], backward=True)
    assert log == [((1, 2), "cpu")]
    assert lookup(1, 2, device="cpu") == (3, "cpu") and len(log) == 1
    assert lookup(1, 2, device="cuda") == (3, "cuda") and log[-1] == ((1, 2), "cuda")


def test_a_diagnosis_table_names_a_mistake_and_never_fails_a_check():
    def numel(got, shape, **_):
        return "the sizes were added" if got == sum(shape) else None

    def breaks(got, **_):
        raise TypeError("an odd value")

    diagnosis = suite.diagnosis_table({"strides.numel": numel, "strides.view": breaks})
    assert diagnosis("strides.numel", shape=(2, 3))(5) == "the sizes were added"
    assert diagnosis("strides.numel", shape=(2, 3))(6) is None
    assert diagnosis("strides.view")(object()) is None  # an entry that breaks says nothing
    with pytest.raises(KeyError):
        diagnosis("strides.nmel", shape=(2, 3))  # a misspelt id is found
    assert suite.diagnosis_table({}, missing_ok=True)("strides.numel", shape=(2, 3))(5) is None
