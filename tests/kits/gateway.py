"""The gateway and its fake upstreams in-process, on a test's loopback: ``create_app`` served with its
lifespan, its outbound client routed to the fakes served next to it, and the official SDK clients
pointed at it through their ``http_client=`` options."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import anthropic
import httpx
import openai
from google import genai
from google.genai import types
from starlette.applications import Starlette

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.engine.route import RouteTuning
from benchwarmers_mcp.settings import Settings
from tests.kits.loopback import Loopback, free_port


def gateway_app(settings: Settings, *, upstream_transport: httpx.AsyncBaseTransport | None = None,
                route_tuning: RouteTuning | None = None) -> Starlette:
    """``create_app`` with the test seams passed in (never planted in its context afterwards)."""
    return create_app(settings, route_tuning=route_tuning, upstream_transport=upstream_transport)


def serve_gateway(net: Loopback, settings: Settings, *, route_tuning: RouteTuning | None = None,
                  **overrides: Any) -> str:
    """``create_app(settings)`` on a free port of ``net`` (``overrides`` replace settings fields), its
    upstream calls going to the apps served on ``net``; returns its base URL."""
    port = free_port()
    app = gateway_app(replace(settings, port=port, **overrides), upstream_transport=net.transport(httpx),
                      route_tuning=route_tuning)
    return net.serve(app, port)


@contextmanager
def gateway_serving(net: Loopback, settings: Settings, **kwargs: Any) -> Iterator[str]:
    """``serve_gateway`` for the length of a ``with`` block: the server stops (lifespan shut down) at its end."""
    base = serve_gateway(net, settings, **kwargs)
    try:
        yield base
    finally:
        net.stop(base)


def openai_sdk(net: Loopback, base: str, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("api_key", "unused")
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=base + "/v1", http_client=net.client2(), **kwargs)


def async_openai_sdk(net: Loopback, base: str, **kwargs: Any) -> openai.AsyncOpenAI:
    kwargs.setdefault("api_key", "unused")
    kwargs.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=base + "/v1", http_client=net.aclient2(), **kwargs)


def anthropic_sdk(net: Loopback, base: str, **kwargs: Any) -> anthropic.Anthropic:
    kwargs.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=base, http_client=net.client2(), **kwargs)


def genai_sdk(net: Loopback, base: str, api_key: str = "unused", **options: Any) -> genai.Client:
    """google-genai on ``base``, sync and ``.aio`` both through the loopback."""
    http_options = types.HttpOptions(base_url=base, httpx_client=net.client2(),
                                     httpx_async_client=net.aclient2(), **options)
    return genai.Client(api_key=api_key, http_options=http_options)
