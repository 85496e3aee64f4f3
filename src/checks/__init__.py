"""checks: a sandboxed, question-by-question autograder for a PyTorch course."""

__version__ = "0.1.0"
