"""Who sits on a panel: the members that can take the request, then explorer seats.

Explorers are chosen to learn: each available model is scored from its rating on this collection
and shape (``engine.ratings``), by its upper bound (``ucb``, the default: mean + 1.5 sd) or a Thompson draw from its posterior (``thompson``, as ``bench settings learning``
says). A model never judged here scores above every judged one, so newcomers sit soon; equal
scores go to the least recently used, by exact time (never used first). So with no verdicts at
all explorers rotate by recency alone. Never two of one family nor a member's family; ``with``
nominates explorers for one request (a scoped gateway key only among what its collections use:
``engine.reach``); retired, ad hoc, resting, wrong-role and too-small models are never drawn, nor
one whose status (``engine.roster``) is retiring, gone or failing its health checks
(``explorer_pool`` is who may be drawn at all), nor one whose call would have to wait for a rate
window longer than a short wait (``held``, the caller's pacer asked of each model as it is drawn:
a window used up for minutes would hold the whole reply). Each explorer's seat says why it was
seated (``Seat.note``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from collections.abc import Collection as AbstractSet
from dataclasses import dataclass, field

from benchwarmers_mcp.engine import learning, roster
from benchwarmers_mcp.engine.ratings import Rating
from benchwarmers_mcp.errors import NobodySeatable, NoSeatCanSee, ProviderError, TooLarge
from benchwarmers_mcp.messages import Ask, estimate_tokens
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import own_app as own_app_store
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.collections import Collection, GatewaySettings
from benchwarmers_mcp.store.models import ModelRecord

SHAPE_ROLES: dict[str, tuple[str, ...]] = {
    "general": ("general",),
    "design": ("general",),
    "prose": ("general",),
    "review": ("general", "code"),
    "code": ("general", "code"),
    "enumeration": ("general", "code", "light"),
    "quick": ("general", "light"),
    "vision": ("general", "light", "vision"),
    "image": ("image",),
}


# why a call to this model of about this many tokens would have to wait now, or None (``Caller.held``)
Held = Callable[[ModelRecord, int], Awaitable[ProviderError | None]]
Z = 1.5  # the upper bound's standard deviations (about the one-sided 93% bound), tuned on the learning benchmark
DRAWS = random.Random()  # Thompson draws, one generator for every panel (seeding one costs ~14 us)


@dataclass(frozen=True)
class Explore:
    """How explorer seats are drawn: ``ucb`` (upper bound, ``z`` standard deviations above the
    mean) or ``thompson`` (a draw from each posterior, with ``rng``)."""

    method: str = "ucb"
    z: float = Z
    rng: random.Random = DRAWS


@dataclass(frozen=True)
class Seat:
    key: str
    label: str
    model: ModelRecord
    note: str = ""

    @property
    def alias(self) -> str:
        return self.model.alias


@dataclass
class Seating:
    seats: list[Seat]
    skipped: list[dict[str, str]] = field(default_factory=list)
    shape: str = "general"
    shape_by: str = "default"
    members: int = 0
    explorers: int = 0


def choose_shape(collection: Collection, ask: Ask) -> tuple[str, str]:
    return shape_of(collection, ask.has_images)


def shape_of(collection: Collection, has_images: bool) -> tuple[str, str]:
    """The shape a request to ``collection`` is seated for, and why."""
    if has_images and not collection.shape:
        return "vision", "images in the request"
    if collection.shape:
        return collection.shape, "collection"
    return "general", "default"


def _too_small(model: ModelRecord, estimate: int) -> bool:
    return model.context_window is not None and model.context_window < estimate


def _may_explore(m: ModelRecord, shape: str, has_images: bool, barred: AbstractSet[str] = frozenset()) -> bool:
    """Whether ``m`` may be drawn as an explorer for a request of ``shape``, with or without images:
    not retired, not ad hoc, of a role the shape takes, and not ``barred`` by its status (retiring,
    gone or failing its health checks: ``engine.roster``) until it answers again. What else the
    moment adds, resting and the prompt's size, is checked where it is known."""
    return (not m.retired and not m.ad_hoc and m.alias not in barred and m.role in SHAPE_ROLES.get(shape, ("general",))
            and (m.can_see if has_images else m.role != "vision"))


def explorer_pool(collection: Collection, models: Iterable[ModelRecord]) -> list[ModelRecord]:
    """Every model that may be drawn as an explorer on ``collection``, for a request with images
    or without (before resting and the prompt's size)."""
    shapes = {(shape_of(collection, images)[0], images) for images in (False, True)}
    return [m for m in models if any(_may_explore(m, shape, images) for shape, images in shapes)]


def _member_seats(members: list[ModelRecord | str], ask: Ask, skipped: list[dict[str, str]],
                  off: Mapping[str, str]) -> list[ModelRecord]:
    seated = []
    for m in members:
        if isinstance(m, str):
            skipped.append({"seat": "member", "alias": m, "why": "not registered"})
        elif m.alias in off:  # free only in its provider's own app (catalog/own_app.py)
            skipped.append({"seat": "member", "alias": m.alias, "why": off[m.alias]})
        elif m.retired:
            skipped.append({"seat": "member", "alias": m.alias, "why": f"retired ({m.retired_why or 'no reason'})"})
        elif m.role == "vision" and not ask.has_images:
            skipped.append({"seat": "member", "alias": m.alias, "why": "vision model, and the request has no images"})
        elif ask.has_images and not m.can_see:
            skipped.append({"seat": "member", "alias": m.alias, "why": "cannot see images"})
        else:
            seated.append(m)
    return seated


async def seat_panel(db: Database, collection: Collection, ask: Ask, settings: GatewaySettings,
                     resting: AbstractSet[str] = frozenset(), *, ratings: Mapping[str, Rating] | None = None,
                     explore: Explore | None = None, nominable: AbstractSet[str] | None = None,
                     held: Held | None = None, barred: AbstractSet[str] | None = None) -> Seating:
    """Seat a panel or raise the refusal that applies (413, 400 no seat can see, 503 nobody).
    ``ratings`` (on this collection and shape) and ``explore`` are read from the store when not given;
    ``nominable``, the models the caller may nominate with ``with`` (None: any registered); ``held``
    is asked of each explorer drawn from the pool (None: nobody is held); ``barred``, the models whose
    status bars an explorer seat (None: ``engine.roster`` reads it, only when explorers are drawn)."""
    skipped: list[dict[str, str]] = []
    everyone = {m.alias: m for m in await model_store.list_all(db)}
    shape, shape_by = choose_shape(collection, ask)
    estimate = estimate_tokens(ask)

    off: Mapping[str, str] = {}
    if await own_app_store.providers(db):  # a provider's free models work only in its own app: not seated
        from benchwarmers_mcp.catalog.own_app import kept_off  # the catalog loads only then

        off = await kept_off(db)
    members = _member_seats([everyone.get(a, a) for a in collection.members], ask, skipped, off)
    too_small = [m for m in members if _too_small(m, estimate)]
    if too_small:
        names = ", ".join(f"{m.alias} ({m.context_window:,} tokens)" for m in too_small)
        raise TooLarge(f"the prompt is about {estimate:,} tokens, larger than the context window of {names};"
                       f" send less, or ask a collection whose members have larger windows")
    seats = [Seat(f"member{i}", "member", m) for i, m in enumerate(members, 1)]

    explorers = _Explorers(settings.explorers_for(len(members)), members)
    explorers.nominate(ask, everyone, estimate, skipped, nominable)
    wanted = explorers.count > len(explorers.seats)
    if wanted and barred is None:
        barred = await roster.barred(db, everyone.values(), time.time())
    pool = [
        m for m in everyone.values()
        if wanted and _may_explore(m, shape, ask.has_images, barred or frozenset()) and m.alias not in resting
        and m.alias not in off
        and not _too_small(m, estimate)
    ]
    if pool:
        if explore is None:
            explore = Explore((await rating_store.learning_settings(db)).explore)
        if ratings is None:
            ratings = await learning.ratings_for(db, collection.qualified, shape, [m.alias for m in pool])
        await explorers.fill(ranked_pool(pool, ratings, explore), held, estimate)
    seats.extend(explorers.seats)
    if not seats:
        if ask.has_images:
            raise NoSeatCanSee("no seat can see images: no member or explorer takes images; "
                               "set a vision model's role, or send text")
        raise NobodySeatable(f"nobody can be seated on bench/{collection.name}: it has no available members"
                             " and no explorer could be seated")
    return Seating(seats, skipped, shape, shape_by, len(members), len(explorers.seats))


def _why(r: Rating | None, explore: Explore, score: float) -> str:
    if r is None or r.fresh():
        return "never judged here: seated to learn"
    what = "upper bound" if explore.method == "ucb" else "Thompson draw"
    return f"{what} {score:.2f} (mean {r.mean:.2f} from {r.weight:.1f} verdicts)"


def ranked_pool(pool: list[ModelRecord], ratings: Mapping[str, Rating], explore: Explore
                ) -> Iterator[tuple[ModelRecord, str]]:
    """The pool best first: by score, then least recently used (exact time), then alias. Each one's
    note is written as it is reached, so a panel's few explorer seats cost a note each, not a
    whole bench's."""
    scored = []
    for m in pool:
        r = ratings.get(m.alias)
        score = 2.0 if r is None else r.upper(explore.z) if explore.method == "ucb" else r.draw(explore.rng)
        scored.append((-score, m.last_used or 0.0, m.alias, m, r))
    scored.sort(key=lambda t: t[:3])
    for negative, _, _, m, r in scored:
        yield m, _why(r, explore, -negative)


class _Explorers:
    """Explorer seats as they are filled: nominees first, then the least recently used."""

    def __init__(self, count: int, members: list[ModelRecord]) -> None:
        self.count = count
        self.seats: list[Seat] = []
        self.taken = {m.alias for m in members}
        self.families = {m.family for m in members}

    def add(self, model: ModelRecord, note: str = "") -> None:
        n = len(self.seats) + 1
        self.seats.append(Seat("explorer" if n == 1 else f"explorer{n}", "explorer" if n == 1 else f"explorer {n}",
                               model, note))
        self.taken.add(model.alias)
        self.families.add(model.family)

    def nominate(self, ask: Ask, everyone: dict[str, ModelRecord], estimate: int,
                 skipped: list[dict[str, str]], nominable: AbstractSet[str] | None = None) -> None:
        """``with``: nominees override role and size (with a note); members are dropped, not counted.
        Outside ``nominable`` (a scoped key's reach) a nominee is skipped as if it were unknown: the
        reply never says whether a model the key may not use is registered."""
        for alias in dict.fromkeys(ask.with_):
            if alias in self.taken:
                continue
            model = everyone.get(alias)
            why = None
            if nominable is not None and alias not in nominable:
                model, why = None, "not a model this key's collections use (their members and explorer pool)"
            elif model is None:
                why = "not registered"
            elif model.retired:
                why = "retired"
            elif ask.has_images and not model.can_see:
                why = "cannot see images"
            elif len(self.seats) >= self.count:
                why = "no explorer seat left"
            if why or model is None:
                skipped.append({"seat": "with", "alias": alias, "why": why or "not registered"})
                continue
            self.add(model, "nominated" + (" (window may be too small)" if _too_small(model, estimate) else ""))

    async def fill(self, pool: Iterable[tuple[ModelRecord, str]], held: Held | None = None,
                   estimate: int = 0) -> None:
        """The rest of the seats from the pool, in order, never two of one family, passing over a
        model ``held`` says would have to wait (asked only of those that would be seated)."""
        for model, why in pool:
            if len(self.seats) >= self.count:
                return
            if model.family in self.families or model.alias in self.taken:
                continue
            if held is not None and await held(model, estimate) is not None:
                continue
            self.add(model, why)
