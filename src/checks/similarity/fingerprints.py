"""Fingerprints of Python code that survive renaming, reformatting, comments and reordering.

The code is parsed (the standard `ast`, never run) and its syntax tree written out as a sequence
of tokens, node by node: layout, parentheses, comments and docstrings leave no trace; each name a
student chose becomes `V` (keywords, builtins and attribute names stay: they are the language and
the library, not a choice), each string `S` and each number `N`. Every run of K tokens (a k-gram)
is hashed, and winnowing (Schleimer, Wilkerson and Aiken, SIGMOD 2003: the smallest hash of every
window of W k-grams) keeps a few of them: any run of K + W - 1 tokens two files share is
guaranteed to leave a fingerprint in both. Functions moved around keep their fingerprints, since
each function is a subtree of its own and only the k-grams across a boundary change.

Code that does not parse (a syntax error) is read as Python tokens (`tokenize`), names, strings
and numbers normalised the same way, or by a rougher tokenizer when even that fails, so that a
broken submission is still compared.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import token
import tokenize
import zlib
from dataclasses import dataclass

import numpy as np

K = 16  # tokens per k-gram: about two lines of code
W = 8  # k-grams per winnowing window: shared runs of K + W - 1 = 23 tokens are always found

_KEPT_NAMES = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))
_ROUGH = re.compile(r"#[^\n]*|(?P<string>'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\")"
                    r"|(?P<number>\d[\w.]*)|(?P<name>[A-Za-z_]\w*)|(?P<op>[^\s\w])", re.S)


@dataclass(frozen=True)
class Token:
    text: str  # normalised: V, S, N, a keyword, a builtin, an attribute name or an operator
    line: int  # 1-based, in its file


@dataclass(frozen=True)
class Fingerprint:
    hash: int
    file: str
    first_line: int  # the lines its k-gram spans
    last_line: int


def tokens(source: str) -> list[Token]:
    """The normalised tokens of a Python source (see the module's docstring)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        pass
    else:
        out: list[Token] = []
        try:
            _tree_tokens(tree, 1, out)
            return out
        except RecursionError:  # nested past the interpreter's limit: read as text below
            pass
    try:
        return _python_tokens(source)
    except (tokenize.TokenError, SyntaxError, ValueError):  # IndentationError is a SyntaxError
        return _rough_tokens(source)


def _tree_tokens(node: ast.AST, line: int, out: list[Token]) -> None:
    """A syntax tree's tokens, in source order: each node's kind, then its children's."""
    line = getattr(node, "lineno", line)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return  # a docstring, or a string left as a statement: as much a comment as a comment is
    if isinstance(node, ast.Name):
        out.append(Token(node.id if node.id in _KEPT_NAMES else "V", line))
        return
    if isinstance(node, ast.Constant):
        value = node.value
        kind = "S" if isinstance(value, (str, bytes)) else "N" if isinstance(value, (int, float, complex)) \
            and not isinstance(value, bool) else repr(value)
        out.append(Token(kind, line))
        return
    out.append(Token(type(node).__name__, line))
    if isinstance(node, ast.Attribute):
        _tree_tokens(node.value, line, out)
        out.append(Token("." + node.attr, line))
        return
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        out.extend(Token(alias.name, line) for alias in node.names)
        return
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.expr_context):
            _tree_tokens(child, line, out)


def _python_tokens(source: str) -> list[Token]:
    out: list[Token] = []
    previous = ""  # the last significant token's text, as written
    statement_start = True  # a string here is a docstring or a bare expression: dropped
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        kind, text, line = tok.type, tok.string, tok.start[0]
        if kind in (token.COMMENT, token.NL, token.ENCODING, token.ENDMARKER, token.INDENT, token.DEDENT):
            continue
        if kind == token.NEWLINE:
            statement_start = True
            continue
        if kind == token.STRING and statement_start:
            previous = text
            continue  # a docstring: as much a comment as a comment is
        if kind == token.NAME:
            shown = text if text in _KEPT_NAMES or previous == "." else "V"
        elif kind == token.STRING or kind in _FSTRING_KINDS:
            shown = "S"
        elif kind == token.NUMBER:
            shown = "N"
        else:
            shown = text
        if not (shown == "S" and out and out[-1].text == "S"):  # implicit concatenation, f-string parts
            out.append(Token(shown, line))
        previous, statement_start = text, False
    return out


_FSTRING_KINDS = {getattr(token, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                  if hasattr(token, name)}


def _rough_tokens(source: str) -> list[Token]:
    """Tokens of code `tokenize` refused, by a regular expression of the same kinds."""
    out: list[Token] = []
    previous = ""
    for match in _ROUGH.finditer(source):
        text = match.group(0)
        if text.startswith("#"):
            continue
        line = source.count("\n", 0, match.start()) + 1
        if match.group("string"):
            shown = "S"
        elif match.group("number"):
            shown = "N"
        elif match.group("name"):
            shown = text if text in _KEPT_NAMES or previous == "." else "V"
        else:
            shown = text
        out.append(Token(shown, line))
        previous = text
    return out


def _token_id(text: str) -> int:
    return zlib.crc32(text.encode())  # stable across runs and machines (str hashes are salted)


def fingerprints(files: dict[str, str], *, k: int = K, w: int = W) -> list[Fingerprint]:
    """The winnowed fingerprints of a submission's files: each file on its own (no k-gram spans two files)."""
    out: list[Fingerprint] = []
    for name in sorted(files):
        toks = tokens(files[name])
        ids = [_token_id(t.text) for t in toks]
        hashes = [hash(tuple(ids[i:i + k])) for i in range(len(ids) - k + 1)]
        for at in winnow(hashes, w):
            out.append(Fingerprint(hashes[at], name, toks[at].line, toks[at + k - 1].line))
    return out


def winnow(hashes: list[int], w: int = W) -> list[int]:
    """The positions winnowing selects: in every window of `w` consecutive hashes, the smallest
    (the rightmost of equals), each position once. A sequence shorter than a window gives its smallest."""
    if not hashes:
        return []
    values = np.array(hashes, dtype=np.int64)
    if len(values) <= w:
        return [len(values) - 1 - int(np.argmin(values[::-1]))]
    windows = np.lib.stride_tricks.sliding_window_view(values, w)
    rightmost = w - 1 - np.argmin(windows[:, ::-1], axis=1)  # argmin finds the first: of the reversed window
    chosen = rightmost + np.arange(len(windows))
    keep = np.ones(len(chosen), dtype=bool)
    keep[1:] = chosen[1:] != chosen[:-1]
    return chosen[keep].tolist()
