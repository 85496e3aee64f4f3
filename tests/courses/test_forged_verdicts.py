"""The sandbox produces evidence; the grader judges (issue 43). Each class of verdict that used to
be computed where student code runs is attacked here by a hostile submission that switches the old
guard off from its own module, at every isolation level the machine has; the verdict, now judged
in the grader on behaviour or on evidence the submission cannot rewrite, still costs it the points.

Each submission is the reference with one function rewritten: it does the forbidden thing and
forges whatever the old in-sandbox check read. On the old drivers each scored full marks.
"""

from __future__ import annotations

import pytest

from checks.course.assignment import load_assignment
from checks.course.submissions import read_submission
from checks.grading.session import Source, grade_sources
from checks.sandbox import jail
from conftest import REPO

LEVELS = [jail.BWRAP] * (jail.bwrap_problem() is None) + [jail.FORK]
MLP = load_assignment(REPO, "03_mlp")

# training.SGD hands the work to torch.optim, after setting the attribute the old guard read to
# know that it had already patched torch.optim (so it patched nothing).
OPTIM_SKIPPING_THE_GUARD = '''
torch.optim.Optimizer.__init__._checks_forbidden = True


class SGD:
    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        self.inner = torch.optim.SGD(list(params), lr=lr, momentum=momentum, weight_decay=weight_decay)

    def zero_grad(self, set_to_none=True):
        self.inner.zero_grad(set_to_none=set_to_none)

    def step(self):
        self.inner.step()
'''

# The same, readying the parameters for torch.optim first (it accepts a non-leaf that retains grad).
OPTIM_RETAINING_GRAD = OPTIM_SKIPPING_THE_GUARD.replace(
    "torch.optim.SGD(list(params),", "torch.optim.SGD([p.retain_grad() or p for p in params],")

# sgd_update changes the arrays in place, after making np.array_equal (which the old check called)
# say that nothing changed.
IN_PLACE_FORGING_ARRAY_EQUAL = '''
np.array_equal = lambda *args, **kwargs: True


def sgd_update(params, grads, lr):
    for name in params:
        params[name] -= lr * grads[name]
    return dict(params)
'''

# A SGD of the attacks' own: its settings, a momentum buffer a parameter, and zero_grad.
SGD_HEAD = '''
class SGD:
    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        self.params, self.lr, self.momentum, self.weight_decay = list(params), lr, momentum, weight_decay
        self.buffers = [None] * len(self.params)

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            if p.grad is not None and set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()
'''

# SGD.step adds weight decay to p.grad in place, after making torch.equal (which the old check, in
# the sandbox, called on .grad before and after step) and NumPy's comparisons say nothing changed.
SGD_GRAD_IN_PLACE_FORGING_EQUAL = '''
torch.equal = lambda *args, **kwargs: True
torch.allclose = lambda *args, **kwargs: True
__import__("numpy").array_equal = lambda *args, **kwargs: True

''' + SGD_HEAD + '''
    def step(self):
        with torch.no_grad():
            for i, p in enumerate(self.params):
                if p.grad is None:
                    continue
                update = p.grad.add_(p, alpha=self.weight_decay) if self.weight_decay else p.grad
                if self.momentum:
                    if self.buffers[i] is None:
                        self.buffers[i] = update.clone()
                    else:
                        self.buffers[i].mul_(self.momentum).add_(update)
                    update = self.buffers[i]
                p.add_(update, alpha=-self.lr)
'''

# evaluate builds a graph (no no_grad), and rewrites the probe's log (which the old check read).
EVALUATE_FORGING_GRAD_LOG = '''
def evaluate(model, loader, device):
    was_training = model.training
    model.eval()
    correct, total = 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        correct += (model(x).argmax(dim=1) == y).sum().item()
        total += y.numel()
    if hasattr(model, "calls"):
        model.calls[:] = [dict(call, grad=False) for call in model.calls]
    model.train(was_training)
    return correct / total
'''

# evaluate never calls model.eval(), and rewrites the probe's log to say it ran in eval mode.
EVALUATE_FORGING_MODE_LOG = '''
def evaluate(model, loader, device):
    correct, total = 0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(dim=1) == y).sum().item()
            total += y.numel()
    if hasattr(model, "calls"):
        model.calls[:] = [dict(call, training=False) for call in model.calls]
    return correct / total
'''


def _replaced(files: dict[str, bytes], name: str, function: str, code: str) -> dict[str, bytes]:
    """The reference with `function` (a top-level def or class of `name`) replaced by `code`."""
    lines = files[name].decode().splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith((f"def {function}(", f"class {function}:")))
    end = next((k for k in range(start + 1, len(lines)) if lines[k][:1] not in ("", " ", "\n", "#")), len(lines))
    return {**files, name: "".join(lines[:start] + [code.lstrip("\n"), "\n\n"] + lines[end:]).encode()}


def _grade(level: str, files: dict[str, bytes], qid: str):
    (result,) = grade_sources(MLP, [Source.from_files("hostile", files)], jobs=1, questions=[qid], isolation=jail.choose(level))
    return result.question(qid)


REFERENCE = read_submission(MLP.solution_dir).files

CASES = {
    "optim skipping the guard": ("training.py", "SGD", OPTIM_SKIPPING_THE_GUARD, "training.SGD", "torch.optim"),
    "optim retaining grad": ("training.py", "SGD", OPTIM_RETAINING_GRAD, "training.SGD", "torch.optim"),
    "grad in place forging torch.equal": ("training.py", "SGD", SGD_GRAD_IN_PLACE_FORGING_EQUAL, "training.SGD",
                                          "added weight decay to p.grad in place"),
    "in place forging array_equal": ("numpy_mlp.py", "sgd_update", IN_PLACE_FORGING_ARRAY_EQUAL,
                                     "numpy_mlp.sgd_update", "changed the params it was given"),
    "no no_grad forging the log": ("training.py", "evaluate", EVALUATE_FORGING_GRAD_LOG, "training.evaluate",
                                   "gradients were enabled"),
    "no eval forging the log": ("training.py", "evaluate", EVALUATE_FORGING_MODE_LOG, "training.evaluate",
                                "call model.eval() before the loop"),
}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", list(CASES))
def test_a_guard_switched_off_in_the_sandbox_still_costs_the_points(level, case):
    name, function, code, qid, words = CASES[case]
    question = _grade(level, _replaced(REFERENCE, name, function, code), qid)
    assert not question.passed, question.feedback
    assert words in " ".join(question.feedback.split()), question.feedback
    if words in ("torch.optim", "changed the params it was given"):
        assert question.score == 0, question  # every case of these questions judges the same way


# training.SGD runs torch.optim's own functional sgd on the parameters themselves (no Optimizer,
# so none refuses them), from a copy of torch/optim/sgd.py loaded again past the patches of
# torch.optim in its process (a helper's attack, given only the docs). Its update is the one the
# curriculum asks for, by the same operations: no behaviour tells it apart.
OPTIM_RELOADED = SGD_HEAD + '''
    def step(self):
        import importlib.util
        import torch.optim.sgd as patched
        spec = importlib.util.spec_from_file_location("torch.optim.fresh_sgd", patched.__file__)
        fresh = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(fresh)
        kept = [i for i, p in enumerate(self.params) if p.grad is not None]
        buffers = [self.buffers[i] for i in kept]
        with torch.no_grad():
            fresh.sgd([self.params[i] for i in kept], [self.params[i].grad for i in kept], buffers,
                      weight_decay=self.weight_decay, momentum=self.momentum, lr=self.lr, dampening=0.0,
                      nesterov=False, maximize=False, foreach=False)
        for i, buffer in zip(kept, buffers):
            self.buffers[i] = buffer
'''


@pytest.mark.xfail(strict=True, reason="known: torch.optim's code is in the student's process; a SGD that runs it past "
                                       "the patches there is not told apart (docs/trust-boundary.md, What is not defended)")
def test_an_sgd_that_runs_torch_optims_own_code_loses_its_points():
    question = _grade(LEVELS[0], _replaced(REFERENCE, "training.py", "SGD", OPTIM_RELOADED), "training.SGD")
    assert not question.passed, question.feedback


def test_the_reference_keeps_its_points_on_those_questions():
    qids = sorted({case[3] for case in CASES.values()})
    (result,) = grade_sources(MLP, [Source.from_files("reference", REFERENCE)], jobs=1, questions=qids,
                              isolation=jail.choose(LEVELS[0]))
    for qid in qids:
        question = result.question(qid)
        assert question.passed and question.score == question.max_score, question.feedback


# ---- 02_autograd: the recursion limit of engine.deep_chain ------------------------------------------

AUTOGRAD = load_assignment(REPO, "02_autograd")

# backward sorts the graph by recursion, after raising the limit through the original
# sys.setrecursionlimit it kept at import (the old guard had replaced only the module's attribute),
# and sets it back before returning (the old check read the limit afterwards).
RECURSIVE_SORT = '''
        order, expanded = [], set()

        def visit(tensor):
            if id(tensor) in expanded:
                return
            expanded.add(id(tensor))
            if tensor.grad_fn is not None:
                for parent in tensor.grad_fn.parents:
                    if parent is not None:
                        visit(parent)
            order.append(tensor)

        _kept_limit(100_000)
        visit(self)
        _kept_limit(1_000)
'''


def _recursive_engine() -> dict[str, bytes]:
    files = read_submission(AUTOGRAD.solution_dir).files
    text = files["engine.py"].decode()
    start = text.index("        order, expanded = [], set()\n")
    end = text.index("        # `order` lists every tensor after its inputs")
    text = text[:start] + RECURSIVE_SORT.lstrip("\n") + "\n" + text[end:]
    text = text.replace("import rules\n", "import rules\nimport sys\n\n_kept_limit = sys.setrecursionlimit\n", 1)
    return {**files, "engine.py": text.encode()}


@pytest.mark.parametrize("level", LEVELS)
def test_a_recursive_backward_that_raised_the_limit_through_a_kept_reference_loses_deep_chain(level):
    (result,) = grade_sources(AUTOGRAD, [Source.from_files("recursive", _recursive_engine())], jobs=1,
                              questions=["engine.deep_chain"], isolation=jail.choose(level))
    question = result.question("engine.deep_chain")
    assert question.score == 0, question.feedback
    assert "recursion limit" in question.feedback


# Recursion reached by every route around a guard in the student's own process: past the leaves'
# probe (object.__getattribute__, which a subclass's __getattribute__ never sees), in generators
# (their frames live on the heap, and nest on the C stack), in a thread of its own with a large
# stack, and inside a frame large enough to be given a chunk of its own. None of them is held by
# the interpreter: the kernel holds the question's stack (cap_stack; sandbox/stack_cap.py), so
# each still loses the question.
def _past_the_probe(text: str) -> str:
    read = "if tensor.grad_fn is not None:\n                for parent in tensor.grad_fn.parents:"
    assert read in text
    return text.replace(read, "if object.__getattribute__(tensor, 'grad_fn') is not None:\n"
                              "                for parent in object.__getattribute__(tensor, 'grad_fn').parents:")


def _in_generators(text: str) -> str:
    text = _past_the_probe(text)
    for old, new in [("                return\n            expanded.add", "                return\n            yield\n"
                                                                         "            expanded.add"),
                     ("                        visit(parent)", "                        yield from visit(parent)"),
                     ("        visit(self)\n", "        for _ in visit(self):\n            pass\n")]:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _in_a_thread(text: str) -> str:
    text = _past_the_probe(text)
    old = "        visit(self)\n"
    assert old in text
    return text.replace(old, "        import threading\n        threading.stack_size(256 << 20)\n"
                             "        runner = threading.Thread(target=visit, args=(self,))\n"
                             "        runner.start()\n        runner.join()\n", 1)


def _in_a_large_frame(text: str) -> str:
    """Called from a frame of 66,000 locals: CPython gives it a data-stack chunk of 1 MiB, with room
    for the whole recursion after it (a helper's attack, given only the docs)."""
    text = _past_the_probe(text)
    old = "        visit(self)\n"
    assert old in text
    large = "def large(call):\n    return call()\n    if 0:\n" + "".join(f"        w{i} = 0\n" for i in range(66_000))
    return text.replace(old, f"        namespace = {{}}\n        exec({large!r}, namespace)\n"
                             "        namespace['large'](lambda: visit(self))\n", 1)


ROUTES = {"past the leaves' probe": _past_the_probe, "in generators": _in_generators, "in a thread": _in_a_thread,
          "in a large frame": _in_a_large_frame}


# Recursion carried by C code alone: a depth-first sort built of iterators nested once per node,
# whose Python calls each return before the next level is entered. It pushes no Python frame and
# takes some 64 bytes of C stack a level with two itertools.chain a node (a helper's attack, given
# only the docs), 32 with one: 1,500 levels then need over 44 KiB, more than the cap leaves
# native code (stack_cap.C_HEADROOM: NumPy, BLAS and LAPACK need under 32).
NESTED_ITERATORS = {
    "two chains a node": """
def _sorted_in_iterators(tensor, expanded):
    if id(tensor) in expanded:
        return iter(())
    expanded.add(id(tensor))
    parents = [p for p in (tensor.grad_fn.parents if tensor.grad_fn is not None else ()) if p is not None]
    return itertools.chain(itertools.chain.from_iterable(map(lambda p: _sorted_in_iterators(p, expanded), parents)),
                           (tensor,))
""",
    "one chain a node": """
def _sorted_in_iterators(tensor, expanded):
    if id(tensor) in expanded:
        return iter(())
    expanded.add(id(tensor))
    parents = [p for p in (tensor.grad_fn.parents if tensor.grad_fn is not None else ()) if p is not None]
    return itertools.chain.from_iterable(
        itertools.chain(map(lambda p: _sorted_in_iterators(p, expanded), parents), ((tensor,),)))
""",
}


def _in_nested_iterators(text: str, sort: str) -> str:
    start = text.index("        order, expanded = [], set()\n")
    end = text.index("        # `order` lists every tensor after its inputs")
    text = text[:start] + "        order = list(_sorted_in_iterators(self, set()))\n\n" + text[end:]
    return "import itertools\n" + text + sort


@pytest.mark.parametrize("sort", NESTED_ITERATORS)
@pytest.mark.parametrize("level", LEVELS)
def test_a_backward_that_recurses_in_nested_iterators_loses_deep_chain(level, sort):
    files = read_submission(AUTOGRAD.solution_dir).files
    files = {**files, "engine.py": _in_nested_iterators(files["engine.py"].decode(), NESTED_ITERATORS[sort]).encode()}
    (result,) = grade_sources(AUTOGRAD, [Source.from_files("iterators", files)], jobs=1,
                              questions=["engine.deep_chain"], isolation=jail.choose(level))
    question = result.question("engine.deep_chain")
    assert question.score == 0, question.feedback
    assert not result.error, result.error  # the student's failure, never the grader's


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("level", LEVELS)
def test_a_recursive_backward_by_any_route_loses_deep_chain(level, route):
    files = _recursive_engine()
    files = {**files, "engine.py": ROUTES[route](files["engine.py"].decode()).encode()}
    (result,) = grade_sources(AUTOGRAD, [Source.from_files("recursive", files)], jobs=1,
                              questions=["engine.deep_chain"], isolation=jail.choose(level))
    question = result.question("engine.deep_chain")
    assert question.score == 0, question.feedback
    assert not result.error, result.error  # the student's failure, never the grader's


# Native code an engine that loops might run in backward, each as much C stack as any honest engine needs
NATIVE_IN_BACKWARD = {
    "reference": "",
    "BLAS in backward": "        assert (np.ones((800, 900)) @ np.ones((900, 700)))[0, 0] == 900\n",
    "LAPACK in backward": "        np.linalg.solve(np.eye(200) * 2, np.ones(200)); np.linalg.svd(np.ones((60, 40))); "
                          "np.linalg.eigh(np.eye(50))\n",
    "einsum, sort, FFT in backward": "        np.einsum('ij,jk->ik', np.ones((30, 40)), np.ones((40, 20))); "
                                     "np.sort(np.arange(100_000.0)[::-1]); np.fft.fft(np.ones(4096)); "
                                     "np.linalg.norm(np.ones((100, 100)))\n",
}


def _with_in_backward(text: str, native: str) -> str:
    """The reference, its backward first running `native`."""
    old = "        if not self.requires_grad:\n"
    assert old in text
    return text.replace(old, native + old, 1)


@pytest.mark.parametrize("native", NATIVE_IN_BACKWARD)
@pytest.mark.parametrize("level", LEVELS)
def test_an_engine_that_loops_keeps_deep_chain(level, native):
    files = read_submission(AUTOGRAD.solution_dir).files
    files = {**files, "engine.py": _with_in_backward(files["engine.py"].decode(), NATIVE_IN_BACKWARD[native]).encode()}
    (result,) = grade_sources(AUTOGRAD, [Source.from_files("loops", files)], jobs=1,
                              questions=["engine.deep_chain"], isolation=jail.choose(level))
    question = result.question("engine.deep_chain")
    assert question.score == question.max_score, question.feedback
