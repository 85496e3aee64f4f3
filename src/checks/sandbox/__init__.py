"""The trust boundary: everything on either side of it.

Owns the jail (how strongly the sandbox is isolated), the warm zygote that forks workers, the
worker (the only code that runs beside student code), the grader-side supervisor that starts
the zygote and holds a worker, the account of a submission's memory, the plain-data codec that crosses back, and the huge-page trick
that makes forking cheap. It imports nothing else of `checks`: the worker and zygote run inside
the jail, where the rest of the package must not be needed.
"""
