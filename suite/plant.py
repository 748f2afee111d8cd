"""Bug and control pairs: choose where to plant, plant one fault, write both tasks.

A *unit* is a function of 12-60 lines (only the four token kinds, named in the prompt) or, hard,
a whole file of 100-400 lines (all ten kinds, no hint). The bug task shows the mutated code, the
control the original, both numbered and with the same words around them, so nothing but the
code tells them apart. Both start as drafts. ``choose`` is deterministic for a seed: the same
files, seed and used keys give the same pairs, byte for byte.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from benchwarmers_mcp.suite import mutate
from benchwarmers_mcp.suite.tasks import Clause, Task

FUNCTION_LINES = (12, 60)
FILE_LINES = (100, 400)
EXCERPT = 400
SKIPPED_DIRS = frozenset({"test", "tests", "testing", "migrations", "vendor", "vendored", "_vendor", "third_party",
                          "build", "dist", "node_modules", "site-packages", "__pycache__", "venv", ".venv", "env"})
ANSWER_RULE = ("Your first line must be exactly `FAULT: line <n>` (the number shown before that line) or "
               "`NO FAULT`. Then explain in at most five sentences.")


def skipped(rel: str) -> bool:
    """Tests, migrations, vendored code, build output and hidden folders are never planted in."""
    path = PurePosixPath(rel)
    if any(part in SKIPPED_DIRS or part.startswith(".") for part in path.parts[:-1]):
        return True
    name = path.name
    return (not name.endswith(".py") or name.startswith("test_") or name.endswith("_test.py")
            or name in ("conftest.py", "setup.py"))


@dataclass(frozen=True)
class Unit:
    rel: str
    name: str  # qualified function name; "" for a whole file
    first: int
    last: int

    @property
    def key(self) -> str:
        return f"{self.rel}::{self.name or '(file)'}"


def function_units(rel: str, source: str) -> list[Unit]:
    return list(_function_units(rel, source))


@functools.lru_cache(maxsize=64)
def _function_units(rel: str, source: str) -> tuple[Unit, ...]:
    """A file's functions of 12-60 lines, parsed once however often it is asked (a pure memo)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    out: list[Unit] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    size = (child.end_lineno or child.lineno) - first + 1
                    if FUNCTION_LINES[0] <= size <= FUNCTION_LINES[1]:
                        out.append(Unit(rel, name, first, child.end_lineno or child.lineno))
                visit(child, name + ".")
            elif isinstance(child, ast.Try) or (isinstance(child, ast.If) and not mutate.is_main_guard(child.test)):
                visit(child, prefix)

    visit(tree, "")
    return tuple(out)


def file_unit(rel: str, source: str) -> Unit | None:
    count = len(source.splitlines())
    if not FILE_LINES[0] <= count <= FILE_LINES[1]:
        return None
    try:
        ast.parse(source)
    except SyntaxError:
        return None
    return Unit(rel, "", 1, count)


def numbered(lines: Sequence[str], first: int, last: int) -> str:
    width = len(str(last))
    return "\n".join(f"{n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1))


def window(unit: Unit, total: int) -> tuple[int, int]:
    """At most 400 lines holding the unit, the unit in the middle where the file allows."""
    size = unit.last - unit.first + 1
    if total <= EXCERPT or size >= EXCERPT:
        return (1, total) if total <= EXCERPT else (unit.first, min(total, unit.first + EXCERPT - 1))
    start = max(1, unit.first - (EXCERPT - size) // 2)
    end = min(total, start + EXCERPT - 1)
    return max(1, end - EXCERPT + 1), end


def slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "x"


@dataclass(frozen=True)
class Pair:
    unit: Unit
    mutation: mutate.Mutation
    bug: Task
    control: Task
    fault_lines: tuple[int, ...]
    bug_code: str = field(repr=False, default="")


def prompt_for(unit: Unit, code: str, hard: bool, label: str) -> str:
    if hard:
        head = (f"Review the file `{label}` below. It may contain one planted fault, or it may be correct as "
                "written.")
    else:
        kinds = "; ".join(mutate.HINTS[k] for k in mutate.TOKEN_KINDS)
        head = (f"Review `{unit.name}` in `{label}` (lines {unit.first}-{unit.last} below). It may contain one "
                f"planted fault of one of these kinds: {kinds}. Or it may be correct as written.")
    return f"{head}\n{ANSWER_RULE}\n\n```python\n{code}\n```\n"


def make_pair(source: str, unit: Unit, mutation: mutate.Mutation, *, id_base: str, hard: bool,
              label: str, meta: dict[str, Any]) -> Pair:
    """The bug task (mutated code) and its control (the original), numbered alike."""
    mutated = mutate.apply(source, mutation)
    original_lines, mutated_lines = source.splitlines(), mutated.splitlines()
    first, last = window(unit, len(original_lines))
    bug_last = min(last, len(mutated_lines))
    fault: tuple[int, ...] = (mutation.line - 1, mutation.line) if mutation.deletes else (mutation.line,)
    fault = tuple(n for n in fault if n >= 1)
    lines_re = "|".join(str(n) for n in fault)
    bug_id, control_id = f"{id_base}-bug", f"{id_base}-control"
    source_info = {**meta, "rel": unit.rel, "function": unit.name or None, "mutation": mutation.kind,
                   "detail": mutation.detail, "line": mutation.line, "excerpt": [first, last], "hard": hard}
    where = f"{unit.name} ({label})" if unit.name else label
    bug = Task(
        id=bug_id, title=f"Planted fault in {where}", prompt=prompt_for(unit, numbered(mutated_lines, first,
                                                                                         bug_last), hard, label),
        why=f"a {mutation.kind} fault ({mutation.detail}) planted at line {mutation.line}; its control is "
            f"{control_id}",
        shape="seeded", kind="bug", pair=control_id, source=source_info, score_in="first_line", draft=True,
        must_find=(Clause(regex=rf"^\W*fault:\s*line\s*(?:{lines_re})\b", label=f"fault: line {fault[-1]}"),),
        must_not_claim=(Clause(("no fault",)),))
    control = Task(
        id=control_id, title=f"Control for {where} (no fault)",
        prompt=prompt_for(unit, numbered(original_lines, first, last), hard, label),
        why=f"the original code; its planted twin is {bug_id}", shape="seeded", kind="control", pair=bug_id,
        source={**source_info, "mutation": None, "detail": None, "line": None}, score_in="first_line", draft=True,
        must_find=(Clause(("no fault",)),),
        must_not_claim=(Clause(regex=r"^\W*fault:\s*line", label="fault: line"),))
    return Pair(unit, mutation, bug, control, fault, mutated)


def _pick(source: str, unit: Unit, kinds: Sequence[str], rng: random.Random) -> mutate.Mutation | None:
    """A kind at random, then a site of it at random; a site that fails ``apply`` is dropped and
    another drawn, so only the chosen mutation costs a parse."""
    found = mutate.sites(source, unit.first, unit.last, kinds, checked=False)
    while found:
        kind = rng.choice(sorted({m.kind for m in found}))
        mutation = rng.choice([m for m in found if m.kind == kind])
        try:
            mutate.apply(source, mutation)
        except mutate.Mutant:
            found.remove(mutation)
            continue
        return mutation
    return None


def choose(files: Iterable[tuple[str, str]], *, count: int, seed: int, hard: bool, used: Iterable[str] = (),
           kinds: Sequence[str] | None = None, id_prefix: str, label_of: Any = None,
           meta: dict[str, Any] | None = None) -> list[Pair]:
    """Up to ``count`` pairs from ``files`` ((rel, text), any order), none on a used ``rel::name``."""
    wanted = tuple(kinds) if kinds else (mutate.ALL_KINDS if hard else mutate.TOKEN_KINDS)
    if not hard and set(wanted) - set(mutate.TOKEN_KINDS):
        raise ValueError("functions take only the token kinds (compare, boolop, return-bool, number); use --hard "
                         "for the others")
    taken = set(used)
    sources = dict(sorted(files))
    units: list[Unit] = []
    for rel, text in sources.items():
        if hard:
            unit = file_unit(rel, text)
            units.extend([unit] if unit else [])
        else:
            units.extend(function_units(rel, text))
    rng = random.Random(seed)
    rng.shuffle(units)
    pairs: list[Pair] = []
    for unit in units:
        if len(pairs) >= count:
            break
        if unit.key in taken:
            continue
        mutation = _pick(sources[unit.rel], unit, wanted, rng)
        if mutation is None:
            continue
        digest = hashlib.sha256(unit.key.encode()).hexdigest()[:6]
        stem = slug(PurePosixPath(unit.rel).with_suffix("").as_posix(), 30)
        base = f"{id_prefix}-{stem}-{slug(unit.name, 30)}-{digest}" if unit.name else f"{id_prefix}-{stem}-{digest}"
        label = label_of(unit.rel) if label_of else unit.rel
        pairs.append(make_pair(sources[unit.rel], unit, mutation, id_base=base, hard=hard, label=label,
                               meta={**(meta or {}), "seed": seed}))
        taken.add(unit.key)
    return pairs
