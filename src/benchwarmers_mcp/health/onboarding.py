"""Onboarding: bring models on one at a time through a queue in the store.

Steps (``[n/5]``): (1) the endpoint serves it, else "did you mean" the closest names it lists (a
listing that does not answer is noted and the item goes on: the probe is the proof);
(2) its alias (the one asked for, else the served name's last segment, ``:`` as ``-``, suffixed on
a collision); (3) register it, through ``catalog.registration.register_new`` as ``POST
/api/model/register`` does, with the catalog's facts (image generators get role ``image``); (4) the
onboarding probe (2 tiny and 2 large calls): no answer stops here, the model stays registered and
the item says why; (5) the suite for this model (``suite.runner.for_model``, capped at an hour).
Modes: ``full``; ``quick`` (the suite is left to its scheduled passes); ``quick-adhoc`` (ad hoc:
never probed or scored on its own).

Everything that brings a model on feeds this queue: ``bench onboard``, ``POST /api/onboarding``,
Discover's add (``admin/catalog.py::onboard``) and a candidate's ``served@endpoint`` key.

One process works the queue at a time (the ``onboarding`` lease); an item left ``running`` by a
stopped process resumes from its step. Stop skips what is queued and ends the running item after
its step; clear hides finished items.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from benchwarmers_mcp.clock import iso
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, BenchError, ProviderError
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import names
from benchwarmers_mcp.store import onboarding as queue
from benchwarmers_mcp.store import scheduler as leases
from benchwarmers_mcp.store.models import ROLES, ModelRecord
from benchwarmers_mcp.store.onboarding import Item, Wanted

if TYPE_CHECKING:
    from benchwarmers_mcp.upstream.listing import Listing

log = logging.getLogger("benchwarmers.onboarding")
MODES = ("full", "quick", "quick-adhoc")
STEPS = ("served", "alias", "register", "probe", "suite")
SUITE_LIMIT = 3600.0
IMAGE_MAKERS = re.compile(r"dall-e|gpt-image|imagen|flux|stable-diffusion|sdxl|image-gen|[-/]image($|[-:])", re.I)
SERVED_RE = re.compile(r"^[^\s\x00-\x1f]{1,200}$")


@dataclass(frozen=True)
class Step:
    state: str  # ok, failed, skipped, no answer
    message: str
    alias: str | None = None


def split_key(text: str) -> tuple[str, str | None]:
    """``served@endpoint`` (a candidate's key) -> (served, endpoint); plain text has no endpoint."""
    served, at, endpoint = text.rpartition("@")
    return (served, endpoint) if at and served and re.match(r"^[a-z0-9][a-z0-9-]{0,31}$", endpoint) else (text, None)


async def check_batch(ctx: Context, items: list[dict[str, Any]]) -> list[Wanted]:
    """Every item valid, or the whole batch refused with every problem named. An item is
    ``{served, endpoint?, mode?, alias?, role?}``; ``served`` may be a candidate's ``served@endpoint``."""
    endpoints = {e.name for e in await endpoint_store.list_all(ctx.db)}
    models = await model_store.list_all(ctx.db)
    waiting = {(i.served, i.endpoint) for i in await queue.waiting(ctx.db)}
    chosen: list[Wanted] = []
    problems: list[str] = []
    for n, item in enumerate(items, 1):
        served, endpoint = split_key(str(item.get("served") or ""))
        endpoint = item.get("endpoint") or endpoint or (next(iter(endpoints)) if len(endpoints) == 1 else None)
        wanted = Wanted(served, endpoint or "", item.get("mode") or "full", item.get("alias") or None,
                        item.get("role") or None)
        taken = waiting | {(w.served, w.endpoint) for w in chosen}
        problem = _problem(wanted, endpoint is not None, endpoints, models, taken, {w.alias for w in chosen})
        if problem:
            problems.append(f"item {n} ({served or '?'}): {problem}")
        else:
            chosen.append(wanted)
    if not items:
        problems.append("nothing to onboard: give at least one served name")
    if problems:
        raise BadRequest("nothing was queued: " + "; ".join(problems))
    return chosen


def _problem(w: Wanted, named: bool, endpoints: set[str], models: list[ModelRecord], taken: set[tuple[str, str]],
             aliases: set[str | None]) -> str | None:
    if not SERVED_RE.match(w.served):
        return "a served name is 1 to 200 characters with no spaces"
    if w.mode not in MODES:
        return f"mode is one of {', '.join(MODES)}"
    if w.role is not None and w.role not in ROLES:
        return f"role is one of {', '.join(ROLES)}"
    if w.alias is not None and (bad := names.problem("alias", w.alias, names.ALIAS)):
        return bad
    if w.alias is not None and (w.alias in aliases or any(m.alias == w.alias for m in models)):
        return f"alias {w.alias!r} is taken (an alias is never reused): choose another"
    if not named:
        return "name its endpoint (--endpoint, or served@endpoint)"
    if w.endpoint not in endpoints:
        return f"no endpoint named {w.endpoint!r}"
    if (w.served, w.endpoint) in taken:
        return "already queued"
    for m in models:
        if m.endpoint == w.endpoint and m.served == w.served:
            return (f"retired as {m.alias!r} (bench model restore {m.alias})" if m.retired
                    else f"already on the bench as {m.alias!r}")
    return None


async def enqueue(ctx: Context, items: list[dict[str, Any]]) -> list[int]:
    """Queue a batch (refused whole when any item is invalid) and wake the worker; the item ids."""
    chosen = await check_batch(ctx, items)
    try:
        ids = await queue.enqueue(ctx.db, uuid.uuid4().hex[:12], chosen, ctx.clock.now())
    except OverflowError as e:
        raise BadRequest(f"nothing was queued: {e}") from None
    if ctx.onboarding is not None:
        ctx.onboarding.kick()
    return ids


def describe(item: Item) -> dict[str, Any]:
    return {"id": item.id, "batch": item.batch, "served": item.served, "endpoint": item.endpoint, "mode": item.mode,
            "alias": item.alias, "role": item.role, "state": item.state, "step": item.step, "steps": len(STEPS),
            "step_name": STEPS[min(item.step, len(STEPS) - 1)], "log": item.log, "reason": item.reason,
            "stopping": item.stop and item.state == "running", "created": iso(item.created),
            "started": iso(item.started), "finished": iso(item.finished)}


class Onboarding:
    """The queue's worker, one per process; the ``onboarding`` lease makes it one per data folder."""

    def __init__(self, ctx: Context, *, poll: float = 30.0, lease_ttl: float = 120.0) -> None:
        self.ctx = ctx
        self.clock = ctx.clock
        self.poll = poll
        self.lease_ttl = lease_ttl
        self.owner = uuid.uuid4().hex[:12]
        self._listed: dict[int, Listing] = {}  # an item's endpoint listing, read at its first step
        self._wake = anyio.Event()
        self.busy = False

    def kick(self) -> None:
        self._wake.set()

    async def run_forever(self) -> None:
        while True:
            try:
                await self.drain()
            except Exception:
                log.exception("onboarding worker failed")
            with anyio.move_on_after(self.poll):
                await self._wake.wait()
            self._wake = anyio.Event()

    async def drain(self) -> int:
        """Work the queue until it is empty, if no other process is; returns the items finished."""
        if self.busy or not await queue.waiting(self.ctx.db):  # an empty queue (every start) writes nothing
            return 0
        if not await leases.take_lease(self.ctx.db, "onboarding", self.owner, self.clock.now(), self.lease_ttl):
            return 0
        self.busy, finished = True, 0
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._renew)
                while waiting := await queue.waiting(self.ctx.db):
                    await self.process(waiting[0])
                    finished += 1
                tg.cancel_scope.cancel()
        finally:
            self.busy = False
            with anyio.CancelScope(shield=True):
                await leases.drop_lease(self.ctx.db, "onboarding", self.owner)
        return finished

    async def _renew(self) -> None:
        while True:
            await anyio.sleep(self.lease_ttl / 3)
            await leases.take_lease(self.ctx.db, "onboarding", self.owner, self.clock.now(), self.lease_ttl)

    async def process(self, item: Item) -> None:
        await queue.start(self.ctx.db, item.id, self.clock.now())
        try:
            state, reason = await self._steps(item)
        finally:
            self._listed.pop(item.id, None)
        await queue.end(self.ctx.db, item.id, state, reason, self.clock.now())

    async def _steps(self, item: Item) -> tuple[str, str]:
        """Each step from the one it reached, logged as it ends; the item's final state and why."""
        alias = item.alias
        for number in range(item.step + 1, len(STEPS) + 1):
            if number > 1 and await queue.stop_asked(self.ctx.db, item.id):
                return "skipped", f"stopped after step {number - 1}"
            step = await self._step(STEPS[number - 1], item, alias)
            alias = step.alias or alias
            await queue.step(self.ctx.db, item.id, number, {
                "step": number, "of": len(STEPS), "name": STEPS[number - 1], "state": step.state,
                "message": step.message, "at": iso(self.clock.now())}, alias=alias)
            if step.state in ("failed", "no answer") or (step.state == "skipped" and number <= 2):
                return step.state, step.message
        return "done", ""

    async def _step(self, name: str, item: Item, alias: str | None) -> Step:
        try:
            if name == "served":
                return await self._served(item)
            if name == "alias":
                return await self._alias(item)
            model = await self._registered(item, alias)
            if name == "register":
                return await self._register(item, alias) if model is None else Step("ok", f"registered as {model.alias}",
                                                                                  model.alias)
            if model is None:
                return Step("failed", "it is not registered (was it removed?)")
            return await (self._probe(model) if name == "probe" else self._suite(item, model))
        except BenchError as e:
            return Step("failed", e.message)
        except Exception as e:  # a step's failure is the item's outcome, never the worker's
            log.exception("onboarding step %s failed", name)
            return Step("failed", f"{type(e).__name__}: {e}")

    async def _served(self, item: Item) -> Step:
        # the listing, the providers it asks and the retire rules load with the queue's first item:
        # the app starts this worker, and an empty queue must not cost a start-up their imports
        import difflib

        from benchwarmers_mcp.health.rules import listed
        from benchwarmers_mcp.upstream.listing import listing

        endpoint = await endpoint_store.get(self.ctx.db, item.endpoint)
        try:
            found = await listing(self.ctx, endpoint)
        except ProviderError as e:  # the probe (step 4) is the proof of life; a listing is only a hint
            return Step("ok", f"{item.endpoint} did not answer its listing ({e.message[:200]}); going on: the"
                              " probe will tell")
        names = found.names
        if listed(item.served, names):
            self._listed[item.id] = found  # the register step takes its facts without asking again
            return Step("ok", f"{item.endpoint} serves {item.served}")
        close = difflib.get_close_matches(item.served, names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return Step("failed", f"{item.endpoint} does not serve {item.served}{hint}")

    async def _alias(self, item: Item) -> Step:
        for m in await model_store.list_all(self.ctx.db):
            if m.endpoint == item.endpoint and m.served == item.served:
                return Step("skipped", f"{'retired' if m.retired else 'already on the bench'} as {m.alias}", m.alias)
        if item.alias and await model_store.find(self.ctx.db, item.alias) is None:
            return Step("ok", f"alias {item.alias} (as asked)", item.alias)
        if item.alias:
            return Step("failed", f"alias {item.alias} was taken while this item waited")
        alias = await model_store.unique_alias(self.ctx.db, item.served)
        return Step("ok", f"alias {alias}", alias)

    async def _registered(self, item: Item, alias: str | None) -> ModelRecord | None:
        model = await model_store.find(self.ctx.db, alias) if alias else None
        return model if model and model.served == item.served and model.endpoint == item.endpoint else None

    async def _register(self, item: Item, alias: str | None) -> Step:
        if alias is None or await model_store.find(self.ctx.db, alias) is not None:
            alias = await model_store.unique_alias(self.ctx.db, item.served)
        role = item.role or ("image" if IMAGE_MAKERS.search(item.served) else "general")
        from benchwarmers_mcp.catalog.registration import register_new  # the catalog loads when first needed
        model = (await register_new(self.ctx, item.served, item.endpoint, alias=alias, role=role,
                                    ad_hoc=item.mode == "quick-adhoc", listed=self._listed.pop(item.id, None))).model
        extra = ", role image (never seated)" if role == "image" else ", ad hoc" if model.ad_hoc else ""
        return Step("ok", f"registered as {model.alias}{extra}", model.alias)

    async def _probe(self, model: ModelRecord) -> Step:
        if model.ad_hoc:
            return Step("skipped", "ad hoc: never probed on its own")
        if model.role == "image":
            return Step("skipped", "an image generator: not probed with text")
        from benchwarmers_mcp.health.probes import Prober  # at the first probe, not at start (_served)

        rows = await Prober(self.ctx).probe(model, "onboarding")
        tiny = rows[0]
        if not tiny.answered:
            return Step("no answer", f"no answer ({tiny.failure}): {tiny.detail}".rstrip(": "))
        speed = ", ".join(f"{r.prompt} p50 {r.p50_s:.1f} s" for r in rows if r.p50_s is not None)
        return Step("ok", f"answered ({speed})")

    async def _suite(self, item: Item, model: ModelRecord) -> Step:
        if item.mode != "full":
            return Step("skipped", "quick: left to the scheduled suite passes" if item.mode == "quick"
                        else "ad hoc: never scored on its own")
        if model.role == "image":
            return Step("skipped", "an image generator: the suite asks for text")
        from benchwarmers_mcp.suite import runner as suite_runner  # loads when first needed (cold start)
        run = await suite_runner.for_model(self.ctx, model.alias, SUITE_LIMIT)
        return Step("ok", _suite_said(run))


def _suite_said(run: dict[str, Any]) -> str:
    """A suite run as one line: its id and state, how many tasks were answered, its note."""
    if run.get("id") is None:
        return f"suite: nothing to ask ({run.get('note') or 'no task'})"
    items = run.get("items") or {}
    done = int(items.get("done", 0))
    note = f"; {run['note']}" if run.get("note") else ""
    return f"suite run {run['id']}: {run.get('state')}, {done} of {sum(items.values())} tasks{note}"
