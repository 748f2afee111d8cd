"""What an endpoint serves: one GET of its model listing, with its key, in the API it speaks.

The listing is the only outbound call the admin API makes (besides a catalog refresh the user
asked for). Where a listing says more than names (context length, output limit, modalities,
tools...), ``map_listed_model`` keeps it as facts, in the catalog's names. Transport failures and error statuses
become ``ProviderError`` at the providers' one boundary (``map_transport_errors`` and
``raise_for_status``); a body that is not a listing is an ``UpstreamFailure``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BenchError, UpstreamFailure
from benchwarmers_mcp.providers.anthropic import VERSION as ANTHROPIC_VERSION
from benchwarmers_mcp.providers.base import map_transport_errors, raise_for_status
from benchwarmers_mcp.providers.simulated import demo_served_names
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.upstream.masking import Secrets

LISTING_TIMEOUT = 30.0
Listed = list[tuple[str, Mapping[str, Any]]]
Pick = Callable[[Any], Listed]


def _items(data: Any, key: str) -> list[Mapping[str, Any]]:
    items = data.get(key) if isinstance(data, dict) else data if key == "data" else None
    if not isinstance(items, list):
        raise UpstreamFailure(f"the model listing has no {key!r} list")
    return [m for m in items if isinstance(m, Mapping)]


def _ids(data: Any) -> Listed:
    return [(str(m["id"]), m) for m in _items(data, "data") if m.get("id")]


def _gemini_names(data: Any) -> Listed:
    return [(str(m["name"]).removeprefix("models/"), m) for m in _items(data, "models") if m.get("name")]


def _ollama_names(data: Any) -> Listed:
    return [(str(m.get("name") or m.get("model")), m) for m in _items(data, "models") if m.get("name") or m.get("model")]


def _number(*values: Any) -> int | None:
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value)
    return None


def _per_million(value: Any) -> float | None:
    try:
        price = float(value)
    except (TypeError, ValueError):
        return None
    return round(price * 1_000_000, 6) if price >= 0 else None


def _part(item: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A nested object of a listing row, or an empty one when it is missing or not an object."""
    value = item.get(key)
    return value if isinstance(value, Mapping) else {}


def map_listed_model(item: Mapping[str, Any]) -> dict[str, Any]:
    """What one model's row in a listing says about it, in the catalog's fact names. Listings differ:
    OpenRouter (``context_length``, ``top_provider``, ``architecture``, ``supported_parameters``,
    ``pricing`` per token), Groq (``context_window``, ``max_completion_tokens``), vLLM
    (``max_model_len``), Mistral (``max_context_length``, ``capabilities``), Gemini
    (``inputTokenLimit``, ``outputTokenLimit``, ``thinking``). A fact the row does not give is left out."""
    top, arch, caps = _part(item, "top_provider"), _part(item, "architecture"), _part(item, "capabilities")
    params = item.get("supported_parameters")
    inputs = arch.get("input_modalities")
    outputs = arch.get("output_modalities")
    pricing = _part(item, "pricing")
    facts: dict[str, Any] = {
        "context_window": _number(item.get("context_length"), top.get("context_length"), item.get("context_window"),
                                  item.get("max_model_len"), item.get("max_context_length"),
                                  item.get("inputTokenLimit")),
        "max_output": _number(top.get("max_completion_tokens"), item.get("max_completion_tokens"),
                              item.get("outputTokenLimit"), item.get("max_output_tokens")),
        "input_modalities": [str(m) for m in inputs] if isinstance(inputs, list) else None,
        "output_modalities": [str(m) for m in outputs] if isinstance(outputs, list) else None,
        "price_in": _per_million(pricing.get("prompt")) if pricing else None,
        "price_out": _per_million(pricing.get("completion")) if pricing else None,
        "knowledge": item.get("knowledge_cutoff") if isinstance(item.get("knowledge_cutoff"), str) else None,
    }
    if isinstance(inputs, list):
        facts["vision"] = "image" in inputs
    if isinstance(params, list):
        facts["tools"] = "tools" in params
        facts["reasoning"] = "reasoning" in params or "include_reasoning" in params
        facts["structured_output"] = "structured_outputs" in params or "response_format" in params
    for ours, theirs in (("tools", "function_calling"), ("vision", "vision")):
        if isinstance(caps.get(theirs), bool):
            facts[ours] = caps[theirs]
    if isinstance(item.get("thinking"), bool):
        facts["reasoning"] = item["thinking"]
    return {k: v for k, v in facts.items() if v is not None}


def lists(served: str, names: Iterable[str]) -> bool:
    """Is ``served`` among a listing's names (``:latest`` and case aside, as Ollama lists them)?"""
    want = served.lower().removesuffix(":latest")
    return any(n.lower().removesuffix(":latest") == want for n in names)


@dataclass(frozen=True)
class Listing:
    """An endpoint's listing: the served names in its order, and what it says about each;
    ``complete`` unless the reply said more pages follow (Anthropic's ``has_more``, Gemini's
    ``nextPageToken``): only the first page is read."""

    names: list[str]
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    complete: bool = True

    def lists(self, served: str) -> bool:
        return lists(served, self.names)


def listing_request(endpoint: Endpoint, key: str | None) -> tuple[str, dict[str, str], Pick]:
    """The URL, headers and reader of an endpoint's model listing, by the API it speaks."""
    base = endpoint.base_url.rstrip("/")
    headers = dict(endpoint.headers)
    if endpoint.api == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if key:
            headers["x-api-key"] = key
        return f"{base}/models", headers, _ids
    if endpoint.api == "gemini":
        if key:
            headers["x-goog-api-key"] = key
        return f"{base}/models", headers, _gemini_names
    if endpoint.api == "ollama":
        return f"{base.removesuffix('/api')}/api/tags", headers, _ollama_names
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return f"{base}/models", headers, _ids


async def listing(ctx: Context, endpoint: Endpoint, timeout: float = LISTING_TIMEOUT,
                  key: str | None = None) -> Listing:
    """Every served name the endpoint lists (its order, no duplicates), with the facts it gives.
    ``key``: one to try instead of the stored one (an endpoint tested before it is saved). What the
    upstream sent (the listing, an error) is masked with what it was sent before anyone sees it."""
    if endpoint.simulated:
        return Listing([served for served, _ in demo_served_names()])
    if key is None:
        key = ctx.keys.get(endpoint.key_name)
    secrets = Secrets.for_endpoint(endpoint.key_name, key, endpoint.headers)
    url, headers, pick = listing_request(endpoint, key)
    limit = httpx.Timeout(timeout, connect=min(timeout, ctx.settings.upstream_connect_timeout))
    try:
        with map_transport_errors():
            response = await ctx.client.get(url, headers=headers, timeout=limit)
            await raise_for_status(response)
            try:
                data = response.json()
            except ValueError:
                raise UpstreamFailure(f"{endpoint.name}'s model listing is not JSON") from None
        listed = pick(secrets.data(data))
    except BenchError as e:
        secrets.error(e)
        raise
    facts = {name: known for name, item in listed if (known := map_listed_model(item))}
    more = isinstance(data, dict) and bool(data.get("has_more") or data.get("nextPageToken"))
    return Listing(list(dict.fromkeys(name for name, _ in listed)), facts, not more)


async def served_names(ctx: Context, endpoint: Endpoint, key: str | None = None) -> list[str]:
    """Every served name the endpoint lists, in its own order, without duplicates (``key`` as in
    ``listing``)."""
    return (await listing(ctx, endpoint, key=key)).names
