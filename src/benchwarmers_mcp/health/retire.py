"""The ``deprecations`` job: snapshot every endpoint's listing, raise or clear the registration
alerts, then apply the auto-retire rules (``rules.py``) with their confirming calls and the
connection guard, and keep the retiring, retired and connection-held alerts true.

Evidence is what the model said: a probe the bench never sent (a rest, a pause, a limit) is none.
A 402 or a 403 pauses its whole connection for an hour, so the confirming call is sent past that
pause (one call, marked measurement); and since such a failure may be the account's rather than
the model's, a confirmation that repeats it asks one *witness* on the same connection (a model
that answered before): if the witness fails the same way, the connection is held, not the model
retired."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from typing import Any

from benchwarmers_mcp.clock import day_of
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import ProviderError
from benchwarmers_mcp.health import alerts
from benchwarmers_mcp.health.probes import Prober
from benchwarmers_mcp.health.rules import (
    DayOf,
    Decision,
    Evidence,
    Outcome,
    guard,
    judge,
    listed,
    missing_since,
)
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.health import Listing
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.hubs.sync import follow_all
from benchwarmers_mcp.upstream.listing import served_names

LOOK_BACK = 30 * 86400.0
PAUSING = ("paywalled", "entitlement")  # failures whose call pauses its whole connection (402, 403)


@dataclass
class Report:
    listed: dict[str, str] = field(default_factory=dict)  # endpoint -> "N served" or its error
    retired: list[dict[str, Any]] = field(default_factory=list)
    held: dict[str, list[str]] = field(default_factory=dict)
    watching: list[dict[str, Any]] = field(default_factory=list)
    confirmed_alive: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"listed": self.listed, "retired": self.retired, "held": self.held, "watching": self.watching,
                "answered_confirmation": self.confirmed_alive}


async def snapshot(ctx: Context, endpoint: Endpoint, now: float) -> Listing:
    """One listing call, kept in the store whatever it says."""
    try:
        names = await served_names(ctx, endpoint)
    except ProviderError as e:
        listing = Listing(endpoint.name, now, False, (), e.message)
    else:
        listing = Listing(endpoint.name, now, True, tuple(names))
    await health_store.save_listing(ctx.db, listing)
    return listing


async def evidence(ctx: Context, models: list[ModelRecord], now: float) -> dict[str, Evidence]:
    """Everything the rules read, per model: its clock's start, life probes, last answer from any
    source, when its listing stopped naming it, and a 404 seen on live traffic."""
    starts = await health_store.clock_starts(ctx.db)
    answers = await health_store.last_answers(ctx.db)
    outcomes = await health_store.life_outcomes(ctx.db, now - LOOK_BACK)
    pending = {p["alias"]: p for p in await limit_store.pending_retirements(ctx.db)}
    connections = {e.name: e.connection_name for e in await endpoint_store.list_all(ctx.db)}
    listings: dict[str, list[tuple[float, bool, tuple[str, ...]]]] = {}
    out: dict[str, Evidence] = {}
    for m in models:
        if m.endpoint not in listings:
            listings[m.endpoint] = [(s.at, s.ok, s.served) for s in
                                    await health_store.listings(ctx.db, m.endpoint, now - LOOK_BACK)]
        since = starts.get(m.alias, 0.0)
        seen = [Outcome(r.at, r.answered > 0, r.failure, r.detail, r.kind) for r in outcomes.get(m.alias, [])
                if r.answered or r.refused < r.n]  # a probe the bench never sent says nothing of the model
        gone = pending.get(m.alias)
        if gone is not None:
            seen.append(Outcome(gone["pending_retire_at"], False, "structural", gone["pending_why"] or "", "traffic"))
            seen.sort(key=lambda o: o.at)
        out[m.alias] = Evidence(m.alias, connections.get(m.endpoint, m.endpoint), since, tuple(seen),
                                answers.get(m.alias), missing_since(m.served, listings[m.endpoint], since))
    return out


async def registration_alerts(ctx: Context, models: list[ModelRecord], latest: dict[str, Listing],
                              found: dict[str, Evidence], now: float) -> None:
    """An endpoint that no longer lists a registered model: say so (with what it lists that is
    close), or clear the alert once it lists it again."""
    for m in models:
        listing = latest.get(m.endpoint)
        if listing is None or not listing.ok:
            continue
        if listed(m.served, listing.served):
            await alert_store.clear_one(ctx.db, "registration", m.alias, "listed again", now)
            continue
        close = difflib.get_close_matches(m.served, listing.served, n=3, cutoff=0.5)
        since = found[m.alias].missing_since if m.alias in found else None
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        await alert_store.raise_one(
            ctx.db, "registration", m.alias, f"{m.endpoint} no longer lists {m.served} (registered as {m.alias}){hint}",
            {"endpoint": m.endpoint, "served": m.served, "close": close, "missing_since": since}, now)


async def deprecations(ctx: Context) -> dict[str, Any]:
    """Hubs' renames followed first (``upstream/hubs/sync.py``: a model a hub renamed keeps its alias
    under the new name), then listings, then the rules: the morning job."""
    await follow_all(ctx)
    now = ctx.clock.now()
    report = Report()
    models = await model_store.list_all(ctx.db, include_retired=False)
    used = {m.endpoint for m in models}
    latest: dict[str, Listing] = {}
    for endpoint in await endpoint_store.list_all(ctx.db):
        if endpoint.name in used:
            latest[endpoint.name] = listing = await snapshot(ctx, endpoint, now)
            report.listed[endpoint.name] = f"{len(listing.served)} served" if listing.ok else listing.error[:200]
    found = await evidence(ctx, models, now)
    await registration_alerts(ctx, models, latest, found, now)
    await apply_rules(ctx, models, found, report)
    return report.as_dict()


async def hold(ctx: Context, connection: str, aliases: list[str], now: float) -> None:
    """The connection guard's alert: the models it holds, and one endpoint of the connection to test."""
    first = await model_store.find(ctx.db, aliases[0]) if aliases else None
    await alert_store.raise_one(
        ctx.db, "connection_held", connection,
        f"every model on {connection} is down ({', '.join(aliases)}): the connection is the likely "
        "problem, so none was retired; check its key and service, or retire them all",
        {"models": aliases, "endpoint": first.endpoint if first else connection}, now)


async def apply_rules(ctx: Context, models: list[ModelRecord], found: dict[str, Evidence], report: Report) -> None:
    now = ctx.clock.now()
    decisions = [judge(e, now, _day_of(ctx)) for e in found.values()]
    decisions, held = guard(decisions, found)
    report.held = held
    for connection in {e.connection for e in found.values()}:
        if connection in held:
            await hold(ctx, connection, held[connection], now)
        else:
            await alert_store.clear_one(ctx.db, "connection_held", connection, "not every model is down", now)
    by_alias = {m.alias: m for m in models}
    prober = Prober(ctx)
    for d in decisions:
        if d.action == "confirm" and d.connection in report.held:  # a witness found the connection down
            d = replace(d, action="held")
        elif d.action == "confirm":
            d = await _confirm(ctx, prober, by_alias[d.alias], d, found, report)
        await _act(ctx, by_alias[d.alias], d, report)


def _day_of(ctx: Context) -> DayOf:
    return lambda moment: day_of(ctx.clock, moment)


async def _confirm(ctx: Context, prober: Prober, model: ModelRecord, d: Decision, found: dict[str, Evidence],
                   report: Report) -> Decision:
    """One more call: the same failure retires the model (unless a witness says the connection is the
    problem); an answer keeps it; another failure leaves it to the slower rules."""
    [row] = await prober.probe(model, "confirm")
    assert d.failure is not None
    e = found[d.alias]
    if row.failure == d.failure.failure:
        if row.failure in PAUSING and await _connection_fails(ctx, prober, model, row.failure, found, report):
            return replace(d, action="held", why=f"{d.why} (so did another model on {d.connection})")
        return replace(d, action="retire", why=f"{d.why} (confirmed by a second call)")
    if row.answered:
        report.confirmed_alive.append(model.alias)
        return replace(d, action="keep", why="answered the confirmation call")
    seen = Outcome(row.at, False, row.failure, row.detail, "confirm")
    now = ctx.clock.now()
    later = judge(replace(e, outcomes=(*e.outcomes, seen)), now, _day_of(ctx))
    return later if later.action != "confirm" else replace(later, action="watch", retires_at=now + 86400.0)


async def _connection_fails(ctx: Context, prober: Prober, model: ModelRecord, failure: str,
                            found: dict[str, Evidence], report: Report) -> bool:
    """A failure that pauses the whole connection (402, 403) may be the account's: ask one witness on
    the same connection, a model that answered since its clock started. True (and the connection
    held) when it fails the same way; False when it answers, fails otherwise, or there is none."""
    e = found[model.alias]
    others = sorted((o for o in found.values() if o.connection == e.connection and o.alias != model.alias
                     and (o.last_answer or 0.0) >= o.since), key=lambda o: -(o.last_answer or 0.0))
    if not others:
        return False
    witness = await model_store.get(ctx.db, others[0].alias)
    [row] = await prober.probe(witness, "witness")
    if row.failure != failure:
        return False
    aliases = sorted({model.alias, witness.alias})
    await hold(ctx, e.connection, aliases, ctx.clock.now())
    report.held[e.connection] = aliases
    return True


async def _act(ctx: Context, model: ModelRecord, d: Decision, report: Report) -> None:
    now = ctx.clock.now()
    if d.action == "retire":
        await retire(ctx, model, d, report, {"rule": d.rule, "why": d.why,
                                             "failure": d.failure.__dict__ if d.failure else None}, now)
    elif d.action == "watch" and d.retires_at is not None:
        await alerts.retiring(ctx.db, model.alias, d.why, d.retires_at, now)
        report.watching.append({"alias": model.alias, "why": d.why, "retires_at": d.retires_at})
    elif d.action == "keep":
        await alert_store.clear_one(ctx.db, "retiring", model.alias, "nothing against it now", now)


async def retire(ctx: Context, model: ModelRecord, d: Decision, report: Report, proof: dict[str, Any],
                 now: float) -> None:
    """Retire automatically: out of its collections (recorded), evidence kept, one alert to restore."""
    why = f"auto-retired ({d.rule}): {d.why}"[:300]
    record = await model_store.retire(ctx.db, model.alias, why, by="auto", rule=d.rule, leave_collections=True,
                                      evidence=proof, now=now)
    left = (await model_store.last_retirement(ctx.db, model.alias) or {}).get("collections", [])
    async with ctx.db.transaction() as tx:
        await alert_store.clear(tx, ("retiring", "model_gone", "registration", "went_paid"), model.alias, "retired",
                                now)
        await alert_store.put(tx, "retired", model.alias, f"{model.alias} was retired automatically: {d.why}"
                              + (f"; it left {', '.join(left)}" if left else ""),
                              {"rule": d.rule, "collections": left, "retired_at": record.retired_at}, now)
    report.retired.append({"alias": model.alias, "rule": d.rule, "why": d.why, "collections": left})


async def retire_all(ctx: Context, connection: str) -> list[str]:
    """The held connection's "Retire all": every model the hold names, retired with its evidence."""
    held = await alert_store.open_of(ctx.db, "connection_held", connection)
    names = list((held.detail if held else {}).get("models") or [])
    report = Report()
    for alias in names:
        model = await model_store.find(ctx.db, alias)
        if model is not None and not model.retired:
            d = Decision(alias, connection, "retire", "connection", f"retired with every model on {connection}")
            await retire(ctx, model, d, report, {"rule": "connection", "held": names}, ctx.clock.now())
    await alert_store.clear_one(ctx.db, "connection_held", connection, "retired all", ctx.clock.now())
    return [r["alias"] for r in report.retired]
