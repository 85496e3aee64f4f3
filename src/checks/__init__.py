"""checks: a sandboxed, question-by-question autograder for a PyTorch course."""

__version__ = "0.1.0"


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext checks` in IPython or Jupyter (`ipython` is its shell): registers `%checks test
    [ASSIGNMENT] [QUESTION...]`. Imported lazily, so that `import checks` stays light for the grader
    and its sandbox."""
    from checks.notebooks.magic import load_ipython_extension as load

    load(ipython)
