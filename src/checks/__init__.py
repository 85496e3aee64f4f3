"""checks: a sandboxed, question-by-question autograder for a PyTorch course."""

__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 (IPython's shell; not imported here)
    """`%load_ext checks` in IPython or Jupyter: registers `%checks test [QUESTION]`.

    Imported lazily, so that `import checks` stays light for the grader and its sandbox."""
    from checks.notebooks.magic import load_ipython_extension as load

    load(ipython)
