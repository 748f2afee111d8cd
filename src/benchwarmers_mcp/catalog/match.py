"""Finding a served name in the catalog, and saying how it was found.

A served name is looked up by ever looser spellings, the first that finds something wins:
the exact id; the same id in another case; without a ``:free`` (or ``:latest``) suffix; without
the vendor prefix (``meta-llama/llama-3.3-70b-instruct`` is ``llama-3.3-70b-instruct``); dots,
underscores and colons read as dashes (``claude-3.5-sonnet`` is ``claude-3-5-sonnet``); and last,
separators ignored (``gpt4o`` is ``gpt-4o``). Under the serving provider first; under any other
provider only to fill gaps, preferring the model's own vendor.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from benchwarmers_mcp.catalog.entries import Entry

TIERS: tuple[tuple[str, str], ...] = (
    ("exact", "exact id"),
    ("case", "the same id in another case"),
    ("suffix", "without a :free or :latest suffix"),
    ("vendor", "without the vendor prefix"),
    ("spelling", "dots, underscores and dashes read alike"),
    ("loose", "separators ignored"),
)
SUFFIX_RE = re.compile(r":(free|latest)$")

# the provider a vendor prefix names (``mistralai/...`` is Mistral's own model)
VENDORS = {"openai": "openai", "anthropic": "anthropic", "google": "google", "mistralai": "mistral",
           "mistral": "mistral", "x-ai": "xai", "xai": "xai", "deepseek": "deepseek", "deepseek-ai": "deepseek",
           "qwen": "alibaba", "moonshotai": "moonshotai", "z-ai": "zai", "zai-org": "zai", "minimax": "minimax",
           "cohere": "cohere", "meta-llama": "llama", "meta": "llama", "nvidia": "nvidia", "inception": "inception",
           "perplexity": "perplexity", "amazon": "nova", "microsoft": "azure", "ai21": "ai21"}
# model makers first, then the large hosts, when a model is found under several providers
PREFERRED = ("openai", "anthropic", "google", "mistral", "xai", "deepseek", "alibaba", "moonshotai", "zai", "minimax",
             "cohere", "llama", "groq", "togetherai", "fireworks-ai", "deepinfra", "openrouter")


@lru_cache(maxsize=32768)
def keys(name: str) -> dict[str, str]:
    """The spelling of ``name`` at every tier (pure, so kept: Discover spells every entry often).
    Callers only read the dict."""
    lower = name.strip().lower()
    unsuffixed = SUFFIX_RE.sub("", lower)
    bare = unsuffixed.rsplit("/", 1)[-1]
    spelled = re.sub(r"[._:\s]+", "-", bare).strip("-")
    return {"exact": name.strip(), "case": lower, "suffix": unsuffixed, "vendor": bare, "spelling": spelled,
            "loose": re.sub(r"[^a-z0-9]", "", bare)}


def vendor_of(name: str) -> str | None:
    head = name.split("/", 1)[0].lower() if "/" in name else ""
    return VENDORS.get(head)


@dataclass(frozen=True)
class Match:
    entry: Entry
    how: str  # the tier's words

    @property
    def key(self) -> str:
        return self.entry.key


def _rank(e: Entry, served: str, tier: int, strict: bool) -> tuple[int, ...]:
    """Which of several entries to take: a ``:free`` variant only for a ``:free`` name; under one
    provider, the closest spelling; across providers, the model's own vendor and the preferred
    providers first (a maker's own entry beats an obscure host's exact id); then the closest
    spelling, then the entry that knows most."""
    free_mismatch = int(e.model.lower().endswith(":free") != served.lower().endswith(":free"))
    vendor = vendor_of(served)
    own = 0 if vendor and e.provider == vendor else 1
    preferred = PREFERRED.index(e.provider) if e.provider in PREFERRED else len(PREFERRED)
    if strict:
        return tier, free_mismatch, -len(e.facts)
    return free_mismatch, own, preferred, tier, -len(e.facts)


class Index:
    """Entries by every tier's spelling, per provider and across all of them."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self.by_provider: dict[str, dict[str, dict[str, list[Entry]]]] = {}
        self.anywhere: dict[str, dict[str, list[Entry]]] = {tier: {} for tier, _ in TIERS}
        self.entries: dict[str, Entry] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: Entry) -> None:
        self.entries[entry.key] = entry
        mine = self.by_provider.setdefault(entry.provider, {tier: {} for tier, _ in TIERS})
        for tier, key in keys(entry.model).items():
            if key:
                mine[tier].setdefault(key, []).append(entry)
                self.anywhere[tier].setdefault(key, []).append(entry)

    def provider_entries(self, provider: str) -> list[Entry]:
        tiers = self.by_provider.get(provider)
        if not tiers:
            return []
        return list({e.key: e for found in tiers["exact"].values() for e in found}.values())

    def find(self, served: str, provider: str | None = None, *, exclude: str | None = None) -> Match | None:
        """``served`` under ``provider`` (the closest spelling wins), or under any provider but
        ``exclude`` (the best provider among the spellings up to dots-and-dashes; separators ignored
        only when nothing else is found)."""
        tables = self.by_provider.get(provider) if provider else self.anywhere
        if tables is None:
            return None
        found: list[tuple[tuple[int, ...], Entry, str]] = []
        for n, ((tier, how), key) in enumerate(zip(TIERS, keys(served).values(), strict=True)):
            if tier == "loose" and found:
                break
            for e in tables[tier].get(key, ()):
                if e.provider != exclude:
                    found.append((_rank(e, served, n, strict=provider is not None), e, how))
            if found and provider is not None:
                break
        if not found:
            return None
        _, entry, how = min(found, key=lambda f: (f[0], f[1].key))
        return Match(entry, how)
