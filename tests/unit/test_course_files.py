"""assignment.toml and mutants.toml as an author gets them wrong: every mistake is an error that
names the file and the key, all of a file's mistakes at once, and the CLI says it in one line
(exit 2) instead of a traceback or a setting silently ignored."""

from __future__ import annotations

import textwrap

import pytest

from checks import cli
from checks.authoring.verify import load_mutants, verify
from checks.course.assignment import MARKER_FILE, CourseError, load_assignment, load_copy, marker_text

GOOD_ASSIGNMENT = """
    title = "Toy"
    files = ["work.py"]
    provided = ["data.py"]
    sandbox_imports = ["json"]
    block_imports = ["torch"]
    fresh_worker_per_question = true

    [quiz.sum]
    answer = 6
    points = 2.5

    [quiz.is_leaf]
    answer = true
    points = 1
"""

WORK = "def value():\n    # BEGIN SOLUTION\n    return 3\n    # END SOLUTION\n"
SUITE = """
    from checks.suite import expect_equal, question

    @question("work.value", points=100)
    def test_value(student):
        expect_equal(student.work.value(), 3)
"""
GOOD_MUTANT = """
    [[mutant]]
    name = "off_by_one"
    question = "work.value"
    file = "work.py"
    find = "return 3"
    replace = "return 2"
"""


@pytest.fixture
def course(make_course):
    """A toy course whose assignment.toml and mutants.toml a test rewrites."""
    root = make_course({"autograder/toy/assignment.toml": GOOD_ASSIGNMENT, "autograder/toy/test_toy.py": SUITE,
                        "autograder/toy/mutants.toml": GOOD_MUTANT, "solutions/toy/work.py": WORK,
                        "solutions/toy/data.py": "", "assignments/toy/.keep": ""})

    def write(name: str, text: str):
        (root / "autograder/toy" / name).write_text(textwrap.dedent(text))
        return root

    return write


def test_a_correct_assignment_toml_reads_every_key(course):
    assignment = load_assignment(course("assignment.toml", GOOD_ASSIGNMENT), "toy")
    assert (assignment.title, assignment.files, assignment.provided, assignment.sandbox_imports) == \
        ("Toy", ("work.py",), ("data.py",), ("json",))
    assert assignment.fresh_worker_per_question is True
    assert assignment.block_imports == ("torch",) and assignment.zygote_sets == (("torch",),)
    assert [(q.key, q.answer, q.points) for q in assignment.quiz] == [("sum", 6, 2.5), ("is_leaf", True, 1.0)]


def test_a_copy_of_the_release_withholds_what_the_assignment_withholds(course, tmp_path):
    """The public checks in a student's copy withhold what the hidden suite does: the marker says it."""
    for text, withheld in ((GOOD_ASSIGNMENT, ("torch",)), (GOOD_ASSIGNMENT.replace('block_imports = ["torch"]', ""), ())):
        assignment = load_assignment(course("assignment.toml", text), "toy")
        copy = tmp_path / f"copy{len(withheld)}"
        copy.mkdir()
        (copy / MARKER_FILE).write_text(marker_text(assignment))
        assert ("block_imports" in marker_text(assignment)) == bool(withheld)
        assert load_copy(copy).block_imports == withheld
        assert load_copy(copy).zygote_sets == ((withheld,) if withheld else ((), ("torch",)))


ASSIGNMENT_MISTAKES = {
    "misspelt key": ('files = ["work.py"]\nsandbox_import = ["torch"]\n',
                     "unknown key `sandbox_import` (did you mean `sandbox_imports`?)"),
    "unknown key": ('files = ["work.py"]\nsolution = "x"\n', "unknown key `solution` (known: title, files"),
    "files a string": ('files = "strides.py"\n',
                       "`files` must be a list of file names, such as [\"strides.py\"], not the string 'strides.py'"),
    "a file name not a string": ('files = ["work.py", 3]\n', "`files` must be a list of file names"),
    "flag a string": ('fresh_worker_per_question = "yes"\n',
                      "`fresh_worker_per_question` must be true or false, not the string 'yes'"),
    "a module where a package goes": ('block_imports = ["torch.optim"]\n',
                                      "`block_imports` must be a list of top-level package names, such as [\"torch\"]"),
    "a package name a string": ('block_imports = "torch"\n', "`block_imports` must be a list of top-level package names"),
    "quiz without answer": ("[quiz.sum]\npoints = 2\n", "[quiz.sum] has no `answer` (a number or true/false)"),
    "quiz without points": ("[quiz.sum]\nanswer = 6\n", "[quiz.sum] has no `points`"),
    "quiz answer a string": ('[quiz.sum]\nanswer = "6"\npoints = 2\n',
                             "`answer` in [quiz.sum] must be a number or true/false, not the string '6'"),
    "negative points": ("[quiz.sum]\nanswer = 6\npoints = -1\n", "`points` in [quiz.sum] must be a number of points"),
    "misspelt quiz key": ("[quiz.sum]\nanswr = 6\npoints = 2\n",
                          "unknown key `answr` in [quiz.sum] (did you mean `answer`?)"),
    "quiz entry not a table": ("[quiz]\nsum = 6\n", "[quiz.sum] must be a table, not the number 6"),
    "not TOML": ("files = [\n", "not valid TOML"),
}


@pytest.mark.parametrize("text, words", ASSIGNMENT_MISTAKES.values(), ids=ASSIGNMENT_MISTAKES.keys())
def test_each_assignment_toml_mistake_names_the_file_and_the_key(course, text, words):
    root = course("assignment.toml", text)
    with pytest.raises(CourseError) as error:
        load_assignment(root, "toy")
    assert str(error.value).startswith(f"{root / 'autograder/toy/assignment.toml'}: ")
    assert words in str(error.value)


def test_every_mistake_of_a_file_is_reported_at_once_in_one_line(course, capsys):
    root = course("assignment.toml", 'files = "work.py"\nsandbox_import = []\n[quiz.sum]\npoints = 2\n')
    assert cli.main(["--course", str(root), "test", "toy"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("error: ") and "Traceback" not in out
    for words in ("`files` must be", "unknown key `sandbox_import`", "[quiz.sum] has no `answer`"):
        assert words in out


MUTANT_MISTAKES = {
    "unknown key": (GOOD_MUTANT + 'question_id = "x"\n', "unknown key `question_id` in [[mutant]] number 1 "
                                                        "('off_by_one') (did you mean `question`?)"),
    "missing field": ('[[mutant]]\nname = "m"\nquestion = "work.value"\nfile = "work.py"\nfind = "return 3"\n',
                      "[[mutant]] number 1 ('m') has no `replace` (a string)"),
    "find absent": (GOOD_MUTANT.replace('find = "return 3"', 'find = "return 4"'),
                    "mutant off_by_one: `find` occurs 0 times in work.py; it must occur once"),
    "find twice": (GOOD_MUTANT.replace('find = "return 3"', 'find = "SOLUTION"'),
                   "mutant off_by_one: `find` occurs 2 times in work.py; it must occur once"),
    "file not in the reference": (GOOD_MUTANT.replace('file = "work.py"', 'file = "wrok.py"'),
                                  "mutant off_by_one: `file` 'wrok.py' is not in"),
    "a name used twice": (GOOD_MUTANT + GOOD_MUTANT, "two mutants are named 'off_by_one'"),
    "a table, not an array of tables": (GOOD_MUTANT.replace("[[mutant]]", "[mutant]"),
                                        "`mutant` must be an array of tables, each under its own [[...]] header"),
}


@pytest.mark.parametrize("text, words", MUTANT_MISTAKES.values(), ids=MUTANT_MISTAKES.keys())
def test_each_mutants_toml_mistake_is_a_clear_error(course, text, words):
    root = course("mutants.toml", text)
    with pytest.raises(CourseError) as error:
        load_mutants(load_assignment(root, "toy"))
    assert str(error.value).startswith(f"{root / 'autograder/toy/mutants.toml'}: ")
    assert words in str(error.value)


def test_checks_verify_stops_at_a_broken_mutants_toml_before_grading(course, capsys):
    root = course("mutants.toml", GOOD_MUTANT.replace('find = "return 3"', 'find = "return 4"'))
    assert cli.main(["--course", str(root), "verify", "toy"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("error: ") and "`find` occurs 0 times" in out and out.count("\n") == 1


def test_a_mutant_of_an_unknown_question_fails_verify_naming_the_likely_one(course):
    root = course("mutants.toml", GOOD_MUTANT.replace('question = "work.value"', 'question = "work.valeu"'))
    course("assignment.toml", 'files = ["work.py"]\n')
    verdicts = {v.submission: v for v in verify(load_assignment(root, "toy"), jobs=1)}
    assert verdicts["reference"].ok and verdicts["stubs"].ok
    mutant = verdicts["mutant:off_by_one"]
    assert not mutant.ok
    assert mutant.detail == "mutants.toml names question 'work.valeu', which the suite does not have " \
                            "(did you mean 'work.value'?)"
