"""The scheduler over the admin API.

``GET /api/scheduler``: the mode, each job (schedule, on, available, running, last run, next run),
who runs them (the lease) and the latest runs. ``POST /api/scheduler``: change the setting
``{"mode": "run", "off": ["perf"], "on": [...], "times": {"availability": "04:30"}}`` (a time of
``null`` puts a job back on its default); answers as GET. ``POST /api/scheduler/run`` ``{"job",
"wait"}``: run a job now, whatever the mode; ``wait`` answers when it has finished. Each is one
entry of ``routes.TABLE``; the scheduler is the context's (``ctx.scheduler``, started by the
app's lifespan).
"""

from __future__ import annotations

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.context import Scheduling
from benchwarmers_mcp.errors import BenchError


class SchedulerIn(Strict):
    mode: str | None = None
    off: list[str] | None = Field(None, max_length=20)
    on: list[str] | None = Field(None, max_length=20)
    times: dict[str, str | None] | None = Field(None, max_length=20)


class RunIn(Strict):
    job: str = Field(min_length=1, max_length=64)
    wait: bool = False


def scheduler_of(request: Request) -> Scheduling:
    found = ctx_of(request).scheduler
    if found is None:
        raise BenchError("the scheduler is not running in this server")
    return found


@admin
async def get_scheduler(request: Request) -> Response:
    return ok(await scheduler_of(request).overview())


@admin
async def post_scheduler(request: Request) -> Response:
    body = await body_as(request, SchedulerIn, "scheduler settings")
    return ok(await scheduler_of(request).configure(mode=body.mode, off=body.off, on=body.on, times=body.times))


@admin
async def post_run(request: Request) -> Response:
    body = await body_as(request, RunIn, "job run")
    runner = scheduler_of(request)
    run_id = await runner.run_now(body.job)
    if not body.wait:
        return ok({"job": body.job, "run": run_id, "status": "running"}, 202)
    done = await runner.wait(run_id)
    return ok({"job": body.job, "run": run_id, **(done or {})})
