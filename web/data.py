"""What several pages show: the roster (every model with its status, record and last answer),
each model's suite recall, endpoints as the dashboard lists them, and where the first run stands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import roster as engine_roster
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import preferences, stats
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import stats as suite_stats


async def roster(ctx: Context, *, include_retired: bool = True) -> list[dict[str, Any]]:
    """Every model with its status (``engine.roster``: the word, its tone and why), its record and
    when it last answered (from any source, a health check too)."""
    models = await model_store.list_all(ctx.db, include_retired=include_retired)
    endpoints = {e.name: e for e in await endpoint_store.list_all(ctx.db)}
    helped = await stats.helped(ctx.db)
    calls = await stats.answers(ctx.db)
    now = ctx.clock.now()
    statuses = await engine_roster.read(ctx.db, models, now)
    out = []
    for m in models:
        status = statuses[m.alias]
        record = helped.get(m.alias, {"useful": 0, "judged": 0})
        e = endpoints.get(m.endpoint)
        out.append({"alias": m.alias, "served": m.served, "endpoint": m.endpoint,
                    "connection": e.connection_name if e else m.endpoint, "role": m.role, "ad_hoc": m.ad_hoc,
                    "status": status.word, "tone": status.tone, "status_why": status.why, "retired": m.retired,
                    "retired_why": m.retired_why, "retired_at": m.retired_at, "vision": m.vision, "tools": m.tools,
                    "context_window": m.context_window, "max_output": m.max_output,
                    "useful": record["useful"], "judged": record["judged"], "calls": calls.get(m.alias, 0),
                    "last_answer": statuses.answered.get(m.alias)})
    return out


async def suite_recall(ctx: Context) -> dict[str, dict[str, Any]]:
    """Per alias, what the roster's Suite column shows: found of the tasks with something to find,
    recall and its 95% interval (as ``bench suite scores``); a model never scored is absent."""
    out = {}
    for m in suite_stats.scores(await suite_store.score_rows(ctx.db)):
        low, high = m["recall_interval"] or (None, None)
        out[m["alias"]] = {"found": m["found"], "of": m["recall_n"], "recall": m["recall"], "low": low, "high": high,
                           "not_a_score": m["not_a_score"]}
    return out


async def endpoint_rows(ctx: Context) -> list[dict[str, Any]]:
    models = await model_store.list_all(ctx.db)
    default = await default_endpoint(ctx)
    out = []
    for e in await endpoint_store.list_all(ctx.db):
        mine = [m for m in models if m.endpoint == e.name]
        source = ctx.keys.source(e.key_name) if e.key_name else None
        out.append({"name": e.name, "base_url": e.base_url, "api": e.api, "kind": e.kind, "key_name": e.key_name,
                    "key_source": source, "connection": e.connection_name, "default": e.name == default,
                    "models": [m.alias for m in mine if not m.retired],
                    "retired": [m.alias for m in mine if m.retired]})
    return out


async def default_endpoint(ctx: Context) -> str | None:
    """The chosen default, else the first endpoint by name (so there is one once there is any)."""
    chosen = await preferences.default_endpoint(ctx.db)
    if chosen:
        return chosen
    first = await endpoint_store.list_all(ctx.db)
    return first[0].name if first else None


@dataclass(frozen=True)
class FirstRun:
    """Where the first run stands: step 1 endpoint, 2 models, 3 collection, 4 ask; 0 when done."""

    step: int
    counts: dict[str, int]

    @property
    def done(self) -> bool:
        return self.step == 0

    def state(self, n: int) -> str:
        return "done" if self.done or n < self.step else "now" if n == self.step else "later"


def first_run(counts: dict[str, int]) -> FirstRun:
    for step, name in ((1, "endpoints"), (2, "on_bench"), (3, "collections"), (4, "panels")):
        if not counts[name]:
            return FirstRun(step, counts)
    return FirstRun(0, counts)
