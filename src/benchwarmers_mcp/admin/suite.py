"""The review suite over HTTP, under ``/api/suite/``: what ``bench suite ...`` and the Benchmarks page use.
Each route is one entry in ``routes.TABLE`` (admin class, OpenAI error shape).

::

    GET  /api/suite/tasks[?drafts=1]      the tasks (pack and data folder), and the invalid ones with problems
    GET  /api/suite/task?id=ID            one task: its task.json and the prompt as sent
    POST /api/suite/promote  {id}         a draft becomes a task runs ask
    GET  /api/suite/repos                 POST /api/suite/repos {name, path}   POST /api/suite/repos/remove {name}
    POST /api/suite/seed     {repo, count, hard, seed, kinds}
    POST /api/suite/mine     {call}
    POST /api/suite/rebench  {source, raw, limit, offset}
    POST /api/suite/run      {models, tasks, next, next_free, repeat, limit, timeout, gap, dry_run}
    GET  /api/suite/runs                  GET /api/suite/run?id=N    POST /api/suite/run/stop {id}
    GET  /api/suite/scores[?model=A]      per model: outcomes, not a score, recall and its interval
    GET  /api/suite/answers?model=&task=&run=&limit=
    GET  /api/suite/board[?matrix=all]    trust, bug hunt and the task x model matrix (the Benchmarks page)
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import NameIn, Strict, admin, body_as, ctx_of, ok, query_flag
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import whole_number
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import library, mine, rebench, runner, seed, stats
from benchwarmers_mcp.suite.plan import DEFAULT_LIMIT, RunRequest, plan
from benchwarmers_mcp.suite.runner import RunPolicy
from benchwarmers_mcp.suite.tasks import TaskProblem, task_json


class IdIn(Strict):
    id: str = Field(min_length=1, max_length=120)


class RepoIn(Strict):
    name: str = Field(min_length=1, max_length=40)
    path: str = Field(min_length=1, max_length=4096)


class SeedIn(Strict):
    repo: str = Field(min_length=1, max_length=40)
    count: int = Field(6, ge=1, le=50)
    hard: bool = False
    seed: int = 0
    kinds: list[str] | None = None


class MineIn(Strict):
    call: str = Field(min_length=1, max_length=200)


class RebenchIn(Strict):
    source: str | None = Field(None, min_length=8, max_length=2000)
    raw: str | None = Field(None, min_length=8, max_length=2000)
    limit: int = Field(100, ge=1, le=100)
    offset: int = Field(0, ge=0)
    count: int = Field(5, ge=1, le=50)


class RunIn(Strict):
    models: list[str] = Field(default_factory=list, max_length=100)
    tasks: list[str] = Field(default_factory=list, max_length=500)
    next: bool = False
    next_free: bool = False
    repeat: int = Field(1, ge=1, le=20)
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=500)
    timeout: float = Field(420.0, gt=0, le=3600)
    gap: float = Field(2.0, ge=0, le=3600)
    dry_run: bool = False


class RunIdIn(Strict):
    id: int = Field(ge=1)


def _int_param(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    return whole_number(raw, name)


@admin
async def list_tasks(request: Request) -> Response:
    ctx = ctx_of(request)
    catalog = await library.load(ctx.settings.home)
    drafts = query_flag(request, "drafts")
    shown = [e.summary() for e in catalog.entries.values() if e.task is not None and (drafts or not e.task.draft)]
    invalid = [e.summary() for e in catalog.entries.values() if e.task is None]
    valid = catalog.valid()
    counts = {"tasks": len(valid), "live": len(catalog.live()), "drafts": sum(t.draft for t in valid),
              "pack": sum(1 for e in catalog.entries.values() if e.origin == "pack" and e.task is not None),
              "data": sum(1 for e in catalog.entries.values() if e.origin == "data" and e.task is not None),
              "invalid": len(invalid)}
    return ok({"tasks": shown, "invalid": invalid, "counts": counts,
               "data_folder": str(library.tasks_dir(ctx.settings.home))})


@admin
async def show_task(request: Request) -> Response:
    ctx = ctx_of(request)
    task_id = request.query_params.get("id") or ""
    entry = (await library.load(ctx.settings.home)).entry(task_id)
    out: dict[str, Any] = entry.summary()
    out["folder"] = str(entry.folder)
    if entry.task is not None:
        out["task_json"] = task_json(entry.task)
        try:
            out["prompt"] = await library.prompt_of(entry, await suite_store.repos(ctx.db))
        except TaskProblem as problem:
            out["prompt_problems"] = problem.problems
    return ok(out)


@admin
async def promote(request: Request) -> Response:
    ctx = ctx_of(request)
    wanted = await body_as(request, IdIn, "promotion")
    task = await library.promote(ctx.settings.home, wanted.id)
    return ok({"ok": True, "task": {**task.summary(), "origin": "data"}})


@admin
async def list_repos(request: Request) -> Response:
    repos = await suite_store.repos(ctx_of(request).db)
    return ok({"repos": [{"name": k, "path": v} for k, v in repos.items()]})


@admin
async def add_repo(request: Request) -> Response:
    ctx = ctx_of(request)
    wanted = await body_as(request, RepoIn, "repository")
    return ok({"ok": True, "repo": await seed.add_repo(ctx.db, wanted.name, wanted.path)})


@admin
async def remove_repo(request: Request) -> Response:
    ctx = ctx_of(request)
    wanted = await body_as(request, NameIn, "repository")
    return ok({"ok": True, "removed": await suite_store.remove_repo(ctx.db, wanted.name)})


@admin
async def seed_repo(request: Request) -> Response:
    ctx = ctx_of(request)
    w = await body_as(request, SeedIn, "seeding")
    created = await seed.seed(ctx.db, ctx.settings.home, w.repo, count=w.count, hard=w.hard, seed=w.seed,
                              kinds=w.kinds)
    return ok({"ok": True, "created": created,
               "note": None if created else "nothing left to plant: every unit that fits was used, or none fits"})


@admin
async def mine_call(request: Request) -> Response:
    ctx = ctx_of(request)
    wanted = await body_as(request, MineIn, "mining")
    return ok({"ok": True, "created": await mine.mine(ctx.db, ctx.settings.home, wanted.call)})


@admin
async def rebench_rows(request: Request) -> Response:
    ctx = ctx_of(request)
    w = await body_as(request, RebenchIn, "rebench")
    created = await rebench.fetch(ctx, source=w.source, raw=w.raw, limit=w.limit, offset=w.offset, count=w.count)
    return ok({"ok": True, **created})


@admin
async def start_run(request: Request) -> Response:
    ctx = ctx_of(request)
    w = await body_as(request, RunIn, "run")
    if w.next and w.next_free:
        raise BadRequest("give next or next_free, not both")
    if (w.next or w.next_free) and w.models:
        raise BadRequest("next and next_free choose the model themselves; leave out models")
    wanted = RunRequest(tuple(w.models), tuple(w.tasks), w.next, w.next_free, w.repeat, w.limit)
    if w.dry_run:
        items = await plan(ctx.db, wanted, await library.load(ctx.settings.home))
        return ok({"ok": True, "dry_run": True, "plan": [{"alias": i.alias, "task": i.task, "connection": i.connection}
                                                          for i in items]})
    run = await runner.start(ctx, wanted, RunPolicy(timeout=w.timeout, gap=w.gap))
    return ok({"ok": True, "run": await suite_store.run_row(ctx.db, run)})


@admin
async def list_runs(request: Request) -> Response:
    limit = _int_param(request, "limit", 20) or 20
    return ok({"runs": await suite_store.runs(ctx_of(request).db, min(limit, 200))})


@admin
async def show_run(request: Request) -> Response:
    ctx = ctx_of(request)
    run = _int_param(request, "id")
    if run is None:
        raise BadRequest("give the run's id: /api/suite/run?id=N")
    row = await suite_store.run_row(ctx.db, run)
    items = [{"id": i.id, "alias": i.alias, "task": i.task, "state": i.state, "attempts": i.attempts,
              "rest_until": i.rest_until, "last_error": i.last_error, "answer": i.answer}
             for i in await suite_store.items(ctx.db, run)]
    answers = await suite_store.answers(ctx.db, run=run, limit=1000, with_text=False)
    return ok({"run": row, "items": items, "answers": answers})


@admin
async def stop_run(request: Request) -> Response:
    ctx = ctx_of(request)
    wanted = await body_as(request, RunIdIn, "run")
    await suite_store.run_row(ctx.db, wanted.id)
    return ok({"ok": True, "stopped": await runner.stop(ctx, wanted.id)})


@admin
async def scores(request: Request) -> Response:
    ctx = ctx_of(request)
    alias = request.query_params.get("model") or None
    return ok({"models": stats.scores(await suite_store.score_rows(ctx.db, alias))})


@admin
async def answers(request: Request) -> Response:
    ctx = ctx_of(request)
    q = request.query_params
    found = await suite_store.answers(ctx.db, alias=q.get("model") or None, task=q.get("task") or None,
                                      run=_int_param(request, "run"), limit=min(_int_param(request, "limit", 50) or 50,
                                                                                 500))
    return ok({"answers": found})


@admin
async def board(request: Request) -> Response:
    ctx = ctx_of(request)
    catalog = await library.load(ctx.settings.home)
    tasks = {e.id: e.summary() for e in catalog.entries.values() if e.task is not None}
    everything = (request.query_params.get("matrix") or "own") == "all"
    data = stats.board(await suite_store.score_rows(ctx.db), tasks, everything=everything)
    data["tasks"] = tasks
    return ok(data)

