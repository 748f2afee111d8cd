"""Which wire shape an error takes, decided by the route (never by what the request carries),
so that even a Host or key refusal reaches a client in its own format."""

from __future__ import annotations

import importlib
from collections.abc import Callable

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
    ("/mcp", "benchwarmers_mcp.mcp_server"),
    ("/v1/mcp", "benchwarmers_mcp.mcp_server"),
]
DEFAULT = "benchwarmers_mcp.gateway.openai_chat"


def renderer_for(path: str, headers: dict[str, str] | None = None) -> Callable[[BenchError], Response]:
    for prefix, module in sorted(SHAPES, key=lambda s: -len(s[0])):
        if path.startswith(prefix):
            return importlib.import_module(module).render_error
    return importlib.import_module(DEFAULT).render_error


def render_error_for(path: str, error: BenchError, headers: dict[str, str] | None = None) -> Response:
    return renderer_for(path, headers)(error)
