"""Endpoints: where models are served, which API they speak, and the *name* of their key."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import config_version, names
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Reader, Row

APIS = ("chat", "responses", "anthropic", "gemini", "ollama", "simulated")
KINDS = ("provider", "aggregator", "hub", "local", "simulated")


@dataclass(frozen=True)
class Endpoint:
    name: str
    base_url: str
    api: str = "chat"
    kind: str = "provider"
    key_name: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    connection: str | None = None

    @property
    def connection_name(self) -> str:
        """The rate-limit sharing unit: set explicitly, else the endpoint's own name."""
        return self.connection or self.name

    @property
    def simulated(self) -> bool:
        return self.api == "simulated"


def from_row(row: Row) -> Endpoint:
    """An Endpoint from a row of the endpoints table (or a query selecting its columns)."""
    return Endpoint(row["name"], row["base_url"], row["api"], row["kind"], row["key_name"],
                    json.loads(row["headers"]), row["connection"])


def copy_of(endpoint: Endpoint) -> Endpoint:
    """The endpoint with headers of its own: what a kept endpoint is handed out as."""
    return Endpoint(**{**vars(endpoint), "headers": dict(endpoint.headers)})  # replace() walks fields() each call


def validate(endpoint: Endpoint) -> None:
    names.check("endpoint name", endpoint.name)
    if endpoint.key_name is not None:
        names.check("key name", endpoint.key_name)
    if endpoint.api not in APIS:
        raise BadRequest(f"api must be one of {', '.join(APIS)}")
    if endpoint.kind not in KINDS:
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}")
    if endpoint.api != "simulated":
        parts = urlsplit(endpoint.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise BadRequest("base URL must be http(s)://host[:port][/path]")


async def add(db: Database, endpoint: Endpoint) -> Endpoint:
    validate(endpoint)
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO endpoints (name, base_url, api, kind, key_name, headers, connection, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET base_url=excluded.base_url,"
            " api=excluded.api, kind=excluded.kind, key_name=excluded.key_name, headers=excluded.headers,"
            " connection=excluded.connection",
            (endpoint.name, endpoint.base_url.rstrip("/"), endpoint.api, endpoint.kind, endpoint.key_name,
             json.dumps(endpoint.headers), endpoint.connection, time.time()),
        )
        await log_change(tx, "endpoint.save", endpoint.name, {"base_url": endpoint.base_url, "api": endpoint.api,
                                                              "kind": endpoint.kind, "key_name": endpoint.key_name})
    return await get(db, endpoint.name)


async def get(db: Database, name: str) -> Endpoint:
    row = await db.fetchone("SELECT * FROM endpoints WHERE name = ?", (name,))
    if row is None:
        raise NotFound(f"no endpoint named {name!r}")
    return from_row(row)


async def list_all(db: Database) -> list[Endpoint]:
    """Every endpoint by name, kept while the configuration is unchanged (``config_version``)."""
    return [copy_of(e) for e in await _kept(db)]


async def apis(db: Database) -> dict[str, str]:
    """Each endpoint's API, by name (from the kept endpoints: nothing is copied)."""
    return {e.name: e.api for e in await _kept(db)}


async def _kept(db: Database) -> tuple[Endpoint, ...]:
    """The kept endpoints themselves: read them, never hand them out (``copy_of``)."""
    return await config_version.cached(db, "endpoints.list_all", _all)


async def _all(db: Reader) -> tuple[Endpoint, ...]:
    return tuple(from_row(r) for r in await db.fetchall("SELECT * FROM endpoints ORDER BY name"))


async def simulated_names(db: Database) -> set[str]:
    """The endpoints that serve simulated models (the ``simulated`` API): from the kept endpoints,
    so a panel (which asks every time) costs no statement for it inside a ``config_version.shared``
    ask."""
    return {e.name for e in await _kept(db) if e.api == "simulated"}


async def remove(db: Database, name: str) -> None:
    await get(db, name)
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM endpoints WHERE name = ?", (name,))
        await log_change(tx, "endpoint.remove", name, {})
