"""Registering a model: the one function every way onto the bench goes through.

``POST /api/model/register``, Discover's "add" (``admin/catalog.py::onboard``) and the onboarding
queue's register step (``health/onboarding.py``) all call ``register_new``: what the caller gives
about the model is the user's say, and the catalog's and the endpoint listing's facts come with
it, each with its source (``store/facts.py``), in the registration's own transaction.

A served name the endpoint does not list is refused when its listing answered and is complete (it
named models, and said nothing of more pages), with the closest names it lists; ``force`` registers
it anyway, with a warning. When the listing cannot say (it did not answer, listed nothing, or is
one page of several) the model is registered with a warning. A simulated endpoint serves any persona.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchwarmers_mcp.catalog.discover import close_names
from benchwarmers_mcp.catalog.sync import REGISTER_LISTING_TIMEOUT, layers_for_new, listing_within
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.endpoints import Endpoint
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


@dataclass(frozen=True)
class Registered:
    """A model just put on the bench, and a warning when its endpoint could not vouch for its name."""

    model: ModelRecord
    warning: str = ""


async def check_listed(ctx: Context, endpoint: Endpoint, served: str, listed: Listing | None,
                       force: bool = False) -> tuple[Listing, str]:
    """Whether ``endpoint`` lists ``served``: its listing (read now when not given; empty when it did not
    answer) and a warning ("" when it lists it). Refused when the listing is known and complete and the
    name is not in it, unless ``force``."""
    if endpoint.simulated:
        return listed or Listing([]), ""
    if listed is None:
        found, problem = await listing_within(ctx, endpoint, REGISTER_LISTING_TIMEOUT)
        if found is None:
            return Listing([]), (f"{endpoint.name}'s listing did not answer ({problem}), so the name "
                                 f"{served} is not checked: a probe shows whether it answers")
        listed = found
    if listed.lists(served):
        return listed, ""
    close = close_names(served, listed.names)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    if not listed.names or not listed.complete:
        what = "lists nothing" if not listed.names else "lists one page of its models"
        return listed, f"{endpoint.name} {what}, and {served} is not among them{hint}: a probe shows whether it answers"
    if not force:
        raise BadRequest(f"{endpoint.name} does not list {served}{hint}; `bench candidates --endpoint "
                         f"{endpoint.name}` shows what it serves. Register it anyway with --force (\"force\": true)")
    return listed, f"{endpoint.name} does not list {served}{hint}; registered anyway (force)"


async def register_new(ctx: Context, served: str, endpoint: str, *, alias: str | None = None, role: str = "general",
                       ad_hoc: bool = False, vision: bool | None = None, tools: bool | None = None,
                       context_window: int | None = None, max_output: int | None = None,
                       listed: Listing | None = None, force: bool = False) -> Registered:
    """Put ``served`` on ``endpoint`` on the bench; the alias is derived from it unless given.
    ``listed``: the endpoint's listing when the caller just read it (else it is asked, briefly);
    ``force``: register a name the endpoint's complete listing does not hold (``check_listed``)."""
    await check_served(ctx, served, endpoint)
    found = await endpoint_store.get(ctx.db, endpoint)
    name = alias or await model_store.unique_alias(ctx.db, served)
    record = ModelRecord(name, served, endpoint, family_of(served), role=role, ad_hoc=ad_hoc, vision=vision,
                         tools=tools, context_window=context_window, max_output=max_output)
    await model_store.check_new(ctx.db, record)  # refused before the listing is asked
    listed, warning = await check_listed(ctx, found, served, listed, force)
    return Registered(await model_store.register(ctx.db, record, await layers_for_new(ctx, found, served, listed)),
                      warning)


__all__ = ["Registered", "check_listed", "check_served", "register_new"]
