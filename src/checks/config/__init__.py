"""What a run was asked for, read once: the settings object every front end builds (the CLI, the
notebook magic, a kernel, a pool process) and passes down, and the error that means "asked for
the wrong thing" (exit status 2).

May import `checks.sandbox` only (the jail it chooses); everything above takes its settings
from here, and only `settings.py` reads the CHECKS_* environment variables.
"""
