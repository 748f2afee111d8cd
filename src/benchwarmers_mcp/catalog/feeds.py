"""Fetching the catalog's feeds and reading them: models.dev's ``api.json``, OpenRouter's public
model list, FreeLLMAPI's free-tier limits. Only ever called by a refresh the user asked for (or
the catalog job they switched on); the URLs are settings, and an empty URL leaves a feed out.

A fetch goes through the app's one outbound client (no redirects followed). What can go wrong
(transport, status, size, a body that is not the feed) becomes a ``FeedError`` here, at one
boundary; the refresh keeps the last good copy and reports the error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import httpx

from benchwarmers_mcp.catalog.data import FREELLMAPI, MODELS_DEV, OPENROUTER
from benchwarmers_mcp.catalog.entries import Entry, map_models_dev, mapping
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.upstream.listing import map_listed_model

MAX_BYTES = 64 * 1024 * 1024
LIMIT_NAMES = ("rpm", "rpd", "tpm", "tpd")
# FreeLLMAPI's platform names that differ from the catalog's provider ids
PLATFORMS = {"github": "github-models", "cloudflare": "cloudflare-workers-ai", "zhipu": "zhipuai",
             "ollama": "ollama-cloud", "ovh": "ovhcloud", "together": "togetherai", "fireworks": "fireworks-ai",
             "gemini": "google", "kilo": "kilo", "opencode": "opencode"}

Body = dict[str, Any]


class FeedError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def feed_urls(settings: Settings) -> dict[str, str]:
    return {MODELS_DEV: settings.catalog_models_dev_url, OPENROUTER: settings.catalog_openrouter_url,
            FREELLMAPI: settings.catalog_freellmapi_url}


@contextmanager
def _fetch_errors(url: str) -> Iterator[None]:
    """The one place a feed fetch's foreign exceptions become ``FeedError``."""
    host = httpx.URL(url).host or url
    try:
        yield
    except FeedError:
        raise
    except httpx.TimeoutException as e:
        raise FeedError(f"{host} did not answer in time ({type(e).__name__})") from e
    except httpx.HTTPError as e:
        raise FeedError(f"{host} unreachable: {type(e).__name__}: {e}") from e
    except ValueError as e:
        raise FeedError(f"{host} answered something that is not JSON") from e


async def fetch_json(client: httpx.AsyncClient, url: str, timeout: float) -> Any:
    """GET ``url`` and parse it as JSON (at most ``MAX_BYTES``); ``FeedError`` on any failure."""
    with _fetch_errors(url):
        async with client.stream("GET", url, timeout=timeout, headers={"Accept": "application/json"}) as response:
            if 300 <= response.status_code < 400:
                raise FeedError(f"{url} redirects ({response.status_code}); redirects are not followed: set the "
                                "final URL")
            if response.status_code >= 400:
                raise FeedError(f"{url} answered {response.status_code}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BYTES:
                    raise FeedError(f"{url} is larger than {MAX_BYTES // (1024 * 1024)} MB")
                chunks.append(chunk)
        return json.loads(b"".join(chunks))


def read_models_dev(data: Any) -> tuple[Body, int]:
    if not isinstance(data, Mapping):
        raise FeedError("not a models.dev catalog (expected an object of providers)")
    providers, entries = map_models_dev(data)
    if not entries:
        raise FeedError("not a models.dev catalog (no provider lists a model)")
    body = {"providers": {pid: p.to_json() for pid, p in providers.items()}, "entries": [e.to_json() for e in entries]}
    return body, len(entries)


def _day(created: Any) -> str | None:
    if isinstance(created, (int, float)) and not isinstance(created, bool) and created > 0:
        return datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%d")
    return None


def read_openrouter(data: Any) -> tuple[Body, int]:
    items = data.get("data") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        raise FeedError("not OpenRouter's model list (no 'data' list)")
    entries = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            continue
        facts = map_listed_model(item)
        if (day := _day(item.get("created"))) is not None:
            facts["released"] = day
        entries.append(Entry("openrouter", item["id"], str(item.get("name") or item["id"]), facts, "OpenRouter"))
    if not entries:
        raise FeedError("OpenRouter's model list has no models")
    return {"entries": [e.to_json() for e in entries]}, len(entries)


def _limits(item: Mapping[str, Any]) -> dict[str, int]:
    nested = mapping(item.get("limits"))
    out = {}
    for name in LIMIT_NAMES:
        for key in (name, f"{name}_limit", f"{name}Limit"):
            value = nested.get(key, item.get(key))
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                out[name] = int(value)
                break
    return out


def _first_text(item: Mapping[str, Any], *names: str) -> str:
    for name in names:
        if isinstance(item.get(name), str) and item[name].strip():
            return str(item[name]).strip()
    return ""


def read_freellmapi(data: Any) -> tuple[Body, int]:
    """Free-tier limits per (provider, model): a list of records, or an object holding one under
    ``models``, ``data`` or ``limits``; each with its provider (``provider``, ``platform``), model
    (``model``, ``model_id``, ``modelId``, ``id``) and any of rpm, rpd, tpm, tpd."""
    items = data
    if isinstance(data, Mapping):
        items = next((data[k] for k in ("models", "data", "limits") if isinstance(data.get(k), list)), None)
    if not isinstance(items, list):
        raise FeedError("not FreeLLMAPI's limits (expected a list of models with rpm/rpd/tpm/tpd)")
    out = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        platform = _first_text(item, "provider", "platform", "provider_key").lower()
        model = _first_text(item, "model", "model_id", "modelId", "id")
        limits = _limits(item)
        if platform and model and limits:
            out.append({"provider": PLATFORMS.get(platform, platform), "model": model, "limits": limits})
    if not out:
        raise FeedError("FreeLLMAPI's limits name no model with a limit")
    return {"limits": out}, len(out)


READERS: dict[str, Callable[[Any], tuple[Body, int]]] = {
    MODELS_DEV: read_models_dev, OPENROUTER: read_openrouter, FREELLMAPI: read_freellmapi}
