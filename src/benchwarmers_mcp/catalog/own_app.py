"""Free models that work only in their provider's own app, kept off panels and out of Discover's
free list once the user says so for that provider (``store/own_app.py``: the switch, per catalog
provider id, on Settings, ``POST /api/own-app-free`` and ``bench settings own-app``).

A registered model is one of them when its endpoint is that provider's (``Catalog.provider_for``
its base URL) and it is free: a ``:free`` variant, or both its prices known and zero. Such a model
is never seated, as a member or an explorer (``engine/seating.py`` skips it and says why); a
catalog entry of that provider is not free in Discover (its row says ``own_app_only``). With no
provider switched on, the usual case, a panel pays one kept read for it and nothing more.
"""

from __future__ import annotations

from benchwarmers_mcp.catalog.data import current
from benchwarmers_mcp.catalog.entries import FREE_SUFFIXES
from benchwarmers_mcp.catalog.paid import Price
from benchwarmers_mcp.store import Database, facts, own_app
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store


def why(provider: str) -> str:
    return f"free only in {provider}'s own app (Settings: its free models work only there)"


async def kept_off(db: Database) -> dict[str, str]:
    """The registered models kept off panels now, each with why (alias -> reason)."""
    switched = await own_app.providers(db)
    if not switched:
        return {}
    catalog = await current(db)
    providers = {e.name: catalog.provider_for(e.base_url) for e in await endpoint_store.list_all(db) if not e.simulated}
    mine = [m for m in await model_store.list_all(db, include_retired=False) if providers.get(m.endpoint) in switched]
    if not mine:
        return {}
    known = await facts.rows_for(db, [m.alias for m in mine])
    out = {}
    for m in mine:
        effective = facts.effective(known.get(m.alias, []))
        pin, pout = (effective[f].winner.value if f in effective else None for f in ("price_in", "price_out"))
        price = Price(pin, pout)
        if m.served.lower().endswith(FREE_SUFFIXES) or price.free:
            out[m.alias] = why(str(providers[m.endpoint]))
    return out


async def overview(db: Database) -> dict[str, object]:
    """``GET /api/own-app-free``'s reply (Settings shows the same): the providers switched on, the
    models kept off now, and the catalog providers this bench's endpoints reach (those Settings
    offers a switch for)."""
    switched = await own_app.providers(db)
    catalog = await current(db)
    mine = {p for p in (catalog.provider_for(e.base_url) for e in await endpoint_store.list_all(db)
                        if not e.simulated) if p}
    return {"providers": sorted(switched), "kept_off": await kept_off(db),
            "connected": [{"id": p, "name": catalog.provider_name(p), "own_app_only": p in switched}
                          for p in sorted(mine | switched)]}


__all__ = ["kept_off", "overview", "why"]
