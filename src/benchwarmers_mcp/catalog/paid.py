"""Free models that the catalog now prices: the "went paid" alert (``store/alerts.py``).

A model is free when both its prices are known and zero, priced when either is above zero (the
effective facts, from every source: the catalog's entries and the endpoint's listing). A refresh
compares each active model before and after: free then priced raises ``went_paid`` (refreshed, not
repeated, while it stays open); free again clears it.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchwarmers_mcp.catalog.merge import SOURCE_WORDS
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import facts
from benchwarmers_mcp.store import models as model_store


@dataclass(frozen=True)
class Price:
    price_in: float | None
    price_out: float | None
    source: str = ""  # where the winning price came from, in words

    @property
    def free(self) -> bool:
        return self.price_in == 0 and self.price_out == 0

    @property
    def priced(self) -> bool:
        return any(isinstance(p, int | float) and p > 0 for p in (self.price_in, self.price_out))


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


async def prices(ctx: Context) -> dict[str, Price]:
    """Each active model's effective prices (dollars per million tokens in and out)."""
    active = [m.alias for m in await model_store.list_all(ctx.db, include_retired=False)]
    out: dict[str, Price] = {}
    for alias, rows in (await facts.rows_for(ctx.db, active)).items():
        known = facts.effective(rows)
        winners = [known[f].winner for f in ("price_in", "price_out") if f in known]
        source = next((f"{SOURCE_WORDS.get(w.source, w.source)} {w.entry}".strip() for w in winners), "")
        out[alias] = Price(_number(known["price_in"].winner.value) if "price_in" in known else None,
                           _number(known["price_out"].winner.value) if "price_out" in known else None, source)
    return out


async def settle(ctx: Context, before: dict[str, Price]) -> dict[str, list[str]]:
    """After a refresh: raise ``went_paid`` for each model that was free and is priced now, clear it
    for each that is free now. Returns the aliases of both."""
    went, free_again = [], []
    for alias, now in (await prices(ctx)).items():
        was = before.get(alias)
        if was is not None and was.free and now.priced:
            await alert_store.raise_went_paid(ctx.db, alias, price_in=now.price_in, price_out=now.price_out,
                                              source=now.source or "catalog", now=ctx.clock.now())
            went.append(alias)
        elif now.free and await alert_store.clear_went_paid(ctx.db, alias, now=ctx.clock.now()):
            free_again.append(alias)
    return {"went_paid": sorted(went), "free_again": sorted(free_again)}


__all__ = ["Price", "prices", "settle"]
