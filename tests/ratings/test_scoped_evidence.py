"""Issue 29, item 3, the pure parts: a scoped key's verdicts count on its own collections' ratings
(a quarter on its other collections, as any other collection's verdicts) and on none outside its
scope, not even in the raw counts that decide a bench; and the explorer pool a key's reach is made
of holds whoever may be drawn as an explorer on the collection, with images or without."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.engine.ratings import Evidence, rate, review
from benchwarmers_mcp.engine.seating import explorer_pool
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.models import ModelRecord


def wrong(n: int, scope: tuple[str, ...] | None) -> Evidence:
    """``n`` confidently wrong verdicts on x's seats of bench/fast."""
    return Evidence("x", "panel", "bench/fast", "general", 0, n, n, 0, 0.0, scope)


def test_a_scoped_verdict_moves_only_its_keys_collections() -> None:
    scoped, mixed = [wrong(8, ("fast",))], [wrong(8, ("fast", "core"))]
    assert rate("x", scoped, collection="bench/fast").weight == 8
    on_core = rate("x", scoped, collection="bench/core")
    assert (on_core.weight, on_core.counts, on_core.wrong_verdicts) == (0, {}, 0), "left out whole"
    assert rate("x", mixed, collection="bench/core").weight == 8 * 0.25, "the key's other collection: a quarter"
    assert rate("x", scoped, collection="").weight == 8, "the rating over everything counts every verdict"
    anyone = rate("x", [wrong(8, None)], collection="bench/core")
    assert anyone.weight == 8 * 0.25 and anyone.wrong_verdicts == 8

    # so a review of core raises no bench from them, where the same verdicts unscoped bench x
    assert review("core", ("x", "y"), (), {"x": on_core, "y": rate("y", [], collection="bench/core")}) == []
    benched = review("core", ("x", "y"), (), {"x": anyone, "y": rate("y", [], collection="bench/core")})
    assert [(s.kind, s.alias, s.auto) for s in benched] == [("bench", "x", True)]


def model(alias: str, **fields: Any) -> ModelRecord:
    return ModelRecord(alias, alias, "e", alias, **fields)


def test_the_explorer_pool_is_who_may_ever_sit_as_an_explorer() -> None:
    models = [model("gen"), model("blind-light", role="light"), model("seeing-light", role="light", vision=True),
              model("eyes", role="vision"), model("coder", role="code"), model("painter", role="image"),
              model("adhoc", ad_hoc=True), model("gone", retired_at=1.0)]
    pool = {name: [m.alias for m in explorer_pool(Collection(name, ("gen",), shape=shape), models)]
            for name, shape in (("plain", ""), ("review", "review"), ("quick", "quick"), ("image", "image"))}
    assert pool == {
        "plain": ["gen", "seeing-light", "eyes"],  # general text; with images, whoever can see
        "review": ["gen", "coder"],
        "quick": ["gen", "blind-light", "seeing-light"],
        "image": ["painter"],
    }
