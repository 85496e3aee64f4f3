"""Helpers the public checks run next to your engine.py: Tensors cannot travel between
processes, so these build small graphs with your Tensor and hand back plain arrays and flags."""

import sys

import numpy as np


def _grad(t):
    """t.grad as an array (None stays None); anything else is named, so the check can say so."""
    if t.grad is None or isinstance(t.grad, (np.ndarray, np.generic)):
        return None if t.grad is None else np.array(t.grad)
    return f"<{type(t.grad).__name__}>"


def construct(data, requires_grad):
    import engine

    t = engine.Tensor(data, requires_grad=requires_grad)
    return {"data": np.array(t.data), "dtype": str(np.asarray(t.data).dtype), "shape": tuple(t.shape),
            "requires_grad": t.requires_grad, "grad": _grad(t)}


def forward_ops(a, b):
    """Forward values of every op on a (2, 3) tensor and a (3,) tensor."""
    import engine

    x, y = engine.Tensor(a, requires_grad=True), engine.Tensor(b)
    results = {
        "x + y": x + y, "x - y": x - y, "x * y": x * y, "x / y": x / y, "2.0 - x": 2.0 - x,
        "1.0 / y": 1.0 / y, "-x": -x, "x ** 2": x ** 2, "x @ y": x @ y, "y.exp()": y.exp(),
        "y.log()": y.log(), "x.relu()": x.relu(), "x.tanh()": x.tanh(), "x.sigmoid()": x.sigmoid(),
        "x.sum()": x.sum(), "x.sum(axis=0)": x.sum(axis=0), "x.mean(axis=1, keepdims=True)": x.mean(axis=1, keepdims=True),
    }
    return {name: np.array(t.data) for name, t in results.items()}


def quiz_graph(a, b):
    """c = a * b; d = c + a; L = d ** 2; L.backward()."""
    import engine

    a, b = engine.Tensor(a, requires_grad=True), engine.Tensor(b, requires_grad=True)
    c = a * b
    d = c + a
    loss = d ** 2
    loss.backward()
    return {"L": float(loss.item()), "a.grad": _grad(a), "b.grad": _grad(b), "c.grad": _grad(c),
            "a.is_leaf": a.is_leaf, "c.is_leaf": c.is_leaf, "c.grad_fn is None": c.grad_fn is None}


def diamond(a):
    """p = a.exp(); q = p + p * 2.0; q.sum().backward(): p has two consumers."""
    import engine

    a = engine.Tensor(a, requires_grad=True)
    p = a.exp()
    (p + p * 2.0).sum().backward()
    return _grad(a)


def broadcast_bias(x, w, b):
    """((x @ w + b).tanh()).mean().backward() with a bias b of shape (k,)."""
    import engine

    x = engine.Tensor(x)
    w, b = engine.Tensor(w, requires_grad=True), engine.Tensor(b, requires_grad=True)
    ((x @ w + b).tanh()).mean().backward()
    return {"w.grad": _grad(w), "b.grad": _grad(b)}


def two_passes(a, b):
    """Two separate forward + backward passes on the same leaves; a.grad after each."""
    import engine

    a, b = engine.Tensor(a, requires_grad=True), engine.Tensor(b, requires_grad=True)
    (a * b).sum().backward()
    first = _grad(a)
    (a * a).sum().backward()
    return {"first": first, "second": _grad(a)}


def backward_twice(a, retain):
    """L = (a * a).exp().sum(); L.backward(retain_graph=retain); then L.backward() again."""
    import engine

    a = engine.Tensor(a, requires_grad=True)
    loss = (a * a).exp().sum()
    loss.backward(retain_graph=retain)
    try:
        loss.backward()
    except Exception as error:  # noqa: BLE001 - the type is what the check looks at
        return type(error).__name__
    return None


def non_scalar_backward(a):
    """(a * 2.0).backward() on a (2, 3) tensor, with no grad argument."""
    import engine

    a = engine.Tensor(a, requires_grad=True)
    try:
        (a * 2.0).backward()
    except Exception as error:  # noqa: BLE001
        return type(error).__name__
    return None


def no_grad_and_detach(a):
    import engine

    a = engine.Tensor(a, requires_grad=True)
    with engine.no_grad():
        inside = a * 2.0
    after = a * 2.0
    detached = after.detach()
    return {"inside": (inside.requires_grad, inside.grad_fn is None),
            "after": (after.requires_grad, after.grad_fn is None),
            "detached": (detached.requires_grad, detached.grad_fn is None)}


def retained_and_zeroed(a):
    """x = a * 3.0; x.retain_grad(); y = a.exp(); L = (x * x).sum() + y.sum(); L.backward(); then zero_grad."""
    import engine

    a = engine.Tensor(a, requires_grad=True)
    x = a * 3.0
    x.retain_grad()
    y = a.exp()
    loss = (x * x).sum() + y.sum()
    loss.backward()
    report = {"x.grad": _grad(x), "y.grad": _grad(y), "a.grad": _grad(a)}
    engine.zero_grad([a], set_to_none=False)
    report["a.grad after zero_grad(set_to_none=False)"] = _grad(a)
    engine.zero_grad([a])
    report["a.grad after zero_grad()"] = _grad(a)
    return report


def views(x):
    """x.permute(1, 2, 0).reshape(3, 8).T[::3, 1].expand(2, 3), then a weighted sum and a backward."""
    import engine

    x0 = engine.Tensor(x, requires_grad=True)
    out = x0.permute(1, 2, 0).reshape(3, 8).T[::3, 1].expand(2, 3)
    weights = engine.Tensor(np.arange(6.0).reshape(2, 3))
    (out * weights).sum().backward()
    return {"out": np.array(out.data), "x.grad": _grad(x0)}


def long_chain(a, n):
    """n ops in a row (x = x * 1.001 + 0.01, alternating) and a backward, at recursion limit 1000
    (which your code may not raise: the hidden check holds it there), with calls allowed to nest
    only a few hundred levels deep whatever the limit (the question's cap_stack)."""
    import engine

    x0 = engine.Tensor(a, requires_grad=True)
    x = x0
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        for k in range(n):
            x = x * 1.001 if k % 2 == 0 else x + 0.01
        try:
            x.sum().backward()
        except (SystemError, MemoryError) as error:  # how Python says the capped stack ran out
            said = type(error).__name__ + (f": {error}" if str(error) else "")
            raise RecursionError(f"Python calls nested deeper than this check allows: a few hundred levels, "
                                 f"whatever the recursion limit (Python said {said})"
                                 ).with_traceback(error.__traceback__) from None
        grad = _grad(x0)
        raised = sys.getrecursionlimit() > 1000
        sys.setrecursionlimit(1000)
        del x
    finally:
        sys.setrecursionlimit(previous)
    return {"x0.grad": grad, "limit raised": raised}
