"""Executors: where a batch is graded when one machine is not enough. `dask_grader` hands each
submission, read and capped by the driver, to a Dask cluster whose workers each keep a warm
grading pool (serve.py) per assignment; results come back as the plain data the local pool yields.

May import every layer below it (sandbox, course, suites, reports, grading); never authoring or the CLI.
Needs the optional `cluster` extra (dask, distributed); nothing else in checks imports this package.
"""
