"""Which catalog provider an endpoint is, read from its base URL: the one table of hosts.

``api.groq.com`` is groq, ``openrouter.ai`` is openrouter. The table is the providers below (whose
catalog entry names no base URL, or names one the SDK overrides) plus every provider whose
catalog entry gives a public base URL. Where several share a host, the longest matching path
wins (``api.z.ai/api/coding/paas/v4`` is zai-coding-plan), then the shortest provider id.
A local address (loopback, a private network, ``.local``) is never a catalog provider.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from benchwarmers_mcp.catalog.entries import ProviderInfo

# provider id -> (public base URL, the API it speaks), for providers the catalog gives no URL for
KNOWN: dict[str, tuple[str, str]] = {
    "openai": ("https://api.openai.com/v1", "chat"),
    "anthropic": ("https://api.anthropic.com/v1", "anthropic"),
    "google": ("https://generativelanguage.googleapis.com/v1beta", "gemini"),
    "groq": ("https://api.groq.com/openai/v1", "chat"),
    "mistral": ("https://api.mistral.ai/v1", "chat"),
    "cerebras": ("https://api.cerebras.ai/v1", "chat"),
    "deepinfra": ("https://api.deepinfra.com/v1/openai", "chat"),
    "togetherai": ("https://api.together.xyz/v1", "chat"),
    "xai": ("https://api.x.ai/v1", "chat"),
    "perplexity": ("https://api.perplexity.ai", "chat"),
    "cohere": ("https://api.cohere.ai/compatibility/v1", "chat"),
    "venice": ("https://api.venice.ai/api/v1", "chat"),
    "openrouter": ("https://openrouter.ai/api/v1", "chat"),
}


@dataclass(frozen=True)
class Reachable:
    """How to add a provider as an endpoint."""

    provider: str
    base_url: str
    api: str


def is_local(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in ("localhost", "") or host.endswith((".local", ".localhost", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _api_of(info: ProviderInfo) -> str:
    npm = info.npm.lower()
    if "anthropic" in npm:
        return "anthropic"
    if npm.endswith("/google"):
        return "gemini"
    return "chat"


def public_bases(providers: Mapping[str, ProviderInfo]) -> dict[str, Reachable]:
    """Every provider with a public base URL: the table above, then the catalog's own URLs."""
    out = {pid: Reachable(pid, url, api) for pid, (url, api) in KNOWN.items()}
    for pid, info in providers.items():
        if pid in out or not info.api or "${" in info.api:
            continue
        parts = urlsplit(info.api)
        if parts.scheme == "https" and parts.hostname and not is_local(parts.hostname):
            out[pid] = Reachable(pid, info.api.rstrip("/"), _api_of(info))
    return out


def provider_for(base_url: str, bases: Mapping[str, Reachable]) -> str | None:
    """The catalog provider an endpoint's base URL names, or None (local, or not a known host)."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if not host or is_local(host):
        return None
    path = parts.path.rstrip("/").lower()
    best: tuple[int, int, str] | None = None
    for pid, reach in bases.items():
        known = urlsplit(reach.base_url)
        if (known.hostname or "").lower() != host:
            continue
        known_path = known.path.rstrip("/").lower()
        shared = len(known_path) if path.startswith(known_path) else 0
        rank = (-shared, len(pid), pid)
        if best is None or rank < best:
            best = rank
    return None if best is None else best[2]
