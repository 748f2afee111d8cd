"""Health evidence: from ``health_tally`` (a row per model and UTC day, kept by triggers as seats
and route turns are written, never pruned), at most two rows per model, kept between reads.

Ratings weigh evidence by ``0.5 ** (age / H)`` (H the half-life in seconds; none when H <= 0), a
health row aged from the middle of its day (``max(0, now - (day + 0.5) * DAY)``). That sum can be
made exactly from fewer rows: a model's answered calls become one row with their raw count at the
*equivalent age*, the age at which that count weighs what the model's rows weigh together
(``-H * log2(W / raw)``), and its failed calls another; ``engine.ratings.rate`` then gives the same
weighed counts (to float rounding) and the same raw ones. A rating read no longer grows with the
days of history (a year of them on a 43-model pool: ~110-210 ms a read before).

Kept in ``db.memo`` per half-life (this process's alone): for each model the sums over its *closed*
days (before the reading's UTC day D), raw and weighed from the start of D, and its *open* rows
(day >= D: today, and any future-dated day) as they are. The tally's ``seq`` (migration
``ratings_003_health_tally_seq``) grows by one with each write of a row, and every writer of every
process holds the store's one writer lock, so the numbers commit in order: a read asks only for
the rows changed since the newest number it folded in (one statement, usually today's few rows).
A changed open row replaces the kept one; a changed closed row (a call written late into a past
day, a bulk import) has that model's rows read again; a new day D, or a half-life not kept yet,
has the whole table read once. Inside a transaction the table is read afresh, through the same
folding and compression.

    evidence_rows(db, now, half_life, aliases)   (alias, good, bad, age) rows for ``ratings.evidence``
    health_days(db, aliases)                     the tally's rows, (alias, day, ok, failed), by model and day
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from benchwarmers_mcp.store.db import Database, Reader, Row, placeholders

DAY = 86400.0
HealthRow = tuple[str, int, int, float]  # alias, good (answered), bad (failed), age in seconds


def _weight(age: float, half_life: float) -> float:
    """What a row of this age weighs: ``RatingPolicy.decay``'s formula, given its H in seconds."""
    return 1.0 if half_life <= 0 else float(0.5 ** (max(0.0, age) / half_life))


@dataclass(frozen=True)
class _Model:
    """One model's tally folded for a day ``today``: raw and weighed sums over its closed days
    (before ``today``; weighed as at the start of ``today``) and its open days' rows as they are,
    ``(day, ok, failed)`` by day."""

    ok: int = 0
    failed: int = 0
    weighed_ok: float = 0.0
    weighed_failed: float = 0.0
    open: tuple[tuple[int, int, int], ...] = ()

    def opened(self, day: int, ok: int, failed: int) -> _Model:
        """The same model with the open row of ``day`` as now read."""
        rows = {d: (d, o, f) for d, o, f in self.open}
        rows[day] = (day, ok, failed)
        return _Model(self.ok, self.failed, self.weighed_ok, self.weighed_failed, tuple(sorted(rows.values())))


def _days(rows: Iterable[Row]) -> list[tuple[str, int, int, int]]:
    return [(r["alias"], int(r["day"]), int(r["ok"]), int(r["failed"])) for r in rows]


def _fold(days: Iterable[tuple[str, int, int, int]], today: int, half_life: float) -> dict[str, _Model]:
    """Tally rows ``(alias, day, ok, failed)`` ordered by alias and day, folded per model. The order
    fixes the order of the sums, so a kept model and one read afresh are the same to the last bit."""
    start = today * DAY
    sums: dict[str, tuple[int, int, float, float, list[tuple[int, int, int]]]] = {}
    for alias, day, ok, failed in days:
        n_ok, n_failed, w_ok, w_failed, open_rows = sums.get(alias) or (0, 0, 0.0, 0.0, [])
        if day >= today:
            open_rows.append((day, ok, failed))
        else:
            w = _weight(start - (day + 0.5) * DAY, half_life)
            n_ok, n_failed, w_ok, w_failed = n_ok + ok, n_failed + failed, w_ok + ok * w, w_failed + failed * w
        sums[alias] = (n_ok, n_failed, w_ok, w_failed, open_rows)
    return {alias: _Model(n_ok, n_failed, w_ok, w_failed, tuple(sorted(open_rows)))
            for alias, (n_ok, n_failed, w_ok, w_failed, open_rows) in sums.items()}


def _age(weighed: float, raw: int, half_life: float) -> float:
    """The age at which ``raw`` calls weigh ``weighed`` (never below 0; none weighs nothing)."""
    if half_life <= 0:
        return 0.0
    if weighed <= 0:
        return math.inf
    return max(0.0, -half_life * math.log2(weighed / raw))


def _compress(models: Mapping[str, _Model], aliases: Sequence[str] | None, now: float, today: int,
              half_life: float) -> list[HealthRow]:
    """Each model's answered calls as one row and its failed calls as another, each at its
    equivalent age at ``now`` (a row with no calls is left out)."""
    since = _weight(now - today * DAY, half_life)  # the closed days' weight from the start of today
    out: list[HealthRow] = []
    for alias in models if aliases is None else aliases:
        m = models.get(alias)
        if m is None:
            continue
        ok, failed, w_ok, w_failed = m.ok, m.failed, since * m.weighed_ok, since * m.weighed_failed
        for day, n_ok, n_failed in m.open:
            w = _weight(now - (day + 0.5) * DAY, half_life)
            ok, failed, w_ok, w_failed = ok + n_ok, failed + n_failed, w_ok + n_ok * w, w_failed + n_failed * w
        if ok:
            out.append((alias, ok, 0, _age(w_ok, ok, half_life)))
        if failed:
            out.append((alias, 0, failed, _age(w_failed, failed, half_life)))
    return out


@dataclass(frozen=True)
class _Kept:
    """Every model folded for ``today``, with every change up to ``seq`` in it."""

    today: int
    seq: int
    models: Mapping[str, _Model]


_COLUMNS = "SELECT alias, day, ok, failed, seq FROM health_tally"


async def _built(db: Database, today: int, half_life: float) -> _Kept:
    rows = await db.fetchall(f"{_COLUMNS} ORDER BY alias, day")
    return _Kept(today, max((int(r["seq"]) for r in rows), default=0), _fold(_days(rows), today, half_life))


async def _caught_up(db: Database, held: _Kept, half_life: float) -> _Kept:
    """``held`` with the rows changed since its ``seq``: an open row replaces the kept one; a model
    with a changed closed row is read again whole. The new ``seq`` is the newest of the changes
    read first: a model read again may already hold later ones, and reading those again is harmless."""
    rows = await db.fetchall(f"{_COLUMNS} WHERE seq > ?", (held.seq,))
    if not rows:
        return held
    models = dict(held.models)
    stale = {r["alias"] for r in rows if int(r["day"]) < held.today}
    for alias, day, ok, failed in _days(rows):
        if alias not in stale:
            models[alias] = models.get(alias, _Model()).opened(day, ok, failed)
    if stale:
        among = sorted(stale)
        again = await db.fetchall(f"{_COLUMNS} WHERE alias IN ({placeholders(among)}) ORDER BY alias, day", among)
        models.update(_fold(_days(again), held.today, half_life))
    return _Kept(held.today, max(held.seq, *(int(r["seq"]) for r in rows)), models)


async def _kept(db: Database, today: int, half_life: float) -> Mapping[str, _Model]:
    """Every model folded for ``today``, caught up with the table; kept in ``db.memo`` per half-life.
    A read that finds another read of this process kept a state meanwhile leaves that one in place
    (its own answer is right for the rows it read)."""
    key = f"ratings.evidence.health.{half_life!r}"
    held = db.memo.get(key)
    if isinstance(held, _Kept) and held.today == today:
        kept = await _caught_up(db, held, half_life)
    else:
        kept = await _built(db, today, half_life)
    if db.memo.get(key) is held:
        db.memo[key] = kept
    return kept.models


async def health_days(db: Reader, aliases: Iterable[str] | None = None) -> list[tuple[str, int, int, int]]:
    """The tally's rows for ``aliases`` (None: every model), ``(alias, day, ok, failed)`` ordered
    by model and day (``day`` in whole UTC days since 1970)."""
    among = None if aliases is None else tuple(dict.fromkeys(aliases))
    if among is not None and not among:
        return []
    where = "" if among is None else f" WHERE alias IN ({placeholders(among)})"
    return _days(await db.fetchall(f"SELECT alias, day, ok, failed FROM health_tally{where} ORDER BY alias, day",
                                   among or ()))


async def evidence_rows(db: Reader, now: float, half_life: float, aliases: Sequence[str] | None) -> list[HealthRow]:
    """Health evidence about ``aliases`` (None: every model; empty: none): at most two rows a
    model, whose ages make ``0.5 ** (age / half_life)`` weigh them as the model's days weigh."""
    if aliases is not None and not aliases:
        return []
    today = math.floor(now / DAY)
    if isinstance(db, Database):
        models = await _kept(db, today, half_life)
    else:
        models = _fold(await health_days(db, aliases), today, half_life)
    return _compress(models, aliases, now, today, half_life)
