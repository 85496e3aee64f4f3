"""Everything 03_mlp hands student code is what the curriculum says it is (issue 45): a training
loop that checks its arguments' types, as d2l's does (`isinstance(updater, torch.optim.Optimizer)`,
`isinstance(net, torch.nn.Module)`), is graded as the correct loop it is. The grader's recording
optimizer used to be a wrapper, which such a loop took for a plain function: it scored 0.
"""

from __future__ import annotations

from checks.course.assignment import load_assignment
from checks.course.submissions import read_submission
from checks.grading.session import Source, grade_sources
from conftest import REPO

MLP = load_assignment(REPO, "03_mlp")

# d2l's train_epoch_ch3 (Dive into Deep Learning, 3.6), made to the curriculum's signature: the
# same type checks, with the device moves and the mean of the batch losses train_epoch returns.
D2L_TRAIN_EPOCH = '''
def train_epoch(model, loader, optimizer, loss_fn, device):
    if isinstance(model, torch.nn.Module):
        model.train()
    total, batches = 0.0, 0
    for X, y in loader:
        X, y = X.to(device), y.to(device)
        if isinstance(optimizer, torch.optim.Optimizer):
            optimizer.zero_grad()
            l = loss_fn(model(X), y)
            l.mean().backward()
            optimizer.step()
        else:
            raise TypeError(f"expected a torch.optim.Optimizer, got {type(optimizer).__name__}")
        total += float(l)
        batches += 1
    return total / batches
'''


def _with(files: dict[str, bytes], name: str, function: str, code: str) -> dict[str, bytes]:
    lines = files[name].decode().splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith(f"def {function}("))
    end = next((k for k in range(start + 1, len(lines)) if lines[k][:1] not in ("", " ", "\n", "#")), len(lines))
    return {**files, name: "".join(lines[:start] + [code.lstrip("\n"), "\n\n"] + lines[end:]).encode()}


def test_a_loop_that_checks_for_a_torch_optimizer_gets_full_marks():
    files = _with(read_submission(MLP.solution_dir).files, "training.py", "train_epoch", D2L_TRAIN_EPOCH)
    (result,) = grade_sources(MLP, [Source.from_files("d2l", files)], jobs=1, questions=["training.train_epoch"])
    question = result.question("training.train_epoch")
    assert question.passed and question.score == question.max_score, question.feedback
