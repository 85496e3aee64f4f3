"""What hidden and public suites run on: the author API (`checks.suite` re-exports it), the
`student` proxy that calls into the sandbox and its time budgets, the pytest plugin that records each case, the
standalone mode, and how cases and quiz answers become per-question scores.

May import `checks.sandbox` and `checks.course`; never grading, reports or the CLI.
"""
