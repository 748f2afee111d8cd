"""True and false claims about a function, with their truth decided by its syntax tree.

A claim is what a reviewer might say about code: it calls this, raises that, loops, yields, a
parameter defaults to a value. The truth is read from the function's own body (nested functions,
lambdas and classes left out); a false claim names something the function's text does not mention
at all, so it is false beyond doubt.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

from benchwarmers_mcp.suite.mutate import call_name

EXCEPTIONS = ("ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError", "OSError", "LookupError",
              "AttributeError")


@dataclass(frozen=True)
class Claim:
    statement: str
    truth: bool
    kind: str


def own_nodes(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's own body, not of the functions, lambdas or classes inside it."""
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)


def mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _raised(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Raise) or node.exc is None:
        return None
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return exc.id if isinstance(exc, ast.Name) else None


def _defaults(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, object]]:
    args = func.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return [(a.arg, d.value) for a, d in pairs
            if isinstance(d, ast.Constant) and isinstance(d.value, (bool, int, type(None)))]


def _other_value(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return 0


def candidates(func: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, text: str,
               module_names: list[str]) -> list[Claim]:
    """Every claim this function supports, true ones and false ones."""
    nodes = list(own_nodes(func))
    out: list[Claim] = []
    called = sorted({call_name(n) for n in nodes if isinstance(n, ast.Call) and call_name(n)})
    for name in called:
        out.append(Claim(f"`{qualname}` calls `{name}` itself (a call in its own body).", True, "calls"))
    for name in module_names:
        if name != func.name and not mentions(text, name):
            out.append(Claim(f"`{qualname}` calls `{name}` itself (a call in its own body).", False, "calls"))
    raised = sorted({r for r in (_raised(n) for n in nodes) if r})
    for name in raised:
        out.append(Claim(f"`{qualname}` can raise `{name}` with a `raise` statement of its own.", True, "raises"))
    for name in EXCEPTIONS:
        if not mentions(text, name):
            out.append(Claim(f"`{qualname}` can raise `{name}` with a `raise` statement of its own.", False, "raises"))
    for kind, types, word in (("while", (ast.While,), "a `while` loop"), ("yield", (ast.Yield, ast.YieldFrom),
                                                                       "`yield` (it is a generator)")):
        has = any(isinstance(n, types) for n in nodes)
        if not has and mentions(text, kind):
            continue  # in a nested function or a comment: not beyond doubt
        out.append(Claim(f"`{qualname}` contains {word} in its own body.", has, kind))
    for name, value in _defaults(func):
        out.append(Claim(f"In `{qualname}`, the parameter `{name}` defaults to `{value!r}`.", True, "default"))
        other = _other_value(value)
        out.append(Claim(f"In `{qualname}`, the parameter `{name}` defaults to `{other!r}`.", False, "default"))
    return out


def pick(claims: list[Claim], truth: bool, rng: random.Random) -> Claim | None:
    """One claim of the wanted truth, its kind drawn first so that no kind crowds out the others."""
    wanted = [c for c in claims if c.truth is truth]
    if not wanted:
        return None
    kind = rng.choice(sorted({c.kind for c in wanted}))
    return rng.choice([c for c in wanted if c.kind == kind])
