"""Hidden checks for training.py: SGD against torch.optim.SGD, steps_per_epoch against
DataLoader, train_epoch against the canonical loop, evaluate against a direct computation.

train_epoch is graded with an MLP made of torch's own modules (drivers.course_mlp: neither the
student's torch_mlp.py nor the reference, whose code would be in the sandbox) and a torch.optim.SGD
built in the sandbox, so only the loop itself is on trial; evaluate is graded on a probe model from
drivers.py that records the mode and grad mode of every forward.

Inputs are drawn, and PyTorch's answers computed, when the suite is collected: once for every
submission of a batch (@cases(reference=...), precomputed, per_device); but on a cuda device,
which is used at run time only, and those that call backward() where a GPU is present (see
checks.suite.precomputed).
Each case of a @cases test makes one call in the sandbox, so each test sends its cases' calls at once
(send_ahead): they run in the same order as one by one."""

import functools

import numpy as np
import pytest
import torch
from torch import nn

import drivers
from checks.suite import (call_or_fail, case_rng, cases, covers, expect_close, expect_equal, expect_raises, fail, grid,
                          is_close, name_call, per_device, precomputed, question)
from reference import VALUE_DEVICES, RefMLP, diagnoses, diagnosis, load_ref, mlp_state, number, tolerance


# ------------------------------------------------------------------------ SGD

SGD_STEPS = 5
SGD_SHAPES = ((3, 4), (4,), (2, 2, 3))


@functools.cache
def _sgd_data(seed, shapes=SGD_SHAPES, steps=SGD_STEPS):
    rng = case_rng(21, seed)
    init = [rng.normal(size=shape) for shape in shapes]
    targets = [[rng.normal(size=shape) * 2.0 for shape in shapes] for _ in range(steps)]
    return init, targets


def _reference_sgd(init, targets, lr, momentum, weight_decay, set_to_none, idle=(), variant=None, accumulate=False):
    """Parameters after every step of the canonical loop with torch.optim.SGD (variant None), or
    with one of the common mistakes, written out by hand, to recognise it in the feedback.
    `accumulate`: zero_grad only before every other backward, as drivers.sgd_run does: a step()
    that changes .grad in place (decay_in_place, buffer_aliases_grad) shows in the next step."""
    params = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in init]
    trained = [p for i, p in enumerate(params) if i not in idle]
    options = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay}
    if variant == "nesterov":
        options["nesterov"] = True
    if variant == "no_momentum":
        options["momentum"] = 0.0
    if variant == "no_weight_decay":
        options["weight_decay"] = 0.0
    optimizer = torch.optim.SGD(params, **options)
    buffers = [torch.zeros_like(p) for p in params]
    started = [False] * len(params)
    trajectory = []
    for k, step_targets in enumerate(targets):
        if not (accumulate and k % 2):
            optimizer.zero_grad(set_to_none=set_to_none)
        drivers.sgd_loss(trained, [t for i, t in enumerate(step_targets) if i not in idle]).backward()
        if variant in (None, "nesterov", "no_momentum", "no_weight_decay"):
            optimizer.step()
        else:
            with torch.no_grad():
                for i, p in enumerate(params):
                    if p.grad is None:
                        continue
                    g = p.grad if variant in ("decay_in_place", "buffer_aliases_grad") else p.grad.clone()
                    if variant == "decay_in_place":
                        g.add_(p, alpha=weight_decay)
                    elif variant == "buffer_aliases_grad":
                        g = g.add(p, alpha=weight_decay) if weight_decay else g
                    elif variant == "decay_subtracted":
                        g = g - weight_decay * p
                    elif variant != "decay_after_momentum":
                        g = g + weight_decay * p
                    if momentum:
                        if variant == "dampening":  # from a zero buffer
                            buffers[i] = momentum * buffers[i] + (1 - momentum) * g
                        elif variant == "dampening_after_first" and started[i]:
                            buffers[i] = momentum * buffers[i] + (1 - momentum) * g
                        elif variant == "dampening_after_first":
                            buffers[i] = g
                            started[i] = True
                        elif variant == "buffer_aliases_grad" and not started[i]:
                            buffers[i] = g  # the .grad tensor itself when there is no weight decay
                            started[i] = True
                        elif variant == "buffer_aliases_grad":
                            buffers[i].mul_(momentum).add_(g)
                        else:
                            buffers[i] = momentum * buffers[i] + g
                        g = buffers[i]
                    if variant == "decay_after_momentum":
                        g = g + weight_decay * p
                    p -= lr * g
        trajectory.append([p.detach().numpy().copy() for p in params])
    return trajectory


def _run_sgd(student, init, targets, lr, momentum, weight_decay, set_to_none, **extra):
    how = "SGD(a generator of params" if extra.get("as_generator") else "SGD(params"
    call = (f"{how}, lr={lr}, momentum={momentum}, weight_decay={weight_decay}) with "
            f"zero_grad(set_to_none={set_to_none}), backward, step() x{len(targets)}")
    got = call_or_fail(lambda: student.run(drivers.sgd_run, init, targets, lr, momentum, weight_decay, set_to_none,
                                           **extra), text=call, mistake=_torch_optim_refused)
    _no_torch_optim(got, "write the update yourself, without torch.optim.")
    return got


def _torch_optim_refused(raised):
    """What torch.optim says of the parameters these checks hand SGD, said as the mistake it is."""
    if "non-leaf" in str(getattr(raised, "message", "")):
        return "torch.optim was used (it refuses these parameters): write the update yourself, without torch.optim"
    return None


def _no_torch_optim(got, advice):
    """Judged here: the parameters training.SGD was given are not leaves, which torch.optim refuses
    (drivers.non_leaf_params); one made a leaf or made to retain its grad was readied for it. The
    sandbox's record of a torch.optim call only names what was used."""
    if got["torch_optim"]:
        fail(f"training.SGD used {got['torch_optim'][0]}: {advice}")
    if any(got["leaves"]):
        fail("training.SGD turned the parameters it was given into leaves or made them retain their "
             f"gradient, as handing them to torch.optim takes: {advice}")


def _check_trajectory(student, got, expected, init, targets, lr, momentum, weight_decay, set_to_none, idle=(),
                      how="SGD(params", accumulate=False):
    loop = (f"zero_grad(set_to_none={set_to_none}) before every other backward only (.grad accumulates over "
            f"two backward() calls), backward, step() x{len(targets)}" if accumulate else
            f"zero_grad(set_to_none={set_to_none}), backward, step() x{len(targets)}")
    call = f"{how}, lr={lr}, momentum={momentum}, weight_decay={weight_decay}) with {loop}"
    hint = None
    for k, (step, ref) in enumerate(zip(got["trajectory"], expected)):
        for i, (p, e) in enumerate(zip(step, ref)):
            if is_close(p, e, rtol=1e-9, atol=1e-12):
                continue
            if hint is None:
                variants = {name: lambda name: _reference_sgd(init, targets, lr, momentum, weight_decay, set_to_none,
                                                              idle, name, accumulate)
                            for name in diagnoses.sgd_variants(momentum, weight_decay)}
                hint = diagnosis("training.SGD", init=init, variants=variants)(got["trajectory"])
                if hint is None and accumulate and k % 2 and all(is_close(q, r, rtol=1e-9, atol=1e-12) for q, r
                                                                 in zip(got["trajectory"][k - 1], expected[k - 1])):
                    hint = diagnoses.SGD_GRAD_KEPT  # right until .grad held what the last step left in it
            extra = " (this parameter has no gradient: it must be skipped)" if i in idle else ""
            name_call(f"{call}: parameter {i} of shape {e.shape} after step {k + 1}{extra}")
            expect_close(p, e, rtol=1e-9, atol=1e-12, what="entries", diagnose=lambda value: hint)


SGD_SETTINGS = [(0.1, 0.0, 0.0), (0.1, 0.9, 0.0), (0.05, 0.0, 0.1), (0.05, 0.9, 0.01)]
SKIP_SETTINGS = [(0.1, 0.0, 0.0), (0.05, 0.9, 0.1)]
KEEP_GRAD_SETTINGS = [(0.05, 0.9, 0.1), (0.05, 0.9, 0.0)]  # weight decay added to .grad; the buffer that IS .grad
IDLE = (1,)  # in test_sgd_skips_params_without_grad, parameter 1 is not in the loss: its .grad stays None


def _torch_sgd(data, lr, momentum, weight_decay, set_to_none, idle=(), accumulate=False):
    """torch.optim.SGD's trajectory on _sgd_data(data)."""
    return _reference_sgd(*_sgd_data(data), lr, momentum, weight_decay, set_to_none, idle, accumulate=accumulate)


TRAJECTORIES = precomputed(_torch_sgd, [
    *((1, *setting, set_to_none) for set_to_none in (True, False) for setting in SGD_SETTINGS),
    *((2, *setting, True, IDLE) for setting in SKIP_SETTINGS),
    (3, 0.1, 0.9, 0.0, True),
    *((4, *setting, set_to_none, (), True) for set_to_none in (True, False) for setting in KEEP_GRAD_SETTINGS),
], backward=True)


@question("training.SGD", points=8, kinks=("momentum with weight decay", "set_to_none=False"))
@cases(*grid(("set_to_none", [True, False]), ("lr,momentum,weight_decay", SGD_SETTINGS)), send_ahead=True,
       boundaries={"momentum": lambda momentum, **_: momentum > 0,
                   "weight decay": lambda weight_decay, **_: weight_decay > 0,
                   "momentum with weight decay": lambda momentum, weight_decay, **_: momentum > 0 and weight_decay > 0,
                   "set_to_none=False": lambda set_to_none, **_: not set_to_none})
def test_sgd_matches_torch(student, lr, momentum, weight_decay, set_to_none):
    init, targets = _sgd_data(1)
    expected = TRAJECTORIES(1, lr, momentum, weight_decay, set_to_none)
    got = _run_sgd(student, init, targets, lr, momentum, weight_decay, set_to_none)
    _check_trajectory(student, got, expected, init, targets, lr, momentum, weight_decay, set_to_none)


@question("training.SGD", points=2)
@cases("lr,momentum,weight_decay", SKIP_SETTINGS, send_ahead=True)
def test_sgd_skips_params_without_grad(student, lr, momentum, weight_decay):
    init, targets = _sgd_data(2)
    expected = TRAJECTORIES(2, lr, momentum, weight_decay, True, IDLE)
    got = _run_sgd(student, init, targets, lr, momentum, weight_decay, True, idle=IDLE)
    _check_trajectory(student, got, expected, init, targets, lr, momentum, weight_decay, True, IDLE)


@question("training.SGD", points=1)
def test_sgd_accepts_a_generator(student):
    init, targets = _sgd_data(3)
    expected = TRAJECTORIES(3, 0.1, 0.9, 0.0, True)
    got = _run_sgd(student, init, targets, 0.1, 0.9, 0.0, True, as_generator=True)
    _check_trajectory(student, got, expected, init, targets, 0.1, 0.9, 0.0, True,
                      how="SGD(model.parameters() (a generator)")


@question("training.SGD", points=1)
@cases(*grid(("set_to_none", [True, False]), ("lr,momentum,weight_decay", KEEP_GRAD_SETTINGS)), send_ahead=True)
def test_sgd_step_keeps_grad(student, set_to_none, lr, momentum, weight_decay):
    """step() leaves .grad as backward left it: judged by behaviour, on a loop that accumulates
    gradients over two backward() calls, where a .grad changed in place changes the next step."""
    init, targets = _sgd_data(4)
    expected = TRAJECTORIES(4, lr, momentum, weight_decay, set_to_none, (), True)
    got = _run_sgd(student, init, targets, lr, momentum, weight_decay, set_to_none, accumulate=True)
    _check_trajectory(student, got, expected, init, targets, lr, momentum, weight_decay, set_to_none,
                      accumulate=True)


def _torch_zero_grad(set_to_none):
    """Each parameter's .grad (None or an array) after torch.optim.SGD's zero_grad."""
    params = [torch.tensor(a, requires_grad=True) for a in _sgd_data(5)[0]]
    sum(((p + 1.0) ** 3).sum() for p in params).backward()
    optimizer = torch.optim.SGD(params, lr=0.1)
    if set_to_none is None:
        optimizer.zero_grad()
    else:
        optimizer.zero_grad(set_to_none=set_to_none)
    return [None if p.grad is None else p.grad.numpy() for p in params]


ZERO_GRADS = precomputed(_torch_zero_grad, [(None,), (True,), (False,)], backward=True)


@question("training.SGD", points=2)
@cases("set_to_none", [None, True, False], ids=["default", "True", "False"], send_ahead=True)
def test_sgd_zero_grad(student, set_to_none):
    init, _ = _sgd_data(5)
    call = "zero_grad()" if set_to_none is None else f"zero_grad(set_to_none={set_to_none})"
    got = call_or_fail(lambda: student.run(drivers.sgd_zero_grad, init, set_to_none),
                       text=f"SGD(params, lr=0.1), backward, then {call}", mistake=_torch_optim_refused)
    _no_torch_optim(got, "write it yourself, without torch.optim.")
    for i, (expected, g) in enumerate(zip(ZERO_GRADS(set_to_none), got["grads"])):
        if expected is None:
            if g is not None:
                fail(f"after {call}, parameter {i}'s .grad is an array; expected None"
                     + (" (set_to_none defaults to True, as in torch.optim)" if set_to_none is None else "") + ".")
        else:
            if g is None:
                fail(f"after {call}, parameter {i}'s .grad is None; expected a tensor of zeros "
                     "(set_to_none=False zeroes the gradient instead of dropping it).")
            name_call(f"after {call}, parameter {i}'s .grad")
            expect_close(g, expected, rtol=0, atol=0, what="entries")


# ------------------------------------------------------------------------ steps_per_epoch

STEPS_CASES = [(10000, 128, False), (10000, 128, True), (60000, 64, False), (100, 10, False),
               (100, 10, True), (5, 10, False), (5, 10, True), (0, 4, False), (1, 1, False), (1438, 32, False)]


def _torch_steps(n, batch_size, drop_last):
    return len(torch.utils.data.DataLoader(range(n), batch_size=batch_size, drop_last=drop_last))


STEPS_BOUNDARIES = {  # where a ceiling written as n // b + 1, or a floor, is wrong
    "n a multiple of batch_size": lambda n, batch_size, **_: n > 0 and n % batch_size == 0,
    "n below batch_size": lambda n, batch_size, **_: 0 < n < batch_size,
    "n of 0": lambda n, **_: n == 0,
    "batch of 1": lambda batch_size, **_: batch_size == 1,
    "drop_last": lambda drop_last, **_: drop_last,
}


@question("training.steps_per_epoch", points=3, kinks=("n a multiple of batch_size", "n below batch_size", "n of 0"))
@cases("n,batch_size,drop_last", STEPS_CASES, reference=_torch_steps, send_ahead=True, boundaries=STEPS_BOUNDARIES)
def test_steps_per_epoch(student, n, batch_size, drop_last, reference):
    expected = reference
    got = call_or_fail(lambda: student.training.steps_per_epoch(n, batch_size, drop_last=drop_last),
                       text=f"steps_per_epoch({n}, {batch_size}, drop_last={drop_last})")

    expect_equal(got, expected, diagnose=diagnosis("training.steps_per_epoch", n=n, batch_size=batch_size,
                                                   drop_last=drop_last))


def _refused_by_pytorch(*batch_sizes):
    """The batch sizes, once DataLoader has refused each with ValueError (when the suite is collected)."""
    for batch_size in batch_sizes:
        with pytest.raises(ValueError):
            torch.utils.data.DataLoader(range(10), batch_size=batch_size)
    return list(batch_sizes)


@question("training.steps_per_epoch", points=1)
@cases("batch_size", _refused_by_pytorch(0, -4), send_ahead=True)
def test_steps_per_epoch_invalid(student, batch_size):
    with expect_raises(ValueError, because=f"batch_size={batch_size} is not a positive number of examples"):
        student.training.steps_per_epoch(10, batch_size)


# ------------------------------------------------------------------------ train_epoch

EPOCH_SIZES = (20, 16, 4)
EPOCH_STATE = mlp_state(EPOCH_SIZES, seed=32)
EPOCH_LR = 0.1
EPOCH_MOMENTA = [0.0, 0.9]
BATCHINGS = {
    # name: (examples, batch size, shuffle seed or None)
    "shuffled": (64, 16, 3),
    "ragged": (50, 16, None),
}


@functools.cache
def _epoch_data(n, seed=31):
    rng = case_rng(seed, n)
    X = rng.normal(size=(n, EPOCH_SIZES[0])).astype(np.float32)
    Y = rng.integers(0, EPOCH_SIZES[2], size=n).astype(np.int64)
    return X, Y


def _reference_epoch(batching, momentum, device):
    """The canonical loop with torch.optim.SGD: the parameters after every step, the batch losses and sizes."""
    n, batch_size, seed = BATCHINGS[batching]
    X, Y = _epoch_data(n)
    model = load_ref(RefMLP, EPOCH_SIZES, EPOCH_STATE, device, torch.float32)
    optimizer = torch.optim.SGD(model.parameters(), lr=EPOCH_LR, momentum=momentum)
    loss_fn = nn.CrossEntropyLoss()
    snapshots, losses, sizes = [], [], []
    for x, y in drivers.make_loader(X, Y, batch_size, seed):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        snapshots.append({k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()})
        losses.append(loss.item())
        sizes.append(len(y))
    return snapshots, losses, sizes


REFERENCE_EPOCHS = per_device(_reference_epoch, [(batching, momentum) for batching in BATCHINGS
                                                 for momentum in EPOCH_MOMENTA], backward=True)


def _run_epoch(student, device, batching, momentum):
    n, batch_size, seed = BATCHINGS[batching]
    X, Y = _epoch_data(n)
    call = (f"train_epoch(MLP{EPOCH_SIZES}, a loader of {n} examples in batches of {batch_size}"
            f"{', shuffled' if seed is not None else ''}, SGD(lr={EPOCH_LR}, momentum={momentum}), "
            f"CrossEntropyLoss(), {device!r})")
    got = call_or_fail(lambda: student.run(drivers.train_epoch_run, EPOCH_SIZES, EPOCH_STATE, X, Y, batch_size, seed,
                                           EPOCH_LR, momentum, device), text=call)
    return got, REFERENCE_EPOCHS(batching, momentum, device=device), call


@question("training.train_epoch", points=6, kinks=("a ragged last batch",))
@covers({"a ragged last batch": lambda batching, **_: BATCHINGS[batching][0] % BATCHINGS[batching][1] != 0,
         "shuffled": lambda batching, **_: BATCHINGS[batching][2] is not None,
         "momentum": lambda momentum, **_: momentum > 0})
@pytest.mark.parametrize("device", VALUE_DEVICES)
@pytest.mark.parametrize("momentum", EPOCH_MOMENTA)
@pytest.mark.parametrize("batching", sorted(BATCHINGS))
def test_train_epoch_parameters(student, device, momentum, batching):
    got, (snapshots, _, _), call = _run_epoch(student, device, batching, momentum)
    mistake = diagnosis("training.train_epoch", batches=len(snapshots), device=device, events=got["events"])(None)
    if len(got["snapshots"]) != len(snapshots):
        fail(f"{call}: optimizer.step() was called {len(got['snapshots'])} times; expected {len(snapshots)}, "
             "once per batch." + (f" Likely mistake: {mistake}." if mistake else ""))
    rtol, atol = tolerance(device, "float32")
    for k, (mine, ref) in enumerate(zip(got["snapshots"], snapshots)):
        for key, value in ref.items():
            name_call(f"{call}: {key} after step {k + 1}")
            expect_close(mine[key], value, rtol=rtol, atol=atol, what="entries", diagnose=lambda _: mistake)


@question("training.train_epoch", points=4)
@pytest.mark.parametrize("device", VALUE_DEVICES)
@pytest.mark.parametrize("batching", sorted(BATCHINGS))
def test_train_epoch_loss(student, device, batching):
    got, (_, losses, sizes), call = _run_epoch(student, device, batching, 0.9)
    returned = got["returned"]
    if isinstance(returned, dict):
        fail(f"{call} returned a tensor; expected a Python float: accumulate loss.item() (a tensor total "
             "also keeps every batch's graph alive).")
    value = number(returned, f"{call} returned {returned!r}")
    batch_losses = torch.tensor(losses, dtype=torch.float64)
    expected = batch_losses.mean().item()
    if np.isclose(value, expected, rtol=1e-5, atol=1e-7):
        return
    hint = diagnosis("training.train_epoch", batches=len(losses), device=device, events=got["events"],
                     losses=losses, sizes=sizes)(value)
    fail(f"{call} returned {value:.8g}; expected {expected:.8g}, the mean of the {len(losses)} batch losses."
         + (f" Likely mistake: {hint}." if hint else ""))


# ------------------------------------------------------------------------ evaluate

PROBE_SIZES = (20, 16, 4)
EVAL_BATCHINGS = {"even": (64, 16), "ragged": (70, 32)}


def _probe_state():
    torch.manual_seed(41)
    probe = drivers.Probe(*PROBE_SIZES).to(torch.float32)
    return {k: v.detach().numpy().copy() for k, v in probe.state_dict().items()}


PROBE_STATE = _probe_state()


def _eval_case(batching, device):
    """Inputs X, labels Y (about a third disagree with the probe's predictions on `device`) and
    the number of correct predictions."""
    n, _ = EVAL_BATCHINGS[batching]
    rng = case_rng(42, n)
    X = rng.normal(size=(n, PROBE_SIZES[0])).astype(np.float32)
    reference = load_ref(drivers.Probe, PROBE_SIZES, PROBE_STATE, device, torch.float32).eval()
    with torch.no_grad():
        predicted = reference(torch.tensor(X, device=device)).argmax(dim=1).cpu().numpy()
    wrong = rng.random(n) < 0.35  # about a third of the labels disagree with the model
    Y = np.where(wrong, (predicted + 1) % PROBE_SIZES[2], predicted).astype(np.int64)
    correct = int((torch.tensor(predicted) == torch.tensor(Y)).sum().item())
    return X, Y, correct


EVAL_CASES = per_device(_eval_case, [(batching,) for batching in EVAL_BATCHINGS], backward=False)


GRAD_ENABLED = ("gradients were enabled during the forward passes, so autograd built a graph for nothing. "
                "Run the loop inside a with torch.no_grad(): block")


def _grad_enabled(raised):
    return GRAD_ENABLED if drivers.GRAD_TRAP in str(getattr(raised, "message", "")) else None


def _run_eval(student, device, batching, start_training, trap=False):
    n, batch_size = EVAL_BATCHINGS[batching]
    X, Y, correct = EVAL_CASES(batching, device=device)
    call = (f"evaluate(a model in {'train' if start_training else 'eval'} mode, a loader of {n} examples "
            f"in batches of {batch_size}, {device!r})")
    got = call_or_fail(lambda: student.run(drivers.evaluate_run, PROBE_SIZES, PROBE_STATE, X, Y, batch_size,
                                           start_training, device, trap), text=call,
                       mistake=_grad_enabled if trap else None)
    return got, call, n, batch_size, correct


@question("training.evaluate", points=3, kinks=("a ragged last batch", "starts in train mode", "starts in eval mode"))
@covers({"a ragged last batch": lambda batching, **_: EVAL_BATCHINGS[batching][0] % EVAL_BATCHINGS[batching][1] != 0,
         "starts in train mode": lambda start_training, **_: start_training,
         "starts in eval mode": lambda start_training, **_: not start_training})
@pytest.mark.parametrize("device", VALUE_DEVICES)
@pytest.mark.parametrize("batching", sorted(EVAL_BATCHINGS))
@pytest.mark.parametrize("start_training", [True, False], ids=["train", "eval"])
def test_evaluate_accuracy(student, device, batching, start_training):
    got, call, n, batch_size, correct = _run_eval(student, device, batching, start_training)
    if isinstance(got["returned"], dict):
        fail(f"{call} returned a tensor; expected a Python float in [0, 1] (use .item()).")
    value = number(got["returned"], f"{call} returned {got['returned']!r}")
    expected = correct / n
    if np.isclose(value, expected, rtol=1e-6, atol=1e-6):
        return
    hint = diagnosis("training.evaluate", correct=correct, n=n, batch_size=batch_size, calls=got["calls"])(value)
    fail(f"{call} returned {value:.6g}; expected {expected:.6g} ({correct} of {n} correct)."
         + (f" Likely mistake: {hint}." if hint else ""))


@question("training.evaluate", points=2)
@pytest.mark.parametrize("device", VALUE_DEVICES)
@pytest.mark.parametrize("start_training", [True, False], ids=["train", "eval"])
def test_evaluate_eval_mode_no_graph(student, device, start_training):
    """Judged on behaviour (drivers.Probe's trap): a forward with gradients on raises, and one in
    train mode negates the logits, so only eval mode gives the accuracy PyTorch's eval mode gives.
    The probe's own record of its calls only chooses the words."""
    got, call, n, _, correct = _run_eval(student, device, "ragged", start_training, trap=True)
    calls = got["calls"] if isinstance(got.get("calls"), list) else []
    value = got["returned"]
    if isinstance(value, dict):
        value = value.get("tensor")
    try:
        value = float(np.asarray(value, dtype=np.float64).reshape(()))
    except (TypeError, ValueError):
        fail(f"{call} returned {got['returned']!r}; expected the accuracy, a Python float in [0, 1].")
    if np.isclose(value, correct / n, rtol=1e-6, atol=1e-6):
        if any(isinstance(c, dict) and c.get("device") != torch.device(device).type for c in calls):
            fail(f"{call}: the batches reached the model on {calls[0]['device']}; move them with x.to(device).")
        return
    if not calls:
        fail(f"{call} never ran the model.")
    fail(f"{call} returned {value:.6g}; in eval mode the model gets {correct / n:.6g} ({correct} of {n} correct). "
         "This model answers differently in train mode: call model.eval() before the loop, so that dropout "
         "and batch norm behave as at test time.")


@question("training.evaluate", points=1)
@pytest.mark.parametrize("device", VALUE_DEVICES)
@pytest.mark.parametrize("start_training", [True, False], ids=["train", "eval"])
def test_evaluate_restores_mode(student, device, start_training):
    got, call, *_ = _run_eval(student, device, "even", start_training)
    if got["training_after"] != start_training:
        mode = "train" if got["training_after"] else "eval"
        fail(f"{call} left the model in {mode} mode; it must restore the mode it had "
             "(remember model.training, then model.train(that) at the end).")
    layers = got.get("layers_training_after")
    if not isinstance(layers, list) or any(mode is not start_training for mode in layers):
        mode = "eval" if start_training else "train"
        fail(f"{call} set model.training back, but left the model's layers in {mode} mode: setting the flag "
             "changes that one module only. model.train(that) sets the mode of every layer, as model.eval() did.")
