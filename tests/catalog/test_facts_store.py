"""Facts in the store: each source keeps its own say, the highest wins, and the model row carries
the winners (what seating, route mode and merging read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchwarmers_mcp.store import Database, facts, migrations, models
from benchwarmers_mcp.store.facts import Layer
from benchwarmers_mcp.store.models import ModelRecord
from tests.kits.store import store_of

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(home: Path):
    async with store_of(home) as database:
        yield database


async def winners(db: Database, alias: str) -> dict[str, tuple[object, str]]:
    known = facts.effective((await facts.rows_for(db, [alias]))[alias])
    return {f: (k.winner.value, k.winner.source) for f, k in known.items()}


async def test_precedence_from_another_provider_up_to_the_user(db: Database) -> None:
    layers = [Layer("catalog_other", {"context_window": 1000, "max_output": 100, "tools": True, "knowledge": "2024-01"},
                    "elsewhere", "x/m"),
              Layer("catalog", {"context_window": 2000, "tools": True}, "served by p", "p/m"),
              Layer("listing", {"context_window": 3000}, "p's listing")]
    await models.register(db, ModelRecord("m", "m", "p", "m", context_window=9000), layers)
    assert await winners(db, "m") == {"context_window": (9000, "user"), "max_output": (100, "catalog_other"),
                                      "tools": (True, "catalog"), "knowledge": ("2024-01", "catalog_other")}
    row = await models.get(db, "m")
    assert (row.context_window, row.max_output, row.tools, row.vision) == (9000, 100, True, None)

    await models.update(db, "m", context_window=None)  # the user clears theirs: the listing shows through
    assert (await models.get(db, "m")).context_window == 3000
    async with db.transaction() as tx:
        await facts.learn(tx, "m", "context_window", 2500, "upstream 400: maximum context length is 2500 tokens")
        await facts.learn(tx, "m", "tools", False, "upstream 400: m does not support tools")
        await facts.recompute(tx, "m")
    row = await models.get(db, "m")
    assert (row.context_window, row.tools) == (2500, False)  # learned beats listing and catalog
    await models.update(db, "m", tools=True)  # and the user beats what was learned
    assert (await models.get(db, "m")).tools is True
    rows = {(r.fact, r.source): r for r in (await facts.rows_for(db, ["m"]))["m"]}
    assert "does not support tools" in rows["tools", "learned"].evidence
    assert rows["context_window", "catalog"].entry == "p/m"


async def test_a_learned_window_only_lowers(db: Database) -> None:
    await models.register(db, ModelRecord("m", "m", "p", "m"))
    for value in (8000, 12000, 6000, 7000):
        async with db.transaction() as tx:
            await facts.learn(tx, "m", "context_window", value, f"limit {value}")
            await facts.recompute(tx, "m")
    assert (await models.get(db, "m")).context_window == 6000


async def test_a_source_withdrawn_falls_back(db: Database) -> None:
    await models.register(db, ModelRecord("m", "m", "p", "m"), [Layer("catalog", {"vision": True}, "p", "p/m"),
                                                               Layer("catalog_other", {"vision": False}, "q", "q/m")])
    assert (await models.get(db, "m")).vision is True
    await facts.apply(db, {"m": {"catalog": None}})
    assert (await models.get(db, "m")).vision is False
    await facts.apply(db, {"m": {"catalog_other": None}})
    assert (await models.get(db, "m")).vision is None
    assert await facts.matched_entries(db) == {}


async def test_facts_set_before_the_catalog_become_the_users(tmp_path: Path) -> None:
    """The migration: a data folder from before the catalog keeps what its rows said, as the user's.
    The old data folder is made by the store as it was: without the catalog's migration, and with a
    registration that wrote its facts on the model's row alone."""
    path = tmp_path / "old.db"

    async def row_only(*args: object) -> None:
        return None

    with pytest.MonkeyPatch.context() as before:
        before.setattr(migrations, "MIGRATIONS", [m for m in migrations.MIGRATIONS if m[0] != "catalog_001_facts"])
        before.setattr(facts, "record_new", row_only)
        async with Database(path) as db:
            await models.register(db, ModelRecord("old", "old", "e", "old", context_window=4096, tools=True,
                                                  vision=False))
    async with Database(path) as db:
        assert await winners(db, "old") == {"context_window": (4096, "user"), "tools": (True, "user"),
                                            "vision": (False, "user")}
