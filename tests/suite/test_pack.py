"""The starter pack as shipped, and its generator: deterministic for a seed."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from benchwarmers_mcp.suite import library

ROOT = Path(__file__).resolve().parents[2]
NUMBERED = re.compile(r"^\s*(\d+) \| (.*)$")


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_starter_pack", ROOT / "scripts" / "make_starter_pack.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_starter_pack", module)
    spec.loader.exec_module(module)
    return module


def code(prompt: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in map(NUMBERED.match, prompt.splitlines()) if m}


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_shipped_pack_has_thirty_valid_live_tasks(tmp_path: Path):
    catalog = library.catalog_sync(tmp_path, library.PACK_DIR)
    entries = list(catalog.entries.values())
    assert len(entries) >= 30 and all(e.task is not None and e.origin == "pack" for e in entries)
    assert len(catalog.live()) == len(entries)
    notice = (library.PACK_DIR / "NOTICE").read_text()
    assert "Python Software Foundation" in notice and "PSF License" in notice
    assert "PYTHON SOFTWARE FOUNDATION LICENSE" in (library.PACK_DIR / "LICENSE-PSF.txt").read_text()


def test_each_bug_differs_from_its_control_on_its_fault_line_only(tmp_path: Path):
    catalog = library.catalog_sync(tmp_path, library.PACK_DIR)
    bugs = [t for t in catalog.live() if t.kind == "bug"]
    assert len(bugs) >= 10
    for bug in bugs:
        control = catalog.task(bug.pair)
        assert control.kind == "control" and control.pair == bug.id
        shown_bug, shown_control = code(bug.prompt), code(control.prompt)
        changed = {n for n in shown_control if shown_bug.get(n) != shown_control[n]}
        line = bug.source["line"]
        if bug.source["detail"] and "deleted" in bug.source["detail"]:
            assert min(changed) == line
        else:
            assert changed == {line}, bug.id
        assert re.search(bug.must_find[0].regex or "", f"fault: line {line}")


def test_claims_are_half_true_and_their_truth_holds(tmp_path: Path):
    catalog = library.catalog_sync(tmp_path, library.PACK_DIR)
    claims = [t for t in catalog.live() if t.shape == "claim"]
    assert len(claims) >= 8 and sum(t.truth is True for t in claims) == sum(t.truth is False for t in claims)
    for task in claims:
        entry = catalog.entry(task.id)
        text = (entry.folder / "fixtures" / task.attach[0]).read_text()
        names = re.findall(r"`([^`]+)`", task.prompt.split("\n", 1)[0])
        kind = task.source["claim"]
        if kind in ("calls", "raises"):
            assert (re.search(rf"\b{re.escape(names[1])}\b", text) is not None) is task.truth, task.id
        elif kind in ("while", "yield"):
            assert (re.search(rf"\b{kind}\b", text) is not None) is task.truth, task.id
        else:
            param, value = names[1], names[2]
            assert (re.search(rf"\b{param}\s*=\s*{re.escape(value)}\b", text) is not None) is task.truth, task.id
        assert library.prompt_sync(entry, {}).count("===== FILE: ") == 1


def test_the_generator_writes_the_same_bytes_for_the_same_seed(tmp_path: Path):
    make = generator()
    first, other = tmp_path / "a", tmp_path / "c"
    make.write_pack(first, 5, 3, 2)
    kept = tree(first)
    assert len([p for p in first.iterdir() if p.is_dir()]) == 8
    make.write_pack(other, 6, 3, 2)
    assert tree(other) != kept
    make.write_pack(other, 5, 3, 2)  # the same seed again, over an old pack: nothing of the old one is left
    assert tree(other) == kept
