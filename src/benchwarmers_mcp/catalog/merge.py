"""The layers of facts the catalog and a listing give one model, and how every fact is shown.

The store keeps each source's layer and decides the winner (``store/facts.py``); this module
makes the catalog's and the listing's layers and the view of a model's facts with their sources.
Which entries apply to an endpoint is decided here (``matches``): the serving provider's entry, from
the catalog as refreshed; gaps filled from the shipped catalog only, so what a feed says changes the
facts of the provider it names and of no other endpoint (a local one included).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from benchwarmers_mcp.catalog.data import Catalog
from benchwarmers_mcp.catalog.match import Index, Match
from benchwarmers_mcp.catalog.providers import is_local
from benchwarmers_mcp.catalog.snapshot import load_snapshot, snapshot_version
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.facts import FACTS, FactRow, Layer, effective

SOURCE_WORDS = {
    "catalog_other": "catalog (another provider)",
    "catalog": "catalog",
    "listing": "endpoint listing",
    "learned": "learned",
    "user": "you",
}


def _detail(catalog: Catalog, found: Match, serving: str | None) -> str:
    entry = found.entry
    where = (f"{catalog.provider_name(entry.provider)} serves it" if entry.provider == serving
             else "under another provider: fills gaps only")
    return f"{entry.origin} {entry.key} ({found.how}; {where})"


def is_local_endpoint(endpoint: Endpoint) -> bool:
    """An endpoint on this machine or its network (a loopback, private or ``.local`` host), or one
    the user set up as local: no catalog provider serves it, whatever its host."""
    return endpoint.kind == "local" or is_local(urlsplit(endpoint.base_url).hostname or "")


@cache
def _shipped() -> Index:
    """The shipped catalog's entries, for filling gaps once a refresh has changed the catalog."""
    return Index(load_snapshot()[1])


def gap_fillers(catalog: Catalog) -> Index:
    """Where a model's gaps are filled from (``catalog_other``): the shipped catalog only. A feed a
    refresh fetched changes facts only for the provider each of its entries names (OpenRouter's for
    openrouter's endpoints, FreeLLMAPI's limits for the provider a record names), never another's."""
    return catalog.index if catalog.version == snapshot_version() else _shipped()


def matches(catalog: Catalog, endpoint: Endpoint, served: str) -> tuple[str | None, Match | None, Match | None]:
    """The provider serving the model (by its endpoint's host; none for a local endpoint), its entry
    there, and the best entry elsewhere in the shipped catalog (``gap_fillers``): so a refresh never
    changes a local endpoint's facts. A simulated endpoint has no catalog facts."""
    if endpoint.simulated:
        return None, None, None
    serving = None if is_local_endpoint(endpoint) else catalog.provider_for(endpoint.base_url)
    own = catalog.index.find(served, serving) if serving else None
    other = gap_fillers(catalog).find(served, exclude=serving)
    if own is not None and other is not None and other.key == own.key:
        other = None
    return serving, own, other


def catalog_layers(catalog: Catalog, endpoint: Endpoint, served: str) -> dict[str, Layer | None]:
    """The ``catalog`` and ``catalog_other`` layers for a model (None: that source has nothing)."""
    serving, own, other = matches(catalog, endpoint, served)
    out: dict[str, Layer | None] = {"catalog": None, "catalog_other": None}
    for source, found in (("catalog", own), ("catalog_other", other)):
        if found is not None:
            out[source] = Layer(source, found.entry.facts, _detail(catalog, found, serving), found.key)
    return out


def listing_layer(endpoint: Endpoint, facts: Mapping[str, Any] | None) -> Layer | None:
    if not facts:
        return None
    return Layer("listing", facts, f"{endpoint.name}'s model listing")


def _one(row: FactRow) -> dict[str, Any]:
    out: dict[str, Any] = {"value": row.value, "source": row.source, "from": SOURCE_WORDS.get(row.source, row.source),
                           "detail": row.detail, "at": row.at}
    if row.entry:
        out["entry"] = row.entry
    if row.evidence:
        out["evidence"] = row.evidence
    return out


def shown(rows: Iterable[FactRow]) -> dict[str, dict[str, Any]]:
    """Every fact a model has, in the catalog's order: its value, source, detail, and what it overrides."""
    known = effective(rows)
    out: dict[str, dict[str, Any]] = {}
    for fact in FACTS:
        if fact in known:
            item = _one(known[fact].winner)
            item["overrides"] = [{"value": r.value, "source": r.source, "detail": r.detail} for r in known[fact].under]
            out[fact] = item
    return out


def matched(rows: Iterable[FactRow]) -> dict[str, str | None]:
    """Which catalog entries a model's facts came from."""
    found: dict[str, str | None] = {"catalog": None, "catalog_other": None}
    for r in rows:
        if r.source in found and r.entry:
            found[r.source] = r.entry
    return {"provider": found["catalog"], "other": found["catalog_other"]}


def candidate_facts(catalog: Catalog, endpoint: Endpoint, served: str,
                    listed: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a served name would know once registered (the listing over the catalog's entries),
    and which entry matched: for candidates, before anything is written."""
    layers = [layer for layer in catalog_layers(catalog, endpoint, served).values() if layer is not None]
    if (own := listing_layer(endpoint, listed)) is not None:
        layers.append(own)
    rows = [FactRow("", fact, layer.source, value, layer.detail, layer.entry)
            for layer in layers for fact, value in layer.values.items()]
    view = shown(rows)
    known = {fact: item["value"] for fact, item in view.items()}
    sources = {fact: item["source"] for fact, item in view.items()}
    entry = matched(rows)
    free = known.get("price_in") == 0 and known.get("price_out") == 0 or served.lower().endswith(":free")
    return {"facts": known, "sources": sources, "matched": entry["provider"] or entry["other"], "free": free}
