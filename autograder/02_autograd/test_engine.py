"""Hidden checks for engine.py: graphs built with the student's Tensor, compared with PyTorch.

Every question here runs the student's engine on the reference rules.py (a wrong rule costs only
its own rules question), which never enters the sandbox: a stand-in asks the grader for each rule's
answer (use_reference; src/checks/sandbox/stand_ins.py). Torch is blocked there. The drivers (drivers.py) build each graph in the
sandbox and return plain data; the same graph is built here in PyTorch for the expected values.
Those do not depend on the submission: each case's `reference` builds them once, when the suite is
collected (@cases), and every submission of a batch shares them.
Each case runs its graph in one driver call, so each test sends its cases' calls to the sandbox at
once (send_ahead): they run in the same order as one by one.
"""

import warnings

import numpy as np
import torch

from checks.suite import Later, Packed, call_or_fail, case_rng, cases, fail, question

import drivers
import programs
from helpers import (c, check_array, check_leaf_grads, diagnoses, leaf, program_answers, reused_values, shape_text,
                     store_answer, t64, torch_backward, torch_values, v)

ENGINE = dict(use_reference=("rules.py",), block_imports=("torch",))


def expect_flag(got, want, what, context, hint=None):
    if got is not want:
        shown = got if isinstance(got, str) else repr(got)
        fail(f"{context}: {what} is {shown}; expected {want!r}." + (f" {hint}" if hint else ""))


# ============================================================================= engine.tensor_basics

BASICS = [
    ([1, 2, 3], None),
    ([[1.5, -2.0], [0.25, 4.0]], True),
    (2.5, True),
    (np.arange(6, dtype=np.int64).reshape(2, 3), False),
    (np.array([[7.25]], dtype=np.float32), None),
    (np.array([0.1, 1 / 3], dtype=np.float32), False),
]


def tensor_reference(data, requires_grad):
    return torch.tensor(np.asarray(data), dtype=torch.float64)


@question("engine.tensor_basics", points=1, **ENGINE)
@cases("data, requires_grad", BASICS, ids=lambda x: repr(x)[:30], reference=tensor_reference, send_ahead=True)
def test_tensor_basics(student, data, requires_grad, reference):
    call = (f"Tensor({data!r}" + ("" if requires_grad is None else f", requires_grad={requires_grad}") + ")")
    call = call.replace("\n", "")
    got = call_or_fail(lambda: student.run(drivers.tensor_basics, data, requires_grad),
                       text=f"While running t = {call}:")
    want = reference
    if got["dtype"] != "float64":
        fail(f"t = {call}: t.data has dtype {got['dtype']}; expected float64 (convert whatever data comes in).")
    check_array(got["data"], want.numpy(), "t.data", f"t = {call}")
    if got["shape"] != tuple(want.shape):
        fail(f"t = {call}: t.shape is {got['shape']!r}; expected {tuple(want.shape)!r} (a tuple).")
    expect_flag(got["requires_grad"], bool(requires_grad), "t.requires_grad", f"t = {call}")
    if got["grad"] is not None:
        fail(f"t = {call}: t.grad is {got['grad']!r:.60} before any backward(); expected None.")
    if want.numel() == 1:
        item = got.get("item")
        if type(item) is not float:
            fail(f"t = {call}: t.item() returned {item!r}; expected a Python float ({want.item()!r}).")
        if item != want.item():
            fail(f"t = {call}: t.item() returned {item!r}; expected {want.item()!r}.")


def grad_type_reference(shape):
    """The case's data, and a.grad after PyTorch's (a * 2.0).sum().backward()."""
    data = case_rng("grad_type", shape).standard_normal(shape)
    a = t64(data, requires_grad=True)
    (a * 2.0).sum().backward()
    return data, a.grad.numpy()


@question("engine.tensor_basics", points=1, **ENGINE)
@cases("shape", [(3,), (2, 2)], ids=shape_text, reference=grad_type_reference, send_ahead=True)
def test_grad_is_an_array(student, shape, reference):
    data, want = reference
    story = "a = Tensor(.., requires_grad=True); (a * 2.0).sum().backward()"
    got = call_or_fail(lambda: student.run(drivers.grad_type, data), text=f"While running {story}:")
    if got["type"] != "ndarray":
        fail(f"After {story}: a.grad is {'None' if got['type'] == 'builtins.NoneType' else 'an object of type ' + got['type']}; "
             "expected a NumPy float64 array of a's shape (.grad holds a plain ndarray, not a Tensor).")
    check_array(got["value"], want, "a.grad", f"After {story}")


# ============================================================================= engine.ops_forward

def _forward_programs():
    rng = case_rng("ops_forward")
    pos = rng.uniform(0.5, 2.0, (2, 3))
    cases = {}
    cases["arithmetic"] = {
        "leaves": [leaf("a", rng.standard_normal((2, 3))), leaf("b", rng.uniform(0.5, 2, 3), requires_grad=False)],
        "steps": [("add", v(0), v(1)), ("sub", v(0), v(1)), ("mul", v(0), v(1)), ("div", v(0), v(1)),
                  ("sub", v(1), v(0)), ("neg", v(0)), ("div", v(1), v(1))]}
    cases["numbers"] = {
        "leaves": [leaf("a", pos)],
        "steps": [("add", v(0), c(2.0)), ("add", c(2), v(0)), ("sub", v(0), c(1.5)), ("sub", c(1.5), v(0)),
                  ("mul", v(0), c(3.0)), ("mul", c(3), v(0)), ("div", v(0), c(4.0)), ("div", c(4.0), v(0)),
                  ("pow", v(0), 2), ("pow", v(0), 0.5), ("pow", v(0), -1), ("pow", v(0), 0)]}
    cases["unary"] = {
        "leaves": [leaf("a", np.concatenate([rng.standard_normal(5) * 3, [0.0]])), leaf("p", pos)],
        "steps": [("exp", v(0)), ("log", v(1)), ("relu", v(0)), ("tanh", v(0)), ("sigmoid", v(0)), ("neg", v(1))]}
    cases["matmul"] = {
        "leaves": [leaf("u", rng.standard_normal(3)), leaf("M", rng.standard_normal((2, 3))),
                   leaf("N", rng.standard_normal((3, 4))), leaf("B", rng.standard_normal((5, 1, 2, 3))),
                   leaf("C", rng.standard_normal((4, 3, 2)))],
        "steps": [("matmul", v(0), v(0)), ("matmul", v(1), v(0)), ("matmul", v(0), v(2)), ("matmul", v(1), v(2)),
                  ("matmul", v(3), v(4)), ("matmul", v(3), v(0))]}
    cases["reductions"] = {
        "leaves": [leaf("x", rng.standard_normal((2, 3, 4)))],
        "steps": [("sum", v(0), None, False), ("sum", v(0), None, True), ("sum", v(0), 1, False),
                  ("sum", v(0), -1, True), ("mean", v(0), (0, 2), False), ("mean", v(0), (0, -1), True),
                  ("mean", v(0), None, False), ("mean", v(0), -2, False)]}
    cases["requires_grad"] = {
        "leaves": [leaf("a", rng.standard_normal(3)), leaf("k", rng.standard_normal(3), requires_grad=False),
                   leaf("m", rng.standard_normal(3), requires_grad=False)],
        "steps": [("mul", v(1), v(2)), ("exp", v(1)), ("add", v(1), c(1.0)), ("sum", v(2), None, False),
                  ("mul", v(0), v(1)), ("add", v(3), v(0)), ("matmul", v(1), v(2))]}
    return cases


FORWARD = _forward_programs()


@question("engine.ops_forward", points=4, **ENGINE)
@cases("name", list(FORWARD), reference=lambda name: torch_values(FORWARD[name]), send_ahead=True)
def test_ops_forward(student, name, reference):
    program = FORWARD[name]
    text = Later(lambda: drivers.describe(program))
    got = call_or_fail(lambda: student.run(drivers.forward_values, program),
                       text=Later(lambda: f"Forward pass of {text}"))
    want = reference
    n_leaves = len(program["leaves"])
    for k, (data, flag, expected) in enumerate(zip(got["data"], got["requires_grad"], want)):
        if k < n_leaves:
            continue
        step, op = Later(lambda k=k: str(text).split("; ")[k]), program["steps"][k - n_leaves]
        shape_hint = diagnoses.shape_hint("engine.ops_forward", want_shape=tuple(expected.shape),
                                          reduction_without_keepdims=op[0] in drivers.REDUCE and not op[3])
        check_array(data, expected.detach().numpy(), f"{drivers.value_name(program, k)}.data",
                    Later(lambda step=step: f"In {step} (program: {text})"), shape_hint=shape_hint)
        expect_flag(flag, expected.requires_grad, f"{drivers.value_name(program, k)}.requires_grad",
                    Later(lambda step=step: f"In {step}"),
                    "An op's result requires grad exactly when one of its Tensor inputs requires grad.")


# ============================================================================= engine.backward_graphs

def backward_reference(program, output, weights):
    """A graph (program, output, weights) with PyTorch's (loss, leaf grads) for it, and the rules'
    answers its backward asks for (program_answers)."""
    return (program, output, weights, torch_backward(program, output, weights),
            program_answers(program, output, weights=weights))


def _check_backward(student, program, output, weights, want, answers):
    tail = (f"L = ({drivers.value_name(program, output)} * W).sum() with a random W; L.backward()"
            if weights is not None else f"L = {drivers.value_name(program, output)}; L.backward()")
    context = Later(lambda: f"After {drivers.describe(program)}; {tail}")
    got = call_or_fail(lambda: student.run(drivers.backward_program, program, output, weights, answers=answers),
                       text=context)
    loss, grads = want
    hint = diagnoses.note("engine.backward_graphs", reused=reused_values(program))
    check_array(got["loss"], loss, "L.data", context)
    check_leaf_grads(got["grads"], grads, program, context, extra_hint=hint)


@question("engine.backward_graphs", points=4, **ENGINE)
@cases("name", list(programs.HANDWRITTEN), reference=lambda name: backward_reference(*programs.HANDWRITTEN[name]()),
       send_ahead=True)
def test_backward_handwritten(student, name, reference):
    _check_backward(student, *reference)


@question("engine.backward_graphs", points=3, **ENGINE)
@cases("seed", range(12), reference=lambda seed: backward_reference(*programs.random_program(seed)),
       send_ahead=True)
def test_backward_random(student, seed, reference):
    _check_backward(student, *reference)


# ============================================================================= engine.views

def _view_programs():
    """Graphs through each view op: every leaf's gradient passes through a view, and no value has
    two consumers (that is engine.backward_graphs' subject); the output gets a random upstream
    gradient."""
    rng = case_rng("views")
    x = leaf("x", rng.standard_normal((2, 3, 4)))
    m = leaf("M", rng.standard_normal((3, 3)))
    rows = leaf("R", rng.standard_normal((4, 3)))
    col = leaf("b", rng.standard_normal((3, 1)))

    def case(leaves, steps):
        program = {"leaves": leaves, "steps": steps}
        out = len(leaves) + len(steps) - 1
        shape = torch_values(program)[out].shape
        return program, out, rng.standard_normal(tuple(shape))

    return {
        "reshape": case([x], [("reshape", v(0), (4, -1)), ("exp", v(1))]),
        "transpose": case([x], [("transpose", v(0), 0, -1), ("tanh", v(1))]),
        "T": case([m, leaf("N", rng.standard_normal((3, 3)))], [("T", v(0)), ("matmul", v(2), v(1))]),
        "permute": case([x, leaf("w", rng.standard_normal(3))],
                        [("permute", v(0), (2, 0, 1)), ("mul", v(2), v(1))]),
        "expand": case([col, x], [("expand", v(0), (2, 3, 4)), ("mul", v(2), v(1))]),
        "expand -1": case([col], [("expand", v(0), (2, -1, 3)), ("exp", v(1))]),
        "getitem repeated rows": case([rows], [("getitem", v(0), [0, 2, 2, 0]), ("exp", v(1))]),
        "getitem slices": case([rows], [("getitem", v(0), (slice(1, None), slice(None, None, 2))), ("exp", v(1))]),
        "getitem None and ...": case([rows], [("getitem", v(0), (None, Ellipsis, -1)), ("tanh", v(1))]),
        "getitem int and array": case([rows], [("getitem", v(0), (-1, [2, 0, 2])), ("sigmoid", v(1))]),
        "views in a row": case([x], [("permute", v(0), (1, 2, 0)), ("reshape", v(1), (3, 8)), ("T", v(2)),
                                     ("getitem", v(3), (slice(None, None, 3), 1)), ("expand", v(4), (2, 3))]),
    }


VIEWS = _view_programs()

VIEWS_HINT = diagnoses.note("engine.views")


@question("engine.views", points=4, **ENGINE)
@cases("name", list(VIEWS), reference=lambda name: backward_reference(*VIEWS[name]), send_ahead=True)
def test_views(student, name, reference):
    program, output, weights, want, answers = reference
    context = Later(lambda: f"After {drivers.describe(program)}; L = ({drivers.value_name(program, output)} * W).sum() "
                            "with a random W; L.backward()")
    got = call_or_fail(lambda: student.run(drivers.backward_program, program, output, weights, answers=answers),
                       text=context, note=VIEWS_HINT)
    loss, grads = want
    check_array(got["loss"], loss, "L.data", context)
    check_leaf_grads(got["grads"], grads, program, context, extra_hint=VIEWS_HINT)


# ============================================================================= engine.accumulation

def _accumulation_cases():
    rng = case_rng("accumulation")
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    leaves = [leaf("a", a), leaf("b", b)]
    product = {"leaves": leaves, "steps": [("mul", v(0), v(1)), ("sum", v(2), None, False)]}
    exp_product = {"leaves": leaves, "steps": [("mul", v(0), v(1)), ("exp", v(2)), ("sum", v(3), None, False)]}
    square_a = {"leaves": leaves, "steps": [("pow", v(0), 2), ("mean", v(2), None, False)]}
    s, x = rng.standard_normal(()), rng.standard_normal(4)
    scalar_leaves = [leaf("s", s), leaf("x", x)]
    scaled = {"leaves": scalar_leaves, "steps": [("mul", v(0), v(1)), ("sum", v(2), None, False)]}
    shifted = {"leaves": scalar_leaves, "steps": [("add", v(0), v(1)), ("tanh", v(2)), ("sum", v(3), None, False)]}
    return {"same graph twice": (product, 3, product, 3),
            "two different graphs": (exp_product, 4, square_a, 3),
            "0-d leaf": (scaled, 3, shifted, 4)}


ACCUMULATION = _accumulation_cases()


def accumulation_reference(name):
    """PyTorch's leaf grads after each of the two passes on shared leaves, and the second pass's
    grads on its own (what a .grad that is overwritten instead of added to would hold)."""
    first, out_1, second, out_2 = ACCUMULATION[name]
    leaves = [t64(spec["data"], requires_grad=True) for spec in first["leaves"]]
    snapshots = []
    for program, output in ((first, out_1), (second, out_2)):
        values = list(leaves)
        for step in program["steps"]:
            values.append(drivers.apply_step(step, values))
        values[output].backward()
        snapshots.append([None if t.grad is None else t.grad.numpy().copy() for t in leaves])
    _, second_alone = torch_backward(second, out_2)
    return snapshots, second_alone, program_answers(second, out_2, answers=program_answers(first, out_1))


@question("engine.accumulation", points=3, **ENGINE)
@cases("name", list(ACCUMULATION), reference=accumulation_reference, send_ahead=True)
def test_accumulation(student, name, reference):
    first, out_1, second, out_2 = ACCUMULATION[name]
    context = Later(lambda: f"Two backward passes on the same leaves: first {drivers.describe(first)}; L1 = "
                            f"{drivers.value_name(first, out_1)}; L1.backward(); then a new forward pass "
                            f"{'; '.join(drivers.describe(second).split('; ')[len(second['leaves']):])}; "
                            f"L2 = {drivers.value_name(second, out_2)}; L2.backward()")
    snapshots, second_alone, answers = reference
    got = call_or_fail(lambda: student.run(drivers.backward_twice, first, out_1, second, out_2, answers=answers),
                       text=context)
    check_leaf_grads(got[0], snapshots[0], first, Later(lambda: f"{context} — after the FIRST backward"))
    alternatives = diagnoses.mistakes("engine.accumulation", second_alone=second_alone)
    check_leaf_grads(got[1], snapshots[1], first, Later(lambda: f"{context} — after the SECOND backward"),
                     alternatives=alternatives)


# ============================================================================= engine.retain_graph

def _retain_program(seed):
    rng = case_rng("retain", seed)
    program = {"leaves": [leaf("a", rng.standard_normal((2, 3))), leaf("b", rng.uniform(0.5, 2, 3))],
               "steps": [("mul", v(0), v(1)), ("exp", v(2)), ("pow", v(3), 2), ("sum", v(4), None, False)]}
    return program, 5


RETAIN_PLANS = {
    "backward twice": [(False, False), (False, False)],
    "retain, then once more": [(True, False), (False, True)],
    "retain twice, then twice more": [(True, False), (True, True), (False, True), (False, True)],
}


def _torch_plan(program, output, plan):
    values = torch_values(program)
    leaves = values[:len(program["leaves"])]
    report = []
    for keep, reset in plan:
        if reset:
            for t in leaves:
                t.grad = None
        try:
            values[output].backward(retain_graph=keep)
        except RuntimeError as error:
            report.append(("raised", f"RuntimeError: {error}"))
        else:
            report.append(("ok", [None if t.grad is None else t.grad.numpy().copy() for t in leaves]))
    return report


def _plan_text(plan):
    calls = []
    for keep, reset in plan:
        calls.append(("a.grad = b.grad = None; " if reset else "") +
                     ("L.backward(retain_graph=True)" if keep else "L.backward()"))
    return calls


def retain_reference(name):
    """The case's program and output, and what PyTorch reports for each call of its plan."""
    program, output = _retain_program(name)
    return program, output, _torch_plan(program, output, RETAIN_PLANS[name]), program_answers(program, output)


@question("engine.retain_graph", points=3, **ENGINE)
@cases("name", list(RETAIN_PLANS), reference=retain_reference, send_ahead=True)
def test_retain_graph(student, name, reference):
    plan = RETAIN_PLANS[name]
    program, output, want, answers = reference
    calls = _plan_text(plan)
    context = Later(lambda: f"After {drivers.describe(program)}; L = {drivers.value_name(program, output)}; "
                            f"then {'; '.join(calls)}")
    got = call_or_fail(lambda: student.run(drivers.retain_graph, program, output, plan, answers=answers), text=context)
    for k, ((status, payload), (want_status, want_payload)) in enumerate(zip(got, want)):
        where = Later(lambda k=k: f"{context}: call {k + 1} ({calls[k]})")
        if want_status == "raised":
            if status == "ok":
                fail(f"{where} did not raise; expected RuntimeError. After a backward() without "
                     "retain_graph=True the graph is freed, and backward through it again must raise RuntimeError.")
            if not payload.startswith("RuntimeError"):
                fail(f"{where} raised {payload}; expected RuntimeError (raise it yourself when a node's "
                     "saved values were already freed).")
            continue
        if status == "raised":
            keep_before = k > 0 and plan[k - 1][0]
            why = (" The previous call passed retain_graph=True, so the graph must still be usable."
                   if keep_before else "")
            fail(f"{where} raised {payload}; expected it to work.{why}")
        check_leaf_grads(payload, want_payload, program, where)


# ============================================================================= engine.leaf_and_grad_fn

LEAF_CASES = [((3,), (3,)), ((2, 3), (3,))]


def _torch_leaf_scenario(a_data, b_data):
    a = t64(a_data, requires_grad=True)
    b = t64(b_data)
    x = a * b
    y = x.exp()
    y.retain_grad()
    loss = (y * 3.0).sum()
    tensors = {"a": a, "b": b, "x": x, "y": y, "L": loss}

    def state():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return {name: {"is_leaf": t.is_leaf, "grad_fn_is_none": t.grad_fn is None,
                           "requires_grad": t.requires_grad,
                           "grad": None if t.grad is None else t.grad.numpy().copy()}
                    for name, t in tensors.items()}

    before = state()
    loss.backward()
    return {"before": before, "after": state()}


def leaf_reference(a_shape, b_shape):
    """The case's a and b, and PyTorch's account of the scenario on them."""
    rng = case_rng("leaf", a_shape, b_shape)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    return a, b, _torch_leaf_scenario(a, b)


LEAF_STORY = ("a = Tensor(.., requires_grad=True); b = Tensor(..); x = a * b; y = x.exp(); y.retain_grad(); "
              "L = (y * 3.0).sum()")


@question("engine.leaf_and_grad_fn", points=2, **ENGINE)
@cases("a_shape, b_shape", LEAF_CASES, ids=shape_text, reference=leaf_reference, send_ahead=True)
def test_is_leaf_and_grad_fn(student, a_shape, b_shape, reference):
    a, b, want = reference
    got = call_or_fail(lambda: student.run(drivers.leaf_and_grad_fn, a, b),
                       text=f"While running {LEAF_STORY}; L.backward()")
    for stage in ("before", "after"):
        when = f"{LEAF_STORY}{'; L.backward()' if stage == 'after' else ''}"
        for name, expected in want[stage].items():
            state = got[stage][name]
            expect_flag(state["is_leaf"], expected["is_leaf"], f"{name}.is_leaf", f"After {when}",
                        "A tensor is a leaf unless a recorded op made it (tensors that do not require grad "
                        "are leaves too).")
            if state["grad_fn_is_none"] != expected["grad_fn_is_none"]:
                fail(f"After {when}: {name}.grad_fn is {'None' if state['grad_fn_is_none'] else 'set'}; expected "
                     f"{'None' if expected['grad_fn_is_none'] else 'the node of the op that made it'}.")
            expect_flag(state["requires_grad"], expected["requires_grad"], f"{name}.requires_grad", f"After {when}")


@question("engine.leaf_and_grad_fn", points=1, **ENGINE)
@cases("a_shape, b_shape", LEAF_CASES, ids=shape_text, reference=leaf_reference, send_ahead=True)
def test_which_tensors_keep_grad(student, a_shape, b_shape, reference):
    a, b, want = reference
    got = call_or_fail(lambda: student.run(drivers.leaf_and_grad_fn, a, b),
                       text=f"While running {LEAF_STORY}; L.backward()")
    for stage in ("before", "after"):
        when = f"{LEAF_STORY}{'; L.backward()' if stage == 'after' else ''}"
        for name, expected in want[stage].items():
            grad = got[stage][name]["grad"]
            if expected["grad"] is None:
                if grad is not None:
                    why = diagnoses.note("engine.leaf_and_grad_fn", name=name, made_by_an_op=name in ("x", "L"))
                    fail(f"After {when}: {name}.grad is not None; expected None. Likely mistake: {why}")
                continue
            if grad is None:
                why = (" retain_grad() asks a non-leaf to keep its gradient in .grad." if name == "y" else "")
                fail(f"After {when}: {name}.grad is None; expected its gradient.{why}")
            check_array(grad, expected["grad"], f"{name}.grad", f"After {when}")


# ============================================================================= engine.no_grad_detach

NO_GRAD_SCENARIOS = {
    "inside": "with no_grad(): inside = (a * b + a.exp()).tanh(); then after = a * b",
    "nested": "with no_grad(): (with no_grad(): deeper = a * 2.0); between = a.exp(); then after = a * b",
    "exception": "with no_grad(): raise KeyError (caught outside); then after = a * b",
    "constant_in_graph": "with no_grad(): s = a * b; then L = (a * s).sum(); L.backward()",
    "detach": "h = a * b; d = h.detach(); L = (d * h).sum(); L.backward()",
}


def _torch_no_grad(a_data, b_data, scenario):
    a = t64(a_data, requires_grad=True)
    b = t64(b_data)

    def info(t):
        return {"requires_grad": t.requires_grad, "grad_fn_is_none": t.grad_fn is None,
                "data": t.detach().numpy().copy()}

    if scenario == "inside":
        with torch.no_grad():
            inside = (a * b + a.exp()).tanh()
        return {"inside": info(inside), "after": info(a * b)}
    if scenario == "nested":
        with torch.no_grad():
            with torch.no_grad():
                deeper = a * 2.0
            between = a.exp()
        return {"deeper": info(deeper), "between": info(between), "after": info(a * b)}
    if scenario == "exception":
        try:
            with torch.no_grad():
                raise KeyError("on purpose")
        except KeyError:
            pass
        return {"after": info(a * b)}
    if scenario == "constant_in_graph":
        with torch.no_grad():
            s = a * b
        (a * s).sum().backward()
        return {"s": info(s), "a_grad": a.grad.numpy().copy()}
    h = a * b
    d = h.detach()
    (d * h).sum().backward()
    return {"d": info(d), "a_grad": a.grad.numpy().copy(), "h_requires_grad": h.requires_grad}


def no_grad_reference(scenario):
    """The case's a and b, and PyTorch's account of the scenario on them."""
    rng = case_rng("no_grad", scenario)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    return a, b, _torch_no_grad(a, b, scenario)


@question("engine.no_grad_detach", points=3, **ENGINE)
@cases("scenario", list(NO_GRAD_SCENARIOS), reference=no_grad_reference, send_ahead=True)
def test_no_grad_and_detach(student, scenario, reference):
    a, b, want = reference
    story = f"a = Tensor(.., requires_grad=True); b = Tensor(..); {NO_GRAD_SCENARIOS[scenario]}"
    got = call_or_fail(lambda: student.run(drivers.no_grad_scenario, a, b, scenario), text=f"While running {story}")
    for key, expected in want.items():
        if key == "a_grad":
            check_array(got[key], expected, "a.grad", f"After {story}",
                        note=("A tensor computed under no_grad() or by detach() is a constant: no gradient "
                                    "flows back through it." if scenario != "detach" else
                                    "d = h.detach() is a constant; the gradient flows to a through h only."))
            continue
        if key == "h_requires_grad":
            expect_flag(got[key], expected, "h.requires_grad", f"After {story}", "detach() must not change h.")
            continue
        state = got[key]
        inside_no_grad = key in ("inside", "deeper", "between", "s")
        why = ("Inside no_grad() ops record nothing: results have requires_grad False and grad_fn None, until "
               "the outermost no_grad block ends (restore the previous state in __exit__)."
               if inside_no_grad or key == "after" else
               "detach() returns a tensor with the same data, no history (grad_fn None) and requires_grad False.")
        if key == "after":
            why = ("After the no_grad() block ends (also when it ends with an exception) ops must record again: "
                   "restore the state from before the block in __exit__.")
        expect_flag(state["requires_grad"], expected["requires_grad"], f"{key}.requires_grad", f"After {story}", why)
        if state["grad_fn_is_none"] != expected["grad_fn_is_none"]:
            fail(f"After {story}: {key}.grad_fn is {'None' if state['grad_fn_is_none'] else 'set'}; expected "
                 f"{'None' if expected['grad_fn_is_none'] else 'a node'}. {why}")
        check_array(state["data"], expected["data"], f"{key}.data", f"After {story}")


# ============================================================================= engine.zero_grad

ZERO_GRAD_MODES = {
    "default": "zero_grad([a, b])",
    "none": "zero_grad([a, b], set_to_none=True)",
    "zeros": "zero_grad([a, b], set_to_none=False)",
    "zeros_then_backward": "zero_grad([a, b], set_to_none=False); (a * b).sum().backward()",
}


def _torch_zero_grad(a_data, b_data, mode):
    a, b, c_ = (t64(x, requires_grad=True) for x in (a_data, b_data, b_data))
    (a * b * c_).exp().sum().backward()

    def grads():
        return [None if t.grad is None else t.grad.numpy().copy() for t in (a, b, c_)]

    report = {"before": grads()}
    optimizer = torch.optim.SGD([a, b], lr=0.0)   # PyTorch's own zero_grad semantics
    optimizer.zero_grad(**({} if mode == "default" else {"set_to_none": mode == "none"}))
    report["after"] = grads()
    if mode == "zeros_then_backward":
        (a * b).sum().backward()
        report["again"] = grads()
    return report


def zero_grad_reference(mode):
    """The case's a and b, and PyTorch's grads at each stage of the scenario."""
    rng = case_rng("zero_grad", mode)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    return a, b, _torch_zero_grad(a, b, mode)


@question("engine.zero_grad", points=2, **ENGINE)
@cases("mode", list(ZERO_GRAD_MODES), reference=zero_grad_reference, send_ahead=True)
def test_zero_grad(student, mode, reference):
    a, b, want = reference
    story = (f"a, b, c = Tensor(.., requires_grad=True) x3; (a * b * c).exp().sum().backward(); "
             f"{ZERO_GRAD_MODES[mode]}")
    got = call_or_fail(lambda: student.run(drivers.zero_grad_scenario, a, b, mode), text=f"While running {story}")
    for stage in ("after", "again"):
        if stage not in want:
            continue
        for k, name in enumerate("abc"):
            expected, grad = want[stage][k], got[stage][k]
            where = f"After {story}" + (" (then the backward)" if stage == "again" else "")
            if expected is None:
                if grad is not None:
                    fail(f"{where}: {name}.grad is not None; expected None"
                         + (" (set_to_none defaults to True)." if mode == "default" else "."))
                continue
            if grad is None:
                fail(f"{where}: {name}.grad is None; expected "
                     + ("an array of zeros with the tensor's shape (set_to_none=False)." if stage == "after"
                        and name != "c" else "its gradient."))
            if name == "c" and stage == "after":
                check_array(grad, expected, "c.grad", where, note="zero_grad must reset only the tensors "
                                                                        "it is given.")
                continue
            check_array(grad, expected, f"{name}.grad", where)


# ============================================================================= engine.backward_args

def _args_cases():
    rng = case_rng("backward_args")
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    base = [leaf("a", a), leaf("b", b)]
    one_element = {"leaves": base, "steps": [("mul", v(0), v(1)), ("tanh", v(2)), ("sum", v(3), None, True)]}
    matrix = {"leaves": base, "steps": [("mul", v(0), v(1)), ("exp", v(2))]}
    scalar = {"leaves": base, "steps": [("mul", v(0), v(1)), ("mean", v(2), None, False)]}
    constant = {"leaves": [leaf("k", rng.standard_normal(()), requires_grad=False)], "steps": []}
    return {
        "default grad, one-element output of shape (1, 1)": (one_element, 4, "default", None),
        "default grad, output of shape (2, 3)": (matrix, 3, "default", None),
        "explicit grad, output of shape (2, 3)": (matrix, 3, "explicit", rng.standard_normal((2, 3))),
        "explicit grad, 0-d output": (scalar, 3, "explicit", np.asarray(rng.uniform(1.5, 3.0))),
        "0-d leaf that does not require grad": (constant, 0, "default", None),
    }


ARGS = _args_cases()


def args_reference(name):
    """What PyTorch's backward does in the case: ("ok", leaf grads) or ("raised", None), and
    whether the output requires grad (which says why it raised)."""
    program, output, case, grad = ARGS[name]
    values = torch_values(program)
    out = values[output]
    answers = program_answers(program, output, grad=grad)
    try:
        out.backward() if case == "default" else out.backward(t64(grad))
    except RuntimeError:
        return ("raised", None), out.requires_grad, answers
    return ("ok", [None if t.grad is None else t.grad.numpy().copy()
                   for t in values[:len(program["leaves"])]]), out.requires_grad, answers


@question("engine.backward_args", points=2, **ENGINE)
@cases("name", list(ARGS), reference=args_reference, send_ahead=True)
def test_backward_args(student, name, reference):
    program, output, case, grad = ARGS[name]
    call = (f"{drivers.value_name(program, output)}.backward()" if case == "default" else
            f"{drivers.value_name(program, output)}.backward(G) with G a NumPy array of shape {shape_text(np.shape(grad))}")
    context = Later(lambda: f"After {drivers.describe(program)}; {call}")
    want, out_requires_grad, answers = reference
    got = call_or_fail(lambda: student.run(drivers.backward_args, program, output, case, grad, answers=answers),
                       text=context)
    status, payload = got
    if want[0] == "raised":
        if status == "ok":
            reason = ("a tensor with more than one element needs an explicit grad"
                      if out_requires_grad else "the tensor does not require grad, so there is no graph to walk")
            fail(f"{context} did not raise; expected RuntimeError: {reason}.")
        if not payload.startswith("RuntimeError"):
            fail(f"{context} raised {payload}; expected RuntimeError.")
        return
    if status == "raised":
        why = (" The default grad is ones for any tensor with ONE element, whatever its shape."
               if case == "default" else "")
        fail(f"{context} raised {payload}; expected it to work.{why}")
    check_leaf_grads(payload, want[1], program, context)


# ============================================================================= engine.deep_chain

# At least 1,500 ops at the interpreter's default recursion limit of 1,000 (CURRICULUM.md): a
# backward that recurses once per node fails, and so does one that raises the limit to get by.
CHAIN_LENGTH = 1_500
RECURSION_LIMIT = 1_000


def _chain_ops(seed, use_w):
    """CHAIN_LENGTH ops; with use_w the leaf w joins once, near the start, so its gradient has to
    travel back through (almost) the whole chain."""
    rng = case_rng("chain", seed)
    choices = [("add_c", 0.1), ("mul_c", 1.001), ("sub_c", 1.0), ("div_c", 1.002), ("neg",)]
    ops = [choices[int(rng.integers(len(choices)))] for _ in range(CHAIN_LENGTH)]
    if use_w:
        ops[3] = ("mul_w",)
    return ops


def _torch_chain(x_data, w_data, ops):
    x0, w = t64(x_data, requires_grad=True), t64(w_data, requires_grad=True)
    x = drivers.apply_chain(x0, w, ops)
    loss = x.sum()
    loss.backward()
    return loss.detach().numpy().copy(), [None if t.grad is None else t.grad.numpy().copy() for t in (x0, w)]


def _chain_answers(x_data, w_data, ops):
    """What each op's rule answers when the engine runs the chain (drivers.CHAIN_RULES: the rule and
    its arrays, answer_key: how a call is looked up), computed by PyTorch in one backward: each
    op's inputs are used by that op alone, so their .grad is its vector-Jacobian product. The
    sandbox then asks the grader only for calls an engine makes otherwise."""
    x, w = t64(x_data, requires_grad=True), t64(w_data, requires_grad=True)
    steps = []
    for op in ops:
        x.retain_grad()
        inputs = {"x": x, "w": w}
        if len(op) > 1:
            inputs["c"] = t64(op[1], requires_grad=True)
        out = drivers.apply_chain(x, w, [op if len(op) == 1 else (op[0], inputs["c"])])
        steps.append((op, inputs, out))
        x = out
    x.retain_grad()
    x.sum().backward()
    answers = {}
    for op, inputs, out in steps:
        name, *order = drivers.CHAIN_RULES[op[0]]
        arrays = [inputs[role] for role in order]
        store_answer(answers, drivers.answer_key(name, out.grad.numpy(), [a.detach().numpy() for a in arrays]),
                     [a.grad for a in arrays])
    return answers


def _deep_chain_case(use_w):
    """(x_data, w_data, ops, PyTorch's (loss, grads), the rules' answers) of one deep chain."""
    rng = case_rng("chain_data", use_w)
    x_data, w_data = rng.standard_normal(3), rng.uniform(0.5, 1.5, 3)
    ops = _chain_ops(int(use_w), use_w)
    return (x_data, w_data, Packed(ops), _torch_chain(x_data, w_data, ops),
            Packed(_chain_answers(x_data, w_data, ops)))


# Built and run in PyTorch once, when the suite is collected (about 0.15 s for both chains): the
# grading processes of a batch are forked after that, and share them instead of each redoing it;
# the ops and answers go to the sandbox as the bytes pickled here (Packed).
DEEP_CHAINS = {use_w: _deep_chain_case(use_w) for use_w in (False, True)}


@question("engine.deep_chain", points=3, timeout=60.0, cap_stack=True, **ENGINE)
@cases("use_w", [False, True], ids=["constants only", "with a second leaf w"], send_ahead=True)
def test_deep_chain(student, use_w):
    x_data, w_data, ops, (loss, grads), answers = DEEP_CHAINS[use_w]
    story = (f"x = Tensor(<3 values>, requires_grad=True); w = Tensor(<3 values>, requires_grad=True); "
             f"{CHAIN_LENGTH:,} ops in a row (x = x + 0.1, x * 1.001, 1.0 - x, x / 1.002 or -x"
             f"{'; the 4th op is x * w' if use_w else ''}); L = x.sum(); L.backward(), at Python's default "
             f"recursion limit of {RECURSION_LIMIT:,}")
    got = call_or_fail(lambda: student.run(drivers.deep_chain, x_data, w_data, ops, RECURSION_LIMIT, answers),
                       text=f"While running {story}:",
                       mistake=diagnoses.raised_hint("engine.deep_chain", limit=RECURSION_LIMIT))
    if got.get("limit_raised") or not isinstance(got.get("deepest"), int) or got["deepest"] > RECURSION_LIMIT:
        fail(f"While running {story}: your code raised Python's recursion limit, which this check holds at "
             f"{RECURSION_LIMIT:,}. {diagnoses.EXPLICIT_STACK}")
    check_array(got["loss"], loss, "L.data", f"After {story}")
    program = {"leaves": [leaf("x", x_data), leaf("w", w_data)]}
    check_leaf_grads(got["grads"], grads, program, f"After {story}")
