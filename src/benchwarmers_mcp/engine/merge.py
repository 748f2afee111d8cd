"""Merged mode: who merges, and what the merger is asked."""

from __future__ import annotations

from collections.abc import Collection as AbstractSet

from benchwarmers_mcp.engine import learning
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
