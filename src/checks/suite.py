"""What a hidden or public suite imports: `from checks.suite import question, cases, expect_close`.

A stable name for authors and for the public tests in every student release; the code lives in
`checks.suites.api`.
"""

from checks.suites.api import *  # noqa: F401,F403
from checks.suites.api import __all__  # noqa: F401
