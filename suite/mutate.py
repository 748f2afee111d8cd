"""The ten mutation kinds: where each can be planted in Python source, and planting one.

Token kinds, found with ``tokenize``: ``compare`` (< and <=, > and >=, == and !=), ``boolop`` (and
and or), ``return-bool`` (return True and return False), ``number`` (a small int plus or minus one,
or 0). AST kinds, found with ``ast``: ``not`` (removed after if, elif or while), ``args`` (two
adjacent positional arguments swapped), ``off-by-one`` (``range(n)`` to ``range(n - 1)`` or
``range(1, n)``; ``x[i:]`` to ``x[i + 1:]``), ``break-continue``, ``remove-call`` (a call statement
deleted, ``pass`` when the block would be empty) and ``augassign`` (+= and -=, *= to /=).

Every mutation edits or deletes one line. None is planted under ``if __name__ == "__main__":``, in
dead code after a return, raise, break or continue, in a keyword argument, in or of a print, log
or sleep call, in an annotation or an f-string, nor as an argument swap in max, min, gcd or hypot.
``apply`` refuses a result that no longer parses or whose code is unchanged.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

TOKEN_KINDS = ("compare", "boolop", "return-bool", "number")
AST_KINDS = ("not", "args", "off-by-one", "break-continue", "remove-call", "augassign")
ALL_KINDS = TOKEN_KINDS + AST_KINDS
HINTS = {
    "compare": "a comparison operator changed (< and <=, > and >=, == and !=)",
    "boolop": "`and` and `or` swapped",
    "return-bool": "a returned True or False flipped",
    "number": "a small whole number changed by one (or to 0)",
}
COMPARE_SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
COMMUTATIVE = frozenset({"max", "min", "gcd", "hypot"})
QUIET_NAMES = frozenset({"print", "sleep", "debug", "info", "warning", "warn", "error", "exception", "critical",
                         "log", "pprint"})
LOGGER_NAMES = frozenset({"logging", "logger", "log", "_log", "_logger", "LOGGER", "LOG", "warnings"})
SMALL_INT = re.compile(r"^[0-9]$|^1[0-6]$")

Position = tuple[int, int]  # (line, character column)


@dataclass(frozen=True)
class Mutation:
    kind: str
    line: int  # 1-based, in the original source
    new_text: str | None  # the line's new text (no newline); None when the line is deleted
    detail: str

    @property
    def deletes(self) -> bool:
        return self.new_text is None


class Mutant(ValueError):
    """A mutation that does not give a different program that still parses."""


def _char_col(lines: list[str], lineno: int, byte_col: int) -> int:
    return len(lines[lineno - 1].encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


class _Source:
    """One file's text, lines, tree and the regions where nothing is planted."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines()
        self.tree = ast.parse(source)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.banned: list[tuple[Position, Position]] = list(self._banned())
        self.tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))

    def start(self, node: ast.AST) -> Position:
        line = int(getattr(node, "lineno", 1))
        return line, _char_col(self.lines, line, int(getattr(node, "col_offset", 0)))

    def end(self, node: ast.AST) -> Position:
        end_line: int | None = getattr(node, "end_lineno", None)
        line = end_line if end_line is not None else int(getattr(node, "lineno", 1))
        return line, _char_col(self.lines, line, int(getattr(node, "end_col_offset", None) or 0))

    def span(self, node: ast.AST) -> tuple[Position, Position]:
        return self.start(node), self.end(node)

    def single_line(self, *nodes: ast.AST) -> bool:
        lines = {getattr(n, "lineno", 0) for n in nodes} | {getattr(n, "end_lineno", 0) for n in nodes}
        return len(lines) == 1

    def text(self, node: ast.AST) -> str:
        (line, a), (_, b) = self.span(node)
        return self.lines[line - 1][a:b]

    def _banned(self) -> Iterator[tuple[Position, Position]]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.If) and is_main_guard(node.test):
                yield self.span(node)
            if isinstance(node, ast.Call):
                if quiet_call(node):
                    yield self.span(node)
                for kw in node.keywords:
                    yield self.span(kw.value)
            if isinstance(node, ast.JoinedStr):
                yield self.span(node)
            if isinstance(node, ast.arg) and node.annotation is not None:
                yield self.span(node.annotation)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                yield self.span(node.returns)
            if isinstance(node, ast.AnnAssign):
                yield self.span(node.annotation)
            for body in _bodies(node):
                for i, stmt in enumerate(body):
                    if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
                        for dead in body[i + 1:]:
                            yield self.span(dead)
                        break

    def allowed(self, pos: Position) -> bool:
        return not any(a <= pos < b for a, b in self.banned)


def _bodies(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value


def is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def quiet_call(call: ast.Call) -> bool:
    """print, log and sleep calls: a fault planted there changes nothing a reviewer should find."""
    name = call_name(call)
    if name in QUIET_NAMES or name.lower().startswith("log"):
        return True
    func = call.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in LOGGER_NAMES


# ---- token kinds ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=16)
def _parsed(source: str) -> _Source:
    """One file parsed once, however many of its functions are looked at (a pure memo)."""
    return _Source(source)


def _number_variant(value: int, row: int, col: int) -> int:
    options = [value + 1] + ([value - 1] if value >= 1 else []) + ([0] if value > 1 else [])
    return options[(row * 31 + col) % len(options)]


def _token_sites(src: _Source, first: int, last: int, kinds: frozenset[str]) -> Iterator[Mutation]:
    previous: tokenize.TokenInfo | None = None
    for tok in src.tokens:
        row, col = tok.start
        in_span = first <= row <= last and tok.start[0] == tok.end[0] and src.allowed(tok.start)
        replacement, kind = None, ""
        if in_span and tok.type == tokenize.OP and tok.string in COMPARE_SWAPS and "compare" in kinds:
            replacement, kind = COMPARE_SWAPS[tok.string], "compare"
        elif in_span and tok.type == tokenize.NAME and tok.string in ("and", "or") and "boolop" in kinds:
            replacement, kind = ("or" if tok.string == "and" else "and"), "boolop"
        elif (in_span and tok.type == tokenize.NAME and tok.string in ("True", "False") and previous is not None
              and previous.string == "return" and "return-bool" in kinds):
            replacement, kind = ("False" if tok.string == "True" else "True"), "return-bool"
        elif in_span and tok.type == tokenize.NUMBER and SMALL_INT.match(tok.string) and "number" in kinds:
            replacement, kind = str(_number_variant(int(tok.string), row, col)), "number"
        if replacement is not None:
            line = src.lines[row - 1]
            yield Mutation(kind, row, line[:col] + replacement + line[tok.end[1]:], f"{tok.string} -> {replacement}")
        if tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok


# ---- AST kinds ------------------------------------------------------------------------------

def _replace(src: _Source, node: ast.AST, new: str) -> str:
    (row, a), (_, b) = src.span(node)
    line = src.lines[row - 1]
    return line[:a] + new + line[b:]


def _simple(node: ast.expr) -> bool:
    return not isinstance(node, (ast.IfExp, ast.Lambda, ast.BoolOp, ast.Compare, ast.NamedExpr, ast.Starred,
                                 ast.Yield, ast.YieldFrom, ast.Await, ast.UnaryOp))


def _not_site(src: _Source, node: ast.AST) -> Mutation | None:
    if not isinstance(node, (ast.If, ast.While)) or not isinstance(node.test, ast.UnaryOp):
        return None
    if not isinstance(node.test.op, ast.Not):
        return None
    row, col = src.start(node.test)
    line = src.lines[row - 1]
    if not re.match(r"not\b", line[col:]):
        return None
    rest = line[col + 3:]
    return Mutation("not", row, line[:col] + rest.lstrip(" "), "not removed")


def _args_sites(src: _Source, node: ast.AST) -> Iterator[Mutation]:
    if not isinstance(node, ast.Call) or call_name(node) in COMMUTATIVE or quiet_call(node):
        return
    for a, b in zip(node.args, node.args[1:], strict=False):
        if isinstance(a, ast.Starred) or isinstance(b, ast.Starred) or not src.single_line(a, b):
            continue
        ta, tb = src.text(a), src.text(b)
        if ta == tb:
            continue
        (row, a0), _ = src.span(a)
        (_, a1), (_, b1) = src.end(a), src.end(b)
        _, b0 = src.start(b)
        line = src.lines[row - 1]
        yield Mutation("args", row, line[:a0] + tb + line[a1:b0] + ta + line[b1:], f"{ta}, {tb} -> {tb}, {ta}")


def _off_by_one_site(src: _Source, node: ast.AST) -> Mutation | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
            and len(node.args) == 1 and not node.keywords and _simple(node.args[0]) and src.single_line(node)):
        arg = node.args[0]
        text = src.text(arg)
        row, col = src.start(arg)
        new = f"{text} - 1" if (row + col) % 2 == 0 else f"1, {text}"
        return Mutation("off-by-one", row, _replace(src, arg, new), f"range({text}) -> range({new})")
    if (isinstance(node, ast.Slice) and node.lower is not None and node.upper is None and node.step is None
            and _simple(node.lower) and src.single_line(node.lower)):
        text = src.text(node.lower)
        row, _ = src.start(node.lower)
        return Mutation("off-by-one", row, _replace(src, node.lower, f"{text} + 1"), f"[{text}:] -> [{text} + 1:]")
    return None


def _break_site(src: _Source, node: ast.AST) -> Mutation | None:
    if not isinstance(node, (ast.Break, ast.Continue)):
        return None
    word, other = ("break", "continue") if isinstance(node, ast.Break) else ("continue", "break")
    row, col = src.start(node)
    line = src.lines[row - 1]
    if not line[col:].startswith(word):
        return None
    return Mutation("break-continue", row, line[:col] + other + line[col + len(word):], f"{word} -> {other}")


def _remove_call_site(src: _Source, node: ast.AST) -> Mutation | None:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and src.single_line(node)):
        return None
    if quiet_call(node.value):
        return None
    row, col = src.start(node)
    line = src.lines[row - 1]
    rest = line[col:][len(src.text(node)):].strip()
    if line[:col].strip() or (rest and not rest.startswith("#")):
        return None  # not alone on its line
    parent = src.parents.get(node)
    siblings = next((body for body in _bodies(parent) if node in body), []) if parent is not None else []
    name = call_name(node.value) or "a call"
    if len(siblings) == 1:
        return Mutation("remove-call", row, line[:col] + "pass", f"{name}(...) replaced by pass")
    return Mutation("remove-call", row, None, f"{name}(...) deleted")


AUG_SWAPS = {ast.Add: ("+=", "-="), ast.Sub: ("-=", "+="), ast.Mult: ("*=", "/=")}


def _augassign_site(src: _Source, node: ast.AST) -> Mutation | None:
    if not isinstance(node, ast.AugAssign) or type(node.op) not in AUG_SWAPS:
        return None
    if src.end(node.target)[0] != src.start(node.value)[0]:
        return None
    old, new = AUG_SWAPS[type(node.op)]
    (row, a), (_, b) = src.end(node.target), src.start(node.value)
    line = src.lines[row - 1]
    between = line[a:b]
    if between.count(old) != 1:
        return None
    return Mutation("augassign", row, line[:a] + between.replace(old, new) + line[b:], f"{old} -> {new}")


def _ast_sites(src: _Source, first: int, last: int, kinds: frozenset[str]) -> Iterator[Mutation]:
    for node in ast.walk(src.tree):
        row = getattr(node, "lineno", 0)
        if not (first <= row <= last) or not src.allowed(src.start(node)):
            continue
        found: list[Mutation | None] = []
        if "not" in kinds:
            found.append(_not_site(src, node))
        if "args" in kinds:
            found.extend(_args_sites(src, node))
        if "off-by-one" in kinds:
            found.append(_off_by_one_site(src, node))
        if "break-continue" in kinds:
            found.append(_break_site(src, node))
        if "remove-call" in kinds:
            found.append(_remove_call_site(src, node))
        if "augassign" in kinds:
            found.append(_augassign_site(src, node))
        yield from (m for m in found if m is not None)


# ---- the interface --------------------------------------------------------------------------

def sites(source: str, first: int, last: int, kinds: Iterable[str] = ALL_KINDS, *, checked: bool = True) -> list[Mutation]:
    """Every mutation of the wanted kinds on lines ``first``..``last``; with ``checked`` only those
    that still parse and differ (``apply`` checks one at a time, for a caller that needs only one)."""
    wanted = frozenset(kinds)
    unknown = wanted - set(ALL_KINDS)
    if unknown:
        raise ValueError(f"unknown mutation kinds: {', '.join(sorted(unknown))}; known: {', '.join(ALL_KINDS)}")
    src = _parsed(source)
    found = list(_token_sites(src, first, last, wanted)) + list(_ast_sites(src, first, last, wanted))
    unique = sorted({(m.kind, m.line, m.new_text): m for m in found}.values(),
                    key=lambda m: (m.line, m.kind, m.new_text or ""))
    if not checked:
        return unique
    out = []
    for m in unique:
        try:
            apply(source, m)
        except Mutant:
            continue
        out.append(m)
    return out


def _code(line: str) -> str:
    return re.sub(r"\s+", "", re.sub(r"#.*$", "", line))


def apply(source: str, mutation: Mutation) -> str:
    """The source with the mutation planted; ``Mutant`` if it no longer parses or changes nothing.

    Every kind changes a token (or deletes a statement), so a line whose code is unchanged once
    spaces and comments are left out is the only way to change nothing."""
    lines = source.splitlines(keepends=True)
    index = mutation.line - 1
    if not 0 <= index < len(lines):
        raise Mutant(f"line {mutation.line} is outside the file")
    old = lines[index][:len(lines[index].rstrip("\r\n"))]
    ending = lines[index][len(old):]
    if mutation.new_text is None:
        del lines[index]
    elif _code(mutation.new_text) == _code(old):
        raise Mutant("the mutation changes nothing")
    else:
        lines[index] = mutation.new_text + (ending or "")
    mutated = "".join(lines)
    try:
        ast.parse(mutated)
    except SyntaxError as e:
        raise Mutant(f"the mutated source does not parse: {e}") from e
    return mutated
