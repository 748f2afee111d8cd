"""The Benchmarks page's data (``GET /api/suite/board``): who to trust (recall against confidently
wrong, with intervals), the bug hunt per model with planted and real bugs apart, and the task x
model matrix over the user's own code (the data folder's tasks, not the pack's nor rebench's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.suite import stats
from tests.suite.kit import add_models, app_client, wait_api_run
from tests.suite.test_runner import pack_tasks
from tests.suite.test_seed import make_repo


@pytest.mark.anyio
async def test_the_matrix_is_the_users_own_code_and_trust_has_intervals(settings: Settings, tmp_path: Path):
    t = pack_tasks()
    fakes = {"no-fault": "simulated/judge?say=no-fault", "line-one": "simulated/judge?say=line1"}
    async with Database(settings.store_target) as db:
        await add_models(db, fakes, endpoint="sim", api="simulated")
    async with app_client(settings) as client:
        await client.post("/api/suite/repos", json={"name": "app", "path": str(make_repo(tmp_path / "repo"))})
        created = (await client.post("/api/suite/seed", json={"repo": "app", "count": 2, "seed": 5})).json()["created"]
        bug = next(c for c in created if c["kind"] == "bug")
        for task in (bug["id"], bug["pair"]):  # one pair promoted; the other stays a draft
            assert (await client.post("/api/suite/promote", json={"id": task})).status_code == 200
        run = await client.post("/api/suite/run", json={"models": list(fakes), "gap": 0, "timeout": 5, "tasks": [
            bug["id"], bug["pair"], t["bug"], t["control"]]})
        assert run.status_code == 200, run.text
        await wait_api_run(client, run.json()["run"]["id"])
        board = (await client.get("/api/suite/board")).json()
    matrix = board["matrix"]
    assert matrix["scope"] == "own" and matrix["models"] == sorted(fakes)
    assert matrix["tasks"] == sorted((bug["id"], bug["pair"]))  # neither the pack's nor the draft pair
    cells = {(c["task"], c["alias"]): c for c in matrix["cells"]}
    assert len(cells) == 4 and cells[bug["pair"], "no-fault"]["latest"] == "clean"
    assert cells[bug["id"], "no-fault"]["latest"] == "missed" and cells[bug["id"], "no-fault"]["good"] == 0
    assert board["tasks"][bug["id"]]["origin"] == "data" and board["tasks"][t["bug"]]["origin"] == "pack"

    trust = {m["alias"]: m for m in board["trust"]}  # over every answer, the pack's too
    one = trust["line-one"]
    assert (one["recall"], one["recall_n"], one["wrong"], one["opportunities"]) == (0.0, 2, 4, 4)
    assert one["confidently_wrong"] == 1.0 and one["confidently_wrong_interval"][1] == 1.0
    assert 0.0 < one["confidently_wrong_interval"][0] < 1.0 and one["recall_interval"][0] == 0.0
    hunt = {m["alias"]: m for m in board["bug_hunt"]}
    assert (hunt["no-fault"]["clean"], hunt["no-fault"]["missed"]) == (2, 2)
    assert hunt["no-fault"]["planted"]["clean"] == 2 and hunt["no-fault"]["real"] is None


def _row(alias: str, task: str, outcome: str | None, *, wrong: int = 0, chances: int = 1) -> dict[str, Any]:
    return {"alias": alias, "task": task, "at": 1.0, "status": "ok", "scored": outcome is not None,
            "outcome": outcome, "reason": "rate limited" if outcome is None else outcome, "invented": 0,
            "chances": chances, "wrong": wrong}


def test_the_bug_hunt_keeps_planted_and_real_bugs_apart():
    tasks = {
        "pack-bug": {"origin": "pack", "shape": "seeded", "kind": "bug"},
        "seed-bug": {"origin": "data", "shape": "seeded", "kind": "bug"},
        "real-bug": {"origin": "data", "shape": "rebench", "kind": "bug"},
        "real-fix": {"origin": "data", "shape": "rebench", "kind": "control"},
        "mined": {"origin": "data", "shape": "claim", "kind": "claim"},
        "mine-draft": {"origin": "data", "shape": "claim", "kind": "claim", "draft": True},
    }
    rows = [_row("a", "pack-bug", "found"), _row("a", "seed-bug", "missed"), _row("a", "real-bug", "wrong line", wrong=1),
            _row("a", "real-fix", "clean"), _row("a", "mined", "found"), _row("b", "real-bug", None)]
    board = stats.board(rows, tasks)
    hunt = {m["alias"]: m for m in board["bug_hunt"]}
    a = hunt["a"]
    assert (a["found"], a["missed"], a["wrong_line"], a["clean"]) == (1, 1, 1, 1)
    assert (a["planted"]["found"], a["planted"]["missed"], a["planted"]["recall"]) == (1, 1, 0.5)
    assert (a["real"]["wrong_line"], a["real"]["clean"], a["real"]["recall"]) == (1, 1, 0.0)
    assert hunt["b"]["planted"] is None and hunt["b"]["real"]["not_a_score"] == 1
    assert [stats.own_code(tasks[t]) for t in tasks] == [False, True, False, False, True, True]
    assert board["matrix"]["tasks"] == ["mined", "seed-bug"]  # own and live (the draft unanswered: left out)
    everything = stats.board(rows, tasks, everything=True)["matrix"]
    assert everything["scope"] == "all" and set(everything["tasks"]) == {"pack-bug", "seed-bug", "real-bug",
                                                                          "real-fix", "mined"}
    assert {m["alias"]: m["not_a_score_why"] for m in board["trust"]}["b"] == {"rate limited": 1}
