"""``/bench/*``: verdicts, pending verdicts and the record. Errors in OpenAI's shape.

A scoped gateway key reaches only its own collections' calls: a verdict on another collection's
call and another collection's record are refused 403; ``pending`` leaves other collections' calls
out (see ``store/verdicts.py``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.engine.learning import after_verdict
from benchwarmers_mcp.engine.verdicts import parse_verdict
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import access_of, context, guarded, read_json, render_error
from benchwarmers_mcp.store import names, verdicts


@guarded(render_error)
async def post_verdict(request: Request) -> Response:
    ctx = context(request)
    verdict = parse_verdict(await read_json(request, ctx.settings.max_body))
    recorded, written = await verdicts.record(ctx.db, verdict, access=access_of(request))
    if written:
        await after_verdict(ctx, recorded.call)  # the next panel reflects it
    return JSONResponse({"ok": True, "written": written, "recorded": recorded.as_dict()})


@guarded(render_error)
async def post_pending(request: Request) -> Response:
    ctx = context(request)
    body = await read_json(request, ctx.settings.max_body)
    calls = body.get("calls")
    if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls) or len(calls) > 5000:
        raise BadRequest("calls must be a list of call ids (at most 5,000)")
    for call in calls:
        names.no_control("a call id", call)
    return JSONResponse({"pending": await verdicts.pending(ctx.db, calls, access=access_of(request))})


@guarded(render_error)
async def get_record(request: Request) -> Response:
    ctx = context(request)
    collection = request.query_params.get("collection")
    if not collection:
        raise BadRequest("collection is required: /bench/record?collection=bench/<name>")
    names.no_control("a collection name", collection)
    name = collection if collection.startswith("bench/") else f"bench/{collection}"
    task = request.query_params.get("task") or None
    return JSONResponse({"collection": name, "task": task,
                         "aliases": await verdicts.record_counts(ctx.db, name, task, access=access_of(request))})
