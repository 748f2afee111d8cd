"""The house's rules, read from the source: imports point down a floor and never across faces,
and SQL lives only in ``store/`` (docs/ARCHITECTURE.md).

Every ``import`` is checked, those inside functions too: a cycle dodged by an import inside a
function is still a cycle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Where each installed package's source lives (pyproject's package-dir).
SOURCES = {
    "benchwarmers_mcp": ROOT / "src" / "benchwarmers_mcp",
    "benchwarmers_mcp.gateway": ROOT / "gateway",
    "benchwarmers_mcp.web": ROOT / "web",
    "benchwarmers_mcp.suite": ROOT / "suite",
}
FACES = {"app", "gateway", "web", "admin", "mcp", "cli", "__main__"}
FLOORS = {
    **{name: 1 for name in FACES},
    **{name: 2 for name in ("engine", "suite", "health", "scheduler", "backups")},
    **{name: 3 for name in ("upstream", "providers", "catalog", "access", "client")},
    **{name: 4 for name in ("store", "messages", "errors", "settings", "context", "inbound", "streamed", "routes",
                            "judge_keys", "clock", "metrics", "logformat", "__init__")},
}
# The composition root and the processes a command starts: each named, each with its reason.
ALLOWED = {
    ("app", "gateway"): "the app mounts the faces (and renders a refusal in a path's shape)",
    ("app", "mcp"): "the app runs the MCP server's session manager in its lifespan",
    ("app", "web"): "the app serves the dashboard's static files and event feed",
    ("app", "admin"): "the app starts the admin side's workers",
    ("cli", "app"): "`benchwarmers` serve and demo start the app in this process",
    ("cli", "mcp"): "`bench mcp` runs the stdio server, itself a client of a running server",
    ("__main__", "cli"): "`python -m benchwarmers_mcp` is the CLI",
}
# Tests whose subject is SQL itself: the backends' placeholder rewriting, and the kit that resets a
# throwaway PostgreSQL cluster between tests (cluster administration, not the product's data).
# tests whose subject is the store itself: test_store_failures makes the store refuse a row (a
# trigger) and PostgreSQL drop its connections (pg_terminate_backend), which takes SQL; test_store_wal
# grows SQLite's WAL with a table of its own; test_store_writer_order watches pg_locks
SQL_ITSELF = {"test_store_backends.py", "kits/postgres.py", "test_store_failures.py", "test_store_wal.py",
              "test_store_writer_order.py", "test_store_integrity.py"}
# (test_store_integrity: the SQLite file below the store, read or written as a disk would)
SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|TRIGGER)|"
                 r"UPDATE\s+\w+\s+SET)\b", re.IGNORECASE | re.DOTALL)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder)
            if package == "benchwarmers_mcp" and rel.parts[0] in ("gateway", "web", "suite"):
                continue  # a symlink or a leftover: the installed package maps these folders
            if "pack" in rel.parts:
                continue  # the suite's starter pack: review tasks, not the product's code
            parts = [p for p in rel.with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _room(module: str) -> str:
    """The family a module belongs to: ``benchwarmers_mcp.engine.panel`` -> ``engine``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and not parts[1].startswith("__v") else "__init__"


def _imports(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module]
    return [name for name in names if name.startswith("benchwarmers_mcp")]


def _breaches(module: str, path: Path) -> list[str]:
    here = _room(module)
    out = []
    for name in _imports(ast.parse(path.read_text(), str(path))):
        there = _room(name)
        if there == here or (here, there) in ALLOWED:
            continue
        if here not in FLOORS or there not in FLOORS:
            out.append(f"{module} -> {name}: a family with no floor (add it to docs/ARCHITECTURE.md and here)")
        elif FLOORS[there] < FLOORS[here]:
            out.append(f"{module} -> {name}: floor {FLOORS[here]} imports floor {FLOORS[there]}")
        elif here in FACES and there in FACES:
            out.append(f"{module} -> {name}: one face imports another")
    return out


def test_the_source_tree_is_found() -> None:
    rooms = {_room(m) for m in MODULES}
    assert {"engine", "store", "gateway", "admin", "mcp", "cli", "upstream", "access"} <= rooms
    assert len(MODULES) > 100


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_and_never_across_faces(module: str) -> None:
    assert _breaches(module, MODULES[module]) == []


def test_the_rule_catches_an_upward_and_a_sideways_import(tmp_path: Path) -> None:
    upward = tmp_path / "up.py"
    upward.write_text("def f():\n    from benchwarmers_mcp.upstream import caller\n")
    sideways = tmp_path / "side.py"
    sideways.write_text("import benchwarmers_mcp.gateway.face\n")
    assert _breaches("benchwarmers_mcp.store.calls", upward) == [
        "benchwarmers_mcp.store.calls -> benchwarmers_mcp.upstream: floor 4 imports floor 3"]
    assert _breaches("benchwarmers_mcp.admin.models", sideways) == [
        "benchwarmers_mcp.admin.models -> benchwarmers_mcp.gateway.face: one face imports another"]


def _strings(tree: ast.AST) -> list[str]:
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_sql_lives_only_in_the_store() -> None:
    outside = []
    for module, path in MODULES.items():
        if _room(module) == "store":
            continue
        tree = ast.parse(path.read_text(), str(path))
        outside += [f"{module}: {text[:60]!r}" for text in _strings(tree) if SQL.search(text)]
    tests = Path(__file__).parent
    for path in tests.rglob("*.py"):
        if path.resolve() == Path(__file__).resolve() or path.relative_to(tests).as_posix() in SQL_ITSELF:
            continue
        tree = ast.parse(path.read_text(), str(path))
        outside += [f"{path.relative_to(tests)}: {text[:60]!r}" for text in _strings(tree) if SQL.search(text)]
    assert outside == []
