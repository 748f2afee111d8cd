"""Shared set-up for the judging tests (no tests here): a bench whose seats give fixed answers, two
of them making the same claim, and small readers of what the store and ``/bench`` say of a panel.

``core`` seats alpha, beta and gamma (member1..3, in that order); ``other`` seats gamma alone (with
explorers from the rest). alpha and beta both say ``cache.py`` line 12 never expires its entries
(one claim group); each also makes a claim of its own, and gamma makes one nobody else does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from benchwarmers_mcp.store import verdicts
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.seed import seed
from tests.kits.store import in_store

ANSWERS = {
    "alpha": "- `cache.py:12` never expires the entries.\n- The SQL in `users.py:40` is built by string formatting.",
    "beta": "1. `cache.py` line 12 never expires its entries.\n2. `retry()` in `net.py` sleeps forever after a 500.",
    "gamma": "Error-free, except `main.py:3` imports `os` and never uses it.",
}
PROMPT = "Review this change to the cache."


def answering(text: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {"role": "assistant", "content": text}


def seed_judging(home: Path, upstream: str, fake: FakeUpstream, **extra: str) -> None:
    """The three answering models (and ``extra``: alias -> served name, for failing ones)."""
    for alias, text in ANSWERS.items():
        fake.responders[alias] = answering(text)
    seed(home, base_url=upstream, served={**{a: a for a in ANSWERS}, **extra},
         collections={"core": ["alpha", "beta", "gamma"], "other": ["gamma"]})


def ask(http: httpx.Client, base: str, collection: str = "core", headers: dict[str, str] | None = None,
        prompt: str = PROMPT) -> dict[str, Any]:
    """Ask a collection over plain HTTP; its ``bench`` field."""
    reply = http.post(base + "/v1/chat/completions", headers=headers or {}, timeout=60,
                      json={"model": f"bench/{collection}", "messages": [{"role": "user", "content": prompt}]})
    assert reply.status_code == 200, reply.text
    return dict(reply.json()["bench"])


def seat_calls(bench: dict[str, Any]) -> dict[str, str]:
    """alias -> call id of a panel's seats."""
    return {s["alias"]: s["call"] for s in bench["seats"]}


def shared_group(panel: dict[str, Any]) -> dict[str, Any]:
    """The claim group more than one seat made, from ``GET /bench/panels/{id}``."""
    (group,) = [g for g in panel["claims"] if len(g["seats"]) > 1]
    return group


def lines_of(home: Path, call: str) -> list[verdicts.VerdictLine]:
    """Every verdict line on ``call``, read from the store the way another process would."""
    return in_store(home, lambda db: verdicts.log(db, call))


def panel_evidence(http: httpx.Client, base: str, headers: dict[str, str] | None = None) -> dict[str, dict[str, int]]:
    """Per model on bench/core: its panel verdicts' counts (good, bad, wrong, real) from ``GET /bench/ratings``."""
    reply = http.get(base + "/bench/ratings", params={"collection": "core"}, headers=headers or {})
    assert reply.status_code == 200, reply.text
    return {m["alias"]: m["evidence"].get("panel") or {} for m in reply.json()["models"]}


def wrong_counts(http: httpx.Client, base: str, headers: dict[str, str] | None = None) -> dict[str, int]:
    """Per model on bench/core: the panel verdicts with a false claim."""
    return {alias: counts.get("wrong", 0) for alias, counts in panel_evidence(http, base, headers).items()}
