"""Outbound providers, one per upstream API, found through a plain registry with lazy imports."""

from __future__ import annotations

import importlib

from benchwarmers_mcp.providers.base import Connection, Provider

REGISTRY: dict[str, str] = {
    "chat": "benchwarmers_mcp.providers.openai:OpenAIChat",
    "responses": "benchwarmers_mcp.providers.responses:OpenAIResponses",
    "anthropic": "benchwarmers_mcp.providers.anthropic:AnthropicMessages",
    "gemini": "benchwarmers_mcp.providers.gemini:GeminiGenerate",
    "ollama": "benchwarmers_mcp.providers.ollama:OllamaChat",
    "simulated": "benchwarmers_mcp.providers.simulated:Simulated",
    # not an API: the llm CLI's Python API as the client of any of them (store/clients.py chooses it)
    "llm": "benchwarmers_mcp.providers.llm_client:LlmClient",
}


def provider_class(api: str) -> type[Provider]:
    try:
        target = REGISTRY[api]
    except KeyError:
        raise LookupError(f"no provider for api {api!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module, _, name = target.partition(":")
    found: type[Provider] = getattr(importlib.import_module(module), name)
    return found


def make_provider(api: str, connection: Connection) -> Provider:
    return provider_class(api)(connection)


__all__ = ["Connection", "Provider", "REGISTRY", "make_provider", "provider_class"]
