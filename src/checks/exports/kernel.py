"""What an exported notebook's grading cell calls: grade the answer cells this kernel ran with the
hidden suite, once per kernel and answers, and give one question's result (score, question_result)
or one hidden check's (check_case: otter scores a question as the sum of its passed test cases).

The hidden suite is never in the student's release. It is found in $CHECKS_COURSE, else in the
nearest folder at or above the working folder that holds autograder/<assignment>/assignment.toml:
where the nbgrader export puts it (the course folder) and the otter export ships it (inside the
autograder zip). The grading runs in a child process, through the sandbox, as `checks grade` does.
The grading cell itself runs in the student's kernel, beside the student's code, so it is only as
safe as that kernel; `checks grade` on the same notebook is not exposed that way (README).

Where the grader itself fails (a broken hidden suite, a sandbox that cannot start), a grading cell
ends its kernel: nbgrader and otter then record an error for the notebook, not 0 points a cell.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from checks.config.settings import Settings
from checks.course.answer_cells import answer_cell, import_nbformat
from checks.course.assignment import load_assignment
from checks.grading.session import Source, grade_sources, named_files
from checks.notebooks.magic import ANSWERS
from checks.suites.scoring import QuestionResult, SubmissionResult

HIDDEN_MARKER = "autograder/{assignment}/assignment.toml"
TIMEOUT_S = 1800.0  # the whole grading of one notebook, sandbox start-up included

_graded: dict[tuple[str, str], SubmissionResult] = {}  # (assignment, digest of the answers) -> result


class HiddenSuiteMissing(RuntimeError):
    """The grading cell ran where the hidden suite is not (a student's copy of the release)."""


class GraderFailed(RuntimeError):
    """The grader could not grade these answers: there is no score to give, for any question."""


# The kernel's exit status when a grading cell ends it because the grader failed.
GRADER_FAILED_EXIT = 3


def question_name(qid: str) -> str:
    """The name a notebook tool gives a question (nbgrader's grade_id, otter's question name): every
    character other than a letter or digit becomes '_' (strides.offset -> strides_offset)."""
    return re.sub(r"[^A-Za-z0-9]", "_", qid)


def score(assignment: str, qid: str) -> float:
    """The question's points for the answers this kernel ran, printing its feedback when short of
    full marks (to stdout: nbgrader counts any stderr output as a failed cell)."""
    # the suite must be there when nbgrader autogrades (it sets this); elsewhere this may be a
    # student's copy of the release, where the cell says that these checks run when graded
    autograding = os.environ.get("NBGRADER_EXECUTION") == "autograde"
    result = _question_or_end_kernel(assignment, qid, suite_shipped=autograding)
    if not result.passed:
        print(f"{qid}: {result.score:g} of {result.max_score:g} points\n{result.feedback}")
    return result.score


def question_result(assignment: str, qid: str) -> QuestionResult:
    """One question of the grading of this kernel's answers (graded once, then reused)."""
    result = grade_answers(assignment, dict(ANSWERS))
    found = next((q for q in result.questions if q.qid == qid), None)
    if found is None:
        raise KeyError(f"{assignment} has no question {qid!r}; it has {', '.join(q.qid for q in result.questions)}")
    return found


def check_case(assignment: str, qid: str, part: int, index: int, of: int) -> None:
    """One hidden check of a question, for a tool that scores by test case (the otter export): raise
    AssertionError when check `index` of test `part` failed for this kernel's answers. `of` is how
    many checks that test had when the export was written; where the grading found another number
    (another set of devices), check `index` passes when it is within the same share of passed checks."""
    # otter's hidden tests run only where the autograder zip put the suite beside them
    result = _question_or_end_kernel(assignment, qid, suite_shipped=True)
    if not result.parts:  # a quiz question, or one graded 0 without running (an unreadable submission)
        ok, first = result.score >= result.max_score, (part, index) == (0, 0)
    elif part >= len(result.parts):
        raise AssertionError(f"{qid} has changed since this notebook's grader was exported (it has no test "
                             f"{part + 1}); tell the course staff")
    else:
        ok = _shown(result.parts[part], of)[index]
        failed_before = any(not all(_shown(p, 1 if p["all_or_nothing"] else len(p["passed"])))
                            for p in result.parts[:part])
        first = not failed_before and all(_shown(result.parts[part], of)[:index])
    if ok:
        return
    if first:  # the question's feedback once, at its first failed check
        raise AssertionError(f"{qid}: {result.score:g} of {result.max_score:g} points\n{result.feedback}")
    raise AssertionError(f"{qid}: this hidden check failed too (the feedback is at the first one that failed)")


def _question_or_end_kernel(assignment: str, qid: str, *, suite_shipped: bool = False) -> QuestionResult:
    """question_result, for a grading cell: where the grader failed, no cell may pass or fail (either
    would be a score), so the kernel ends, and the tool that ran the notebook records an error. With
    `suite_shipped` (the grading tool put the suite there), a hidden suite that cannot be found is
    such a failure too."""
    try:
        return question_result(assignment, qid)
    except GraderFailed as failure:
        _end_kernel(failure)
    except HiddenSuiteMissing as missing:
        if not suite_shipped:
            raise
        _end_kernel(GraderFailed(f"the grader failed; this is not your score: {missing}"))


def _end_kernel(failure: GraderFailed) -> NoReturn:
    """Say why in the cell and in the grading tool's log (the kernel's own stderr), then exit."""
    message = f"checks: {failure}\nThis kernel is ended so that no score is recorded for this notebook.\n"
    print(message, flush=True)
    # ipykernel sends fd 2 to the notebook through a pipe that nobody reads once the kernel exits;
    # it keeps the kernel's real stderr, the one its launcher (nbgrader, otter) logs, as this copy
    real_stderr = getattr(sys.stderr, "_original_stdstream_copy", None)
    try:
        os.write(real_stderr if isinstance(real_stderr, int) else 2, message.encode())
    except OSError:
        pass
    os._exit(GRADER_FAILED_EXIT)


def question_parts(result: QuestionResult) -> list[dict]:
    """A question's tests as check_case counts them (QuestionResult.parts); a quiz question is one
    all-or-nothing test of its points."""
    return result.parts or [{"points": result.max_score, "all_or_nothing": True,
                             "passed": [result.score >= result.max_score]}]


def _shown(part: dict, of: int) -> list[bool]:
    """The pass/fail flags of a test as check_case reports them, `of` checks long."""
    passed = part["passed"]
    if part["all_or_nothing"]:
        return [all(passed)] * of
    if len(passed) == of:
        return passed
    return [i < round(sum(passed) * of / max(len(passed), 1)) for i in range(of)]


def grade_answers(assignment: str, answers: dict[str, str], root: Path | None = None) -> SubmissionResult:
    """The hidden suite's result for these files (name -> source), graded in a child process with the
    hidden suite under `root` (default: hidden_course_root). Raises GraderFailed where the grading
    did not finish, or finished with the grader's own error."""
    digest = hashlib.sha256(json.dumps(sorted(answers.items())).encode()).hexdigest()
    if (assignment, digest) not in _graded:
        root = root or hidden_course_root(assignment)
        with tempfile.TemporaryDirectory(prefix="checks-kernel-") as scratch:
            notebook, out = Path(scratch) / f"{assignment}.ipynb", Path(scratch) / "result.json"
            write_answer_notebook(notebook, answers)
            command = [sys.executable, "-m", "checks.exports.kernel", str(root), assignment, str(notebook), str(out)]
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
            try:
                output, _ = child.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)  # the grading's whole process group, sandbox included
                child.communicate()
                raise GraderFailed(f"the grader failed: it took over {TIMEOUT_S:g} s; this is not your score") from None
            if child.returncode != 0 or not out.is_file():
                raise GraderFailed(f"the grader failed (exit status {child.returncode}); this is not your score:\n"
                                   + output[-2000:])
            result = SubmissionResult.from_dict(json.loads(out.read_text(encoding="utf-8")))
        if result.error:
            raise GraderFailed(f"the grader failed; this is not your score: {result.error}")
        _graded[assignment, digest] = result
    return _graded[assignment, digest]


def hidden_course_root(assignment: str, start: Path | None = None) -> Path:
    """The course the kernel's settings name (CHECKS_COURSE), else the nearest folder at or above
    `start` (the working folder) with the assignment's hidden suite."""
    marker = HIDDEN_MARKER.format(assignment=assignment)
    named = Settings.from_environment().course  # the grading kernel is a front end of its own
    if named is not None:
        candidates = [named]
    else:
        here = (start or Path.cwd()).resolve()
        candidates = [here, *here.parents]
    for folder in candidates:
        if (folder / marker).is_file():
            return folder
    raise HiddenSuiteMissing(f"the hidden checks of {assignment} are not here ({marker} was not found at or above "
                             f"{candidates[0]}): they run when your notebook is graded, not in your copy.")


def write_answer_notebook(path: Path, answers: dict[str, str]) -> None:
    """A notebook of one answer cell per file: what `checks grade` reads from a student's notebook."""
    nbformat = import_nbformat()

    cells = [nbformat.v4.new_code_cell(answer_cell(name, code)) for name, code in answers.items()]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))


def _grade_in_child(root: Path, assignment_name: str, notebook: Path, out: Path) -> None:
    """Grade the notebook as `checks grade` would: the same reading, sandbox and suite, in the jail
    and on the device the kernel's environment asks for."""
    assignment = load_assignment(root, assignment_name)
    settings = Settings.from_environment()
    (result,) = grade_sources(assignment, [Source.from_path(notebook, named_files(assignment))], jobs=1,
                              isolation=settings.isolation, device=settings.device)
    out.write_text(json.dumps(result.to_dict()), encoding="utf-8")


if __name__ == "__main__":
    _grade_in_child(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
