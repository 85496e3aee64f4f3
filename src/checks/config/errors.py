"""The error a user's request itself causes, as opposed to a grader failure or a student's mistake."""

from __future__ import annotations


class UsageError(Exception):
    """What was asked for cannot be done as asked (a bad option value, a missing path, an --out
    that would overwrite a submission); str() says what to change. The CLI exits with status 2."""
