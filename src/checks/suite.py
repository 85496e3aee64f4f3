"""What a hidden or public suite imports: `from checks.suite import question, cases, expect_close`.

A stable name for authors and for the public tests in every student release; the code lives in
`checks.suites`: the marker and the checks in `api`, calling the student's code in `calls`, seeded
case inputs in `seeds`.
"""

from checks.suites import api as _api, calls as _calls, seeds as _seeds
from checks.suites.api import *  # noqa: F401,F403
from checks.suites.calls import *  # noqa: F401,F403
from checks.suites.seeds import *  # noqa: F401,F403

__all__ = [*_api.__all__, *_calls.__all__, *_seeds.__all__]
