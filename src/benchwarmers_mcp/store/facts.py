"""What is known about each model, fact by fact, with where each value came from.

Every source keeps its own row per fact (table ``model_facts``, migration ``catalog_001``), so a
source changing or being withdrawn (a refresh, the user clearing a setting) falls back to the next
one down. Precedence, later wins::

    catalog_other  a catalog entry under another provider (fills gaps only)
    catalog        the catalog entry of the provider that serves the model
    listing        the endpoint's own model listing
    learned        the model's own errors (a window only ever lowers)
    user           what the user set

The effective value of the facts the engine reads (``ROW_FACTS``) is written onto the model's
row in the same transaction as any change of a source, so seating, route mode and merging read
the row alone: no facts query on the hot path.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.store.db import Database, Transaction

SOURCES = ("catalog_other", "catalog", "listing", "learned", "user")
FACTS = ("context_window", "max_output", "tools", "vision", "input_modalities", "output_modalities", "reasoning",
         "structured_output", "price_in", "price_out", "knowledge", "released", "open_weights", "free_limits")
ROW_FACTS = ("context_window", "max_output", "tools", "vision")
LOWER_ONLY = ("context_window", "max_output")  # what an error teaches only ever tightens


@dataclass(frozen=True)
class Layer:
    """What one source says about one model: its values, and which entry or evidence said so."""

    source: str
    values: Mapping[str, Any]
    detail: str = ""
    entry: str = ""  # the catalog entry that matched, as provider/model
    evidence: str = ""


@dataclass(frozen=True)
class FactRow:
    alias: str
    fact: str
    source: str
    value: Any
    detail: str = ""
    entry: str = ""
    evidence: str = ""
    at: float = 0.0

    @property
    def rank(self) -> int:
        return SOURCES.index(self.source) if self.source in SOURCES else -1


@dataclass
class Known:
    """One fact as it stands: the winning row and the ones it overrides (highest first)."""

    winner: FactRow
    under: list[FactRow] = field(default_factory=list)


def _row(r: Any) -> FactRow:
    return FactRow(r["alias"], r["fact"], r["source"], json.loads(r["value"]), r["detail"], r["entry"],
                   r["evidence"], r["at"])


def effective(rows: Iterable[FactRow]) -> dict[str, Known]:
    """Per fact, the value of the highest source that has one."""
    by_fact: dict[str, list[FactRow]] = {}
    for r in rows:
        by_fact.setdefault(r.fact, []).append(r)
    out: dict[str, Known] = {}
    for fact, candidates in by_fact.items():
        ordered = sorted(candidates, key=lambda r: r.rank, reverse=True)
        out[fact] = Known(ordered[0], ordered[1:])
    return out


async def rows_for(db: Database | Transaction, aliases: Sequence[str] | None = None) -> dict[str, list[FactRow]]:
    """Every fact row of these aliases (all aliases when None), in one query."""
    if aliases is None:
        rows = await db.fetchall("SELECT * FROM model_facts ORDER BY alias")
    elif not aliases:
        return {}
    else:
        marks = ", ".join("?" for _ in aliases)
        rows = await db.fetchall(f"SELECT * FROM model_facts WHERE alias IN ({marks}) ORDER BY alias", tuple(aliases))
    out: dict[str, list[FactRow]] = {a: [] for a in aliases or ()}
    for r in rows:
        out.setdefault(r["alias"], []).append(_row(r))
    return out


async def _put(tx: Transaction, alias: str, fact: str, source: str, value: Any, detail: str = "",
               entry: str = "", evidence: str = "", now: float | None = None) -> None:
    await tx.execute(
        "INSERT INTO model_facts (alias, fact, source, value, detail, entry, evidence, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (alias, fact, source) DO UPDATE SET value = excluded.value, detail = excluded.detail,"
        " entry = excluded.entry, evidence = excluded.evidence, at = excluded.at",
        (alias, fact, source, json.dumps(value), detail, entry, evidence[:1000], now or time.time()))


async def replace_layer(tx: Transaction, alias: str, source: str, layer: Layer | None) -> None:
    """A source's whole say about a model, replacing what it said before (None: it says nothing now)."""
    await tx.execute("DELETE FROM model_facts WHERE alias = ? AND source = ?", (alias, source))
    if layer is None:
        return
    now = time.time()
    for fact, value in layer.values.items():
        if fact in FACTS and value is not None:
            await _put(tx, alias, fact, source, value, layer.detail, layer.entry, layer.evidence, now)


async def set_user(tx: Transaction, alias: str, fields: Mapping[str, Any]) -> None:
    """What the user set; None clears the user's value, so the next source down shows through."""
    for fact, value in fields.items():
        if fact not in FACTS:
            continue
        if value is None:
            await tx.execute("DELETE FROM model_facts WHERE alias = ? AND fact = ? AND source = 'user'",
                             (alias, fact))
        else:
            await _put(tx, alias, fact, "user", value, "set by the user")


async def learn(tx: Transaction, alias: str, fact: str, value: Any, evidence: str) -> None:
    """A fact read from the model's own error (or answer): a window or output limit only lowers."""
    if fact not in FACTS:
        return
    if fact in LOWER_ONLY:
        current = await tx.fetchone("SELECT value FROM model_facts WHERE alias = ? AND fact = ? AND source = 'learned'",
                                    (alias, fact))
        if current is not None and json.loads(current["value"]) <= value:
            return
    await _put(tx, alias, fact, "learned", value, "learned from the model's own reply", evidence=evidence)


async def recompute(tx: Transaction, alias: str) -> dict[str, Any]:
    """Write the effective row facts onto the model's row; returns them."""
    known = effective((await rows_for(tx, [alias])).get(alias, []))
    values = {fact: (known[fact].winner.value if fact in known else None) for fact in ROW_FACTS}
    stored = {k: (int(v) if isinstance(v, bool) else v) for k, v in values.items()}
    await tx.execute("UPDATE models SET context_window = ?, max_output = ?, tools = ?, vision = ? WHERE alias = ?",
                     (stored["context_window"], stored["max_output"], stored["tools"], stored["vision"], alias))
    return values


async def record_new(tx: Transaction, alias: str, given: Mapping[str, Any], layers: Iterable[Layer]) -> None:
    """A model just registered: what the registration gave is the user's, then every other source."""
    await set_user(tx, alias, {k: v for k, v in given.items() if v is not None})
    for layer in layers:
        await replace_layer(tx, alias, layer.source, layer)
    await recompute(tx, alias)


async def matched_entries(db: Database) -> dict[str, list[str]]:
    """Catalog entry (provider/model) -> the active aliases it describes."""
    rows = await db.fetchall(
        "SELECT DISTINCT f.entry, f.alias FROM model_facts f JOIN models m ON m.alias = f.alias"
        " WHERE f.source IN ('catalog', 'catalog_other') AND f.entry != '' AND m.retired_at IS NULL ORDER BY f.alias")
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["entry"], []).append(r["alias"])
    return out


async def apply(db: Database, changes: Mapping[str, Mapping[str, Layer | None]]) -> None:
    """Replace some sources' say about several models (alias -> source -> layer, None: it says
    nothing now) and their rows' effective facts, in one transaction."""
    if not changes:
        return
    async with db.transaction() as tx:
        for alias, layers in changes.items():
            for source, layer in layers.items():
                await replace_layer(tx, alias, source, layer)
            await recompute(tx, alias)
