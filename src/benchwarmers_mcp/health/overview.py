"""Each model's health as the admin API (``GET /api/health``) and the dashboard's Health page show
it: status (``engine.roster``'s, the word every page shows, and why), last answer, latest probe and
failure, speed, learned facts, and a 14-day outcome strip.
Reads only; the probes and rules that write the history are ``probes.py`` and ``retire.py``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from benchwarmers_mcp.clock import Clock, day_of, iso
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import roster
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store.health import LIFE_KINDS, ProbeRow
from benchwarmers_mcp.store.models import ModelRecord

STRIP_DAYS = 14


def row_view(r: ProbeRow) -> dict[str, Any]:
    return {"id": r.id, "at": iso(r.at), "kind": r.kind, "prompt": r.prompt, "n": r.n, "answered": r.answered,
            "refused": r.refused, "errors": r.errors, "timeouts": r.timeouts, "failure": r.failure,
            "detail": r.detail, "p50_s": r.p50_s, "p95_s": r.p95_s, "min_s": r.min_s, "max_s": r.max_s,
            "chars_per_s": r.chars_per_s, "tokens_per_s": r.tokens_per_s, "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out, "reasoning": r.reasoning, "learned": r.learned}


def strip(rows: list[ProbeRow], clock: Clock, now: float) -> list[dict[str, Any]]:
    """Probe calls answered, failed and not sent (refused by the bench's own pacing) per local day,
    the last 14 days, oldest first (the Health page's outcome chart)."""
    today = day_of(clock, now)
    days = [today - timedelta(days=n) for n in range(STRIP_DAYS - 1, -1, -1)]
    counts = {d: [0, 0, 0] for d in days}
    for r in rows:
        found = counts.get(day_of(clock, r.at))
        if found is not None:
            found[0] += r.answered
            found[1] += r.n - r.answered - r.refused
            found[2] += r.refused
    return [{"date": d.isoformat(), "answered": a, "failed": f, "not_sent": n} for d, (a, f, n) in counts.items()]


def speed(latest: dict[tuple[str, str], ProbeRow], alias: str) -> dict[str, Any]:
    """The latest tiny and large probe's figures (the Health page's speed columns)."""
    out: dict[str, Any] = {}
    for prompt in ("tiny", "large"):
        r = latest.get((alias, prompt))
        if r is not None:
            out[prompt] = {"p50_s": r.p50_s, "p95_s": r.p95_s, "chars_per_s": r.chars_per_s,
                           "tokens_per_s": r.tokens_per_s, "at": iso(r.at)}
    return out


async def report(ctx: Context, models: list[ModelRecord]) -> list[dict[str, Any]]:
    clock = ctx.clock
    now = clock.now()
    rows = await health_store.probes(ctx.db, since=now - STRIP_DAYS * 86400.0, limit=100_000)
    latest = await health_store.latest_probes(ctx.db)
    learned = await health_store.learned_facts(ctx.db, [m.alias for m in models])
    retiring = {a.subject: a for a in await alert_store.open_alerts(ctx.db, dismissed=True) if a.kind == "retiring"}
    statuses = await roster.read(ctx.db, models, now)
    out = []
    for m in models:
        mine = [r for r in rows if r.alias == m.alias]
        life = [r for r in mine if r.kind in LIFE_KINDS and (r.answered or r.refused < r.n)]
        failed = next((r for r in life if r.failure), None)
        watch = retiring.get(m.alias)
        out.append({"alias": m.alias, "served": m.served, "endpoint": m.endpoint, "ad_hoc": m.ad_hoc,
                    "role": m.role, **statuses[m.alias].to_json(),
                    "retiring": {"retires_at": watch.detail.get("retires_at"), "days": watch.detail.get("days"),
                                 "why": watch.detail.get("why")} if watch else None,
                    "last_answer": iso(statuses.answered.get(m.alias)), "last_probe": row_view(mine[0]) if mine else None,
                    "latest_failure": row_view(failed) if failed else None, "speed": speed(latest, m.alias),
                    "learned": learned.get(m.alias, {}), "days": strip(mine, clock, now)})
    return out


