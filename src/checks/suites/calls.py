"""Calling the student's code from a suite, with the feedback in the student's terms.

A check compares what a call returned, but the call may fail first: the student's code raises,
crashes or runs out of time. Left alone, such a fault fails the case with the engine's account of
it (`add_backward(array(shape=(2, 3), float64), ...) raised ValueError: ...`), which names a
driver or the raw arguments rather than what the student wrote. Every course's suite used to carry
its own wrapper for that (issue 30); `call_or_fail` is the one they share, and `name_call` names
the call for the checks that follow it.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from checks.suites.api import current_student, fail
from checks.suites.describe import Later, summarize
from checks.suites.diagnoses import MARKER
from checks.suites.student import StudentFault, StudentRaised

__all__ = ["call_or_fail", "name_call"]

Result = TypeVar("Result")
Mistake = Callable[[StudentRaised], "str | None"]
_NOT_GIVEN: Any = object()


def call_or_fail(call: Callable[[], Result], *, text: str | Later | None = None, expected: Any = _NOT_GIVEN,
                 because: str = "", mistake: str | Mistake | None = None, note: str | Later | None = None) -> Result:
    """What `call()` returns: one call of the student's code (`lambda: student.rules.exp_backward(g, a)`,
    `lambda: student.run(drivers.train, ...)`). Where the student's code does not return, the case
    fails, and the feedback says:

    - `text`: the call as the student would write it ("exp_backward(grad, a) with a of shape (2, 3)",
      or a scenario: "t = Tensor([1, 2, 3])"), on a line of its own with what happened below it,
      so that cases that fail the same way (a stub, a missing module) are shown once. The checks
      after it name the call so too (name_call). Without it, the engine's own summary of the call.
      A Later makes it only if it is shown.
    - `expected` (a value, or a function that gives it, run only when shown) and `because`: what
      the call should have returned, for an input the student's code must accept and refused
      ("; expected (2, 3): PyTorch accepts this input.").
    - `mistake`: the likely mistake, a sentence or a function of the StudentRaised that returns one
      or None; written after "Likely mistake:", which staff analytics count.
    - `note`: a sentence that helps whatever was raised ("a and b broadcast here: ...").

    `expected`, `mistake` and `note` are said only when the student's code raised, and not while it
    is still the stub: a crash or a time limit is explained by the engine, a stub is not started.
    """
    try:
        result = call()
    except StudentFault as fault:
        fail(_fault_message(fault, text, expected, because, mistake, note))
        raise AssertionError from fault  # unreachable: fail raises
    if text is not None:
        name_call(text)
    return result


def name_call(text: str | Later) -> None:
    """Name the running case's last call `text` in the feedback of the checks that follow
    (`{text} returned ...; expected ...`), where the engine's summary of the arguments would not
    say what the student ran ("train_epoch(...), its loss after epoch 2,")."""
    student = current_student.get()
    if student is not None:
        student.last_call = text


def _fault_message(fault: StudentFault, text: str | Later | None, expected: Any, because: str,
                   mistake: str | Mistake | None, note: str | Later | None) -> str:
    head = f"{text}\n" if text else f"{fault.call} "
    if not isinstance(fault, StudentRaised) or fault.is_stub:
        return head + fault.outcome
    outcome = fault.outcome
    if expected is not _NOT_GIVEN:
        shown = _said(lambda: expected() if callable(expected) else expected)
        if shown is not None:
            first, newline, rest = outcome.partition("\n")
            shown = shown if isinstance(shown, str) else summarize(shown)
            outcome = f"{first}; expected {shown}{f': {because}' if because else ''}.{newline}{rest}"
    lines = [head + outcome]
    said = _said(lambda: mistake(fault) if callable(mistake) else mistake)
    if said:
        lines.append(f"{MARKER} {said}")
    if note:
        lines.append(str(note))
    return "\n".join(lines)


def _said(make: Callable[[], Any]) -> Any:
    """What a suite's function gives for the feedback; one that breaks says nothing, so that it
    never turns the student's failure into a grader error."""
    try:
        return make()
    except Exception:  # noqa: BLE001 - a suite's hint, run on whatever the student's code raised
        return None
