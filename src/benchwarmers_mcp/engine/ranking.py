"""Who may take a route turn, and in which order.

Members only, never explorers. A member is left out (and listed in ``bench.skipped``) when it is
not registered, retired or ad hoc; a vision specialist and the request has no images; its endpoint
does not speak chat completions; the request has tools and the member is known *not* to call them;
the request has images and it cannot see; or its known window is under the estimate (tool
definitions, calls and results counted).

Unknown is not "cannot": a member whose tool support is unknown takes a tool request after the
members known to call tools (``Lineup.later``). If it answers that it cannot, the caller learns
that (``catalog/learned.py``) and the turn fails over to the next member.

The order, best first: each member's rating on the collection's route calls (``engine.ratings``:
the posterior mean, from verdicts on route calls and, weighed less, on the collection's panels and
elsewhere, suite scores included), then the suite hook's findings, then collection order; resting
members last and the ``later`` members after the rest. The share of exploration: with a probability
of ``rotation``, a new (or re-ranked) conversation goes to the least recently used member instead,
so every member's record keeps growing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from collections.abc import Collection as AbstractSet
from dataclasses import dataclass, field

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.errors import BadRequest, NobodySeatable, TooLarge
from benchwarmers_mcp.messages import Ask, estimate_tokens
from benchwarmers_mcp.store import Database, verdicts
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.models import ModelRecord

CHAT_APIS = ("chat", "simulated")
SIZE = "size"

SuiteHook = Callable[[list[str]], Awaitable[dict[str, int]]]


@dataclass
class Lineup:
    """The members that can take this turn (collection order) and the ones left out."""

    eligible: list[ModelRecord]
    skipped: list[dict[str, str]] = field(default_factory=list)
    estimate: int = 0
    later: frozenset[str] = frozenset()  # tool request, tool support unknown: tried after the known ones


def _why_not(model: ModelRecord, api: str | None, ask: Ask, estimate: int) -> tuple[str, str] | None:
    """(kind, why) when the member cannot take this turn; ``kind`` is ``size`` for a window too small."""
    if model.retired:
        return "other", f"retired ({model.retired_why or 'no reason'})"
    if model.ad_hoc:
        return "other", "ad hoc (never chosen automatically)"
    if model.role == "vision" and not ask.has_images:
        return "other", "vision model, and the request has no images"
    if api not in CHAT_APIS:
        return "other", f"its endpoint speaks {api or 'nothing known'}; route mode calls members over chat completions"
    if ask.tools and model.tools is False:
        return "other", "does not call tools (`bench model facts` says why; `bench model set --tools on` overrides)"
    if ask.has_images and not model.can_see:
        return "other", "cannot see images"
    if model.context_window is not None and model.context_window < estimate:
        return SIZE, f"context window {model.context_window:,} tokens, under the estimate of {estimate:,}"
    return None


async def lineup(db: Database, collection: Collection, ask: Ask) -> Lineup:
    """The eligible members, or the refusal: 503 no members, 413 too large for all, else 400."""
    if not collection.members:
        raise NobodySeatable(f"bench/{collection.name} has no members; route mode needs at least one")
    estimate = estimate_tokens(ask, count_tools=True)
    apis = await endpoint_store.apis(db)
    registered = await model_store.of(db, collection.members)
    eligible: list[ModelRecord] = []
    skipped: list[dict[str, str]] = []
    kinds: list[str] = []
    for alias in dict.fromkeys(collection.members):
        model = registered.get(alias)
        reason = ("other", "not registered") if model is None else _why_not(model, apis.get(model.endpoint), ask,
                                                                          estimate)
        if reason is None and model is not None:
            eligible.append(model)
        elif reason is not None:
            kinds.append(reason[0])
            skipped.append({"alias": alias, "why": reason[1]})
    if not eligible:
        listing = "; ".join(f"{s['alias']} ({s['why']})" for s in skipped)
        if all(k == SIZE for k in kinds):
            raise TooLarge(f"the request is about {estimate:,} tokens with its tools, larger than every member's "
                           f"context window: {listing}; send less, or route to a collection with larger windows")
        raise BadRequest(f"no member of bench/{collection.name} can take this request: {listing}")
    later = frozenset(m.alias for m in eligible if ask.tools and m.tools is None)
    return Lineup(eligible, skipped, estimate, later)


async def record_scores(db: Database, aliases: list[str]) -> dict[str, int]:
    """Useful verdicts per alias, from panel seats and route calls together."""
    panel = await verdicts.useful_counts(db, aliases)
    route = await route_store.useful_counts(db, aliases)
    return {a: panel.get(a, (0, 0))[0] + route.get(a, (0, 0))[0] for a in aliases}


async def rank(db: Database, members: list[ModelRecord], *, resting: AbstractSet[str] = frozenset(),
               rotate: bool = False, suite: SuiteHook | None = None,
               later: AbstractSet[str] = frozenset(), collection: str = "") -> list[ModelRecord]:
    """Best rated first (on ``collection``'s route calls; "" for everywhere), resting members last,
    ``later`` members after every other; ``rotate`` puts the least recently used non-resting
    member first (never a ``later`` one)."""
    aliases = [m.alias for m in members]
    ratings = await learning.ratings_for(db, collection, "route", aliases)
    findings = await suite(aliases) if suite else {}
    position = {a: i for i, a in enumerate(aliases)}
    ordered = sorted(members, key=lambda m: (m.alias in later, m.alias in resting, -ratings[m.alias].mean,
                                             -findings.get(m.alias, 0), position[m.alias]))
    if rotate:
        awake = [m for m in ordered if m.alias not in resting and m.alias not in later]
        if awake:  # their last use read now (a route turn's records carry none: ``models.of``)
            used = await model_store.last_used(db, [m.alias for m in awake])
            stalest = min(awake, key=lambda m: (used.get(m.alias) or 0.0, position[m.alias]))
            ordered.remove(stalest)
            ordered.insert(0, stalest)
    return ordered
