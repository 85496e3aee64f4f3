"""How close a numeric quiz answer must be to its key, as an author declares it in assignment.toml.

A key takes either a relative and absolute tolerance (`rtol`, `atol`, as math.isclose reads them)
or a number of significant digits (`digits`, as PrairieLearn's number input does): the answer must
lie within half a unit of the key's last significant digit, so that -0.693 and -0.69 both earn the
points of a key -0.6931 asked "to 2 significant digits". Without either, the answer must match to a
relative 1e-6. The same words describe the tolerance to students in `checks test`, in the release's
quiz.toml and in their feedback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 1e-12
MAX_DIGITS = 15  # a double holds about 15 significant decimal digits
# floating-point slack on the digits bound, so that -0.695 against -0.69 at 2 digits is inside
_SLACK = 1e-9


@dataclass(frozen=True)
class Tolerance:
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    digits: int | None = None  # significant digits; when set, rtol and atol are not used

    @property
    def declared(self) -> bool:
        """False for the default, which the release's quiz.toml does not spell out at every key."""
        return self != Tolerance()

    def accepts(self, given: float, key: float) -> bool:
        if not (math.isfinite(given) and math.isfinite(key)):
            return given == key
        if self.digits is not None:
            return abs(given - key) <= self.half_unit(key) * (1 + _SLACK)
        return math.isclose(given, key, rel_tol=self.rtol, abs_tol=self.atol)

    def half_unit(self, key: float) -> float:
        """Half a unit in the key's last significant digit."""
        return 0.5 * 10.0 ** (math.floor(math.log10(abs(key))) - (self.digits or 1) + 1)

    def describe(self) -> str:
        """In a student's words: "to 2 significant digits", "within 1% or 0.001"."""
        if self.digits is not None:
            return f"to {self.digits} significant digit{'s' if self.digits != 1 else ''}"
        if not self.declared:
            return "to about 6 significant digits (a relative 1e-06)"
        parts = []
        if self.rtol > 0:
            parts.append(f"{self.rtol * 100:g}%" if self.rtol >= 1e-4 else f"a relative {self.rtol:g}")
        if self.atol > DEFAULT_ATOL or not parts:
            parts.append(f"{self.atol:g}")
        return "within " + " or ".join(parts)


def read_tolerance(spec: dict[str, Any], key: str, answer: Any) -> tuple[Tolerance, str]:
    """A [quiz.<key>] table's tolerance, or (default, why it cannot be read). The table's keys and
    their kinds are already checked (course/schema.py); this checks how they go together."""
    given = {name: spec[name] for name in ("rtol", "atol", "digits") if name in spec}
    if not given:
        return Tolerance(), ""
    where = f"[quiz.{key}]"
    if isinstance(answer, bool):
        return Tolerance(), f"{where} has a true/false answer: {', '.join(given)} applies to numbers only"
    if "digits" in given:
        if len(given) > 1:
            return Tolerance(), f"{where}: give either digits or rtol/atol, not both"
        if answer == 0:
            return Tolerance(), f"{where}: a key of 0 has no significant digits; give atol instead"
        return Tolerance(digits=given["digits"]), ""
    return Tolerance(rtol=float(given.get("rtol", 0.0)), atol=float(given.get("atol", 0.0))), ""
