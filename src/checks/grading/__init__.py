"""Grading a batch: one pytest session per batch, a forked grading child per submission, the
parallel pool of children, and the batch that ties them to an output folder and its gradebook.

May import every layer below it (sandbox, course, suites, reports); never authoring or the CLI.
"""
