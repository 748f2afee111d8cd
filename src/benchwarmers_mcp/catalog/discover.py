"""Discover: one row per (provider, model) of the catalog, with its facts and its reach here.

Reach, best first: ``bench`` (registered, as these aliases), ``connected`` (an endpoint you have
serves it: the provider's own, ``direct``, or a hub such as OpenRouter that lists the same model,
``hub``), ``easy`` (a known provider with a public base URL: one ``bench endpoint add`` away),
``other``. A row is ``new`` for 7 days after this install first saw it. Rows sort free first,
then new, then by reach, provider and model. Only chat models are listed unless every kind is asked
for (``Entry.kind``: embeddings, rerankers, speech, image, music and video models are not panel
seats); ``free`` never keeps a subscription plan's $0 models (``Entry.free``). A provider the user
said gives its free models only in its own app (``store/own_app.py``) has none free here: its rows
say ``own_app_only`` and stay out of the free list. Nothing here touches the network.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.catalog.data import Catalog
from benchwarmers_mcp.catalog.entries import Entry
from benchwarmers_mcp.catalog.match import Index
from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store.endpoints import Endpoint

NEW_FOR = 7 * 86400.0
REACH = ("bench", "connected", "easy", "other")
SHOWN_FACTS = ("price_in", "price_out", "context_window", "max_output", "tools", "reasoning", "vision",
               "structured_output", "input_modalities", "output_modalities", "released", "knowledge", "open_weights",
               "free_limits")


@dataclass(frozen=True)
class Filters:
    free: bool = False
    new: bool = False
    find: str = ""
    reach: str | None = None
    provider: str | None = None
    every_kind: bool = False  # False: chat models only

    def may_keep(self, entry: Entry, new: bool, free: bool | None = None) -> bool:
        """What can be decided before the row is made (everything but the reach). ``free``: whether
        the entry counts as free here (not when its provider's free models work only in its own app)."""
        text = self.find.strip().lower()
        return ((not self.free or (entry.free if free is None else free)) and (not self.new or new)
                and (self.every_kind or entry.kind == "chat")
                and (not text or text in entry.key.lower() or text in entry.name.lower())
                and (self.provider is None or entry.provider == self.provider))


@dataclass(frozen=True)
class Route:
    endpoint: str
    served: str
    via: str  # direct | hub

    def to_json(self) -> dict[str, str]:
        return {"endpoint": self.endpoint, "served": self.served, "via": self.via}


def _connected(catalog: Catalog, endpoints: Iterable[Endpoint]) -> list[tuple[Endpoint, str]]:
    """Endpoints that are catalog providers, with the provider they are."""
    out = []
    for e in endpoints:
        provider = None if e.simulated else catalog.provider_for(e.base_url)
        if provider is not None:
            out.append((e, provider))
    return out


def routes_for(catalog: Catalog, entry: Entry, connected: list[tuple[Endpoint, str]]) -> list[Route]:
    """How this install can reach an entry: the provider's own endpoints, then hubs that list it."""
    direct = [Route(e.name, entry.model, "direct") for e, p in connected if p == entry.provider]
    hubs = []
    for e, p in connected:
        if p == entry.provider:
            continue
        found = catalog.index.find(entry.model, p)
        if found is not None and found.how != "separators ignored":
            hubs.append(Route(e.name, found.entry.model, "hub"))
    return direct + hubs


def row(catalog: Catalog, entry: Entry, routes: list[Route], aliases: list[str], seen: float | None,
        now: float, own_app: frozenset[str] = frozenset()) -> dict[str, Any]:
    if aliases:
        reach = "bench"
    elif routes:
        reach = "connected"
    elif entry.provider in catalog.bases:
        reach = "easy"
    else:
        reach = "other"
    out: dict[str, Any] = {"key": entry.key, "provider": entry.provider,
                           "provider_name": catalog.provider_name(entry.provider), "model": entry.model,
                           "name": entry.name, "origin": entry.origin, "free": entry.free,
                           "own_app_only": False, "subscription": entry.subscription, "kind": entry.kind}
    if entry.free and entry.provider in own_app:  # its free tier answers only in its own app: not free here
        out.update(free=False, own_app_only=True)
    out.update({fact: entry.facts.get(fact) for fact in SHOWN_FACTS})
    base = catalog.bases.get(entry.provider)
    out.update(reach=reach, aliases=aliases, routes=[r.to_json() for r in routes],
               add={"base_url": base.base_url, "api": base.api} if base else None,
               first_seen=seen, new=is_new(seen, now))
    return out


def sort_key(r: Mapping[str, Any]) -> tuple[bool, bool, int, str, str]:
    return not r["free"], not r["new"], REACH.index(r["reach"]), r["provider"], r["model"]


def rows(catalog: Catalog, endpoints: Iterable[Endpoint], bench: Mapping[str, list[str]],
         seen: Mapping[str, float], now: float, filters: Filters = Filters(),
         own_app: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Every catalog entry the filters keep, as a Discover row, sorted. ``own_app``: the providers
    whose free models work only in their own app (``store/own_app.py``): theirs are not free here."""
    connected = _connected(catalog, endpoints)
    out = []
    for entry in catalog.index.entries.values():
        first = seen.get(entry.key)
        if not filters.may_keep(entry, is_new(first, now), entry.free and entry.provider not in own_app):
            continue
        r = row(catalog, entry, routes_for(catalog, entry, connected), bench.get(entry.key, []), first, now, own_app)
        if filters.reach is None or r["reach"] == filters.reach:
            out.append(r)
    return sorted(out, key=sort_key)


def choices(catalog: Catalog, chosen: Iterable[Mapping[str, Any]], every_kind: bool = False) -> dict[str, Any]:
    """What a filter bar offers: every provider of the catalog (id, name, entries: its chat models,
    or every kind's with ``every_kind``, as the rows count them), the reach values, and how many of
    the rows the filters kept are of each reach, free and new."""
    entries: dict[str, int] = {}
    for entry in catalog.index.entries.values():
        if every_kind or entry.kind == "chat":
            entries[entry.provider] = entries.get(entry.provider, 0) + 1
    reach = dict.fromkeys(REACH, 0)
    free = new = 0
    for r in chosen:
        reach[r["reach"]] += 1
        free += bool(r["free"])
        new += bool(r["new"])
    providers = [{"id": pid, "name": catalog.provider_name(pid), "entries": n} for pid, n in sorted(entries.items())]
    return {"providers": providers, "reach": list(REACH), "counts": {"reach": reach, "free": free, "new": new}}


def is_new(first_seen: float | None, now: float) -> bool:
    return first_seen is not None and now - first_seen <= NEW_FOR


# ---- adding a model from Discover -------------------------------------------------------------

@dataclass(frozen=True)
class AddPlan:
    entry: Entry
    endpoint: Endpoint
    served: str
    via: str


def find_entry(catalog: Catalog, key: str) -> Entry:
    """``provider/model`` (the model may hold slashes) as a catalog entry, by its usual spellings."""
    provider, _, model = key.strip().partition("/")
    if not provider or not model:
        raise BadRequest(f"name the model as <provider>/<model> (as Discover lists it), not {key!r}")
    entry = catalog.index.entries.get(f"{provider}/{model}")
    if entry is None and (found := catalog.index.find(model, provider)) is not None:
        entry = found.entry
    if entry is None:
        close = difflib.get_close_matches(key, list(catalog.index.entries), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; bench discover --find <text> lists what is known"
        raise NotFound(f"the catalog has no {key}{hint}")
    return entry


def plan_add(catalog: Catalog, endpoints: list[Endpoint], key: str, endpoint_name: str | None = None) -> AddPlan:
    """Which endpoint would serve a catalog entry, under which served name; a clear refusal if none can."""
    entry = find_entry(catalog, key)
    if endpoint_name:
        chosen = next((e for e in endpoints if e.name == endpoint_name), None)
        if chosen is None:
            raise NotFound(f"no endpoint named {endpoint_name!r}")
        provider = None if chosen.simulated else catalog.provider_for(chosen.base_url)
        if provider == entry.provider:
            return AddPlan(entry, chosen, entry.model, "direct")
        found = catalog.index.find(entry.model, provider) if provider else None
        return AddPlan(entry, chosen, found.entry.model if found else entry.model, "hub" if found else "named")
    routes = routes_for(catalog, entry, _connected(catalog, endpoints))
    if not routes:
        base = catalog.bases.get(entry.provider)
        how = (f"add it first: bench endpoint add {entry.provider} --base {base.base_url}"
               + ("" if base.api == "chat" else f" --api {base.api}")) if base else \
            "no public base URL is known for it: add the endpoint that serves it, then --endpoint NAME"
        raise BadRequest(f"no endpoint of yours serves {entry.key}; {how}")
    first = routes[0]
    chosen = next(e for e in endpoints if e.name == first.endpoint)
    return AddPlan(entry, chosen, first.served, first.via)


def resolve_listed(served: str, names: list[str]) -> str | None:
    """The endpoint's own spelling of ``served`` among the names it lists, or None."""
    if served in names:
        return served
    found = Index(Entry("listing", n) for n in names).find(served)
    return found.entry.model if found is not None else None


def close_names(served: str, names: list[str]) -> list[str]:
    return difflib.get_close_matches(served, names, n=3, cutoff=0.5)
