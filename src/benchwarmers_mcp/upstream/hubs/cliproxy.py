"""CLI Proxy API as a hub.

Its models: ``GET /v1/models`` (one of its API keys). With its management key (the hub's admin
key) the adapter also reads ``GET /v0/management/openai-compatibility``: each OpenAI-compatible
provider it fronts (``name``, ``base-url``, ``models``: each ``name`` at the provider and the
``alias`` it is listed as). A listed model is that provider's when it is one of its aliases (or
names), and its connection is the provider's name; any other (its own sign-ins: Gemini CLI, Codex,
Claude Code...) comes through the connection its listing's ``owned_by`` names.

A model is added to the provider of that name (``PATCH`` with the provider's entry, its models
one longer), or with a new provider entry (``PUT`` of the whole list) when there is none.
"""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.upstream.hubs.base import HubCall, NewModel, Upstream, connection_of, items

MANAGEMENT = "/v0/management/openai-compatibility"


class CLIProxyAPI:
    name = "cliproxy"

    def root(self, base_url: str) -> str:
        return base_url.rstrip("/").removesuffix("/v1")

    async def upstreams(self, call: HubCall) -> list[Upstream]:
        listed = items(await call.get("/v1/models"), "data")
        providers = items(await call.get(MANAGEMENT, admin=True), "openai-compatibility") if call.admin_key else []
        behind: dict[str, tuple[str, str]] = {}
        for provider in providers:
            for model in items(provider, "models"):
                name = str(model.get("name") or "")
                if name:
                    behind[str(model.get("alias") or name)] = (connection_of(str(provider.get("name") or "")), name)
        out = []
        for model in listed:
            served = model.get("id")
            if not isinstance(served, str) or not served:
                continue
            connection, upstream_model = behind.get(served, (connection_of(str(model.get("owned_by") or "")), served))
            out.append(Upstream(served, connection or self.name, upstream_model))
        return out

    async def register(self, call: HubCall, new: NewModel) -> None:
        providers = items(await call.get(MANAGEMENT, admin=True), "openai-compatibility")
        model = {"name": new.upstream_model, "alias": new.served}
        found = next((p for p in providers if connection_of(str(p.get("name") or "")) == new.connection), None)
        if found is not None:
            value: dict[str, Any] = {**found, "models": [*items(found, "models"), model]}
            await call.request("PATCH", MANAGEMENT, {"name": found["name"], "value": value}, admin=True)
            return
        key = call.ctx.keys.get(new.key_name) if new.key_name else None
        entry = {"name": new.connection, "base-url": new.base_url, "api-key-entries": [{"api-key": key or ""}],
                 "models": [model]}
        await call.request("PUT", MANAGEMENT, [*providers, entry], admin=True)
