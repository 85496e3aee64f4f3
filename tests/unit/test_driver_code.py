"""Driver modules reach the sandbox as bytecode without docstrings (issue 43): student code can walk
its frames to a driver's module, and what the hidden suite says of its checks there is not for it to
read or print into its feedback."""

from __future__ import annotations

import marshal
import sys
import types

from checks.suites.student import _driver_code

SOURCE = '''"""A driver module: HIDDEN MODULE TEXT."""


def driver(x):
    """HIDDEN FUNCTION TEXT: the cases this check draws."""
    assert x is not None
    return x + 1


class Helper:
    """HIDDEN CLASS TEXT."""

    def method(self):
        """HIDDEN METHOD TEXT."""
        return 2
'''


def _constants(code: types.CodeType):
    for value in code.co_consts:
        if isinstance(value, types.CodeType):
            yield from _constants(value)
        else:
            yield value


def test_driver_bytecode_holds_no_docstring(tmp_path, monkeypatch):
    (tmp_path / "judge_driver_module.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import judge_driver_module  # noqa: F401 - _driver_code reads the module's source by its name

    try:
        code = marshal.loads(_driver_code("judge_driver_module"))
        assert not [c for c in _constants(code) if isinstance(c, str) and "HIDDEN" in c]
        module = types.ModuleType("judge_driver_module")
        exec(code, module.__dict__)
        assert module.driver(1) == 2 and module.Helper().method() == 2
        assert module.__doc__ is None and module.driver.__doc__ is None and module.Helper.method.__doc__ is None
    finally:
        sys.modules.pop("judge_driver_module", None)
        _driver_code.cache_clear()
