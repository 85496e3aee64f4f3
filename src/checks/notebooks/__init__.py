"""Notebooks: each assignment's lesson notebook and the IPython extension that checks from it.

Owns the builder (a jupytext percent-format source in solutions/<name>/<name>.py becomes
assignments/<name>/<name>.ipynb), the `%checks` magic (`%load_ext checks`), the runner it starts
in a child process, and how a result is shown in Jupyter (HTML) or terminal IPython (text).

May import every layer below it (sandbox, course, suites, reports, grading); never authoring or
the CLI, which import it (`checks build` writes the notebooks).
"""
