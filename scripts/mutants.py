"""One-line breaks that a reading of the suite found slipping through (issue 37), each applied to a
copy of the tree and run against the tests that are meant to guard it: caught or missed.

    python scripts/mutants.py            # every break in MUTANTS
    python scripts/mutants.py --quick    # the first of each family (CI runs this)
    python scripts/mutants.py --only chat-object

The copy is the working tree (without .git, .venv and node_modules) in a temporary folder, with
the package's folders linked as the installed package lays them out (``gateway/``, ``web/`` and
``suite/`` inside ``benchwarmers_mcp``) and put first on ``PYTHONPATH``, so the tests import the
broken copy and never this checkout. Exit status 1 when any break is missed or no longer applies
(its text not found: the code moved and the list must follow it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINKED = {"gateway": "gateway", "web": "web", "suite": "suite"}  # as pyproject's package-dir maps them
SKIP = shutil.ignore_patterns(".git", ".venv", "node_modules", "__pycache__", "build", "*.egg-info",
                              "artifacts", "wheels", ".pgenv")


@dataclass(frozen=True)
class Mutant:
    name: str
    family: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTANTS = (
    Mutant("chat-object", "wire", "gateway/openai_chat.py",
           '"object": "chat.completion", ', "",
           ("tests/test_wire_strict.py::test_a_panel_reply_conforms[chat-all-whole]",)),
    Mutant("anthropic-type-role", "wire", "gateway/anthropic.py",
           '"type": "message", "role": "assistant", ', "",
           ("tests/test_wire_strict.py::test_a_panel_reply_conforms[anthropic-all-whole]",)),
    Mutant("responses-sequence", "wire", "gateway/responses.py",
           'return {"type": kind, "sequence_number": sequence, **data}',
           'return {"type": kind, "sequence_number": 0, **data}',
           ("tests/test_wire_strict.py::test_a_panel_reply_conforms[responses-all-streamed]",)),
    Mutant("responses-usage-details", "wire", "gateway/responses.py",
           '"input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}',
           '"input_tokens_details": {"cached_tokens": 0}',
           ("tests/test_wire_strict.py::test_a_panel_reply_conforms[responses-all-whole]",)),
    Mutant("chat-chunk-object", "wire-stream", "gateway/openai_chat.py",
           '"object": "chat.completion.chunk", ', "",
           ("tests/test_wire_strict.py::test_a_panel_reply_conforms[chat-all-streamed]",)),
    Mutant("ollama-done-reason", "wire-stream", "gateway/ollama.py",
           '"done": True, "done_reason": reason, ', '"done": True, ',
           ("tests/test_wire_strict.py::test_a_route_turn_conforms[ollama-streamed]",)),
    Mutant("postgres-writer-lock", "races", "src/benchwarmers_mcp/store/postgres.py",
           'BEGIN_SQL = f"BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK})"', 'BEGIN_SQL = "BEGIN"',
           ("tests/test_store_writer_order.py",)),
    Mutant("quotas-limit-body", "forms", "web/static/quotas.js",
           "body[body.limit] = body.value;", "body[body.limit] = String(body.value);",
           ("tests/e2e/test_dashboard_forms.py",)),
    Mutant("settings-scheduler-times", "forms", "web/static/settings.js",
           "body.times = { [body.job]: body.at ? body.at : null };", "body.times = { [body.job]: null };",
           ("tests/e2e/test_dashboard_forms.py",)),
    Mutant("settings-key-shown", "forms", "web/static/settings.js",
           "document.getElementById(\"new-key-shown\").hidden = false;", "",
           ("tests/e2e/test_dashboard_forms.py",)),
)


def copy_tree(into: Path) -> Path:
    tree = into / "tree"
    shutil.copytree(ROOT, tree, ignore=SKIP, symlinks=True)
    for name, folder in LINKED.items():
        (tree / "src" / "benchwarmers_mcp" / name).symlink_to(tree / folder, target_is_directory=True)
    return tree


def run(mutant: Mutant | None, tests: tuple[str, ...], python: str) -> str:
    """``caught``, ``missed``, or why the break could not be tried; with no mutant, the unbroken
    copy (the control: its guards must pass, or a "caught" would mean nothing)."""
    with tempfile.TemporaryDirectory(prefix="mutant-") as scratch:
        tree = copy_tree(Path(scratch))
        if mutant is not None:
            target = tree / mutant.path
            text = target.read_text()
            if text.count(mutant.old) != 1:
                return f"stale (the text is found {text.count(mutant.old)} times in {mutant.path})"
            target.write_text(text.replace(mutant.old, mutant.new))
        env = {**os.environ, "PYTHONPATH": str(tree / "src") + os.pathsep + str(tree)}
        where = subprocess.run([python, "-c", "import benchwarmers_mcp.gateway as g; print(g.__file__)"],
                               cwd=tree, env=env, capture_output=True, text=True)
        if not where.stdout.startswith(str(tree)):
            return f"not isolated (the tests would import {where.stdout.strip() or where.stderr[-200:]})"
        done = subprocess.run([python, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
                               *tests], cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode == 1:
            return "caught"
        if done.returncode == 0:
            return "missed"
        return f"error (pytest exited {done.returncode}: {done.stdout[-300:]}{done.stderr[-300:]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first break of each family only")
    parser.add_argument("--only", action="append", default=[], help="a break by name (repeatable)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    if args.quick:
        seen: set[str] = set()
        chosen = [m for m in chosen if not (m.family in seen or seen.add(m.family))]
    width = max(len(m.name) for m in chosen)
    guards = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
    control = run(None, guards, args.python)
    if control != "missed":  # the guards, unbroken, must pass
        print(f"the guards fail on the unbroken tree: {control}")
        return 1
    print(f"{'(no break)':<{width}}  {'':<40}  the {len(guards)} guards pass", flush=True)
    bad = 0
    for mutant in chosen:
        outcome = run(mutant, mutant.tests, args.python)
        bad += outcome != "caught"
        print(f"{mutant.name:<{width}}  {mutant.path:<40}  {outcome}", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} breaks caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
