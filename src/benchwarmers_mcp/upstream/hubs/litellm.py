"""LiteLLM's proxy as a hub.

Its upstreams: ``GET /model/info`` (any key the proxy knows; the master key sees every
deployment) lists each deployment's ``model_name`` (what calls send) with its ``litellm_params``:
``model`` is ``<provider>/<the upstream's model name>``, and ``api_base`` where it is sent. The
connection a model comes through is that ``api_base``'s host, else the provider's name. A model is
added with ``POST /model/new`` (``{"model_name", "litellm_params": {"model", "api_base",
"api_key"}}``) and the master key, kept in the key store as the hub's admin key; the proxy stores
such models in its own database (without one it answers "No DB Connected", which is reported as
it is).
"""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.upstream.hubs.base import HubCall, NewModel, Upstream, connection_of, host_of, items


class LiteLLM:
    name = "litellm"

    def root(self, base_url: str) -> str:
        return base_url.rstrip("/").removesuffix("/v1")

    async def upstreams(self, call: HubCall) -> list[Upstream]:
        out = []
        for deployment in items(await call.get("/model/info", admin=True), "data"):
            served = deployment.get("model_name")
            found = deployment.get("litellm_params")
            params: dict[str, Any] = found if isinstance(found, dict) else {}
            if not isinstance(served, str) or not served:
                continue
            model = str(params.get("model") or served)
            provider, slash, bare = model.partition("/")
            upstream_model = bare if slash else model
            provider = str(params.get("custom_llm_provider") or (provider if slash else ""))
            connection = host_of(params.get("api_base")) or connection_of(provider) or self.name
            out.append(Upstream(served, connection, upstream_model))
        return out

    async def register(self, call: HubCall, new: NewModel) -> None:
        key = call.ctx.keys.get(new.key_name) if new.key_name else None
        params = {"model": f"openai/{new.upstream_model}", "api_base": new.base_url, **({"api_key": key} if key else {})}
        await call.request("POST", "/model/new", {"model_name": new.served, "litellm_params": params}, admin=True)
