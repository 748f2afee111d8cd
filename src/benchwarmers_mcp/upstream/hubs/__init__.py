"""Hubs: endpoints that front other upstreams. One adapter per hub, found through a plain registry
with lazy imports (``HUBS``): ``litellm`` (LiteLLM's proxy), ``openwebui`` (Open WebUI) and
``cliproxy`` (CLI Proxy API). Each lists the hub's models with the upstream connection each comes
through and adds a model through the hub's admin API (``base.Hub``); ``sync.py`` keeps the bench
in step: every model on the endpoint of its real upstream (so limits and pauses are that
upstream's), and a name the hub renamed followed to the same alias instead of retired."""

from __future__ import annotations

import importlib

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.upstream.hubs.base import Hub

HUBS: dict[str, str] = {
    "litellm": "benchwarmers_mcp.upstream.hubs.litellm:LiteLLM",
    "openwebui": "benchwarmers_mcp.upstream.hubs.openwebui:OpenWebUI",
    "cliproxy": "benchwarmers_mcp.upstream.hubs.cliproxy:CLIProxyAPI",
}


def adapter(hub: str) -> Hub:
    try:
        target = HUBS[hub]
    except KeyError:
        raise BadRequest(f"hub must be one of {', '.join(HUBS)}, not {hub!r}") from None
    module, _, name = target.partition(":")
    found: Hub = getattr(importlib.import_module(module), name)()
    return found


__all__ = ["HUBS", "adapter"]
