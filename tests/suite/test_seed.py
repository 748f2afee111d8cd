"""Planting on a small repository through the admin API: bug tasks whose fault line really differs from
the original, controls that are the original, nothing planted twice, drafts until promoted."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.suite import library
from tests.suite.kit import app_client

NUMBERED = re.compile(r"^\s*(\d+) \| (.*)$")


def function(name: str, n: int) -> str:
    body = "\n".join(f"    if value > {i} and flag:\n        total += {i}\n    elif value == {i}:\n"
                     f"        return True" for i in range(1, n))
    return f"def {name}(value, flag):\n    total = 0\n{body}\n    return total < 100\n"


def make_repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "core.py").write_text("\n\n".join(function(f"rule_{i}", 4) for i in range(6)))
    (root / "pkg" / "tiny.py").write_text("def small(x):\n    return x < 1\n")
    (root / "tests" / "test_core.py").write_text(function("test_rule", 4))
    (root / "pkg" / "test_helpers.py").write_text(function("helper", 4))
    big = "\n\n".join(textwrap.dedent(function(f"step_{i}", 5)) for i in range(10))
    (root / "pkg" / "big.py").write_text(big)
    return root


def code_of(prompt: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in map(NUMBERED.match, prompt.splitlines()) if m}


@pytest.mark.anyio
async def test_seeding_plants_real_faults_beside_true_controls(settings: Settings, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    async with app_client(settings) as client:
        added = await client.post("/api/suite/repos", json={"name": "app", "path": str(repo)})
        assert added.status_code == 200, added.text
        assert (await client.get("/api/suite/repos")).json()["repos"] == [{"name": "app", "path": str(repo)}]
        reply = await client.post("/api/suite/seed", json={"repo": "app", "count": 4, "seed": 3})
        assert reply.status_code == 200, reply.text
        created = reply.json()["created"]
        assert len(created) == 8 and all(t["draft"] for t in created)
        catalog = library.catalog_sync(settings.home)
        bugs = [catalog.task(t["id"]) for t in created if t["kind"] == "bug"]
        units = set()
        for bug in bugs:
            control = catalog.task(bug.pair)
            source = bug.source
            assert source["rel"] not in ("tests/test_core.py", "pkg/test_helpers.py", "pkg/tiny.py")
            assert source["mutation"] in ("compare", "boolop", "return-bool", "number")
            original = (repo / source["rel"]).read_text().splitlines()
            shown_bug, shown_control = code_of(bug.prompt), code_of(control.prompt)
            line = source["line"]
            assert shown_control == {n: original[n - 1] for n in shown_control}  # the control is the original
            assert shown_bug[line] != original[line - 1]  # the fault line really differs ...
            assert {n for n in shown_bug if shown_bug[n] != original[n - 1]} == {line}  # ... and only it
            assert re.search(bug.must_find[0].regex or "", f"fault: line {line}")
            assert bug.prompt.replace(bug.prompt.split("```python")[1], "") == \
                control.prompt.replace(control.prompt.split("```python")[1], "")  # same words around the code
            units.add((source["rel"], source["function"]))
        assert len(units) == 4
        listed = (await client.get("/api/suite/tasks")).json()
        assert not any(t["id"].startswith("seed-app") for t in listed["tasks"])  # drafts are not listed ...
        with_drafts = (await client.get("/api/suite/tasks", params={"drafts": "1"})).json()
        assert sum(t["id"].startswith("seed-app") for t in with_drafts["tasks"]) == 8  # ... unless asked

        again = (await client.post("/api/suite/seed", json={"repo": "app", "count": 50, "seed": 3})).json()
        again_units = {(t["unit"]) for t in again["created"]}
        assert again_units and not again_units & {f"{rel}::{name}" for rel, name in units}  # never twice
        third = (await client.post("/api/suite/seed", json={"repo": "app", "count": 5, "seed": 9})).json()
        assert third["created"] == [] and "nothing left" in third["note"]

        first = bugs[0].id
        promoted = await client.post("/api/suite/promote", json={"id": first})
        assert promoted.status_code == 200 and promoted.json()["task"]["draft"] is False
        assert first in {t["id"] for t in (await client.get("/api/suite/tasks")).json()["tasks"]}
        raw = json.loads((library.tasks_dir(settings.home) / first / "task.json").read_text())
        assert "draft" not in raw


@pytest.mark.anyio
async def test_hard_seeding_takes_whole_files_and_gives_no_hint(settings: Settings, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    async with app_client(settings) as client:
        await client.post("/api/suite/repos", json={"name": "app", "path": str(repo)})
        created = (await client.post("/api/suite/seed", json={"repo": "app", "count": 3, "hard": True,
                                                              "seed": 1})).json()["created"]
        # core.py and big.py are 100-400 lines: one unit each, so two pairs at most
        assert {t["unit"] for t in created} == {"pkg/core.py::(file)", "pkg/big.py::(file)"}
        bug = library.catalog_sync(settings.home).task(next(t["id"] for t in created if t["kind"] == "bug"))
        assert "kinds" not in bug.prompt and bug.source["hard"] is True
        assert min(code_of(bug.prompt)) == 1


@pytest.mark.anyio
async def test_seeding_refuses_what_it_cannot_do(settings: Settings, tmp_path: Path):
    async with app_client(settings) as client:
        missing = await client.post("/api/suite/repos", json={"name": "app", "path": str(tmp_path / "nowhere")})
        assert missing.status_code == 400 and "no folder" in missing.json()["error"]["message"]
        relative = await client.post("/api/suite/repos", json={"name": "app", "path": "src/app"})
        assert relative.status_code == 400 and "full path" in relative.json()["error"]["message"]
        unknown = await client.post("/api/suite/seed", json={"repo": "nope"})
        assert unknown.status_code == 404 and "bench suite repos add nope" in unknown.json()["error"]["message"]
        await client.post("/api/suite/repos", json={"name": "app", "path": str(make_repo(tmp_path / "r"))})
        kinds = await client.post("/api/suite/seed", json={"repo": "app", "kinds": ["args"]})
        assert kinds.status_code == 400 and "--hard" in kinds.json()["error"]["message"]
