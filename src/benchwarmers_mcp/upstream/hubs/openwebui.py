"""Open WebUI as a hub.

Its models: ``GET /api/models`` (an Open WebUI API key) lists every model with ``owned_by``
(``openai`` for its OpenAI-compatible connections, ``ollama`` for its Ollama ones) and, for the
first, ``urlIdx``: the connection it comes through, an index into ``OPENAI_API_BASE_URLS``. With the
admin's key the adapter also reads ``GET /openai/config``: each connection's URL and its config
(``prefix_id``, which Open WebUI puts before the model's id with a dot, and ``tags``). The
connection's name is its first tag (the "provider tag"), else its URL's host, else
``openai-<urlIdx>``; the model's own name is its id without the connection's prefix.

A model is added by adding a connection (or a model id to the connection already at that URL):
``POST /openai/config/update`` with the whole configuration, as Open WebUI's own settings page
sends it. The keys it holds for its other connections are sent back as they came, and go nowhere
else.
"""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.upstream.hubs.base import HubCall, NewModel, Upstream, connection_of, host_of, items


def _config_for(config: dict[str, Any], index: int) -> dict[str, Any]:
    urls = config.get("OPENAI_API_BASE_URLS") or []
    configs = config.get("OPENAI_API_CONFIGS") or {}
    url = urls[index] if 0 <= index < len(urls) else ""
    found = configs.get(str(index)) or configs.get(url) or {}
    return found if isinstance(found, dict) else {}


def _tag(tags: Any) -> str:
    first = tags[0] if isinstance(tags, list) and tags else None
    name = first.get("name") if isinstance(first, dict) else first
    return connection_of(name) if isinstance(name, str) else ""


class OpenWebUI:
    name = "openwebui"

    def root(self, base_url: str) -> str:
        return base_url.rstrip("/").removesuffix("/api")

    async def upstreams(self, call: HubCall) -> list[Upstream]:
        listed = items(await call.get("/api/models"), "data")
        config: dict[str, Any] = await call.get("/openai/config", admin=True) if call.admin_key else {}
        urls = config.get("OPENAI_API_BASE_URLS") or []
        out = []
        for model in listed:
            served = model.get("id")
            if not isinstance(served, str) or not served or model.get("owned_by") == "arena":
                continue
            if model.get("owned_by") == "ollama":
                out.append(Upstream(served, "ollama", served))
                continue
            at = model.get("urlIdx")
            index: int = at if isinstance(at, int) else -1
            settings = _config_for(config, index)
            prefix = settings.get("prefix_id")
            bare = served.removeprefix(f"{prefix}.") if isinstance(prefix, str) and prefix else served
            url = urls[index] if 0 <= index < len(urls) else ""
            connection = (_tag(settings.get("tags")) or _tag(model.get("tags")) or host_of(url)
                          or f"openai-{index if index >= 0 else 'x'}")
            out.append(Upstream(served, connection, bare))
        return out

    async def register(self, call: HubCall, new: NewModel) -> None:
        config = await call.get("/openai/config", admin=True)
        urls = list(config.get("OPENAI_API_BASE_URLS") or [])
        keys = list(config.get("OPENAI_API_KEYS") or [])
        configs = dict(config.get("OPENAI_API_CONFIGS") or {})
        keys += [""] * (len(urls) - len(keys))
        base = new.base_url.rstrip("/")
        index = next((i for i, u in enumerate(urls) if str(u).rstrip("/") == base), None)
        if index is None:
            key = call.ctx.keys.get(new.key_name) if new.key_name else None
            urls.append(base)
            keys.append(key or "")
            index = len(urls) - 1
            configs[str(index)] = {"enable": True, "tags": [{"name": new.connection}], "model_ids": []}
        entry = dict(_config_for({"OPENAI_API_BASE_URLS": urls, "OPENAI_API_CONFIGS": configs}, index))
        ids = list(entry.get("model_ids") or [])
        if ids and new.upstream_model not in ids:  # a connection that lists only chosen models: add this one
            entry["model_ids"] = [*ids, new.upstream_model]
        configs[str(index)] = entry
        await call.request("POST", "/openai/config/update", {
            "ENABLE_OPENAI_API": True, "OPENAI_API_BASE_URLS": urls, "OPENAI_API_KEYS": keys[:len(urls)],
            "OPENAI_API_CONFIGS": configs}, admin=True)
