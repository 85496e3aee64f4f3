"""A table of likely mistakes turned into the `diagnose` functions the checks take.

An assignment models its students' likely mistakes in one table, {question id: entry}, where
entry(got, **case) returns the sentence naming the mistake that gives `got` in that case, or None.
The hidden suite and the public checks read the same table (`public_module(__file__,
"diagnoses")`), so both name a mistake in the same words; `diagnosis_table` is the lookup they call.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

__all__ = ["diagnosis_table"]

Diagnose = Callable[[Any], "str | None"]


def diagnosis_table(entries: Mapping[str, Callable[..., "str | None"]], *,
                    missing_ok: bool = False) -> Callable[..., Diagnose]:
    """`diagnosis(qid, **case)`: the `diagnose` (for expect_equal, expect_close, call_or_fail's
    `mistake`) of one case of question `qid`, given what came back. An entry that raises on an odd
    value says nothing: whatever a student returned, a diagnosis never fails a check. With
    `missing_ok`, a question the table does not have gets one that says nothing (a KeyError
    otherwise, so that a misspelt id is found)."""

    def diagnosis(qid: str, **case: Any) -> Diagnose:
        entry = entries.get(qid) if missing_ok else entries[qid]

        def diagnose(got: Any) -> str | None:
            if entry is None:
                return None
            try:
                return entry(got, **case)
            except Exception:  # noqa: BLE001 - whatever the student returned, a diagnosis never fails a check
                return None
        return diagnose
    return diagnosis
