"""Check 02_autograd's rules grading against real autodiff code that no one here wrote.

Our mutants are our own idea of a student's mistakes. Public solutions of CMU dlsys "needle" hw1
are real code with real gaps, so: wrap each needle checkout in an adapter submission whose rules.py
follows OUR API (CURRICULUM.md) but computes every gradient with THEIR ops (gradient() through
their backward()), grade it with `checks grade 02_autograd`, and compare each rules question's
score with what a direct comparison with torch.autograd (float64, rtol 1e-7, atol 1e-9) on an
independent battery of generated cases predicts. A question where the two disagree is either a
hole in the hidden suite or a case this battery lacks. An author's tool, not CI: it needs torch
and needle checkouts, and their code is copied only into temp folders, never into this repository.

    python tools/real_code_02.py /tmp/hw1-a /tmp/hw1-b [--keep]
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
RTOL, ATOL = 1e-7, 1e-9

ADAPTER = '''"""Adapter written by tools/real_code_02.py: our 02_autograd rules API, each gradient computed
by the needle package beside this file (its ops' gradient(), through its own backward())."""
import numpy as np
import needle
from needle import ops as _ops

def _op(name, *args):
    if not hasattr(_ops, name):
        raise NotImplementedError(f"this needle has no {name} op")
    return getattr(_ops, name)(*args)

def _tensor(x, requires_grad):
    return needle.Tensor(np.asarray(x, dtype=np.float64), dtype="float64", requires_grad=requires_grad)

def _grads(forward, grad, *inputs):
    leaves = [_tensor(x, True) for x in inputs]
    forward(*leaves).backward(_tensor(grad, False))
    return tuple(np.array(g.numpy() if isinstance(g, needle.Tensor) else g, dtype=np.float64)
                 for g in (leaf.grad for leaf in leaves))

def _bcast(t, shape):  # needle broadcasts only when asked to: BroadcastTo
    return t if tuple(t.shape) == tuple(shape) else _op("BroadcastTo", tuple(shape))(t)

def _binary(name):
    def rule(grad, a, b):
        s = np.broadcast_shapes(np.shape(a), np.shape(b))
        if name == "sub":  # needle's Tensor.__sub__: EWiseAdd(a, Negate(b))
            return _grads(lambda x, y: _bcast(x, s) - _bcast(y, s), grad, a, b)
        return _grads(lambda x, y: _op(name)(_bcast(x, s), _bcast(y, s)), grad, a, b)
    return rule

def _unary(name, *args):
    return lambda grad, a: _grads(lambda x: _op(name, *args)(x), grad, a)

def sum_to_shape(grad, shape):  # BroadcastTo's gradient
    return _grads(lambda x: _op("BroadcastTo", np.shape(grad))(x), grad, np.zeros(tuple(shape)))[0]

add_backward, sub_backward = _binary("EWiseAdd"), _binary("sub")
mul_backward, div_backward = _binary("EWiseMul"), _binary("EWiseDiv")
neg_backward, exp_backward, log_backward = _unary("Negate"), _unary("Exp"), _unary("Log")
relu_backward, tanh_backward, sigmoid_backward = _unary("ReLU"), _unary("Tanh"), _unary("Sigmoid")
pow_backward = lambda grad, a, p: _unary("PowerScalar", p)(grad, a)
matmul_backward = lambda grad, a, b: _grads(lambda x, y: _op("MatMul")(x, y), grad, a, b)
reshape_backward = lambda grad, a, shape: _unary("Reshape", tuple(shape))(grad, a)
transpose_backward = lambda grad, a, dim0, dim1: _unary("Transpose", (dim0, dim1))(grad, a)
permute_backward = lambda grad, a, dims: _unary("Permute", tuple(dims))(grad, a)
getitem_backward = lambda grad, a, index: _unary("GetItem", index)(grad, a)

def expand_backward(grad, a, shape):  # BroadcastTo cannot say -1: resolved to the size it keeps
    lead = len(shape) - np.ndim(a)
    return _unary("BroadcastTo", tuple(np.shape(a)[k - lead] if n == -1 else n for k, n in enumerate(shape)))(grad, a)

def _reduce(grad, a, axis, keepdims, mean):
    shape = np.shape(a)
    axes = None if axis is None else (int(axis),) if np.ndim(axis) == 0 else tuple(int(k) for k in axis)
    reduced = range(len(shape)) if axes is None else [k % len(shape) for k in axes]
    count = int(np.prod([shape[k] for k in reduced]))

    def forward(x):
        out = _op("Summation", axes)(x)  # needle's Summation(axes) has no keepdims: a Reshape adds it
        out = _op("DivScalar", count)(out) if mean else out  # no Mean op in hw1: sum / count
        return _op("Reshape", tuple(1 if k in reduced else n for k, n in enumerate(shape)))(out) if keepdims else out
    return _grads(forward, grad, a)

sum_backward = lambda grad, a, axis=None, keepdims=False: _reduce(grad, a, axis, keepdims, False)
mean_backward = lambda grad, a, axis=None, keepdims=False: _reduce(grad, a, axis, keepdims, True)
'''


# ----- the independent battery: torch.autograd says what each rule should return --------------

Case = tuple[str, list[np.ndarray], Callable[..., torch.Tensor], Callable[[Callable, np.ndarray], Any]]


def _shape(rng: np.random.Generator, ndim: int) -> tuple[int, ...]:
    return tuple(int(n) for n in rng.choice([2, 3, 3], size=ndim))  # equal sizes on different axes


def _broadcast_pairs(rng: np.random.Generator) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    pairs = [((3, 3), (3, 3)), ((3, 3), (3, 1)), ((3, 3), (1, 3)), ((3,), (3, 3)), ((2, 3), (3,)),
             ((), (2, 3)), ((), ()), ((3, 3), ()), ((2, 1, 3), (4, 1)), ((1, 3), (3, 1)), ((2, 3, 3), (1, 1))]
    for _ in range(6):
        base = _shape(rng, int(rng.integers(1, 4)))
        a, b = ([1 if rng.random() < 0.3 else n for n in base[int(rng.integers(0, len(base))):]] for _ in "ab")
        pairs.append((tuple(a), tuple(b)))
    return pairs


def _values(rng: np.random.Generator, shape: tuple[int, ...], kind: str = "normal") -> np.ndarray:
    if kind == "positive":
        return rng.uniform(0.3, 3.0, shape)
    x = rng.standard_normal(shape)
    if kind == "nonzero":
        return np.where(np.abs(x) < 0.3, 0.3 * np.sign(x) + 0.3 * (x == 0), x)
    if kind == "zeros":
        return np.where(rng.random(shape) < 0.4, 0.0, x)
    return x


def battery(rng: np.random.Generator) -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {}

    def add(q: str, label: str, arrays: list[np.ndarray], forward: Callable, extra: tuple = ()) -> None:
        cases.setdefault(q, []).append((label, arrays, forward, lambda fn, g: fn(g, *arrays, *extra)))

    for a_shape, b_shape in _broadcast_pairs(rng) + [((2, 3, 4), (3, 1)), ((3, 2, 3), (1, 2, 1))]:
        gshape = np.broadcast_shapes(a_shape, b_shape)  # each input's shape is a target of sum_to_shape
        for shape in [s for s in dict.fromkeys((a_shape, b_shape)) if s != gshape]:
            cases.setdefault("sum_to_shape", []).append((f"grad {gshape} -> {shape}", [np.zeros(shape)],
                                                         lambda t, s=gshape: t.expand(s),
                                                         lambda fn, g, s=shape: (fn(g, s),)))
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
    for a_shape, b_shape in _broadcast_pairs(rng):
        for op, forward in binary.items():
            add(f"{op}_backward", f"a{a_shape} b{b_shape}",
                [_values(rng, a_shape), _values(rng, b_shape, "nonzero" if op == "div" else "normal")], forward)
    unary = {"neg": (torch.neg, "normal"), "exp": (torch.exp, "normal"), "log": (torch.log, "positive"),
             "relu": (torch.relu, "zeros"), "tanh": (torch.tanh, "normal"), "sigmoid": (torch.sigmoid, "normal")}
    for shape in [(3, 3), (2, 3, 4), (5,), ()]:
        for op, (forward, kind) in unary.items():
            add(f"{op}_backward", f"a{shape} ({kind})", [_values(rng, shape, kind)], forward)
    for p in [2, 3, 1, 0, -1, -2, 0.5, 1.5, 2.0]:
        kind = "positive" if p != int(p) or p < 0 else "zeros"
        add("pow_backward", f"a(3, 3) ({kind}) p={p!r}", [_values(rng, (3, 3), kind)], lambda t, p=p: t ** p, (p,))
    for a_shape, b_shape in [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((3, 3), (3, 3)), ((2, 3), (3, 4)),
                             ((3, 2, 3), (3, 3)), ((2, 3), (4, 3, 2)), ((3, 3, 3), (3, 3, 3)), ((1, 2, 3), (4, 3, 2)),
                             ((2, 1, 2, 3), (3, 3, 4)), ((3, 2, 3), (3,)), ((3,), (2, 3, 2))]:
        add("matmul_backward", f"a{a_shape} @ b{b_shape}", [_values(rng, a_shape), _values(rng, b_shape)], torch.matmul)
    reductions = [((3, 3), None), ((3, 3), 0), ((3, 3), 1), ((3, 3), -1), ((2, 3, 3), (0, 2)), ((2, 3, 3), (2, 0)),
                  ((3, 2, 3), (-1, 0)), ((2, 3, 4), -2), ((4,), 0), ((3, 3, 2), (1,))]
    for shape, axis in reductions:
        for keepdims in (False, True):
            for op in ("sum", "mean"):
                dim = axis if axis is not None else tuple(range(len(shape)))
                add(f"{op}_backward", f"a{shape} axis={axis} keepdims={keepdims}", [_values(rng, shape)],
                    lambda t, op=op, d=dim, k=keepdims: getattr(t, op)(dim=d, keepdim=k), (axis, keepdims))
    for shape, new in [((3, 3), (9,)), ((2, 3), (3, 2)), ((2, 3, 4), (4, -1)), ((6,), (2, 3)), ((2, 3), (-1,)),
                       ((1,), ())]:
        add("reshape_backward", f"a{shape} -> {new}", [_values(rng, shape)], lambda t, n=new: t.reshape(n), (new,))
    for shape, d0, d1 in [((3, 3), 0, 1), ((2, 3), 1, 0), ((2, 3, 3), 0, 2), ((3, 2, 3), -1, 0), ((2, 3, 4), -3, -2),
                          ((2, 3, 4), 1, 1)]:
        add("transpose_backward", f"a{shape} dims ({d0}, {d1})", [_values(rng, shape)],
            lambda t, a=d0, b=d1: t.transpose(a, b), (d0, d1))
    for shape, dims in [((2, 3), (1, 0)), ((3, 3, 3), (2, 0, 1)), ((2, 3, 4), (1, 2, 0)), ((2, 3, 4), (-1, 0, -2))]:
        add("permute_backward", f"a{shape} dims {dims}", [_values(rng, shape)], lambda t, d=dims: t.permute(d), (dims,))
    for shape, new in [((3, 1), (3, 3)), ((1, 3), (3, 3)), ((3,), (2, 3)), ((1, 1), (3, 3)), ((3, 1), (2, 3, 3)),
                       ((1, 3, 1), (3, 3, 3)), ((2, 1), (-1, 4)), ((3,), (2, 3, -1)), ((), (2, 3))]:
        add("expand_backward", f"a{shape} -> {new}", [_values(rng, shape)], lambda t, n=new: t.expand(n), (new,))
    for shape, index in [((4,), 1), ((3, 3), (slice(None), 1)), ((5,), slice(None, None, 2)), ((2, 3), (None, 1)),
                         ((2, 3, 4), (Ellipsis, 0)), ((4,), np.array([0, 2, 0]))]:
        add("getitem_backward", f"a{shape}[{index!r}]", [_values(rng, shape)],
            lambda t, i=index: t[torch.as_tensor(i) if isinstance(i, np.ndarray) else i], (index,))
    return cases


def check_case(rules: Any, question: str, case: Case, rng: np.random.Generator) -> str | None:
    """None when the rule matches torch.autograd on this case, else what went wrong."""
    label, arrays, forward, call = case
    leaves = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in arrays]
    out = forward(*leaves)
    grad = rng.standard_normal(tuple(out.shape))
    out.backward(torch.tensor(grad))
    expected = [leaf.grad.numpy() for leaf in leaves]
    try:
        with np.errstate(all="ignore"):  # their 0 * inf, 0 / 0: the comparison below reports them
            got = call(getattr(rules, question.removeprefix("rules.")), grad)
    except Exception as error:
        return f"{label}: raises {type(error).__name__}: {str(error)[:80]}"
    got = list(got) if isinstance(got, tuple) else got
    if not isinstance(got, list) or len(got) != len(expected):
        return f"{label}: returns {type(got).__name__}, not a tuple of {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        g = np.asarray(g)
        if g.shape != e.shape:
            return f"{label}: gradient {k} has shape {g.shape}, not {e.shape}"
        if not np.allclose(g, e, rtol=RTOL, atol=ATOL):
            bad = ~np.isfinite(g) & np.isfinite(e)
            if bad.any():
                return f"{label}: gradient {k} has {g[bad].flat[0]} where torch has {e[bad].flat[0]}"
            return f"{label}: gradient {k} off by up to {np.max(np.abs(g - e)):.3g}"
    return None


# ----- adapters, grading and the table ------------------------------------------------------------

def make_adapter(checkout: Path, folder: Path) -> None:
    """A submission in `folder`: the adapter rules.py, a copy of the checkout's needle, the reference
    engine.py and quiz.toml (engine questions are graded with the reference rules anyway)."""
    package = checkout / "python" / "needle"
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"{checkout}: no python/needle/__init__.py")
    folder.mkdir(parents=True)
    shutil.copytree(package, folder / "needle", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (folder / "rules.py").write_text(ADAPTER)
    for name in ("engine.py", "quiz.toml"):
        shutil.copy(ROOT / "solutions" / "02_autograd" / name, folder / name)


def import_adapter(folder: Path) -> Any:
    """The adapter module of `folder`, with this folder's needle (each checkout has its own)."""
    for name in [m for m in sys.modules if m in ("rules", "needle") or m.startswith("needle.")]:
        del sys.modules[name]
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("rules")
    finally:
        sys.path.remove(str(folder))


def predict(rules: Any, seed: int) -> dict[str, list[str]]:
    """rules.<question> -> the battery's failures (empty: torch predicts full marks)."""
    rng = np.random.default_rng(seed)
    return {f"rules.{q}": [f for f in (check_case(rules, f"rules.{q}", c, rng) for c in cs) if f]
            for q, cs in battery(rng).items()}


def grade(folders: list[Path], out: Path, checks: str, course: Path) -> dict[str, dict[str, tuple[float, float, str]]]:
    subprocess.run([checks, "grade", "02_autograd", *map(str, folders), "--out", str(out), "--regrade",
                    "--jobs", "1", "--course", str(course)], check=True, stdout=subprocess.DEVNULL)
    results = {}
    for folder in folders:
        tests = json.loads((out / folder.name / "results.json").read_text())["tests"]
        results[folder.name] = {t["name"]: (t["score"], t["max_score"], t.get("output", "")) for t in tests}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="+", type=Path, help="folders that hold python/needle")
    parser.add_argument("--checks", default=str(Path(sys.executable).with_name("checks")), help="the checks CLI")
    parser.add_argument("--course", type=Path, default=ROOT, help="the course folder (default: this repository)")
    parser.add_argument("--seed", type=int, default=0, help="the battery's random seed")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (adapters and grades)")
    parser.add_argument("--feedback", action="store_true", help="print our feedback where a question lost points")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="real_code_02_"))
    try:
        folders = []
        for k, checkout in enumerate(args.checkouts):
            folders.append(work / "submissions" / f"c{k}_{re.sub(r'[^A-Za-z0-9_.-]', '_', checkout.resolve().name)}")
            make_adapter(checkout, folders[-1])
        grades = grade(folders, work / "grades", args.checks, args.course)
        predictions = {f.name: predict(import_adapter(f), args.seed) for f in folders}
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    for folder, checkout in zip(folders, args.checkouts):
        print(f"{folder.name}: {checkout}")
    questions = [q for q in grades[folders[0].name] if q.startswith("rules.")]
    width = max(map(len, questions))
    print(f"\n{'question':<{width}}  " + "  ".join(f"{f.name[:26]:<26}" for f in folders))
    print(f"{'':<{width}}  " + "  ".join(f"{'ours':>9} {'torch':<6} {'agree':<9}" for _ in folders))
    notes, disagreements = [], 0
    for q in questions:
        cells = []
        for f in folders:
            score, top, output = grades[f.name][q]
            failures = predictions[f.name].get(q, [])
            agree = (score == top) == (not failures)
            disagreements += not agree
            cells.append(f"{score:>4g}/{top:<4g} {'loses' if failures else 'full':<6} {'yes' if agree else 'NO':<9}")
            if failures or not agree:
                why = f"{len(failures)} case(s) differ, first: {failures[0]}" if failures else "torch finds nothing"
                if failures and all("NotImplementedError" in x for x in failures):
                    why = "no op for it in this needle: the adapter raises NotImplementedError"
                notes.append(f"{f.name} {q}: {'DISAGREE: ' if not agree else ''}{why}")
                if args.feedback and score < top:
                    notes.append("    ours: " + output.strip().replace("\n", "\n    ")[:600])
        print(f"{q:<{width}}  " + "  ".join(cells))
    print("\n" + "\n".join(notes))
    print(f"\n{disagreements} disagreement(s) between our grade and the torch comparison")


if __name__ == "__main__":
    main()
