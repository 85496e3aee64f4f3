"""`python -m checks ...`: the same as the `checks` command."""

import sys

from checks.cli import main

sys.exit(main())
