"""The outputs of a grade run: the gradebook (the durable record a run resumes from) and what
is rendered from results: results.json, feedback.md, gradebook.csv, report.html, terminal tables.

May import `checks.sandbox`, `checks.course` and `checks.suites` (the result types); never
grading, so that every output can be rendered again from the gradebook alone.
"""
