"""The grader's handle on student code: what a fault says, and what the sandbox has imported."""

from __future__ import annotations

import sys

import pytest

from checks import jail
from checks.course import CourseError, load_assignment
from checks.sandbox import WorkerConfig, Zygote
from checks.student import QuestionSandbox, Student, StudentRaised

PROBE = b"""
import sys


def loaded(name):
    return name in sys.modules


def half(x):
    if x % 2:
        raise ValueError(f"{x} is odd")
    return x // 2
"""


# two modules only this file knows of: the zygote is told to import the first, and nobody imports the second
LISTED, UNLISTED = "checks_listed_probe", "checks_unlisted_probe"


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    folder = tmp_path_factory.mktemp("modules")
    for name in (LISTED, UNLISTED):
        (folder / f"{name}.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(folder))
    try:
        with Zygote(jail.choose(jail.FORK), imports=(LISTED,)) as warm:
            yield warm
    finally:
        sys.path.remove(str(folder))


def student_for(zygote: Zygote) -> Student:
    return Student(QuestionSandbox(zygote, WorkerConfig(files={"probe.py": PROBE}), timeout=30), frozenset({"probe"}))


def test_sandbox_imports_are_imported_before_the_student_code_runs(zygote):
    student = student_for(zygote)
    assert student.probe.loaded(LISTED) is True
    assert student.probe.loaded(UNLISTED) is False


def test_a_fault_names_its_own_call_even_when_described_after_the_next(zygote):
    student = student_for(zygote)
    with pytest.raises(StudentRaised) as first:
        student.probe.half(7)
    assert student.probe.half(8) == 4
    assert str(first.value).startswith("half(7) raised ValueError: 7 is odd")
    assert first.value.call == "half(7)"


def test_sandbox_imports_must_be_a_list_of_names(make_course):
    root = make_course({"autograder/toy/assignment.toml": 'files = ["a.py"]\nsandbox_imports = ["wave"]\n'})
    assert load_assignment(root, "toy").sandbox_imports == ("wave",)
    (root / "autograder/toy/assignment.toml").write_text('files = ["a.py"]\nsandbox_imports = "wave"\n')
    with pytest.raises(CourseError, match="sandbox_imports must be a list of module names"):
        load_assignment(root, "toy")
