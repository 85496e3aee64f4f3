"""What a hidden or public suite imports: `from checks.suite import question, cases, expect_close`.

A stable name for authors and for the public tests in every student release; the code lives in
`checks.suites`: the marker and the checks in `api`, calling the student's code in `calls`, seeded
case inputs in `seeds`, references computed before the fork and grids of cases in `references`,
tables of likely mistakes in `tables`.
"""

from checks.suites import api as _api, calls as _calls, references as _references, seeds as _seeds, tables as _tables
from checks.suites.api import *  # noqa: F401,F403
from checks.suites.calls import *  # noqa: F401,F403
from checks.suites.references import *  # noqa: F401,F403
from checks.suites.seeds import *  # noqa: F401,F403
from checks.suites.tables import *  # noqa: F401,F403

__all__ = [*_api.__all__, *_calls.__all__, *_references.__all__, *_seeds.__all__, *_tables.__all__]
