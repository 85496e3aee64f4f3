"""Likely mistakes: a mistake the grader names, `checks test` names too, in the same words.
01_tensors keeps its models in the grader (autograder/01_tensors/tensor_mistakes.py) and releases
what they say of the public cases as data (tests/diagnoses.json, written by `checks build`);
02_autograd and 03_mlp share one table with the public checks (solutions/<name>/tests/diagnoses.py).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys

import numpy as np
import pytest

from checks.course.assignment import load_assignment
from checks.course.submissions import read_submission
from checks.exports.hidden import hidden_files
from checks.grading.session import Source, grade_sources
from checks.suite import public_module
from checks.suites.questions import declared_questions
from conftest import ASSIGNMENTS, REPO

ASSIGNMENT = load_assignment(REPO, "01_tensors")
REFERENCE = read_submission(ASSIGNMENT.solution_dir).files


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


TABLE = _module(ASSIGNMENT.autograder_dir / "tensor_mistakes.py", "checks_test_tensor_mistakes")  # the grader's models
PUBLIC = _module(ASSIGNMENT.public_tests_dir / "diagnoses.py", "checks_test_public_diagnoses")  # the release's lookup
EMPTY_PRODUCT = "Likely mistake: the product of no sizes at all is 1: a 0-d tensor holds exactly one element."


def with_numel(find: str, replace: str) -> dict[str, bytes]:
    text = REFERENCE["strides.py"].decode()
    assert text.count(find) == 1
    return {**REFERENCE, "strides.py": text.replace(find, replace).encode()}


@pytest.fixture(scope="module")
def empty_product_zero():
    """numel(()) == 0, the rest the reference: graded by the public checks and by the hidden suite."""
    files = with_numel("    count = 1\n", "    count = 1 if sizes else 0\n")
    source = Source.from_files("empty_product_zero", files)
    (public,) = grade_sources(ASSIGNMENT, [source], public=True, jobs=1, questions=["strides.numel"])
    (hidden,) = grade_sources(ASSIGNMENT, [source], jobs=1, questions=["strides.numel"])
    return public.question("strides.numel"), hidden.question("strides.numel")


def test_the_public_checks_name_the_mistake_the_hidden_suite_names(empty_product_zero):
    public, hidden = empty_product_zero
    assert not public.passed and not hidden.passed
    assert "numel(()) returned 0; expected 1." in public.feedback
    assert EMPTY_PRODUCT in public.feedback, public.feedback
    assert EMPTY_PRODUCT in hidden.feedback, hidden.feedback


def test_checks_test_shows_the_diagnosis(tmp_path, capsys):
    from checks.cli import main

    files = with_numel("    count = 1\n", "    count = 1 if sizes else 0\n")
    for name in ASSIGNMENT.files:
        (tmp_path / name).write_bytes(files[name])
    assert main(["--course", str(REPO), "test", "01_tensors", str(tmp_path), "strides.numel"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert EMPTY_PRODUCT in out


def test_every_public_question_has_an_entry_and_the_hidden_suite_keeps_no_diagnosis_of_its_own():
    assert set(TABLE.DIAGNOSES) == set(declared_questions(ASSIGNMENT.public_tests_dir))
    for path in ASSIGNMENT.autograder_dir.glob("*.py"):
        defined = {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}
        assert "diagnose" not in defined, f"{path.name} diagnoses on its own: put it in the table"


@pytest.mark.parametrize("qid, got, case, words", [
    ("strides.numel", 5, {"shape": (2, 3)}, "the sizes were added"),
    ("strides.numel", 6, {"shape": (2, 0, 3)}, "a dim of size 0 makes the whole tensor empty"),
    ("strides.contiguous_strides", (1, 2), {"shape": (2, 3)}, "column-major"),
    ("strides.offset", 5, {"index": (1, 2), "strides": (3, 1), "storage_offset": 2, "expected": 7},
     "storage offset (2) was not added"),
    ("strides.unravel", (1, 0, 1), {"flat": 7, "shape": (2, 3, 4), "expected": (0, 1, 3)}, "column-major order"),
    ("strides.transpose", ((3, 2), (3, 1)), {"shape": (2, 3), "strides": (3, 1), "expected": ((3, 2), (1, 3))},
     "the shape was swapped but the strides were not"),
    ("strides.view", (4, 1), {"shape": (3, 2), "strides": (1, 3), "new_shape": (2, 3, 1),
                              "expected": ((2, 3, 1), (3, 1, 1))}, None),
    ("strides.gather", [[10, 11], [12, 13]], {"storage": list(range(10, 16)), "shape": (2, 2), "strides": (2, 1),
                                              "storage_offset": 1, "expected": [[11, 12], [13, 14]]},
     "storage offset (1) was ignored"),
    ("broadcasting.broadcast_shape", (2, 3), {"shapes": ((2, 1), (3,)), "expected": (2, 3)}, None),
    ("broadcasting.broadcast_shape", (1, 3), {"shapes": ((3,), (0, 1)), "expected": (0, 3)}, "size-0 dim"),
    ("broadcasting.broadcast_strides", (0, 1), {"shape": (3,), "strides": (1,), "target_shape": (2, 3)}, None),
    ("broadcasting.broadcast_strides", (3, 1), {"shape": (3,), "strides": (1,), "target_shape": (2, 3)},
     "new leading dims must get stride 0"),
    ("broadcasting.broadcast_index", (1, 2), {"out_index": (1, 2), "out_shape": (2, 3), "shape": (2, 1)},
     "only element 0 to read"),
])
def test_each_entry_names_its_mistake_and_only_that(qid, got, case, words):
    said = TABLE.diagnosis(qid, **case)(got)
    assert (said is None) if words is None else (said is not None and words in said), said


def test_a_diagnosis_that_breaks_on_an_odd_value_says_nothing():
    assert TABLE.diagnosis("strides.transpose", shape=(2, 3), strides=(3, 1), expected=((3, 2), (1, 3)))(object()) is None


def test_the_models_stay_in_the_grader_and_the_release_holds_only_data():
    """The released lookup defines no model of a mistake; the hidden suite and its export read the
    grader's own module, and no export ships a public one for 01."""
    released = ASSIGNMENT.public_tests_dir / "diagnoses.py"
    defined = {node.name for node in ast.walk(ast.parse(released.read_text())) if isinstance(node, ast.FunctionDef)}
    assert defined == {"plain", "case_key", "_fits", "_load", "diagnosis", "named", "refusal_hint"}
    assert not set(TABLE.DIAGNOSES) & defined
    shipped = hidden_files(ASSIGNMENT)
    assert "autograder/01_tensors/tensor_mistakes.py" in shipped
    assert "assignments/01_tensors/tests/diagnoses.py" not in shipped


def _public_cases():
    table = json.loads((ASSIGNMENT.public_tests_dir / "diagnoses.json").read_text())["questions"]
    return [(qid, key, mistakes) for qid, cases in sorted(table.items()) for key, mistakes in sorted(cases.items())]


def test_the_public_table_covers_every_public_case_and_question():
    cases = _public_cases()
    assert {qid for qid, _, _ in cases} == set(TABLE.DIAGNOSES) == set(declared_questions(ASSIGNMENT.public_tests_dir))
    assert sum(len(m) for _, _, m in cases) >= 40  # most public cases name at least one mistake
    sys.path.insert(0, str(ASSIGNMENT.autograder_dir))
    try:
        builder = _module(ASSIGNMENT.autograder_dir / "release_data.py", "checks_test_release_data")
        parametrized = list(builder.public_cases(ASSIGNMENT.public_tests_dir))
    finally:
        sys.path.remove(str(ASSIGNMENT.autograder_dir))
    assert len(parametrized) >= 38 and len(cases) == len(parametrized)  # every parametrized public case has a key


@pytest.mark.parametrize("qid, key, mistakes", _public_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_public_lookup_says_what_the_grader_says_of_each_recorded_wrong_answer(qid, key, mistakes):
    case = json.loads(key)
    for value, message in mistakes:
        got = PUBLIC.REFUSED if value == {"refused": True} else value
        assert PUBLIC.diagnosis(qid, **case)(got) == message
        filled = TABLE.REFUSED if got is PUBLIC.REFUSED else _filled(value)
        assert TABLE.diagnosis(qid, **case)(filled) == message


def _filled(value):
    """A wrong answer of the table with its uncompared places (None) filled with 7."""
    if isinstance(value, list):
        return tuple(_filled(v) for v in value)
    return 7 if value is None else value


def test_the_public_lookup_names_nothing_for_a_case_or_answer_it_does_not_list():
    assert PUBLIC.diagnosis("strides.numel", shape=(2, 3), expected=6)(5) is not None
    assert PUBLIC.diagnosis("strides.numel", shape=(2, 3), expected=6)(7) is None
    assert PUBLIC.diagnosis("strides.numel", shape=(9, 9), expected=81)(18) is None  # not a public case
    assert PUBLIC.diagnosis("strides.numel", shape=(2, 3), expected=6)(object()) is None
    assert PUBLIC.diagnosis("strides.numel", shape=(2, 3), expected=6)(True) is None


# ---- 02_autograd and 03_mlp: the same, with tables that may use torch (in the grader) -----------

def mutant_files(assignment, name: str) -> dict[str, bytes]:
    """The reference with one mutant of the assignment's mutants.toml applied."""
    import tomllib

    spec = next(m for m in tomllib.loads((assignment.autograder_dir / "mutants.toml").read_text())["mutant"]
                if m["name"] == name)
    files = read_submission(assignment.solution_dir).files
    text = files[spec["file"]].decode()
    assert text.count(spec["find"]) == 1
    return {**files, spec["file"]: text.replace(spec["find"], spec["replace"]).encode()}


# (assignment, mutant, its question, the diagnosis both suites must name)
MUTANTS = [
    ("02_autograd", "exp_ignores_upstream", "rules.exp_backward",
     "Likely mistake: this is the answer for an upstream grad of all ones: multiply the local derivative by grad"),
    ("03_mlp", "count_includes_frozen", "torch_mlp.count_parameters",
     "Likely mistake: frozen parameters (requires_grad=False) were counted: count the trainable ones only"),
    ("03_mlp", "backward_relu_mask_at_zero", "numpy_mlp.backward",
     "Likely mistake: the ReLU's mask lets the gradient through where its input is exactly 0"),
    ("03_mlp", "grad_b_averaged", "numpy_mlp.linear_backward",
     "Likely mistake: grad_b is the MEAN of grad_Y over the batch; b is added to every row"),
]


@pytest.mark.parametrize("name, mutant, qid, words", MUTANTS, ids=[m[1] for m in MUTANTS])
def test_checks_test_names_the_mistake_the_hidden_suite_names(tmp_path, capsys, name, mutant, qid, words):
    from checks.cli import main

    assignment = load_assignment(REPO, name)
    files = mutant_files(assignment, mutant)
    for file in assignment.files:
        (tmp_path / file).write_bytes(files[file])
    assert main(["--course", str(REPO), "test", name, str(tmp_path), qid]) == 1
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert words in out, out
    (hidden,) = grade_sources(assignment, [Source.from_files(mutant, files)], jobs=1, questions=[qid])
    assert not hidden.question(qid).passed and words in " ".join(hidden.question(qid).feedback.split())


def shares_a_table(root, name) -> bool:
    """Whether the assignment's public checks ship a table of mistakes (a DIAGNOSES in
    tests/diagnoses.py) for its hidden suite to share, as 02 and 03 do (01 releases data instead)."""
    path = load_assignment(root, name).public_tests_dir / "diagnoses.py"
    return path.is_file() and any(isinstance(node, (ast.Assign, ast.AnnAssign)) and "DIAGNOSES" in ast.unparse(node)
                                  for node in ast.parse(path.read_text()).body)


def assert_one_table_of_mistakes(root, name):
    """The table names only public questions, ships in the release and the hidden suite's zip, and
    the hidden suite diagnoses nothing on its own; shared with the tests of a course `checks new` wrote."""
    assignment = load_assignment(root, name)
    table = public_module(str(assignment.autograder_dir / "x.py"), "diagnoses")
    assert table.__file__ == str(assignment.public_tests_dir / "diagnoses.py")
    assert set(table.DIAGNOSES) <= set(declared_questions(assignment.public_tests_dir))
    assert f"assignments/{name}/tests/diagnoses.py" in hidden_files(assignment)
    for path in assignment.autograder_dir.glob("*.py"):
        defined = {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}
        own = {d for d in defined if d == "diagnose" or d.endswith(("_mistake", "_mistakes", "_hint", "_diagnose"))}
        assert not own, f"{path.name} diagnoses on its own ({', '.join(sorted(own))}): put it in the table"


@pytest.mark.parametrize("name", [name for name in ASSIGNMENTS if shares_a_table(REPO, name)])
def test_each_table_names_public_questions_and_the_hidden_suite_keeps_no_diagnosis_of_its_own(name):
    assert_one_table_of_mistakes(REPO, name)


def test_the_assignments_that_share_a_table_are_found():
    """Able to fail: 02 and 03 are found by their table, 01 (which releases data) is not."""
    assert {"02_autograd", "03_mlp"} <= {name for name in ASSIGNMENTS if shares_a_table(REPO, name)}
    assert not shares_a_table(REPO, "01_tensors")


def test_02_entries_model_their_mistakes_and_only_those():
    import numpy as np

    table = public_module(str(load_assignment(REPO, "02_autograd").autograder_dir / "x.py"), "diagnoses")
    a, b, grad = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([0.5, 1.5, 2.5]), np.full((2, 3), 2.0)
    expected = [grad / b, (-grad * a / b ** 2).sum(axis=0)]
    found = table.mistakes("rules.div_backward", op="div", a=a, b=b, grad=grad, expected=expected)
    assert any(np.allclose(value, grad * b) and "this is grad * b" in sentence for value, sentence in found[0])
    assert any("upstream grad of all ones" in sentence for _, sentence in found[1])
    hint = table.shape_hint("rules.div_backward", 1, a=a, b=b, grad=grad)
    assert "sum over the broadcast dimensions" in hint((2, 3)) and "exactly its input's shape" in hint((3, 1))
    assert table.note("rules.div_backward", a=a, b=b, grad=grad).startswith("Note: a (2, 3) and b (3,) broadcast")
    assert table.note("rules.div_backward", a=a, b=a, grad=grad) is None

    class Raised:
        message = "maximum recursion depth exceeded"

        def is_a(self, kind):
            return kind is RecursionError

    assert "recurses once per node" in table.raised_hint("engine.deep_chain")(Raised())
    assert table.raised_hint("rules.sum_backward", axis=-1)(Raised()) is None


def test_03_entries_model_their_mistakes_and_only_those():
    import numpy as np

    table = public_module(str(load_assignment(REPO, "03_mlp").autograder_dir / "x.py"), "diagnoses")
    X, W, b = np.eye(2, 3), np.arange(6.0).reshape(3, 2), np.array([1.0, -1.0])
    expected = X @ W + b
    say = table.diagnosis("numpy_mlp.linear_forward", X=X, W=W, expected=expected)
    assert "b was not added" in say(X @ W) and "transposed" in say(expected.T) and say(expected + 1) is None
    assert say(object()) is None  # a diagnosis that breaks on an odd value says nothing
    steps = table.diagnosis("training.steps_per_epoch", n=100, batch_size=32, drop_last=False)
    assert "rounded down" in steps(3) and "a float came back" in steps(4.0) and steps(5) is None
    loop = table.diagnosis("training.train_epoch", batches=2, device="cpu",
                           events=["forward:cpu", "backward", "step", "forward:cpu", "backward", "step"])
    assert "zero_grad() is never called" in loop(None)
    assert table.diagnosis("training.train_epoch", batches=2, losses=[1.0, 3.0], sizes=[2, 2])(3.0).startswith(
        "that is the last batch's loss")
