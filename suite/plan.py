"""Which (model, task) pairs a run asks, decided before it starts and stored with it.

Models: the ones named, else with ``next`` one paid model and with ``next_free`` one free model
(never scored first, then incomplete, then the one scored longest ago; none pending
retirement), else every model on the bench (not retired, not ad hoc, not a decision model). Tasks: the ones named (drafts allowed
when named), else per model up to ``limit`` live tasks, the ones it has no score on first, then
those it was scored on longest ago. A pair already waiting in an unfinished run is left out.
``repeat`` asks each pair that many times. Items go round robin over the models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.suite import PlannedItem
from benchwarmers_mcp.suite.library import Catalog

DEFAULT_LIMIT = 6
FREE_KINDS = ("local", "simulated")


@dataclass(frozen=True)
class RunRequest:
    models: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    next: bool = False
    next_free: bool = False
    repeat: int = 1
    limit: int = DEFAULT_LIMIT

    def as_dict(self) -> dict[str, Any]:
        return {"models": list(self.models), "tasks": list(self.tasks), "next": self.next,
                "next_free": self.next_free, "repeat": self.repeat, "limit": self.limit}


def is_free(model: ModelRecord, endpoint: Endpoint | None) -> bool:
    """A model that costs nothing to ask: a local or simulated endpoint, or a ``:free`` served name."""
    if endpoint is not None and (endpoint.kind in FREE_KINDS or endpoint.api == "simulated"):
        return True
    return model.served.lower().endswith(":free") or model.alias.endswith("-free")


def eligible(model: ModelRecord) -> bool:
    return not model.retired and not model.ad_hoc and model.role != "decision"


async def _endpoints(db: Database) -> dict[str, Endpoint]:
    return {e.name: e for e in await endpoints.list_all(db)}


async def choose_models(db: Database, request: RunRequest, catalog: Catalog) -> list[ModelRecord]:
    if request.models:
        chosen = []
        for alias in dict.fromkeys(request.models):
            model = await models.get(db, alias)
            if model.retired:
                raise BadRequest(f"model {alias!r} is retired; bench model restore {alias} first")
            chosen.append(model)
        return chosen
    bench = [m for m in await models.list_all(db, include_retired=False) if eligible(m)]
    if not (request.next or request.next_free):
        return bench
    retiring = {r["alias"] for r in await limit_store.pending_retirements(db)}
    bench = [m for m in bench if m.alias not in retiring]  # the background pace skips the retiring
    owners = await _endpoints(db)
    pool = [m for m in bench if is_free(m, owners.get(m.endpoint)) == request.next_free]
    if not pool:
        return []
    scored = await suite_store.scored_tasks(db)
    live = {t.id for t in catalog.live()}

    def order(m: ModelRecord) -> tuple[int, int, float, str]:
        mine = scored.get(m.alias, {})
        never = 0 if not mine else 1
        incomplete = 0 if live - set(mine) else 1
        return never, incomplete, max(mine.values(), default=0.0), m.alias

    return [min(pool, key=order)]


def choose_tasks(request: RunRequest, catalog: Catalog, alias: str, scored: dict[str, float],
                 waiting: set[tuple[str, str]]) -> list[str]:
    if request.tasks:
        for task_id in request.tasks:
            catalog.task(task_id)  # NotFound, or BadRequest naming the task's problems
        return list(dict.fromkeys(request.tasks))
    live = [t.id for t in catalog.live() if (alias, t.id) not in waiting]
    fresh = [t for t in live if t not in scored]
    stale = sorted((t for t in live if t in scored), key=lambda t: (scored[t], t))
    return (fresh + stale)[:request.limit]


async def plan(db: Database, request: RunRequest, catalog: Catalog) -> list[PlannedItem]:
    if request.repeat < 1 or request.repeat > 20:
        raise BadRequest("repeat must be 1 to 20")
    chosen = await choose_models(db, request, catalog)
    if not chosen:
        which = "free " if request.next_free else "paid " if request.next else ""
        raise NotFound(f"no {which}model to measure: register one (bench model register) or name one with --model")
    owners = await _endpoints(db)
    scored = await suite_store.scored_tasks(db)
    waiting = set() if request.tasks else await suite_store.planned_open(db)
    per_model: list[tuple[ModelRecord, list[str]]] = []
    for model in chosen:
        endpoint = owners.get(model.endpoint)
        if endpoint is None:
            raise NotFound(f"model {model.alias!r} names endpoint {model.endpoint!r}, which is gone")
        per_model.append((model, choose_tasks(request, catalog, model.alias, scored.get(model.alias, {}), waiting)))
    items: list[PlannedItem] = []
    longest = max((len(t) for _, t in per_model), default=0)
    for _ in range(request.repeat):
        for i in range(longest):
            for model, tasks in per_model:
                if i < len(tasks):
                    connection = owners[model.endpoint].connection_name
                    items.append(PlannedItem(model.alias, connection, tasks[i]))
    return items
