"""Graphs for the engine questions, as plain-data programs (see drivers.py for the format).

Hand-written graphs cover the classic shapes (the quiz graph, diamonds, an MLP); `random_program`
draws seeded graphs over every op. Programs track their NumPy values while they are generated so
that every op is applied inside its domain (log of positives, division away from 0, relu away
from its kink, exp of moderate values).
"""

import numpy as np

from checks.suite import case_rng
from helpers import c, leaf, v


# ----------------------------------------------------------------------------- hand-written graphs

def quiz_graph():
    """c = a*b; d = c + a; L = d**2 at a = 2, b = 3 (the quiz's graph)."""
    program = {"leaves": [leaf("a", 2.0), leaf("b", 3.0)],
               "steps": [("mul", v(0), v(1)), ("add", v(2), v(0)), ("pow", v(3), 2)]}
    return program, 4, None


def diamond():
    """p = a.exp(); q = p + p * 2; L = q.sum(): p is a non-leaf with two consumers."""
    rng = case_rng("diamond")
    program = {"leaves": [leaf("a", rng.standard_normal(3))],
               "steps": [("exp", v(0)), ("mul", v(1), c(2.0)), ("add", v(1), v(2)), ("sum", v(3), None, False)]}
    return program, 4, None


def diamond_reversed():
    """p = a.tanh(); q = p * 2; r = q + p (the other operand order); output weighted."""
    rng = case_rng("diamond_reversed")
    program = {"leaves": [leaf("a", rng.standard_normal((2, 3)))],
               "steps": [("tanh", v(0)), ("mul", v(1), c(2.0)), ("add", v(2), v(1))]}
    return program, 3, rng.standard_normal((2, 3))


def fan_out_three():
    """p = a.sigmoid() used by three ops, whose results meet again."""
    rng = case_rng("fan_out_three")
    program = {"leaves": [leaf("a", rng.standard_normal(4))],
               "steps": [("sigmoid", v(0)),                 # 1 p
                         ("mul", v(1), v(1)),               # 2 p * p
                         ("exp", v(1)),                     # 3 p.exp()
                         ("div", v(1), c(2.0)),             # 4 p / 2
                         ("add", v(2), v(3)),               # 5
                         ("sub", v(5), v(4)),               # 6
                         ("add", v(1), v(6)),               # 7 p + t5: p meets its own descendant
                         ("mean", v(7), None, False)]}      # 8
    return program, 8, None


def nested_diamonds():
    """Diamonds in a row, each joining a tensor with its own descendant, and a leaf x that
    meets the end of the chain it started."""
    rng = case_rng("nested_diamonds")
    program = {"leaves": [leaf("x", rng.standard_normal((3, 2))), leaf("w", rng.uniform(0.5, 1.5, 2))],
               "steps": [("mul", v(0), v(1)),               # 2 t0 = x * w
                         ("tanh", v(2)),                    # 3 t1 = t0.tanh()
                         ("add", v(2), v(3)),               # 4 t2 = t0 + t1
                         ("mul", v(4), v(4)),               # 5 t3 = t2 * t2
                         ("sub", v(4), v(5)),               # 6 t4 = t2 - t3
                         ("add", v(0), v(6)),               # 7 t5 = x + t4
                         ("sum", v(7), 0, False)]}          # 8 t6 shape (2,)
    return program, 8, rng.standard_normal(2)


def mlp():
    """h = (x @ W1 + b1).relu(); y = (h @ W2 + b2).sigmoid(); L = ((y - t) ** 2).mean()."""
    rng = case_rng("mlp")
    program = {"leaves": [leaf("x", rng.standard_normal((5, 4)), requires_grad=False),
                          leaf("W1", rng.standard_normal((4, 3))), leaf("b1", rng.standard_normal(3) * 0.1),
                          leaf("W2", rng.standard_normal((3, 2))), leaf("b2", rng.standard_normal(2) * 0.1),
                          leaf("t", rng.uniform(0, 1, (5, 2)), requires_grad=False)],
               "steps": [("matmul", v(0), v(1)),            # 6
                         ("add", v(6), v(2)),               # 7
                         ("relu", v(7)),                    # 8 h
                         ("matmul", v(8), v(3)),            # 9
                         ("add", v(9), v(4)),               # 10
                         ("sigmoid", v(10)),                # 11 y
                         ("sub", v(11), v(5)),              # 12
                         ("pow", v(12), 2),                 # 13
                         ("mean", v(13), None, False)]}     # 14
    return program, 14, None


def broadcasting():
    """Leaves of shapes (2, 1, 4), (3, 1) and () meet in one broadcast expression."""
    rng = case_rng("broadcasting")
    program = {"leaves": [leaf("a", rng.standard_normal((2, 1, 4))), leaf("b", rng.standard_normal((3, 1))),
                          leaf("s", 1.7)],
               "steps": [("mul", v(0), v(1)),               # 3 (2, 3, 4)
                         ("sub", v(3), v(2)),               # 4
                         ("sum", v(4), (0, -1), False),     # 5 (3,)
                         ("div", v(5), v(2)),               # 6
                         ("mean", v(4), 1, True)]}          # 7 (2, 1, 4)
    return {"leaves": program["leaves"], "steps": program["steps"] + [("sum", v(7), None, False),
                                                                       ("sum", v(6), None, False),
                                                                       ("add", v(8), v(9))]}, 10, None


def numbers_both_sides():
    """Python numbers on either side of + - * / and a ** exponent."""
    rng = case_rng("numbers_both_sides")
    program = {"leaves": [leaf("a", rng.uniform(0.5, 2.0, (2, 3)))],
               "steps": [("sub", c(2.0), v(0)),             # 1 2 - a
                         ("div", c(3.0), v(0)),             # 2 3 / a
                         ("mul", c(1.5), v(1)),             # 3 1.5 * (2 - a)
                         ("add", c(2), v(2)),               # 4 2 + 3 / a
                         ("sub", v(4), c(0.5)),             # 5
                         ("div", v(3), c(4.0)),             # 6
                         ("pow", v(0), 3),                  # 7 a ** 3
                         ("mul", v(5), v(6)),               # 8
                         ("add", v(8), v(7)),               # 9
                         ("neg", v(9)),                     # 10
                         ("log", v(0)),                     # 11
                         ("add", v(10), v(11))]}            # 12
    return program, 12, rng.standard_normal((2, 3))


def matmul_shapes():
    """1-D @ 2-D, batched @ 2-D and 1-D @ 1-D in one graph."""
    rng = case_rng("matmul_shapes")
    program = {"leaves": [leaf("u", rng.standard_normal(3)), leaf("M", rng.standard_normal((3, 4))),
                          leaf("B", rng.standard_normal((2, 5, 3))), leaf("z", rng.standard_normal(4))],
               "steps": [("matmul", v(0), v(1)),            # 4 (4,)
                         ("matmul", v(2), v(1)),            # 5 (2, 5, 4)
                         ("matmul", v(5), v(3)),            # 6 (2, 5)
                         ("matmul", v(4), v(3)),            # 7 ()
                         ("mul", v(6), v(7)),               # 8 (2, 5)
                         ("tanh", v(8))]}                   # 9
    return program, 9, rng.standard_normal((2, 5))


def constant_leaves():
    """Leaves without requires_grad mixed in: their .grad stays None; an unused leaf too."""
    rng = case_rng("constant_leaves")
    program = {"leaves": [leaf("a", rng.standard_normal(4)), leaf("k", rng.standard_normal(4), requires_grad=False),
                          leaf("unused", rng.standard_normal(2))],
               "steps": [("mul", v(0), v(1)), ("exp", v(3)), ("add", v(4), v(1)), ("sum", v(5), None, False)]}
    return program, 6, None


HANDWRITTEN = {f.__name__: f for f in (quiz_graph, diamond, diamond_reversed, fan_out_three, nested_diamonds,
                                       mlp, broadcasting, numbers_both_sides, matmul_shapes, constant_leaves)}


# ----------------------------------------------------------------------------- random graphs

LEAF_SHAPES = [(3, 4), (4,), (1, 4), (3, 1), (), (2, 3, 4), (2, 1, 4)]


class _Builder:
    """Appends steps to a program while tracking each value's NumPy result."""

    def __init__(self, rng):
        self.rng = rng
        self.program = {"leaves": [], "steps": []}
        self.values = []
        self.uses = []
        self.leaf_positions = []
        self.requires = []

    def add_leaf(self, name, data, requires_grad=True):
        """Leaves may be added between steps; `numbered` later puts them first, as programs need."""
        self.program["leaves"].append(leaf(name, data, requires_grad))
        self.leaf_positions.append(len(self.values))
        self.values.append(np.asarray(data, dtype=np.float64))
        self.uses.append(0)
        self.requires.append(bool(requires_grad))
        return len(self.values) - 1

    def step(self, op, *operands):
        n_operands = 2 if op in ("add", "sub", "mul", "div", "matmul") else 1
        values = [self.values[o[1]] if o[0] == "v" else o[1] for o in operands[:n_operands]]
        values += list(operands[n_operands:])   # a pow exponent, or a reduction's axis and keepdims
        result = _numpy_step(op, values)
        self.program["steps"].append((op, *operands))
        for o in operands[:n_operands]:
            if o[0] == "v":
                self.uses[o[1]] += 1
        self.values.append(result)
        self.uses.append(0)
        self.requires.append(any(self.requires[o[1]] for o in operands[:n_operands] if o[0] == "v"))
        return len(self.values) - 1

    # -- values made safe for an op
    def positive(self, k):
        """A value index whose entries are all >= 0.2 (adds steps when needed)."""
        if self.values[k].min(initial=1.0) >= 0.2:
            return k
        squared = self.step("mul", v(k), v(k))
        return self.step("add", v(squared), c(0.5))

    def bounded(self, k, limit=3.0):
        if np.abs(self.values[k]).max(initial=0.0) <= limit:
            return k
        return self.step("tanh", v(k))

    def away_from_zero(self, k):
        if np.abs(self.values[k]).min(initial=1.0) >= 0.2:
            return k
        return self.step("exp", v(self.bounded(k)))


def _numpy_step(op, values):
    if op in ("add", "sub", "mul", "div"):
        x, y = values
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](x, y)
    if op == "matmul":
        return np.matmul(values[0], values[1])
    x = values[0]
    if op == "neg":
        return -x
    if op == "exp":
        return np.exp(x)
    if op == "log":
        return np.log(x)
    if op == "relu":
        return np.maximum(x, 0.0)
    if op == "tanh":
        return np.tanh(x)
    if op == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op == "pow":
        return np.asarray(x) ** values[1]
    if op in ("sum", "mean"):
        return getattr(np, op)(x, axis=values[1], keepdims=values[2])
    raise ValueError(op)


def random_program(seed, n_ops=12):
    """A seeded random graph over every op: returns (program, output index, weights)."""
    rng = case_rng("random_program", seed)
    b = _Builder(rng)
    n_leaves = int(rng.integers(2, 5))
    for k in range(n_leaves):
        shape = LEAF_SHAPES[int(rng.integers(len(LEAF_SHAPES)))]
        b.add_leaf("abcdefgh"[k], rng.standard_normal(shape), requires_grad=bool(k == 0 or rng.random() < 0.85))
    ops = ["add", "sub", "mul", "div", "matmul", "neg", "exp", "log", "relu", "tanh", "sigmoid", "pow", "sum",
           "mean", "add_c", "rsub_c", "mul_c", "rdiv_c", "reuse", "reuse", "reuse"]
    for _ in range(n_ops):
        op = ops[int(rng.integers(len(ops)))]
        k = _pick(b, rng)
        if op in ("add", "sub", "mul", "div"):
            partner = _partner(b, rng, k)
            if partner is None:
                continue
            if op == "div":
                partner = b.away_from_zero(partner)
                k = b.bounded(k)
            b.step(op, v(k), v(partner))
        elif op == "matmul":
            shape = b.values[k].shape
            if len(shape) == 0:
                continue
            n = shape[-1]
            other = b.add_leaf("abcdefghijklmnop"[len(b.program["leaves"])],
                               rng.standard_normal((n, n) if rng.random() < 0.6 else (n,)) / np.sqrt(n))
            b.step("matmul", v(b.bounded(k)), v(other))
        elif op in ("exp",):
            b.step("exp", v(b.bounded(k)))
        elif op == "log":
            b.step("log", v(b.positive(k)))
        elif op == "relu":
            x = b.values[k]
            if np.abs(x).min(initial=1.0) < 1e-3:
                continue
            b.step("relu", v(k))
        elif op in ("neg", "tanh", "sigmoid"):
            b.step(op, v(k))
        elif op == "pow":
            p = [2, 3, 0.5, -1, 1.5, -2][int(rng.integers(6))]
            if isinstance(p, float) or p < 0:
                k = b.positive(k)
            b.step("pow", v(b.bounded(k, 2.5)), p)
        elif op in ("sum", "mean"):
            ndim = b.values[k].ndim
            choice = rng.integers(3)
            if ndim == 0 or choice == 0:
                axis = None
            elif choice == 1:
                axis = int(rng.integers(-ndim, ndim))
            else:
                axis = tuple(sorted({int(a) for a in rng.integers(0, ndim, 2)}))
            b.step(op, v(k), axis, bool(rng.random() < 0.5))
        elif op == "add_c":
            b.step("add", v(k), c(float(np.round(rng.uniform(-2, 2), 2))))
        elif op == "rsub_c":
            b.step("sub", c(float(np.round(rng.uniform(-2, 2), 2))), v(k))
        elif op == "mul_c":
            b.step("mul", c(float(np.round(rng.uniform(0.5, 2), 2))), v(k))
        elif op == "rdiv_c":
            b.step("div", c(1.0), v(b.away_from_zero(k)))
        elif op == "reuse":   # a diamond: x used twice, directly and through another op
            other = b.step(["tanh", "exp", "sigmoid"][int(rng.integers(3))], v(b.bounded(k)))
            operands = (v(k), v(other)) if rng.random() < 0.7 else (v(other), v(k))
            b.step(["mul", "add", "sub"][int(rng.integers(3))], *operands)
    return _finish(b, rng)


def _pick(b, rng):
    """Prefer recent values, so the graph grows deep as well as wide."""
    n = len(b.values)
    return int(max(0, n - 1 - int(rng.geometric(0.5)) + 1))


def _partner(b, rng, k):
    candidates = [j for j in range(len(b.values)) if _compatible(b.values[j].shape, b.values[k].shape)]
    if not candidates:
        return None
    return candidates[int(rng.integers(len(candidates)))]


def _compatible(s, t):
    try:
        np.broadcast_shapes(s, t)
        return True
    except ValueError:
        return False


def _finish(b, rng):
    """Fold every value nothing consumed into the output (as a sum), then weight the output."""
    out = len(b.values) - 1
    for k in range(len(b.values) - 1):
        if b.uses[k] == 0 and k not in b.leaf_positions:
            total = b.step("sum", v(k), None, False)
            out = b.step("add", v(out), v(total))
    if not b.requires[out]:   # make sure the output depends on a leaf that requires grad
        out = b.step("add", v(out), v(b.step("sum", v(b.leaf_positions[0]), None, False)))
    weights = rng.standard_normal(b.values[out].shape) + 0.5
    return _numbered(b, out, weights)


def _numbered(b, out, weights):
    """Renumber the builder's values so that the leaves come first, then the steps in order."""
    steps_positions = [k for k in range(len(b.values)) if k not in set(b.leaf_positions)]
    new_index = {old: new for new, old in enumerate(b.leaf_positions + steps_positions)}
    steps = []
    for op, *operands in b.program["steps"]:
        n_operands = 2 if op in ("add", "sub", "mul", "div", "matmul") else 1
        renamed = [("v", new_index[o[1]]) if o[0] == "v" else o for o in operands[:n_operands]]
        steps.append((op, *renamed, *operands[n_operands:]))
    return {"leaves": b.program["leaves"], "steps": steps}, new_index[out], weights
