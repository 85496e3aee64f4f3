import pytest

from checks.authoring.build import BuildError, build, require_current_release
from checks.course.assignment import CourseError, load_assignment
from checks.course.release import blank_quiz, strip_solutions

SOURCE = '''\
def numel(shape):
    """Count elements."""
    # BEGIN SOLUTION hint: multiply the sizes together
    total = 1
    for size in shape:
        total *= size
    return total
    # END SOLUTION


class Tensor:
    def grad(self):
        if True:
            # BEGIN SOLUTION
            return 1
            # END SOLUTION
'''


def test_regions_become_not_implemented_with_the_hint():
    stub = strip_solutions(SOURCE)
    assert "total" not in stub and "return 1" not in stub
    assert "    raise NotImplementedError('numel: multiply the sizes together')\n" in stub
    assert "            raise NotImplementedError('Tensor.grad: not implemented yet')\n" in stub
    compile(stub, "stub.py", "exec")


@pytest.mark.parametrize("broken, where", [
    ("# BEGIN SOLUTION\nx = 1\n", ":1: BEGIN SOLUTION is never closed"),
    ("x = 1\n# END SOLUTION\n", ":2: END SOLUTION without"),
    ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION\n", ":2: BEGIN SOLUTION inside"),
])
def test_unpaired_markers_name_the_line(broken, where):
    with pytest.raises(BuildError, match=where):
        strip_solutions(broken, "f.py")


def test_quiz_answers_are_blanked_and_questions_kept():
    assert blank_quiz("# How many?\nnumel = 6\nflag=true\n") == '# How many?\nnumel = ""\nflag = ""\n'


def test_build_writes_the_release_and_check_detects_drift(make_course):
    root = make_course({"solutions/a1/m.py": SOURCE, "solutions/a1/quiz.toml": "x = 1\n",
                        "solutions/a1/README.md": "hello\n"})
    assert build(root, ["a1"], check=True)  # nothing built yet
    build(root, ["a1"])
    assert build(root, ["a1"], check=True) == []
    assert (root / "assignments/a1/quiz.toml").read_text() == 'x = ""\n'
    (root / "assignments/a1/extra.py").write_text("x = 1\n")
    (root / "assignments/a1/m.py").write_text("edited\n")
    assert sorted(build(root, ["a1"], check=True)) == [
        "assignments/a1/extra.py: not generated from solutions/a1", "assignments/a1/m.py: out of date"]
    build(root, ["a1"])
    assert not (root / "assignments/a1/extra.py").exists()


def test_an_export_for_students_is_refused_while_the_release_is_out_of_date(make_course):
    """`checks export student` asks this first: a release edited by hand, or built from an older
    solution, would reach students as it is."""
    root = make_course({"solutions/a1/m.py": SOURCE, "solutions/a1/quiz.toml": "x = 1\n",
                        "autograder/a1/assignment.toml": 'files = ["m.py"]\n'})
    build(root, ["a1"])
    assignment = load_assignment(root, "a1")
    require_current_release(assignment)
    (root / "assignments/a1/m.py").write_text("edited\n")
    with pytest.raises(CourseError, match=r"out of date with .*solutions/a1: run `checks build a1` first"):
        require_current_release(assignment)
    build(root, ["a1"])
    require_current_release(assignment)


RELEASE_DATA = '''
import json


def files(solution_dir):
    values = {"loss": 2.2418079431114208e-104, "nan": float("nan"), "grad": [0.19999998390331436, -1.5], "n": 3}
    return {"tests/data.json": (json.dumps(values, indent=1) + "\\n").encode()}
'''


@pytest.mark.parametrize("edit, current", [
    (("2.2418079431114208e-104", "2.24180794311142e-104"), True),  # another CPU's last bit
    (("0.19999998390331436", "0.1999999839033144"), True),
    (("NaN", "NaN"), True),
    (("2.2418079431114208e-104", "2.2418079e-104"), False),  # a value that changed
    (('"n": 3', '"n": 3.0'), False),  # another type
    (("-1.5", "-1.5, 0.0"), False),  # another length
    (('"loss"', '"lost"'), False),
])
def test_a_release_data_file_is_current_while_its_numbers_agree_to_the_last_bits(make_course, edit, current):
    """Data the build works out (diagnoses from NumPy and PyTorch) may differ in a float's last bit
    from one CPU to another: `checks build --check` must not call the release out of date for it,
    on CI's machine or a TA's, and must for any other change."""
    root = make_course({"solutions/a1/m.py": SOURCE, "autograder/a1/release_data.py": RELEASE_DATA})
    build(root, ["a1"])
    data = root / "assignments/a1/tests/data.json"
    assert edit[0] in data.read_text()
    data.write_text(data.read_text().replace(*edit))
    assert build(root, ["a1"], check=True) == ([] if current else ["assignments/a1/tests/data.json: out of date"])
