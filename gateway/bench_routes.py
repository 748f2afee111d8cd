"""``/bench/*``: verdicts, pending verdicts and the record. Errors in OpenAI's shape."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.gateway.body import read_json, validation_message
from benchwarmers_mcp.gateway.dispatch import context, guarded, key_name
from benchwarmers_mcp.gateway.openai_chat import render_error
from benchwarmers_mcp.store import verdicts
from benchwarmers_mcp.store.verdicts import Verdict


class VerdictIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    call: str = Field(min_length=3, max_length=200)
    useful: bool
    note: str = Field("", max_length=4000)
    real: list[str] = Field(default_factory=list, max_length=100)
    false_: list[str] = Field(default_factory=list, max_length=100, alias="false")


def parse_verdict(body: dict[str, Any]) -> Verdict:
    try:
        v = VerdictIn.model_validate(body)
    except ValidationError as e:
        raise BadRequest(f"invalid verdict: {validation_message(e)}") from None
    return Verdict(v.call.strip(), v.useful, v.note.strip(), tuple(s.strip() for s in v.real if s.strip()),
                   tuple(s.strip() for s in v.false_ if s.strip()))


@guarded(render_error)
async def post_verdict(request: Request) -> Response:
    ctx = context(request)
    verdict = parse_verdict(await read_json(request, ctx.settings.max_body))
    recorded, written = await verdicts.record(ctx.db, verdict, key_name=key_name(request))
    return JSONResponse({"ok": True, "written": written, "recorded": recorded.as_dict()})


@guarded(render_error)
async def post_pending(request: Request) -> Response:
    ctx = context(request)
    body = await read_json(request, ctx.settings.max_body)
    calls = body.get("calls")
    if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls) or len(calls) > 5000:
        raise BadRequest("calls must be a list of call ids (at most 5,000)")
    return JSONResponse({"pending": await verdicts.pending(ctx.db, calls)})


@guarded(render_error)
async def get_record(request: Request) -> Response:
    ctx = context(request)
    collection = request.query_params.get("collection")
    if not collection:
        raise BadRequest("collection is required: /bench/record?collection=bench/<name>")
    name = collection if collection.startswith("bench/") else f"bench/{collection}"
    task = request.query_params.get("task") or None
    return JSONResponse({"collection": name, "task": task,
                         "aliases": await verdicts.record_counts(ctx.db, name, task)})
