"""Registering a model: the one function every way onto the bench goes through.

``POST /api/model/register``, Discover's "add" (``admin/catalog.py::onboard``) and the onboarding
queue's register step (``health/onboarding.py``) all call ``register_new``: what the caller gives
about the model is the user's say, and the catalog's and the endpoint listing's facts come with
it, each with its source (``store/facts.py``), in the registration's own transaction.
"""

from __future__ import annotations

from benchwarmers_mcp.catalog.sync import layers_for_new
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.models import ModelRecord, family_of
from benchwarmers_mcp.upstream.listing import Listing


async def check_served(ctx: Context, served: str, endpoint: str) -> None:
    """The endpoint exists and the served name is not on the bench already (retired or not)."""
    await endpoint_store.get(ctx.db, endpoint)
    for m in await model_store.list_all(ctx.db):
        if m.endpoint == endpoint and m.served == served:
            if m.retired:
                raise BadRequest(f"{served} on {endpoint} was retired as {m.alias!r}; bring it back "
                                 f"with `bench model restore {m.alias}`")
            raise BadRequest(f"{served} on {endpoint} is already on the bench as {m.alias!r}")


async def register_new(ctx: Context, served: str, endpoint: str, *, alias: str | None = None, role: str = "general",
                       ad_hoc: bool = False, vision: bool | None = None, tools: bool | None = None,
                       context_window: int | None = None, max_output: int | None = None,
                       listed: Listing | None = None) -> ModelRecord:
    """Put ``served`` on ``endpoint`` on the bench; the alias is derived from it unless given.
    ``listed``: the endpoint's listing when the caller just read it (else it is asked, briefly)."""
    await check_served(ctx, served, endpoint)
    found = await endpoint_store.get(ctx.db, endpoint)
    name = alias or await model_store.unique_alias(ctx.db, served)
    record = ModelRecord(name, served, endpoint, family_of(served), role=role, ad_hoc=ad_hoc, vision=vision,
                         tools=tools, context_window=context_window, max_output=max_output)
    await model_store.check_new(ctx.db, record)  # refused before the listing is asked
    return await model_store.register(ctx.db, record, await layers_for_new(ctx, found, served, listed))


__all__ = ["check_served", "register_new"]
