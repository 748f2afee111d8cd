"""Discover: every (provider, model) the catalog knows, as ``bench discover`` lists them (free
first, then new, then reach), filtered by free, new, a modality, tools, vision, reach, provider
and text; "Add" hands one to the onboarding queue through ``POST /api/discover/add``, the same
path as ``bench discover add`` (checked, registered with the catalog's facts, probed and, in the
full mode, run through the suite), and "Register now" registers it at once (``--now``). A row
waiting in the queue says so. Nothing here touches the network: the rows come from the shipped
(or refreshed) catalog in the store."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from benchwarmers_mcp.catalog import data, discover
from benchwarmers_mcp.catalog.discover import Filters
from benchwarmers_mcp.catalog.sync import first_seen, status
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import facts as fact_store
from benchwarmers_mcp.store import onboarding as onboarding_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.web.registry import Page, View

PER_PAGE = 100
REACH_WORDS = {"bench": "on the bench", "connected": "connected", "easy": "easy to add", "other": "other"}
PARAMS = ("free", "new", "tools", "vision", "modality", "reach", "provider", "find")
MODES = (("full", "full: probe and suite"), ("quick", "quick: probe only"), ("quick-adhoc", "quick, ad hoc"))


@dataclass(frozen=True)
class More:
    """The filters the catalog's own ``Filters`` leaves to the page: what a model can do and take."""

    tools: bool = False
    vision: bool = False
    modality: str = ""  # "in:image" (takes images) or "out:audio" (makes audio)

    def keeps(self, row: Mapping[str, Any]) -> bool:
        if self.tools and row.get("tools") is not True:
            return False
        if self.vision and row.get("vision") is not True:
            return False
        if self.modality:
            side, _, kind = self.modality.partition(":")
            found = row.get("input_modalities" if side == "in" else "output_modalities") or []
            return kind in found
        return True


def modalities(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The modality filter's options, (value, label): what some model takes, then what some makes
    (text, which nearly every model takes and makes, left out)."""
    taken: set[str] = set()
    made: set[str] = set()
    for r in rows:
        taken.update(r.get("input_modalities") or [])
        made.update(r.get("output_modalities") or [])
    return ([(f"in:{m}", f"takes {m}") for m in sorted(taken - {"text"})]
            + [(f"out:{m}", f"makes {m}") for m in sorted(made - {"text"})])


def price(row: Mapping[str, Any]) -> str:
    """As ``bench discover`` writes it: free, ``$in/out`` per million tokens, or a dash."""
    if row.get("free"):
        return "free"
    given = [row.get("price_in"), row.get("price_out")]
    if all(v is None for v in given):
        return "—"
    return "$" + "/".join(f"{v:.6g}" if isinstance(v, (int, float)) else "?" for v in given)


def flag(value: Any) -> str:
    return {True: "yes", False: "no"}.get(value, "unknown")


def _choices(row: Mapping[str, Any], others: list[Endpoint]) -> list[dict[str, str]]:
    """Where "Add" may register a row: the endpoints that serve it (its own provider's, then hubs),
    then any other real endpoint by name (as ``--endpoint NAME``)."""
    out = [{"endpoint": r["endpoint"], "label": f"{r['endpoint']} ({'direct' if r['via'] == 'direct' else 'via hub'})"}
           for r in row["routes"]]
    named = {c["endpoint"] for c in out}
    out += [{"endpoint": e.name, "label": f"{e.name} (by name)"} for e in others if e.name not in named]
    return out


def _waiting(row: Mapping[str, Any], queue: Mapping[tuple[str, str], str], others: list[Endpoint]) -> str | None:
    """The onboarding state of a row waiting in the queue (as one of its routes, or by name)."""
    places = [(r["endpoint"], r["served"]) for r in row["routes"]] + [(e.name, row["model"]) for e in others]
    return next((queue[p] for p in places if p in queue), None)


def _shown(row: dict[str, Any], others: list[Endpoint], queue: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    return {**row, "onboarding": _waiting(row, queue, others), "price": price(row), "tools_word": flag(row["tools"]), "reasoning_word": flag(row["reasoning"]),
            "vision_word": flag(row["vision"]), "weights": {True: "open", False: "closed"}.get(row["open_weights"], "unknown"),
            "reach_word": REACH_WORDS[row["reach"]], "choices": _choices(row, others),
            "takes": ", ".join(row.get("input_modalities") or []) or "—",
            "makes": ", ".join(row.get("output_modalities") or []) or "—"}


def _offset(view: View) -> int:
    raw = view.arg("offset")
    return int(raw) if raw.isdigit() else 0


def _link(given: Mapping[str, str], offset: int) -> str:
    query = {k: v for k, v in given.items() if v}
    if offset:
        query["offset"] = str(offset)
    return "/discover" + ("?" + urlencode(query) if query else "")


async def load(view: View) -> dict[str, Any]:
    ctx = view.ctx
    given = {name: view.arg(name) for name in PARAMS}
    reach = given["reach"] if given["reach"] in discover.REACH else ""
    filters = Filters(free=given["free"] == "1", new=given["new"] == "1", find=given["find"], reach=reach or None,
                      provider=given["provider"] or None)
    more = More(tools=given["tools"] == "1", vision=given["vision"] == "1", modality=given["modality"])
    catalog = await data.current(ctx.db)  # as it stands: a GET derives and notes nothing (a refresh does)
    # The queue before the models: an item ends only after its model is registered, so a row read in
    # this order is either still waiting or already on the bench, never neither.
    queue = {(i.endpoint, i.served): f"{i.state}, step {max(i.step, 1)} of 5" if i.state == "running" else i.state
             for i in await onboarding_store.waiting(ctx.db)}
    endpoints = await endpoint_store.list_all(ctx.db)
    chosen = [r for r in discover.rows(catalog, endpoints, await fact_store.matched_entries(ctx.db),
                                       await first_seen(ctx, catalog, view.now), view.now, filters) if more.keeps(r)]
    offset = min(_offset(view), max(0, len(chosen) - 1) // PER_PAGE * PER_PAGE)  # past the end: the last page
    others = [e for e in endpoints if not e.simulated]
    page = [_shown(r, others, queue) for r in chosen[offset:offset + PER_PAGE]]
    return {"rows": page, "total": len(chosen), "offset": offset, "per_page": PER_PAGE, "given": given,
            "reach_chosen": reach, "reach_words": REACH_WORDS, "catalog": await status(ctx),
            "modalities": modalities(e.facts for e in catalog.entries), "endpoints": others, "modes": MODES,
            **discover.choices(catalog, chosen),
            "previous": _link(given, max(0, offset - PER_PAGE)) if offset else None,
            "next": _link(given, offset + PER_PAGE) if offset + PER_PAGE < len(chosen) else None}


PAGE = Page("/discover", "Discover", "Gateway", 40, "discover.html", load, live=frozenset({"change"}),
            scripts=("discover.js",))
