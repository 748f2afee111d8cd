"""What an endpoint serves: one GET of its model listing, with its key, in the API it speaks.

The listing is the only outbound call the admin API makes. Transport failures and error statuses
become ``ProviderError`` at the providers' one boundary (``map_transport_errors`` and
``raise_for_status``); a body that is not a listing is an ``UpstreamFailure``.
"""

from __future__ import annotations

from collections.abc import Callable
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
Pick = Callable[[Any], list[str]]


def _ids(data: Any) -> list[str]:
    items = data.get("data") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise UpstreamFailure("the model listing has no 'data' list")
    return [str(m["id"]) for m in items if isinstance(m, dict) and m.get("id")]


def _gemini_names(data: Any) -> list[str]:
    items = data.get("models") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise UpstreamFailure("the model listing has no 'models' list")
    return [str(m["name"]).removeprefix("models/") for m in items if isinstance(m, dict) and m.get("name")]


def _ollama_names(data: Any) -> list[str]:
    items = data.get("models") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise UpstreamFailure("the model listing has no 'models' list")
    return [str(m.get("name") or m.get("model")) for m in items if isinstance(m, dict) and (m.get("name") or m.get("model"))]


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


async def served_names(ctx: Context, endpoint: Endpoint) -> list[str]:
    """Every served name the endpoint lists, in its own order, without duplicates. What the upstream
    sent (the listing, an error) is masked with what it was sent before anyone sees it."""
    if endpoint.simulated:
        return [served for served, _ in demo_served_names()]
    key = ctx.keys.get(endpoint.key_name)
    secrets = Secrets.for_endpoint(endpoint.key_name, key, endpoint.headers)
    url, headers, pick = listing_request(endpoint, key)
    timeout = httpx.Timeout(LISTING_TIMEOUT, connect=ctx.settings.upstream_connect_timeout)
    try:
        with map_transport_errors():
            response = await ctx.client.get(url, headers=headers, timeout=timeout)
            await raise_for_status(response)
            try:
                data = response.json()
            except ValueError:
                raise UpstreamFailure(f"{endpoint.name}'s model listing is not JSON") from None
        return list(dict.fromkeys(pick(secrets.data(data))))
    except BenchError as e:
        secrets.error(e)
        raise
