"""The catalog as it stands: the shipped snapshot, overlaid with the feeds a refresh stored.

A refreshed models.dev document replaces the snapshot; OpenRouter's model list adds to (and
freshens) the ``openrouter`` provider; FreeLLMAPI's free-tier limits are added to the entries
they name. The feeds live in the store, so every process builds the same catalog. Building one
takes a fraction of a second, so it is kept per process for its *version* (the snapshot's
package version and each feed's fetch time): a refresh in any process is a new version, picked
up on the next read. Nothing here is on the panel's hot path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from benchwarmers_mcp.catalog.entries import Entry, ProviderInfo
from benchwarmers_mcp.catalog.match import Index
from benchwarmers_mcp.catalog.providers import Reachable, provider_for, public_bases
from benchwarmers_mcp.catalog.snapshot import load_snapshot, snapshot_version
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import catalog as catalog_store

MODELS_DEV, OPENROUTER, FREELLMAPI = "models.dev", "openrouter", "freellmapi"
FEEDS = (MODELS_DEV, OPENROUTER, FREELLMAPI)


@dataclass
class Catalog:
    version: str
    providers: dict[str, ProviderInfo]
    index: Index
    bases: dict[str, Reachable]

    @property
    def entries(self) -> list[Entry]:
        return list(self.index.entries.values())

    def provider_for(self, base_url: str) -> str | None:
        return provider_for(base_url, self.bases)

    def provider_name(self, pid: str) -> str:
        info = self.providers.get(pid)
        return info.name if info else pid


def _merged(old: Entry, new: Entry) -> Entry:
    """An entry two feeds describe: the newer feed's facts win, but a release date stays models.dev's
    (OpenRouter's date is when it listed the model)."""
    origin = old.origin if new.origin in old.origin else f"{old.origin} + {new.origin}"
    fresh = {k: v for k, v in new.facts.items() if k != "released" or "released" not in old.facts}
    return replace(old, name=old.name or new.name, facts={**old.facts, **fresh}, origin=origin)


def build(providers: Mapping[str, ProviderInfo], entries: Iterable[Entry], feeds: Mapping[str, Any],
          version: str) -> Catalog:
    """The catalog from a base (snapshot or refreshed models.dev) and the other feeds' bodies."""
    base: dict[str, Entry] = {e.key: e for e in entries}
    for raw in (feeds.get(OPENROUTER) or {}).get("entries", []):
        entry = Entry.from_json(raw)
        base[entry.key] = _merged(base[entry.key], entry) if entry.key in base else entry
    index = Index(base.values())
    for raw in (feeds.get(FREELLMAPI) or {}).get("limits", []):
        _add_limits(index, raw)
    return Catalog(version, dict(providers), index, public_bases(providers))


def _add_limits(index: Index, raw: Mapping[str, Any]) -> None:
    provider, model, limits = str(raw.get("provider") or ""), str(raw.get("model") or ""), raw.get("limits")
    if not provider or not model or not isinstance(limits, Mapping) or not limits:
        return
    found = index.find(model, provider)
    if found is None:
        index.add(Entry(provider, model, model, {"free_limits": dict(limits)}, "FreeLLMAPI"))
        return
    old = found.entry
    index.add(replace(old, facts={**old.facts, "free_limits": dict(limits)},
                      origin=old.origin if "FreeLLMAPI" in old.origin else f"{old.origin} + FreeLLMAPI"))


class _Kept:
    """The last catalog built in this process, and its version (immutable once built)."""

    def __init__(self) -> None:
        self.catalog: Catalog | None = None

    def get(self, version: str) -> Catalog | None:
        return self.catalog if self.catalog is not None and self.catalog.version == version else None


_kept = _Kept()


def version_of(stamps: Mapping[str, float]) -> str:
    parts = [snapshot_version()] + [f"{name} {stamps[name]:.3f}" for name in FEEDS if name in stamps]
    return "; ".join(parts)


async def current_version(db: Database) -> str:
    return version_of(await catalog_store.stamps(db))


async def current(db: Database) -> Catalog:
    """The catalog this data folder sees now."""
    version = await current_version(db)
    kept = _kept.get(version)
    if kept is not None:
        return kept
    feeds = {name: feed.body for name, feed in (await catalog_store.feeds(db)).items() if feed.body is not None}
    if feeds.get(MODELS_DEV):
        body = feeds[MODELS_DEV]
        providers = {pid: ProviderInfo.from_json(p) for pid, p in body.get("providers", {}).items()}
        entries: list[Entry] = [Entry.from_json(e) for e in body.get("entries", [])]
    else:
        providers, entries = load_snapshot()
    catalog = build(providers, entries, feeds, version)
    _kept.catalog = catalog
    return catalog
