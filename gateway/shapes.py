"""Which wire shape an error takes, decided by the route (never by what the request carries), so
that even a Host or key refusal reaches a client in its own format. The route table
(``routes.py``) names each path's shape; this module imports its renderer when first needed.

The one family whose shape a path alone cannot tell is the model list three SDKs share
(``/v1/models``, ``/models``, ``/v1/models/<name>``): it is told apart by what each SDK sends.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Container, Mapping
from functools import partial

from starlette.responses import Response

from benchwarmers_mcp import routes
from benchwarmers_mcp.errors import BenchError

Renderer = Callable[[BenchError], Response]


def list_flavour(headers: Mapping[str, str], query: Container[str] = ()) -> str:
    """``GET /v1/models`` is called by three SDKs: tell them apart by what each always sends
    (google-genai may put its key in ``?key=``, when the query is known)."""
    if "x-goog-api-key" in headers or "x-goog-api-client" in headers or "key" in query:
        return "gemini"
    if "anthropic-version" in headers:
        return "anthropic"
    return "openai"


def renderer(shape: str) -> Renderer:
    """The ``render_error`` of a shape named in the route table."""
    module = importlib.import_module(routes.RENDERERS[shape])
    render: Renderer = module.render_error
    return render


def renderer_for(path: str, headers: Mapping[str, str] | None = None) -> Renderer:
    """The path's renderer. A shape whose module also has ``render_error_at(path, error)`` is told
    where the error happened (the dashboard's pages send a visitor to ``/login`` and back there)."""
    shape = routes.shape_of(path)
    if shape == routes.MODELS:
        shape = list_flavour(headers or {})
    at = getattr(importlib.import_module(routes.RENDERERS[shape]), "render_error_at", None)
    return partial(at, path) if at is not None else renderer(shape)


def render_error_for(path: str, error: BenchError, headers: Mapping[str, str] | None = None) -> Response:
    return renderer_for(path, headers)(error)
