"""What every hub adapter shares: an ``Upstream`` (one model the hub serves, the connection it
comes through, the model's own name there), a ``NewModel`` to add through the hub's admin API,
``HubCall`` (one hub's requests: its call key, or its admin key for the admin API; errors are the
providers' ``ProviderError``, mapped at their one boundary and masked with both keys), and the
``Hub`` Protocol the adapters satisfy (two members).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BenchError, UpstreamFailure
from benchwarmers_mcp.providers.base import map_transport_errors, raise_for_status
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.upstream.masking import Secrets

TIMEOUT = 30.0


@dataclass(frozen=True)
class Upstream:
    served: str  # the name the hub lists (and calls take)
    connection: str  # the upstream it comes through: the rate-limit sharing unit behind the hub
    upstream_model: str  # the model's name at that upstream: what a hub renaming its prefix keeps


@dataclass(frozen=True)
class NewModel:
    """A model to add to a hub: listed as ``served``, called as ``upstream_model`` at ``base_url``
    with the key named ``key_name`` in the key store (sent to the hub's admin API, nowhere else),
    under the connection name ``connection``."""

    served: str
    upstream_model: str
    base_url: str
    connection: str
    key_name: str | None = None


def admin_key_name(key_name: str) -> str:
    """Where a hub's admin key is kept: ``<its key name>-admin`` (``BENCHWARMERS_KEY_<KEY>_ADMIN``)."""
    return f"{key_name}-admin"


def connection_of(text: str | None) -> str:
    """A connection name from a host or a provider's name: lower case, '-' for the rest."""
    return re.sub(r"[^a-z0-9.-]+", "-", (text or "").strip().lower()).strip("-.")


def host_of(url: Any) -> str:
    """The host (and port) an upstream's URL names; '' when it names none."""
    if not isinstance(url, str) or not url:
        return ""
    parts = urlsplit(url)
    return connection_of(parts.netloc.rsplit("@", 1)[-1])


@dataclass
class HubCall:
    """One hub: requests to its API (``root``: its base URL without the API's own suffix), with the
    endpoint's key, or its admin key for the admin API (``admin=True``, the call key without one)."""

    ctx: Context
    endpoint: Endpoint
    root: str
    key: str | None = field(repr=False)
    admin_key: str | None = field(repr=False)

    @property
    def secrets(self) -> Secrets:
        return Secrets.of([("hub key", self.key), ("hub admin key", self.admin_key)])

    async def request(self, method: str, path: str, body: Any = None, *, admin: bool = False) -> Any:
        token = (self.admin_key or self.key) if admin else self.key
        headers = {**self.endpoint.headers, "Accept": "application/json",
                   **({"Authorization": f"Bearer {token}"} if token else {})}
        try:
            with map_transport_errors():
                response = await self.ctx.client.request(
                    method, self.root + path, content=None if body is None else json.dumps(body),
                    headers={**headers, **({"Content-Type": "application/json"} if body is not None else {})},
                    timeout=TIMEOUT)
                await raise_for_status(response)
                await response.aread()
            try:
                return json.loads(response.content) if response.content else {}
            except ValueError:
                raise UpstreamFailure(f"{self.endpoint.name}'s {path} answered with something that is not JSON") from None
        except BenchError as e:
            self.secrets.error(e)
            e.message = f"{self.endpoint.name} ({method} {path}): {e.message}"
            e.args = (e.message,)
            raise

    async def get(self, path: str, *, admin: bool = False) -> Any:
        return await self.request("GET", path, admin=admin)


class Hub(Protocol):
    """A hub adapter. ``root`` is the part of an endpoint's base URL its admin API hangs from."""

    def root(self, base_url: str) -> str: ...

    async def upstreams(self, call: HubCall) -> list[Upstream]: ...

    async def register(self, call: HubCall, new: NewModel) -> None: ...


def items(data: Any, key: str) -> list[dict[str, Any]]:
    """``data[key]`` as a list of objects ([] when it is missing or not one)."""
    found = data.get(key) if isinstance(data, dict) else None
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


__all__ = ["Hub", "HubCall", "NewModel", "Upstream", "admin_key_name", "connection_of", "host_of", "items"]
