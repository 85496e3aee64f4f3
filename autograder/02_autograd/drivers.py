"""Drivers for the engine questions of 02_autograd.

The source of this module is executed INSIDE the sandbox, next to the student's engine.py: each
driver builds a graph with the student's `engine.Tensor`, runs it, and returns plain data only
(arrays, floats, bools, strings, None, and lists / tuples / dicts of them). Nothing here may
import torch (the engine questions block it).

The grader imports this module too, to run the very same program interpreter on torch tensors:
`evaluate(program, leaf_factory)` works for any tensor type with the course's API (torch accepts
`axis=` / `keepdims=` as aliases of `dim=` / `keepdim=`).

A program is plain data:
    {"leaves": [{"name": "a", "data": ndarray, "requires_grad": bool}, ...],
     "steps": [step, ...]}
Values are numbered: the leaves first, then one value per step. A step is a tuple
    (op, operand, ...) where an operand is ("v", index) for a value or ("c", number) for a
    Python number, and op is one of
    "add" "sub" "mul" "div" "matmul"           two operands
    "neg" "exp" "log" "relu" "tanh" "sigmoid"  one operand
    "pow"                                      (operand, exponent)
    "sum" "mean"                               (operand, axis, keepdims)
    "reshape" "permute" "expand"               (operand, sizes or dims as a tuple)
    "transpose"                                (operand, dim0, dim1)
    "T"                                        (operand,)
    "getitem"                                  (operand, index): ints, slices, None, Ellipsis,
                                               lists of ints for integer arrays
"""

import contextlib
import hashlib
import sys

import numpy as np

BINARY = ("add", "sub", "mul", "div", "matmul")
UNARY = ("neg", "exp", "log", "relu", "tanh", "sigmoid")
REDUCE = ("sum", "mean")
VIEWS = ("reshape", "transpose", "permute", "T", "expand", "getitem")


# ----------------------------------------------------------------------------- the interpreter

def _operand(spec, values):
    kind, payload = spec
    return values[payload] if kind == "v" else payload


def apply_step(step, values):
    """One step of a program on already computed `values` (any tensor type)."""
    op = step[0]
    if op in BINARY:
        x, y = _operand(step[1], values), _operand(step[2], values)
        if op == "add":
            return x + y
        if op == "sub":
            return x - y
        if op == "mul":
            return x * y
        if op == "div":
            return x / y
        return x @ y
    x = _operand(step[1], values)
    if op == "neg":
        return -x
    if op in UNARY:
        return getattr(x, op)()
    if op == "pow":
        return x ** step[2]
    if op in REDUCE:
        axis, keepdims = step[2], step[3]
        method = getattr(x, op)
        if axis is None and not keepdims:
            return method()
        return method(axis=axis, keepdims=keepdims)
    if op in ("reshape", "permute", "expand"):
        return getattr(x, op)(*step[2])
    if op == "transpose":
        return x.transpose(step[2], step[3])
    if op == "T":
        return x.T
    if op == "getitem":
        return x[step[2]]
    raise ValueError(f"unknown op {op!r}")


def index_text(index):
    """An index as it is written between brackets: 1:3, ::2, None, ..., [0, 0, 2]."""
    def one(item):
        if isinstance(item, slice):
            parts = ["" if x is None else str(x) for x in (item.start, item.stop, item.step)]
            return ":".join(parts if item.step is not None else parts[:2])
        if item is Ellipsis:
            return "..."
        if isinstance(item, np.ndarray):
            return repr(item.tolist())
        return repr(item)
    return ", ".join(one(item) for item in index) if isinstance(index, tuple) else one(index)


def evaluate(program, make_leaf):
    """All values of `program`: make_leaf(leaf_spec) for each leaf, then each step."""
    values = [make_leaf(leaf) for leaf in program["leaves"]]
    for step in program["steps"]:
        values.append(apply_step(step, values))
    return values


def describe(program, output=None):
    """The program as readable Python, for feedback: one line per step."""
    names = [leaf["name"] for leaf in program["leaves"]]
    lines = []
    for leaf in program["leaves"]:
        flag = ", requires_grad=True" if leaf["requires_grad"] else ""
        lines.append(f"{leaf['name']} = Tensor(<array of shape {tuple(np.shape(leaf['data']))}>{flag})")

    def text(spec):
        kind, payload = spec
        return names[payload] if kind == "v" else repr(payload)

    symbols = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@"}
    for k, step in enumerate(program["steps"]):
        name = f"t{k}"
        op = step[0]
        if op in BINARY:
            expr = f"{text(step[1])} {symbols[op]} {text(step[2])}"
        elif op == "neg":
            expr = f"-{text(step[1])}"
        elif op in UNARY:
            expr = f"{text(step[1])}.{op}()"
        elif op == "pow":
            expr = f"{text(step[1])} ** {step[2]!r}"
        elif op in ("reshape", "permute", "expand"):
            expr = f"{text(step[1])}.{op}({', '.join(map(str, step[2]))})"
        elif op == "transpose":
            expr = f"{text(step[1])}.transpose({step[2]}, {step[3]})"
        elif op == "T":
            expr = f"{text(step[1])}.T"
        elif op == "getitem":
            expr = f"{text(step[1])}[{index_text(step[2])}]"
        else:
            args = "" if step[2] is None and not step[3] else f"axis={step[2]!r}, keepdims={step[3]!r}"
            expr = f"{text(step[1])}.{op}({args})"
        lines.append(f"{name} = {expr}")
        names.append(name)
    return "; ".join(lines)


def value_name(program, index):
    """The name `describe` gives value number `index`."""
    leaves = program["leaves"]
    return leaves[index]["name"] if index < len(leaves) else f"t{index - len(leaves)}"


# ----------------------------------------------------------------------------- plain data out

def plain_array(value):
    """An ndarray copy, None, or a string naming what came back instead of an ndarray.

    A Tensor-like object whose .data is an ndarray is unwrapped: a .grad stored as a Tensor is
    graded once, in engine.tensor_basics (drivers.grad_type), not in every question.
    """
    if value is None:
        return None
    if type(value) is np.ndarray:
        return np.array(value)
    if isinstance(value, np.generic) and np.asarray(value).dtype.kind in "biuf":
        return np.array(value)   # a NumPy scalar for a 0-d result: accepted as a 0-d array
    if type(getattr(value, "data", None)) is np.ndarray:
        return np.array(value.data)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _flag(value):
    """A bool as it is; anything else described, so that the check can say what it was."""
    if type(value) is bool:
        return value
    if callable(value):
        return "<a method: make it a @property>"
    return f"<{type(value).__qualname__} {value!r:.40}>"


def grad_type(a_data):
    """a = Tensor(a_data, requires_grad=True); (a * 2.0).sum().backward(): what is a.grad?"""
    engine = _engine()
    a = engine.Tensor(np.array(a_data), requires_grad=True)
    (a * 2.0).sum().backward()
    grad = a.grad
    kind = "ndarray" if type(grad) is np.ndarray else f"{type(grad).__module__}.{type(grad).__qualname__}"
    return {"type": kind, "value": plain_array(grad)}


def _attempt(action):
    """Run action(); return (result, None) or (None, "TypeName: message")."""
    try:
        return action(), None
    except Exception as error:  # noqa: BLE001 - the student's exception is data here
        return None, f"{type(error).__name__}: {str(error)[:300]}"


def _engine():
    import engine
    return engine


def _leaf_factory(engine):
    def make_leaf(spec):
        return engine.Tensor(np.array(spec["data"], dtype=np.float64), requires_grad=spec["requires_grad"])
    return make_leaf


# ----------------------------------------------------------------------------- drivers

def tensor_basics(data, requires_grad=None):
    """Construct one Tensor; report data, dtype, shape, requires_grad, grad and item()."""
    engine = _engine()
    t = engine.Tensor(data) if requires_grad is None else engine.Tensor(data, requires_grad=requires_grad)
    report = {"data": plain_array(t.data), "dtype": str(getattr(t.data, "dtype", type(t.data).__name__)),
              "shape": tuple(t.shape) if isinstance(t.shape, (tuple, list)) else f"<{type(t.shape).__qualname__}>",
              "requires_grad": _flag(t.requires_grad), "grad": plain_array(t.grad)}
    if np.size(t.data) == 1:
        item = t.item()
        report["item"] = item if type(item) is float else f"<{type(item).__qualname__} {item!r:.40}>"
    return report


def forward_values(program):
    """Evaluate a program (no backward); report each value's data and requires_grad."""
    engine = _engine()
    values = evaluate(program, _leaf_factory(engine))
    return {"data": [plain_array(v.data) for v in values],
            "requires_grad": [_flag(v.requires_grad) for v in values]}


def backward_program(program, output, weights=None, answers=None):
    """Evaluate a program, reduce value `output` to a scalar L and call L.backward().

    With `weights` (an array of the output's shape) L = (output * weights).sum(), so the output
    receives a non-uniform upstream gradient; otherwise `output` must hold one element and
    L = output. Returns the leaves' grads and the scalar L.
    """
    engine = _engine()
    values = evaluate(program, _leaf_factory(engine))
    loss = values[output]
    if weights is not None:
        loss = (loss * engine.Tensor(np.array(weights, dtype=np.float64))).sum()
    with _answered(answers):
        loss.backward()
    leaves = values[:len(program["leaves"])]
    return {"loss": plain_array(loss.data), "grads": [plain_array(leaf.grad) for leaf in leaves]}


def backward_twice(program_1, output_1, program_2, output_2, answers=None):
    """Two forward + backward passes that share the leaves of program_1 (program_2 names them
    by the same indices). Reports the leaves' grads after each pass."""
    engine = _engine()
    leaves = [_leaf_factory(engine)(spec) for spec in program_1["leaves"]]
    snapshots = []
    for program, output in ((program_1, output_1), (program_2, output_2)):
        values = list(leaves)
        for step in program["steps"]:
            values.append(apply_step(step, values))
        with _answered(answers):
            values[output].backward()
        snapshots.append([plain_array(leaf.grad) for leaf in leaves])
    return snapshots


def retain_graph(program, output, plan, answers=None):
    """Run backward on value `output` of one forward pass several times.

    `plan` is a list of (retain_graph, reset): before each backward call the leaves' grads are
    set to None when `reset`. Each call reports ("ok", leaf grads) or ("raised", "Type: msg").
    """
    engine = _engine()
    values = evaluate(program, _leaf_factory(engine))
    leaves = values[:len(program["leaves"])]
    loss = values[output]
    report = []
    for keep, reset in plan:
        if reset:
            for leaf in leaves:
                leaf.grad = None
        with _answered(answers):
            if keep:
                _, error = _attempt(lambda: loss.backward(retain_graph=True))
            else:
                _, error = _attempt(lambda: loss.backward())
        if error is None:
            report.append(("ok", [plain_array(leaf.grad) for leaf in leaves]))
        else:
            report.append(("raised", error))
    return report


def leaf_and_grad_fn(a_data, b_data):
    """a, b leaves (b without grad); x = a * b; y = x.exp(); y.retain_grad(); L = (y * 3.0).sum().

    Before and after L.backward() reports is_leaf / grad_fn is None / requires_grad / grad of
    a, b, x, y, L.
    """
    engine = _engine()
    a = engine.Tensor(np.array(a_data), requires_grad=True)
    b = engine.Tensor(np.array(b_data))
    x = a * b
    y = x.exp()
    y.retain_grad()
    loss = (y * 3.0).sum()
    tensors = {"a": a, "b": b, "x": x, "y": y, "L": loss}

    def state():
        return {name: {"is_leaf": _flag(t.is_leaf), "grad_fn_is_none": t.grad_fn is None,
                       "requires_grad": _flag(t.requires_grad), "grad": plain_array(t.grad)}
                for name, t in tensors.items()}

    before = state()
    loss.backward()
    return {"before": before, "after": state()}


def no_grad_scenario(a_data, b_data, scenario):
    """a (requires grad) and b (no grad) leaves; `scenario` picks what happens under no_grad.

    Each scenario returns a dict of plain data; see the hidden tests for what they compare.
    """
    engine = _engine()
    a = engine.Tensor(np.array(a_data), requires_grad=True)
    b = engine.Tensor(np.array(b_data))

    def info(t):
        return {"requires_grad": _flag(t.requires_grad), "grad_fn_is_none": t.grad_fn is None,
                "data": plain_array(t.data)}

    if scenario == "inside":
        with engine.no_grad():
            inside = (a * b + a.exp()).tanh()
        after = a * b
        return {"inside": info(inside), "after": info(after)}
    if scenario == "nested":
        with engine.no_grad():
            with engine.no_grad():
                deeper = a * 2.0
            between = a.exp()
        after = a * b
        return {"deeper": info(deeper), "between": info(between), "after": info(after)}
    if scenario == "exception":
        try:
            with engine.no_grad():
                raise KeyError("raised inside no_grad on purpose")
        except KeyError:
            pass
        after = a * b
        return {"after": info(after)}
    if scenario == "constant_in_graph":
        with engine.no_grad():
            s = a * b
        loss = (a * s).sum()
        loss.backward()
        return {"s": info(s), "a_grad": plain_array(a.grad)}
    if scenario == "detach":
        h = a * b
        d = h.detach()
        loss = (d * h).sum()
        loss.backward()
        return {"d": info(d), "a_grad": plain_array(a.grad), "h_requires_grad": _flag(h.requires_grad)}
    raise ValueError(f"unknown scenario {scenario!r}")


def zero_grad_scenario(a_data, b_data, mode):
    """Leaves a, b with grad from L = (a * b).exp().sum(); then engine.zero_grad in `mode`
    ("default", "none", "zeros" or "zeros_then_backward"); reports the grads at each stage."""
    engine = _engine()
    a = engine.Tensor(np.array(a_data), requires_grad=True)
    b = engine.Tensor(np.array(b_data), requires_grad=True)
    c = engine.Tensor(np.array(b_data), requires_grad=True)
    (a * b * c).exp().sum().backward()
    report = {"before": [plain_array(t.grad) for t in (a, b, c)]}
    if mode == "default":
        engine.zero_grad([a, b])
    elif mode == "none":
        engine.zero_grad([a, b], set_to_none=True)
    else:
        engine.zero_grad([a, b], set_to_none=False)
    report["after"] = [plain_array(t.grad) for t in (a, b, c)]
    if mode == "zeros_then_backward":
        (a * b).sum().backward()
        report["again"] = [plain_array(t.grad) for t in (a, b, c)]
    return report


def backward_args(program, output, case, grad=None, answers=None):
    """backward() on value `output` called as `case` says:
    "default": output.backward();  "explicit": output.backward(grad)  (grad an ndarray).
    Returns ("ok", leaf grads) or ("raised", "Type: msg")."""
    engine = _engine()
    values = evaluate(program, _leaf_factory(engine))
    out = values[output]
    with _answered(answers):
        if case == "default":
            _, error = _attempt(lambda: out.backward())
        else:
            _, error = _attempt(lambda: out.backward(np.array(grad, dtype=np.float64)))
    if error is not None:
        return ("raised", error)
    return ("ok", [plain_array(leaf.grad) for leaf in values[:len(program["leaves"])]])


def apply_chain(x, w, ops):
    """x_{k+1} = op_k(x_k): the same code builds the chain from the student's Tensors here and
    from torch tensors in the grader."""
    for op in ops:
        kind = op[0]
        if kind == "add_c":
            x = x + op[1]
        elif kind == "mul_c":
            x = x * op[1]
        elif kind == "sub_c":
            x = op[1] - x
        elif kind == "div_c":
            x = x / op[1]
        elif kind == "neg":
            x = -x
        elif kind == "add_w":
            x = x + w
        elif kind == "mul_w":
            x = x * w
        else:
            raise ValueError(f"unknown op {kind!r}")
    return x


# the rule the course's engine asks for at each op of a chain, with its arrays in order: x, the
# constant c (a 0-d array) or w (CURRICULUM.md: `x + c` records add_backward(grad, x, c), `c - x`
# sub_backward(grad, c, x))
CHAIN_RULES = {"add_c": ("add_backward", "x", "c"), "mul_c": ("mul_backward", "x", "c"),
               "sub_c": ("sub_backward", "c", "x"), "div_c": ("div_backward", "x", "c"),
               "neg": ("neg_backward", "x"), "add_w": ("add_backward", "x", "w"), "mul_w": ("mul_backward", "x", "w")}


def answer_key(name, grad, arguments):
    """What identifies a rule's call among the answers computed ahead: its name, the shape and
    bytes of the upstream gradient and of each array or number among its arguments, and the others
    (an axis, a shape, an index) as written. The numbers are rounded to float32: NumPy's exp or
    matmul and PyTorch's may differ in a float64's last bits, and the answer for values that close
    is as good (a call whose values differ more is asked of the grader)."""
    parts = [name.encode()]
    for value in (grad, *arguments):  # thousands of calls a deep chain: written for speed
        kind = type(value)
        if kind is np.ndarray:
            array = value.astype(_FLOAT32)
        elif kind is float or (kind is not bool and isinstance(value, _NUMBERS)):
            array = np.asarray(value, dtype=_FLOAT32)
        else:
            parts.append(b"=" + repr(value).encode())
            continue
        shape = array.shape
        written = _SHAPES.get(shape)
        if written is None:
            written = _SHAPES[shape] = repr(shape).encode()  # a tuple's repr: a microsecond, each time
        parts.append(written)
        parts.append(array.tobytes())
    return b"|".join(parts)


_NUMBERS = (int, float, np.number)
_FLOAT32 = np.dtype(np.float32)
_SHAPES = {}  # shape: its repr, as answer_key writes it


def answer_digest(key):
    """A hash of a call (answer_key): its first 16 bytes are where the answer is filed, the rest
    its pad (sealed)."""
    return hashlib.blake2b(key, digest_size=64, person=b"checks-answer").digest()


def sealed(key, digest, data):
    """An answer's bytes XORed with a pad drawn from its call (answer_key; answer_digest, its
    hash), both to seal and to open it: the table answers only a caller that makes that very call,
    upstream gradient included, as the grader would; its values cannot be searched for a node's
    gradient without walking the graph."""
    size = len(data)
    pad = digest[16:16 + size] if size <= 48 else hashlib.shake_256(b"checks-pad|" + key).digest(size)
    return (int.from_bytes(data, "little") ^ int.from_bytes(pad, "little")).to_bytes(size, "little")


def _answered_here(answers):
    """rules.answer_here for a stand-in rules module (the grader answers it): the calls whose
    answers the grader computed ahead (sealed: lookup id to ((shape, start, end) a grad, sealed
    float64 bytes)), without a round trip; the others NotImplemented (asked for as usual)."""
    def here(name, args, kwargs):
        if kwargs or not args:
            return NotImplemented
        try:
            key = answer_key(name, args[0], args[1:])
        except Exception:  # noqa: BLE001 - arguments that are not arrays: asked for as usual
            return NotImplemented
        digest = answer_digest(key)
        found = answers.get(digest[:16])
        if found is None:
            return NotImplemented
        places, data = found
        opened = np.frombuffer(bytearray(sealed(key, digest, data)), dtype=np.float64)  # writable, as a rule's own
        return tuple([opened[start:end].reshape(shape) for shape, start, end in places])  # a list: half the cost
    return here


@contextlib.contextmanager
def _answered(answers):
    """While the block runs, the stand-in rules (if the engine imported them) answer the calls
    the grader computed ahead from `answers`; the others go to the grader as usual."""
    rules = _stand_in_rules() if answers else None
    if rules is not None:
        rules.answer_here = _answered_here(answers)
    try:
        yield
    finally:
        if rules is not None:
            rules.answer_here = None


def _stand_in_rules():
    """The rules module the engine imported, where it is a stand-in that the grader answers (the
    engine questions); None where it is the student's own (the public checks run the rules as they are)."""
    rules = sys.modules.get("rules")
    spec = getattr(rules, "__spec__", None)
    return rules if getattr(spec, "origin", None) == "answered by the grader" else None


class _Deep(Exception):
    pass


def _frame_depth(stop):
    """How many frames the caller is under, counted up to `stop`: through a traceback's frames,
    C types that no code can patch (sys._getframe could be replaced)."""
    try:
        raise _Deep
    except _Deep as error:
        frame, depth = error.__traceback__.tb_frame, 0
    while frame is not None and depth <= stop:
        frame, depth = frame.f_back, depth + 1
    return depth


def _probed(tensor, limit, deepest):
    """`tensor` (a leaf of the student's class) made to note how deep in the stack its attributes
    are read: a backward that recurses once per node reads the first leaves of a long chain from
    as many frames down. Its class is swapped for a subclass of the student's own, for backward
    only, and set back after."""
    plain = type(tensor)

    def __getattribute__(self, name):
        depth = _frame_depth(limit)
        if depth > deepest[0]:
            deepest[0] = depth
        if depth > limit:
            raise RecursionError(f"backward reached a leaf {depth:,} frames down, deeper than the recursion limit "
                                 f"of {limit:,} allows: it recursed once per node")
        return plain.__getattribute__(self, name)

    try:
        tensor.__class__ = type(plain.__name__, (plain,), {"__getattribute__": __getattribute__, "__slots__": (),
                                                           "__module__": plain.__module__})
    except TypeError:  # a class that cannot be swapped: no evidence, never a false failure
        pass
    return plain


def deep_chain(x_data, w_data, ops, recursion_limit=1000, answers=None):
    """x0 (leaf), w (leaf); x_{k+1} = op_k(x_k) for each op; L = x_n.sum(); L.backward().

    The question's process has its stack capped by the kernel (cap_stack; sandbox/stack_cap.py):
    a backward that recurses once per node runs out of it a few hundred calls down, whatever the
    recursion limit, and the SystemError or MemoryError that says so comes back as a RecursionError
    (a generator that recurses crashes the process). Beside that, for clearer words where the cap
    is not there to say it: the chain runs at Python's default recursion limit, which
    sys.setrecursionlimit refuses to raise while it runs; a limit raised all the same (through a
    reference the code kept) is reported as "limit_raised", and "deepest" says how many frames down
    backward read the leaves (x0 and w sit at the far end of the chain). Each op is ("add_c", c),
    ("mul_c", c), ("sub_c", c) (x = c - x), ("div_c", c), ("neg",), ("add_w",) or ("mul_w",).
    `answers`: the rules' answers at each op, computed by the grader ahead (answer_key: bytes to
    ((shape, bytes), ...)): thousands of calls, each else a round trip to the grader.
    """
    set_limit, get_limit = sys.setrecursionlimit, sys.getrecursionlimit

    def held(limit):
        if limit > recursion_limit:
            raise RuntimeError(f"this check holds Python's recursion limit at {recursion_limit}; code under test "
                               f"may not raise it (asked for {limit})")
        set_limit(limit)

    engine = _engine()
    x0 = engine.Tensor(np.array(x_data), requires_grad=True)
    w = engine.Tensor(np.array(w_data), requires_grad=True)
    x = x0
    previous = get_limit()
    set_limit(recursion_limit)
    sys.setrecursionlimit = held
    deepest = [0]
    classes = []
    try:
        x = apply_chain(x, w, ops)
        loss = x.sum()
        classes = [(leaf, _probed(leaf, recursion_limit, deepest)) for leaf in (x0, w)]
        with _answered(answers):
            try:
                loss.backward()
            except (SystemError, MemoryError) as error:  # what a capped stack (cap_stack) raises when it runs out
                said = type(error).__name__ + (f": {error}" if str(error) else "")
                raise RecursionError(f"Python calls nested deeper than this check allows: a few hundred levels, "
                                     f"whatever the recursion limit (Python said {said})"
                                     ).with_traceback(error.__traceback__) from None
        for leaf, plain in classes:
            leaf.__class__ = plain
        classes = []
        limit_raised = get_limit() > recursion_limit
        value = plain_array(loss.data)
        grads = [plain_array(x0.grad), plain_array(w.grad)]
        set_limit(recursion_limit)
        del x, loss  # free the deep graph while the limit still holds
    finally:
        for leaf, plain in classes:
            leaf.__class__ = plain
        sys.setrecursionlimit = set_limit
        set_limit(previous)
    return {"loss": value, "grads": grads, "limit_raised": limit_raised, "deepest": deepest[0]}
