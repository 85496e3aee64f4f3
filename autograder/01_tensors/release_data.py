"""What `checks build` adds to the release of 01_tensors: tests/diagnoses.json, the public checks'
table of likely mistakes, computed here from the grader's models (tensor_mistakes.py) for the
public cases only, so that the release names the same mistakes in the same words without holding
the models themselves.

The public cases are read from the public checks' own parametrize lists (one list, not two);
CASES says, per public test, which question it checks and the arguments it hands `diagnosis`, as
the test computes them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np
import torch

import tensor_mistakes


def _layout(t: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(t.shape), tuple(t.stride())


def _numel(shape):
    return "strides.numel", {"shape": shape, "expected": torch.empty(shape).numel()}, None


def _contiguous_strides(shape):
    return "strides.contiguous_strides", {"shape": shape, "expected": tuple(torch.empty(shape).stride())}, None


def _offset(index, shape, storage_offset):
    strides = torch.empty(shape).stride()
    numbered = torch.arange(storage_offset + torch.empty(shape).numel())
    expected = int(numbered.as_strided(shape, strides, storage_offset)[index])
    return "strides.offset", {"index": index, "strides": strides, "storage_offset": storage_offset,
                              "expected": expected}, None


def _unravel(flat, shape):
    numbered = torch.arange(torch.empty(shape).numel()).reshape(shape)
    expected = tuple(int(i) for i in (numbered == flat).nonzero()[0])
    return "strides.unravel", {"flat": flat, "shape": shape, "expected": expected}, None


def _transpose(shape, dim0, dim1):
    t = torch.empty(shape)
    return "strides.transpose", {"shape": shape, "strides": t.stride(), "expected": _layout(t.transpose(dim0, dim1))}, None


def _permute(shape, dims):
    t = torch.empty(shape)
    return "strides.permute", {"shape": shape, "strides": t.stride(), "dims": dims,
                               "expected": _layout(t.permute(dims))}, None


def _is_contiguous(t):
    return "strides.is_contiguous", {"shape": tuple(t.shape), "strides": t.stride(), "expected": t.is_contiguous()}, None


def _view(t, new_shape):
    return "strides.view", {"shape": tuple(t.shape), "strides": t.stride(), "new_shape": new_shape,
                            "expected": _layout(t.view(new_shape))}, None


def _gather(shape, strides, storage_offset):
    storage = np.arange(10, 16, dtype=np.int32)
    expected = torch.from_numpy(storage.copy()).as_strided(shape, strides, storage_offset).numpy()
    return "strides.gather", {"storage": storage, "shape": shape, "strides": strides,
                              "storage_offset": storage_offset, "expected": expected}, None


def _broadcast_shape(shapes):
    expected = tuple(torch.broadcast_tensors(*(torch.empty(s) for s in shapes))[0].shape)
    return "broadcasting.broadcast_shape", {"shapes": shapes, "expected": expected}, None


def _broadcast_strides(shape, target):
    t = torch.empty(shape)
    return ("broadcasting.broadcast_strides", {"shape": shape, "strides": t.stride(), "target_shape": target},
            t.expand(target).stride())


def _broadcast_index(out_index, out_shape, shape):
    numbered = torch.arange(torch.empty(shape).numel()).reshape(shape)
    element = numbered.expand(out_shape)[out_index]
    expected = tuple(int(i) for i in (numbered == element).nonzero()[0])
    return "broadcasting.broadcast_index", {"out_index": out_index, "out_shape": out_shape, "shape": shape}, expected


# public test -> (its parameters -> (question, diagnosis's arguments, the answer where they hold none))
CASES: dict[str, Callable[..., tuple[str, dict[str, Any], Any]]] = {
    "test_numel": _numel, "test_contiguous_strides": _contiguous_strides, "test_offset": _offset,
    "test_unravel": _unravel, "test_transpose": _transpose, "test_permute": _permute,
    "test_is_contiguous": _is_contiguous, "test_view": _view, "test_gather": _gather,
    "test_broadcast_shape": _broadcast_shape, "test_broadcast_strides": _broadcast_strides,
    "test_broadcast_index": _broadcast_index,
}

# questions whose public check compares strides but not on size-1 dims: the table leaves those out
_STRIDES_OF = {"strides.view": lambda case: case["expected"][0],
               "broadcasting.broadcast_strides": lambda case: case["target_shape"]}
_PAIRS = {"strides.transpose", "strides.permute"}


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        del sys.modules[name]
    return module


def public_cases(tests_dir: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(test name, its parameters) for every parametrized case of the public checks in `tests_dir`."""
    sys.modules["diagnoses"] = _load(tests_dir / "diagnoses.py", "diagnoses")
    try:
        module = _load(tests_dir / "test_public.py", "checks_release_test_public")
    finally:
        del sys.modules["diagnoses"]
    for name in sorted(vars(module)):
        marks = [m for m in getattr(getattr(module, name), "pytestmark", []) if m.name == "parametrize"]
        for mark in marks:
            names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
            for values in mark.args[1]:
                yield name, dict(zip(names, values if len(names) > 1 else (values,)))


def _masked(qid: str, case: dict[str, Any], wrong: Any, plain: Callable[[Any], Any]) -> Any:
    value = plain(wrong)
    if qid in _STRIDES_OF and isinstance(value, list):
        shape = tuple(_STRIDES_OF[qid](case))
        return [None if k < len(shape) and shape[k] == 1 else v for k, v in enumerate(value)]
    if qid in _PAIRS:
        shape = tuple(case["expected"][0])
        return [value[0], [None if k < len(shape) and shape[k] == 1 else v for k, v in enumerate(value[1])]]
    return value


def table(tests_dir: Path) -> dict[str, Any]:
    """The public table: question -> case key -> [[wrong answer, what to say], ...]."""
    public = _load(tests_dir / "diagnoses.py", "checks_release_diagnoses")
    questions: dict[str, dict[str, list]] = {}
    for test, params in public_cases(tests_dir):
        if test not in CASES:
            raise LookupError(f"release_data.py: the public test {test} is not in CASES")
        qid, case, answer = CASES[test](**params)
        answer = plain_answer = public.plain(case.get("expected", answer))
        mistakes: list[list] = []
        for wrong in tensor_mistakes.CANDIDATES[qid](**case, **({} if "expected" in case else {"expected": answer})):
            message = tensor_mistakes.diagnosis(qid, **case)(tensor_mistakes.REFUSED if wrong is tensor_mistakes.REFUSED
                                                             else wrong)
            value = public.REFUSED if wrong is tensor_mistakes.REFUSED else wrong
            entry = [_masked(qid, case, value, public.plain), message]
            if message and public.plain(value) != plain_answer and entry not in mistakes:
                mistakes.append(entry)
        questions.setdefault(qid, {})[public.case_key(case)] = mistakes
    return {"questions": questions}


def files(solution_dir: Path) -> dict[str, bytes]:
    """The release's files computed here (course-relative to the release folder)."""
    text = json.dumps(table(solution_dir / "tests"), sort_keys=True, indent=1) + "\n"
    return {"tests/diagnoses.json": text.encode("utf-8")}
