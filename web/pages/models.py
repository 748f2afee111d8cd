"""Models: a card per connection with every model's facts (served name, role, context, output
limit, vision, tools, ad hoc, status), each of the window, output, vision and tools with the
source it came from, and every fact the catalog knows with its source (you, learned, the endpoint's
listing, the catalog as shipped or as refreshed), its detail and what it overrides; change the
facts, retire with a reason, restore; and register more, from what the endpoints serve or by
served name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchwarmers_mcp.catalog import data, merge
from benchwarmers_mcp.catalog.data import MODELS_DEV, Catalog
from benchwarmers_mcp.store import catalog as catalog_store
from benchwarmers_mcp.store import facts as fact_store
from benchwarmers_mcp.store.facts import FactRow
from benchwarmers_mcp.store.models import ROLES
from benchwarmers_mcp.web.data import default_endpoint, endpoint_rows, roster
from benchwarmers_mcp.web.registry import Page, View

FACT_NAMES = {"context_window": "Context window", "max_output": "Max output", "tools": "Calls tools",
              "vision": "Sees images", "input_modalities": "Takes", "output_modalities": "Makes",
              "reasoning": "Reasons", "structured_output": "Structured output", "price_in": "Price in ($/M tokens)",
              "price_out": "Price out ($/M tokens)", "knowledge": "Knowledge cut-off", "released": "Released",
              "open_weights": "Open weights", "free_limits": "Free-tier limits"}
REFRESHED_FEEDS = ("OpenRouter", "FreeLLMAPI")  # entries only a refresh brings


def source_of(source: str, entry: str, catalog: Catalog, refreshed_base: bool) -> str:
    """How the page names a fact's source: you, learned, listing, catalog or refreshed (a catalog
    fact from data a refresh fetched, not the snapshot that ships with the package)."""
    if source == "user":
        return "you"
    if source in ("learned", "listing"):
        return source
    if source == "catalog_other":
        return "catalog"  # gaps are filled from the shipped catalog only (``catalog.merge.gap_fillers``)
    found = catalog.index.entries.get(entry)
    origin = found.origin if found is not None else ""
    refreshed = refreshed_base or any(feed in origin for feed in REFRESHED_FEEDS)
    return "refreshed" if refreshed else "catalog"


def shown_value(fact: str, value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "—"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
    if fact in ("context_window", "max_output") and isinstance(value, int):
        return f"{value:,}"
    return "—" if value is None else str(value)


def fact_table(rows: Iterable[FactRow], catalog: Catalog, refreshed_base: bool) -> list[dict[str, Any]]:
    """Every fact a model has, in the catalog's order, as the page shows it."""
    rows = list(rows)
    entries = {(r.fact, r.source): r.entry for r in rows}

    def named(fact: str, source: str) -> str:
        return source_of(source, entries.get((fact, source), ""), catalog, refreshed_base)

    out = []
    for fact, item in merge.shown(rows).items():
        out.append({"fact": fact, "name": FACT_NAMES.get(fact, fact), "value": shown_value(fact, item["value"]),
                    "source": named(fact, item["source"]), "detail": item.get("evidence") or item["detail"],
                    "overrides": [f"{shown_value(fact, o['value'])} ({named(fact, o['source'])})"
                                  for o in item["overrides"]]})
    return out


def _by_fact(table: list[dict[str, Any]]) -> Mapping[str, str]:
    return {f["fact"]: f["source"] for f in table}


async def load(view: View) -> dict[str, Any]:
    catalog = await data.current(view.ctx.db)  # the facts as stored: a GET derives nothing
    base = (await catalog_store.feeds(view.ctx.db, with_bodies=False)).get(MODELS_DEV)
    refreshed_base = bool(base and base.fetched_at)  # a refreshed models.dev replaced the snapshot
    models = await roster(view.ctx)
    known = await fact_store.rows_for(view.ctx.db, [m["alias"] for m in models])
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in models:
        table = fact_table(known.get(m["alias"], []), catalog, refreshed_base)
        groups.setdefault(m["connection"], []).append({**m, "facts": table, "sources": _by_fact(table)})
    return {"groups": sorted(groups.items()), "roles": ROLES, "endpoints": await endpoint_rows(view.ctx),
            "default_endpoint": await default_endpoint(view.ctx)}


# not /models: that is OpenAI's model list for clients whose base URL has no /v1
PAGE = Page("/registered", "Models", "Gateway", 30, "models.html", load, live=frozenset({"change", "seat", "verdict"}),
            scripts=("onboard.js",))
