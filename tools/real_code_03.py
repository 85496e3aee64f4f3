"""Check 03_mlp's numpy_mlp grading against public two-layer-net code that no one here wrote.

Our mutants are our own idea of a student's mistakes. The two-layer nets of well-known public
course material are real code with real gaps, so: each source below is written out as it is
published (the lines that compute something, as in the public code; comments and the training
loops around them left out), inside an adapter submission whose numpy_mlp.py follows OUR API
(CURRICULUM.md) and calls THEIR code for every value. Each is graded with `checks grade 03_mlp`
(torch_mlp.py and training.py the reference's: those questions are not compared), and each
numpy_mlp question's score is compared with what a direct comparison with PyTorch (float64,
rtol 1e-7, atol 1e-9) on an independent battery of generated cases predicts. A question where the
two disagree is a hole in the hidden suite or a case this battery lacks.

The sources (written from the published code; where a published file leaves a function to the
student, the solution named is one that circulates in public solution repositories):
- cs231n-a1: CS231n (Stanford, 2017-2019) assignment 1, cs231n/classifiers/neural_net.py,
  TwoLayerNet.loss and train: the forward pass, a softmax with the row max subtracted and then
  -np.log(probs[range(N), y]), the backward pass with `dhidden[hidden_layer <= 0] = 0`, and the
  update `self.params['W1'] += -learning_rate * grads['W1']`.
- cs231n-a2: CS231n assignment 2, cs231n/layers.py: affine_forward/affine_backward (inputs
  reshaped to (N, D)), the course-given softmax_loss (log-softmax from the shifted logits), and
  relu_backward as `dx = dout.copy(); dx[x < 0] = 0`; optim.py's sgd (`w -= learning_rate * dw`).
- pytorch-tutorial: PyTorch's "Learning PyTorch with Examples" (Justin Johnson), the NumPy
  two-layer net: `h_relu = np.maximum(h, 0)`, `grad_h[h < 0] = 0`, `w1 -= learning_rate * grad_w1`
  (the tutorial has no biases and a squared-error loss: the adapter adds the bias terms the same
  way as its weights, and has no softmax_cross_entropy).
- d2l: Dive into Deep Learning, "Implementation of Multilayer Perceptrons from Scratch" and
  "Implementation of Softmax Regression from Scratch" (the NumPy/MXNet edition): relu as
  np.maximum(X, 0), net() reshaping X to (-1, num_inputs), softmax as exp(X) / exp(X).sum(1)
  with no shift, cross_entropy as -log(y_hat[range(len(y_hat)), y]) (averaged), and
  sgd as `param[:] = param - lr * param.grad / batch_size`. Its gradients come from autograd: the
  adapter has no linear_backward or backward for it, and softmax_cross_entropy's gradient is the
  one the book derives for softmax regression, softmax(o) - y, over the batch.

An author's tool, not CI: it needs torch and grades in the sandbox (a minute or two).

    .venv/bin/python tools/real_code_03.py [--feedback] [--keep]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
RTOL, ATOL = 1e-7, 1e-9
QUESTIONS = ["numpy_mlp.linear_forward", "numpy_mlp.linear_backward", "numpy_mlp.softmax_cross_entropy",
             "numpy_mlp.forward", "numpy_mlp.backward", "numpy_mlp.sgd_update"]

MISSING = '''
def _missing(name):
    def stub(*args, **kwargs):
        raise NotImplementedError(f"{name}: this source has no such function")
    return stub
'''

SOURCES: dict[str, str] = {}

SOURCES["cs231n-a1"] = '''"""Adapter written by tools/real_code_03.py: CS231n assignment 1's TwoLayerNet (neural_net.py),
its lines as published, behind 03_mlp's numpy_mlp API."""
import numpy as np

# ---- theirs: TwoLayerNet.loss(X, y=None, reg=0.0), split where our API splits it
def _scores(params, X):
    W1, b1 = params['W1'], params['b1']
    W2, b2 = params['W2'], params['b2']
    N, D = X.shape
    hidden_layer = np.maximum(0, X.dot(W1) + b1)
    scores = hidden_layer.dot(W2) + b2
    return scores, hidden_layer

def _softmax_loss(scores, y, reg=0.0):
    N = scores.shape[0]
    scores = scores - np.max(scores, axis=1, keepdims=True)
    exp_scores = np.exp(scores)
    probs = exp_scores / np.sum(exp_scores, axis=1, keepdims=True)
    correct_logprobs = -np.log(probs[range(N), y])
    data_loss = np.sum(correct_logprobs) / N
    loss = data_loss
    dscores = probs
    dscores[range(N), y] -= 1
    dscores /= N
    return loss, dscores

def _backward(params, X, hidden_layer, dscores, reg=0.0):
    W1, W2 = params['W1'], params['W2']
    grads = {}
    grads['W2'] = np.dot(hidden_layer.T, dscores) + reg * W2
    grads['b2'] = np.sum(dscores, axis=0)
    dhidden = np.dot(dscores, W2.T)
    dhidden[hidden_layer <= 0] = 0
    grads['W1'] = np.dot(X.T, dhidden) + reg * W1
    grads['b1'] = np.sum(dhidden, axis=0)
    return grads

def _train_step(params, grads, learning_rate):
    params['W1'] += -learning_rate * grads['W1']
    params['b1'] += -learning_rate * grads['b1']
    params['W2'] += -learning_rate * grads['W2']
    params['b2'] += -learning_rate * grads['b2']

# ---- our API
def linear_forward(X, W, b):
    return X.dot(W) + b

def linear_backward(X, W, grad_Y):
    return np.dot(grad_Y, W.T), np.dot(X.T, grad_Y), np.sum(grad_Y, axis=0)

def softmax_cross_entropy(logits, y):
    return _softmax_loss(np.array(logits, dtype=np.float64), y)

def forward(params, X):
    X = X.reshape(X.shape[0], -1)  # their X is (N, D): our images flattened first
    scores, hidden_layer = _scores(params, X)
    return scores, (X, hidden_layer)

def backward(params, cache, grad_logits):
    X, hidden_layer = cache
    return _backward(params, X, hidden_layer, grad_logits)

def sgd_update(params, grads, lr):
    _train_step(params, grads, lr)
    return params
'''

SOURCES["cs231n-a2"] = '''"""Adapter written by tools/real_code_03.py: CS231n assignment 2's layers.py (affine, ReLU with a
public solution's relu_backward, the course-given softmax_loss) and optim.sgd, behind numpy_mlp."""
import numpy as np

# ---- theirs: layers.py
def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    cache = (x, w, b)
    return out, cache

def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout.dot(w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T.dot(dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db

def relu_forward(x):
    out = np.maximum(0, x)
    cache = x
    return out, cache

def relu_backward(dout, cache):
    dx, x = None, cache
    dx = dout.copy()
    dx[x < 0] = 0
    return dx

def softmax_loss(x, y):
    shifted_logits = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=1, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    probs = np.exp(log_probs)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    dx = probs.copy()
    dx[np.arange(N), y] -= 1
    dx /= N
    return loss, dx

# ---- theirs: optim.py
def sgd(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    w -= config["learning_rate"] * dw
    return w, config

# ---- our API
def linear_forward(X, W, b):
    return affine_forward(X, W, b)[0]

def linear_backward(X, W, grad_Y):
    return affine_backward(grad_Y, (X, W, None))

def softmax_cross_entropy(logits, y):
    return softmax_loss(logits, y)

def forward(params, X):
    h, fc1 = affine_forward(X, params["W1"], params["b1"])
    a, relu = relu_forward(h)
    scores, fc2 = affine_forward(a, params["W2"], params["b2"])
    return scores, (fc1, relu, fc2)

def backward(params, cache, grad_logits):
    fc1, relu, fc2 = cache
    da, dW2, db2 = affine_backward(grad_logits, fc2)
    dh = relu_backward(da, relu)
    dx, dW1, db1 = affine_backward(dh, fc1)
    return {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}

def sgd_update(params, grads, lr):
    return {key: sgd(value, grads[key], {"learning_rate": lr})[0] for key, value in params.items()}
'''

SOURCES["pytorch-tutorial"] = '''"""Adapter written by tools/real_code_03.py: the NumPy two-layer net of PyTorch's "Learning
PyTorch with Examples", behind numpy_mlp (bias terms added the way the tutorial treats weights)."""
import numpy as np
''' + MISSING + '''
# ---- theirs: the training loop's forward, backward and update, one step each
def _forward(x, w1, b1, w2, b2):
    h = x.dot(w1) + b1
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2) + b2
    return y_pred, h, h_relu

def _backward(x, w2, h, h_relu, grad_y_pred):
    grad_w2 = h_relu.T.dot(grad_y_pred)
    grad_b2 = grad_y_pred.sum(axis=0)
    grad_h_relu = grad_y_pred.dot(w2.T)
    grad_h = grad_h_relu.copy()
    grad_h[h < 0] = 0
    grad_w1 = x.T.dot(grad_h)
    grad_b1 = grad_h.sum(axis=0)
    return grad_w1, grad_b1, grad_w2, grad_b2

# ---- our API
def linear_forward(X, W, b):
    return X.dot(W) + b

def linear_backward(X, W, grad_Y):
    return grad_Y.dot(W.T), X.T.dot(grad_Y), grad_Y.sum(axis=0)

softmax_cross_entropy = _missing("softmax_cross_entropy")

def forward(params, X):
    x = X.reshape(X.shape[0], -1)
    y_pred, h, h_relu = _forward(x, params["W1"], params["b1"], params["W2"], params["b2"])
    return y_pred, (x, h, h_relu)

def backward(params, cache, grad_logits):
    x, h, h_relu = cache
    grad_w1, grad_b1, grad_w2, grad_b2 = _backward(x, params["W2"], h, h_relu, grad_logits)
    return {"W1": grad_w1, "b1": grad_b1, "W2": grad_w2, "b2": grad_b2}

def sgd_update(params, grads, lr):
    learning_rate = lr
    for key in params:
        params[key] -= learning_rate * grads[key]
    return params
'''

SOURCES["d2l"] = '''"""Adapter written by tools/real_code_03.py: Dive into Deep Learning's MLP and softmax regression
from scratch (NumPy edition), behind numpy_mlp; d2l takes its gradients from autograd."""
import numpy as np
''' + MISSING + '''
# ---- theirs
def relu(X):
    return np.maximum(X, 0)

def softmax(X):
    X_exp = np.exp(X)
    partition = X_exp.sum(1, keepdims=True)
    return X_exp / partition

def cross_entropy(y_hat, y):
    return -np.log(y_hat[range(len(y_hat)), y])

def net(X, W1, b1, W2, b2, num_inputs):
    X = X.reshape((-1, num_inputs))
    H = relu(np.dot(X, W1) + b1)
    return np.dot(H, W2) + b2

def sgd(params, grads, lr, batch_size):
    for param, grad in zip(params, grads):
        param[:] = param - lr * grad / batch_size

# ---- our API
def linear_forward(X, W, b):
    return np.dot(X, W) + b

linear_backward = _missing("linear_backward")

def softmax_cross_entropy(logits, y):
    y_hat = softmax(logits)
    loss = cross_entropy(y_hat, y).mean()  # its training loop averages l = loss(net(X), y)
    grad = y_hat.copy()  # the gradient as d2l derives it (softmax(o) - y), for the mean over the batch
    grad[range(len(y_hat)), y] -= 1
    return float(loss), grad / len(y_hat)

def forward(params, X):
    return net(X, params["W1"], params["b1"], params["W2"], params["b2"], params["W1"].shape[0]), None

backward = _missing("backward")

def sgd_update(params, grads, lr):
    sgd([params[k] for k in params], [grads[k] for k in params], lr, 1)
    return params
'''


# ----- the independent battery: PyTorch says what each function should return ------------------

Case = tuple[str, Callable[[Any], Any], Callable[[], Any]]  # (label, call the adapter, torch's answer)


def _t(x: np.ndarray, grad: bool = False) -> torch.Tensor:
    return torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=grad)


def _net(rng: np.random.Generator, d_in: int, d_hidden: int, d_out: int, exact: bool) -> dict[str, np.ndarray]:
    if exact:  # multiples of 0.5: a ReLU input exactly 0 stays exactly 0 in any order of summation
        return {"W1": rng.integers(-2, 3, (d_in, d_hidden)) / 2.0, "b1": rng.integers(-2, 3, d_hidden) / 2.0,
                "W2": rng.standard_normal((d_hidden, d_out)), "b2": rng.standard_normal(d_out)}
    return {"W1": rng.standard_normal((d_in, d_hidden)) / np.sqrt(d_in), "b1": rng.standard_normal(d_hidden) * 0.1,
            "W2": rng.standard_normal((d_hidden, d_out)), "b2": rng.standard_normal(d_out) * 0.1}


def battery(rng: np.random.Generator) -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {q: [] for q in QUESTIONS}
    for batch, d_in, d_out in [(5, 3, 2), (1, 4, 1), (3, 3, 3), (2, 6, 4), (8, 20, 1)]:
        X, W, b, gY = (rng.standard_normal(s) for s in [(batch, d_in), (d_in, d_out), (d_out,), (batch, d_out)])
        cases["numpy_mlp.linear_forward"].append((
            f"X{X.shape} W{W.shape}", lambda m, X=X, W=W, b=b: m.linear_forward(X.copy(), W.copy(), b.copy()),
            lambda X=X, W=W, b=b: (_t(X) @ _t(W) + _t(b)).numpy()))

        def torch_linear(X=X, W=W, b=b, gY=gY):
            Xt, Wt, bt = _t(X, True), _t(W, True), _t(b, True)
            (Xt @ Wt + bt).backward(_t(gY))
            return tuple(t.grad.numpy() for t in (Xt, Wt, bt))
        cases["numpy_mlp.linear_backward"].append((
            f"X{X.shape} W{W.shape}", lambda m, X=X, W=W, gY=gY: tuple(m.linear_backward(X.copy(), W.copy(), gY.copy())),
            torch_linear))
    for batch, classes, scale, spread in [(4, 3, 1.0, 0.0), (1, 5, 1.0, 0.0), (5, 10, 30.0, 0.0), (6, 10, 1000.0, 0.0),
                                          (3, 2, 800.0, 0.0), (4, 6, 1.0, 3000.0)]:
        logits = rng.standard_normal((batch, classes)) * scale + rng.standard_normal((batch, 1)) * spread
        y = rng.integers(0, classes, batch)

        def torch_ce(logits=logits, y=y):
            lt = _t(logits, True)
            loss = F.cross_entropy(lt, torch.tensor(y))
            loss.backward()
            return (loss.item(), lt.grad.numpy())
        cases["numpy_mlp.softmax_cross_entropy"].append((
            f"logits{logits.shape} x{scale:g}" + (f" rows +-{spread:g}" if spread else ""),
            lambda m, logits=logits, y=y: tuple(m.softmax_cross_entropy(logits.copy(), y.copy())), torch_ce))
    for batch, shape, d_hidden, d_out, exact in [(4, (7,), 5, 3, False), (1, (6,), 4, 2, False),
                                                  (3, (1, 4, 4), 6, 3, False), (6, (5,), 8, 3, True),
                                                  (2, (1, 3, 3), 7, 2, True)]:
        d_in = int(np.prod(shape))
        params = _net(rng, d_in, d_hidden, d_out, exact)
        X = rng.integers(-2, 3, (batch, *shape)).astype(np.float64) if exact else rng.standard_normal((batch, *shape))
        g = rng.standard_normal((batch, d_out))
        label = f"X{X.shape} hidden {d_hidden}" + (" (ReLU inputs exactly 0)" if exact else "")

        def torch_net(params=params, X=X, g=g, grads=False):
            t = {k: _t(v, True) for k, v in params.items()}
            out = torch.relu(_t(X).reshape(X.shape[0], -1) @ t["W1"] + t["b1"]) @ t["W2"] + t["b2"]
            if not grads:
                return out.detach().numpy()
            (out * _t(g)).sum().backward()
            return {k: v.grad.numpy() for k, v in t.items()}

        def their_backward(m, params=params, X=X, g=g):
            copy = {k: v.copy() for k, v in params.items()}
            _, cache = m.forward(copy, X.copy())
            return m.backward(copy, cache, g.copy())
        cases["numpy_mlp.forward"].append((
            label, lambda m, params=params, X=X: m.forward({k: v.copy() for k, v in params.items()}, X.copy())[0],
            torch_net))
        cases["numpy_mlp.backward"].append((label, their_backward, lambda f=torch_net: f(grads=True)))
    for lr in (0.1, 0.5):
        params, grads = _net(rng, 5, 4, 3, False), _net(rng, 5, 4, 3, False)

        def their_step(m, params=params, grads=grads, lr=lr):
            given = {k: v.copy() for k, v in params.items()}
            result = m.sgd_update(given, {k: v.copy() for k, v in grads.items()}, lr)
            if any(not np.array_equal(given[k], params[k]) for k in params) or result is given:
                return "changed the params it was given (our API: a new dict, the old arrays as they were)"
            return result
        cases["numpy_mlp.sgd_update"].append((
            f"lr {lr}", their_step, lambda params=params, grads=grads, lr=lr: {
                k: (_t(v) - lr * _t(grads[k])).numpy() for k, v in params.items()}))
    return cases


def _close(got: Any, want: Any) -> str | None:
    """None when `got` is `want` (nested tuples, dicts, arrays, numbers), else what differs."""
    if isinstance(got, str):  # what a battery case says went wrong before anything was compared
        return got
    if isinstance(want, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            return f"returns {type(got).__name__} {sorted(got) if isinstance(got, dict) else ''}, not keys {sorted(want)}"
        return next((f"{k}: {why}" for k in want if (why := _close(got[k], want[k]))), None)
    if isinstance(want, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"returns {type(got).__name__}, not a tuple of {len(want)}"
        return next((f"item {k}: {why}" for k, (g, w) in enumerate(zip(got, want)) if (why := _close(g, w))), None)
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        return f"shape {g.shape}, not {w.shape}"
    if not np.allclose(g, w, rtol=RTOL, atol=ATOL):
        return (f"{int(np.sum(~np.isfinite(g)))} value(s) not finite" if not np.isfinite(g).all()
                else f"off by up to {np.max(np.abs(g - w)):.3g}")
    return None


def predict(module: Any, seed: int) -> dict[str, list[str]]:
    """question -> the battery's failures for this adapter (empty: PyTorch predicts full marks)."""
    failures: dict[str, list[str]] = {}
    for question, cases in battery(np.random.default_rng(seed)).items():
        failures[question] = []
        for label, call, reference in cases:
            try:
                with np.errstate(all="ignore"):
                    got = call(module)
            except Exception as error:  # noqa: BLE001 - their code, on our inputs
                failures[question].append(f"{label}: raises {type(error).__name__}: {str(error)[:70]}")
                continue
            why = _close(got, reference())
            if why:
                failures[question].append(f"{label}: {why}")
    return failures


# ----- adapters, grading and the table ------------------------------------------------------------

def make_adapter(name: str, folder: Path) -> None:
    """A submission: the adapter numpy_mlp.py, and the reference's other files and quiz answers."""
    folder.mkdir(parents=True)
    (folder / "numpy_mlp.py").write_text(SOURCES[name])
    for other in ("torch_mlp.py", "training.py", "quiz.toml"):
        shutil.copy(ROOT / "solutions" / "03_mlp" / other, folder / other)


def import_adapter(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"adapter_{folder.name}", folder / "numpy_mlp.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def grade(folders: list[Path], out: Path, checks: str, course: Path) -> dict[str, dict[str, tuple[float, float, str]]]:
    subprocess.run([checks, "grade", "03_mlp", *map(str, folders), "--out", str(out), "--regrade", "--jobs", "1",
                    "--course", str(course), "--device", "cpu"], check=True, stdout=subprocess.DEVNULL)
    results = {}
    for folder in folders:
        tests = json.loads((out / folder.name / "results.json").read_text())["tests"]
        results[folder.name] = {t["name"]: (t["score"], t["max_score"], t.get("output", "")) for t in tests}
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", default=str(Path(sys.executable).with_name("checks")), help="the checks CLI")
    parser.add_argument("--course", type=Path, default=ROOT, help="the course folder (default: this repository)")
    parser.add_argument("--seed", type=int, default=0, help="the battery's random seed")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (adapters and grades)")
    parser.add_argument("--feedback", action="store_true", help="print our feedback where a question lost points")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="real_code_03_"))
    try:
        folders = [work / "submissions" / name for name in SOURCES]
        for name, folder in zip(SOURCES, folders):
            make_adapter(name, folder)
        grades = grade(folders, work / "grades", args.checks, args.course)
        predictions = {f.name: predict(import_adapter(f), args.seed) for f in folders}
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    width = max(map(len, QUESTIONS))
    print(f"{'question':<{width}}  " + "  ".join(f"{f.name[:22]:<22}" for f in folders))
    print(f"{'':<{width}}  " + "  ".join(f"{'ours':>9} {'torch':<6} {'agree':<5}" for _ in folders))
    notes, disagreements = [], 0
    for q in QUESTIONS:
        cells = []
        for f in folders:
            score, top, output = grades[f.name][q]
            failures = predictions[f.name][q]
            agree = (score == top) == (not failures)
            disagreements += not agree
            cells.append(f"{score:>4g}/{top:<4g} {'loses' if failures else 'full':<6} {'yes' if agree else 'NO':<5}")
            if failures or not agree:
                why = f"{len(failures)} case(s) differ, first: {failures[0]}" if failures else "torch finds nothing"
                notes.append(f"{f.name} {q}: {'DISAGREE: ' if not agree else ''}{why}")
                if args.feedback and score < top:
                    notes.append("    ours: " + output.strip().replace("\n", "\n    ")[:600])
        print(f"{q:<{width}}  " + "  ".join(cells))
    print("\n" + "\n".join(notes))
    print(f"\n{disagreements} disagreement(s) between our grade and the torch comparison")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
