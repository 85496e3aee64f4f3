"""A planted copy: one student's solution disguised as a cheater would disguise it, for the
similarity tests and benchmarks/similarity.py. Every local name, parameter and private helper is
renamed, docstrings and comments are replaced, the code is reformatted (ast.unparse: other quotes,
parentheses, line breaks) and the top-level functions are shuffled. The public functions keep their
names: the grader calls them."""

from __future__ import annotations

import ast
import builtins
import random

BUILTINS = set(dir(builtins))


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.mapping.get(node.arg, node.arg)
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        if node.arg is not None:
            node.arg = self.mapping.get(node.arg, node.arg)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self.mapping.get(node.name, node.name)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body[0] = ast.Expr(ast.Constant("Does what it says."))
        self.generic_visit(node)
        return node


def disguise(source: str, seed: int = 0) -> str:
    tree = ast.parse(source)
    imported = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    public = {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
    chosen: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            chosen.add(node.id)
        elif isinstance(node, ast.arg):
            chosen.add(node.arg)
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("_"):
            chosen.add(node.name)
    rng = random.Random(seed)
    mapping = {name: f"{rng.choice(['tmp', 'val', 'thing', 'my', 'q'])}_{k}_{rng.randrange(1000)}"
               for k, name in enumerate(sorted(chosen - BUILTINS - imported - public))}
    tree = _Renamer(mapping).visit(tree)
    if tree.body and isinstance(tree.body[0], ast.Expr):
        tree.body[0] = ast.Expr(ast.Constant("My homework."))
    head = [node for node in tree.body if not isinstance(node, ast.FunctionDef)]
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    rng.shuffle(functions)
    parts = [ast.unparse(ast.Module(head, []))]
    for k, function in enumerate(functions):
        parts.append(f"# part {k}: written late at night\n{ast.unparse(function)}")
    return "\n\n\n".join(parts) + "\n"
