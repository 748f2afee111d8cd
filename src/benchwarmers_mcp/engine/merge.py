"""Merged mode: who merges, what the merger is asked, and the answers' claims (the agreement map
a merged reply carries as ``bench.claims``, its lone claims listed under the merged text)."""

from __future__ import annotations

from collections.abc import Collection as AbstractSet

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.engine.claims import ClaimMap
from benchwarmers_mcp.engine.judging import claim_map
from benchwarmers_mcp.messages import Ask, ModelRequest, estimate_text_tokens, user
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.calls import SeatRecord
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.models import ModelRecord

MERGER_SYSTEM = (
    "You merge a panel of answers to one request into one reply. Say where the answers agree, where they "
    "disagree, and who said what (name the seats). Keep every dissent: agreement between models is not "
    "evidence, so never present a shared claim as settled. Do not add claims of your own."
)


def claims_of(seats: list[SeatRecord]) -> ClaimMap:
    """The agreement map of the seats that answered (``engine.judging.claim_map``: the same map,
    the same group ids, as the panel's page and ``/bench/claims`` make from the store)."""
    return claim_map({s.seat: s.answer for s in seats if s.status == "ok" and s.seat != "merger"})


def lone_claims(claims: ClaimMap, seats: list[SeatRecord]) -> str:
    """The claims only one seat made, as a list under the merged answer: where to look first."""
    lone = claims.lone()
    if not lone:
        return ""
    who = {s.seat: f"{s.label} — {s.alias}" for s in seats}
    lines = [f"- {g.text} ({who.get(g.seats[0], g.seats[0])}; claim `{g.id}`)" for g in lone]
    return "Claims only one seat made (check these first):\n" + "\n".join(lines) + "\n"


def merge_input(ask: Ask, seats: list[SeatRecord]) -> str:
    request = "\n\n".join(part for part in (ask.system, ask.prompt_text) if part)
    blocks = [f"# The request\n\n{request}", "# The answers"]
    for s in seats:
        if s.status == "ok":
            blocks.append(f"## {s.label} — {s.alias}\n\n{s.answer}")
    return "\n\n".join(blocks)


def merge_request(ask: Ask, seats: list[SeatRecord]) -> ModelRequest:
    return ModelRequest("", (user(merge_input(ask, seats)),), MERGER_SYSTEM)


async def merger_candidates(db: Database, collection: Collection, shape: str,
                            skipped: list[dict[str, str]], answered: AbstractSet[str] = frozenset()
                            ) -> list[ModelRecord]:
    """The collection's merger, then the members that answered by rating on this collection and
    shape (best first), then the other members by rating."""
    everyone = {m.alias: m for m in await model_store.list_all(db)}
    members = [everyone[a] for a in collection.members if a in everyone and not everyone[a].retired]
    out: list[ModelRecord] = []
    if collection.merger:
        chosen = everyone.get(collection.merger)
        if chosen and chosen.retired:
            skipped.append({"seat": "merger", "alias": chosen.alias, "why": "retired"})
        elif chosen:
            out.append(chosen)
    ratings = await learning.ratings_for(db, collection.qualified, shape, [m.alias for m in members])
    position = {m.alias: i for i, m in enumerate(members)}
    for m in sorted(members, key=lambda m: (m.alias not in answered, -ratings[m.alias].mean, position[m.alias])):
        if m.alias not in {o.alias for o in out}:
            out.append(m)
    return out


def fits(model: ModelRecord, request: ModelRequest) -> bool:
    if model.context_window is None:
        return True
    size = estimate_text_tokens((request.system or "") + "".join(m.text for m in request.messages))
    return size <= model.context_window
