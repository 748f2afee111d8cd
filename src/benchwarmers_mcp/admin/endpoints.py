"""Admin routes for endpoints and candidates (with the catalog's facts; dismissals stick).

An endpoint's API key arrives once, in a POST body, and goes straight to the key store (the keys
file in the config folder, mode 0600). The endpoint row keeps only the key's *name*; the value is
never written to the data folder, a log, or a reply.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from pydantic import Field, field_validator
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import (
    EndpointName,
    KeyName,
    NameIn,
    Strict,
    admin,
    body_as,
    ctx_of,
    found,
    ok,
)
from benchwarmers_mcp.admin.catalog import caught_up
from benchwarmers_mcp.catalog.merge import candidate_facts
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, ProviderError
from benchwarmers_mcp.store import catalog as catalog_store
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.endpoints import KINDS, Endpoint
from benchwarmers_mcp.store.models import alias_for
from benchwarmers_mcp.upstream.keys import env_name
from benchwarmers_mcp.upstream.listing import listing, served_names

SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie")


def _clean_key(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value:
        raise ValueError("the key is empty")
    if any(c.isspace() or ord(c) < 32 for c in value):
        raise ValueError("a key has no spaces, tabs or line breaks")
    return value


class EndpointIn(Strict):
    name: EndpointName
    base_url: str = Field("", max_length=500, alias="base")
    api: str | None = None
    kind: str | None = None
    key_name: KeyName | None = None
    key: str | None = Field(None, max_length=8192, repr=False)
    headers: dict[str, str] | None = Field(None, max_length=20)
    connection: str | None = Field(None, max_length=64)

    @field_validator("key")
    @classmethod
    def _check_key(cls, value: str | None) -> str | None:
        return _clean_key(value)

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        secret = [name for name in value or {} if name.strip().lower() in SECRET_HEADERS]
        if secret:
            raise ValueError(f"{', '.join(secret)} would keep a secret in the data folder; send the key as "
                             "'key', which goes to the key store")
        return value


class KeyIn(Strict):
    name: str = Field(min_length=1, max_length=64)
    key: str = Field(max_length=8192, repr=False)

    @field_validator("key")
    @classmethod
    def _check_key(cls, value: str) -> str | None:
        return _clean_key(value)


class RemoveIn(NameIn):
    with_models: bool = False


async def describe(ctx: Context, e: Endpoint, models: list[model_store.ModelRecord] | None = None) -> dict[str, Any]:
    """An endpoint as the admin API shows it: where its key comes from, never the key. ``models``:
    the roster when the caller already has it (a listing reads it once, not once per endpoint)."""
    on_it = await models_on(ctx, e.name) if models is None else [m for m in models if m.endpoint == e.name]
    return {"name": e.name, "base_url": e.base_url, "api": e.api, "kind": e.kind, "key_name": e.key_name,
            "key_source": ctx.keys.source(e.key_name) if e.key_name else None, "headers": sorted(e.headers),
            "connection": e.connection_name, "models": sum(1 for m in on_it if not m.retired),
            "retired_models": sum(1 for m in on_it if m.retired)}


async def models_on(ctx: Context, name: str) -> list[model_store.ModelRecord]:
    return [m for m in await model_store.list_all(ctx.db) if m.endpoint == name]


@admin
async def list_endpoints(request: Request) -> Response:
    ctx = ctx_of(request)
    models = await model_store.list_all(ctx.db)
    return ok({"endpoints": [await describe(ctx, e, models) for e in await endpoint_store.list_all(ctx.db)]})


def _env_note(ctx: Context, key_name: str) -> dict[str, str]:
    """A ``note`` for the reply when a key just saved is shadowed by the server's environment."""
    if ctx.keys.source(key_name) == "environment":
        return {"note": f"BENCHWARMERS_KEY_{env_name(key_name)} is set in the server's environment and wins "
                        "over the keys file"}
    return {}


def merged(body: EndpointIn, existing: Endpoint | None) -> Endpoint:
    """The endpoint as asked for: what the body gives, the rest as it was (or the defaults)."""
    api = body.api or (existing.api if existing else "chat")
    kind = "simulated" if api == "simulated" else body.kind or (existing.kind if existing else "provider")
    base = body.base_url or (existing.base_url if existing else "")
    if not base and api == "simulated":
        base = "simulated://local"
    return Endpoint(body.name, base, api, kind,
                    body.key_name or (existing.key_name if existing else None) or body.name,
                    body.headers if body.headers is not None else (existing.headers if existing else {}),
                    body.connection or (existing.connection if existing else None))


@admin
async def save_endpoint(request: Request) -> Response:
    """Add an endpoint, or change one: base URL, API, kind, and (optionally) its key."""
    ctx = ctx_of(request)
    body = await body_as(request, EndpointIn, "endpoint")
    existing = await found(endpoint_store.get(ctx.db, body.name))
    endpoint = merged(body, existing)
    if not endpoint.base_url:
        raise BadRequest(f"a new endpoint needs the base URL of its API (base), e.g. https://api.groq.com/openai/v1: "
                         f"bench endpoint add {body.name} --base <URL>")
    endpoint_store.validate(endpoint)
    if body.kind is not None and body.kind not in KINDS:  # a simulated endpoint's kind is set, not validated
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}")
    if body.key is not None:
        ctx.keys.set(endpoint.key_name or endpoint.name, body.key)
    saved = await endpoint_store.add(ctx.db, endpoint)
    out: dict[str, Any] = {"endpoint": await describe(ctx, saved), "created": existing is None,
                           "key_saved": body.key is not None}
    if body.key is not None:
        out.update(_env_note(ctx, saved.key_name or saved.name))
    return ok(out, 201 if existing is None else 200)


@admin
async def set_key(request: Request) -> Response:
    """Replace an endpoint's key in the key store."""
    ctx = ctx_of(request)
    body = await body_as(request, KeyIn, "key")
    endpoint = await endpoint_store.get(ctx.db, body.name)
    key_name = endpoint.key_name or endpoint.name
    if endpoint.key_name is None:
        endpoint = await endpoint_store.add(ctx.db, replace(endpoint, key_name=key_name))
    ctx.keys.set(key_name, body.key)
    return ok({"endpoint": await describe(ctx, endpoint), "key_saved": True, **_env_note(ctx, key_name)})


@admin
async def remove_endpoint(request: Request) -> Response:
    """Remove an endpoint. Its models are retired with it (``with_models``), or the removal is refused."""
    ctx = ctx_of(request)
    body = await body_as(request, RemoveIn, "endpoint removal")
    endpoint = await endpoint_store.get(ctx.db, body.name)
    active = [m for m in await models_on(ctx, body.name) if not m.retired]
    if active and not body.with_models:
        raise BadRequest(f"{len(active)} model(s) on the bench use {body.name}: "
                         f"{', '.join(m.alias for m in active)}; retire them first, or remove with their models "
                         "(with_models: true; `bench endpoint remove --with-models`)")
    for m in active:
        await model_store.retire(ctx.db, m.alias, f"endpoint {body.name} removed")
    await endpoint_store.remove(ctx.db, body.name)
    key_removed = False
    others = [e for e in await endpoint_store.list_all(ctx.db) if e.key_name == endpoint.key_name]
    if endpoint.key_name and not others and ctx.keys.source(endpoint.key_name) == "keys file":
        ctx.keys.delete(endpoint.key_name)
        key_removed = True
    return ok({"removed": body.name, "retired": [m.alias for m in active], "key_removed": key_removed})


@admin
async def test_endpoint(request: Request) -> Response:
    """One listing call: does the endpoint answer, with this key? The outcome is the reply, not a status."""
    ctx = ctx_of(request)
    body = await body_as(request, NameIn, "endpoint test")
    endpoint = await endpoint_store.get(ctx.db, body.name)
    started = time.monotonic()
    result: dict[str, Any] = {"name": endpoint.name, "base_url": endpoint.base_url,
                              "key_source": ctx.keys.source(endpoint.key_name) if endpoint.key_name else None}
    try:
        names = await served_names(ctx, endpoint)
    except ProviderError as e:
        result.update(ok=False, error=e.message, upstream_status=e.upstream_status)
    else:
        result.update(ok=True, served=len(names), sample=names[:10])
    result["seconds"] = round(time.monotonic() - started, 3)
    return ok(result)


def _suggest(served: str, taken: set[str]) -> str:
    base = alias_for(served)
    alias, n = base, 2
    while alias in taken:
        alias, n = f"{base}-{n}", n + 1
    taken.add(alias)
    return alias


class CandidatesIn(Strict):
    endpoint: EndpointName | None = None  # one endpoint's; else every endpoint's
    new: bool = False  # only what is not registered yet
    find: str = Field("", max_length=300)
    dismissed: bool = False  # with the dismissed ones


@admin
async def candidates(request: Request) -> Response:
    """``POST /api/candidates``: what each endpoint serves, with the alias it is (or would be)
    registered as and what the catalog and the listing say about it; dismissed ones only with
    ``dismissed``. A POST, never a GET: it calls each endpoint's listing with its key, which no
    image or link on another web page may make the server do."""
    ctx = ctx_of(request)
    body = await body_as(request, CandidatesIn, "candidates")
    wanted, only_new, show_dismissed, find = body.endpoint, body.new, body.dismissed, body.find.strip().lower()
    chosen = [await endpoint_store.get(ctx.db, wanted)] if wanted else await endpoint_store.list_all(ctx.db)
    models = await model_store.list_all(ctx.db)
    registered = {(m.endpoint, m.served): m for m in models}
    taken = {m.alias for m in models}
    catalog = await caught_up(ctx)
    dismissed = await catalog_store.dismissed(ctx.db)
    out: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for endpoint in chosen:
        try:
            listed = await listing(ctx, endpoint)
        except ProviderError as e:
            errors.append({"endpoint": endpoint.name, "error": e.message})
            continue
        for served in listed.names:
            model = registered.get((endpoint.name, served))
            gone = (endpoint.name, served) in dismissed
            if (only_new and model) or (find and find not in served.lower()) or (gone and not show_dismissed):
                continue
            out.append({"endpoint": endpoint.name, "served": served, "key": f"{served}@{endpoint.name}",
                        "alias": model.alias if model else None, "status": "dismissed" if gone else _status(model),
                        "suggested": None if model else _suggest(served, taken),
                        **candidate_facts(catalog, endpoint, served, listed.facts.get(served))})
    return ok({"candidates": out, "errors": errors})


def _status(model: model_store.ModelRecord | None) -> str:
    if model is None:
        return "new"
    return "retired" if model.retired else "registered"
