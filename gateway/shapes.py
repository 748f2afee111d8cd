"""Which wire shape an error takes, decided by the route (never by what the request carries),
so that even a Host or key refusal reaches a client in its own format."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Container, Mapping

from starlette.responses import Response

from benchwarmers_mcp.errors import BenchError

# (path prefix, module with render_error), longest prefix first. The default is OpenAI's shape.
SHAPES: list[tuple[str, str]] = [
    ("/v1/chat/completions", "benchwarmers_mcp.gateway.openai_chat"),
    ("/v1/messages", "benchwarmers_mcp.gateway.anthropic"),
    ("/v1/responses", "benchwarmers_mcp.gateway.responses"),
    ("/responses", "benchwarmers_mcp.gateway.responses"),
    ("/v1/completions", "benchwarmers_mcp.gateway.completions"),
    ("/completions", "benchwarmers_mcp.gateway.completions"),
    ("/v1beta", "benchwarmers_mcp.gateway.gemini"),
    ("/v1/models/", "benchwarmers_mcp.gateway.gemini"),
    ("/api/chat", "benchwarmers_mcp.gateway.ollama"),
    ("/api/generate", "benchwarmers_mcp.gateway.ollama"),
    ("/api/show", "benchwarmers_mcp.gateway.ollama"),
    ("/api/tags", "benchwarmers_mcp.gateway.ollama"),
    ("/api/version", "benchwarmers_mcp.gateway.ollama"),
    ("/api/ps", "benchwarmers_mcp.gateway.ollama"),
    ("/mcp", "benchwarmers_mcp.mcp.server"),
    ("/v1/mcp", "benchwarmers_mcp.mcp.server"),
]
DEFAULT = "benchwarmers_mcp.gateway.openai_chat"


SHARED_LISTS = ("/v1/models", "/models")
FLAVOURS = {"gemini": "benchwarmers_mcp.gateway.gemini", "anthropic": "benchwarmers_mcp.gateway.anthropic",
            "openai": DEFAULT}


def list_flavour(headers: Mapping[str, str], query: Container[str] = ()) -> str:
    """``GET /v1/models`` is called by three SDKs: tell them apart by what each always sends
    (google-genai may put its key in ``?key=``, when the query is known)."""
    if "x-goog-api-key" in headers or "x-goog-api-client" in headers or "key" in query:
        return "gemini"
    if "anthropic-version" in headers:
        return "anthropic"
    return "openai"


def renderer_for(path: str, headers: Mapping[str, str] | None = None) -> Callable[[BenchError], Response]:
    shared = path in SHARED_LISTS or (path.startswith("/v1/models/") and ":" not in path)
    if shared:
        return importlib.import_module(FLAVOURS[list_flavour(headers or {})]).render_error
    for prefix, module in sorted(SHAPES, key=lambda s: -len(s[0])):
        if path.startswith(prefix):
            return importlib.import_module(module).render_error
    return importlib.import_module(DEFAULT).render_error


def render_error_for(path: str, error: BenchError, headers: Mapping[str, str] | None = None) -> Response:
    return renderer_for(path, headers)(error)
