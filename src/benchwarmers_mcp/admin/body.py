"""What every admin route shares: the guard that renders errors in one JSON shape, and the
pydantic check that turns a request body into a typed value or a clear 400.

The admin API speaks the OpenAI error shape (``{"error": {"message", "type", "code"}}``), so a
client of ``/v1`` and of ``/api`` reads one kind of error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.inbound import context, guarded, read_json, render_error, validation_message
from benchwarmers_mcp.store import names

ADMIN_MAX_BODY = 1_000_000
ctx_of = context  # the admin modules take the app's context from here

Handler = Callable[[Request], Awaitable[Response]]
Body = TypeVar("Body", bound=BaseModel)
Found = TypeVar("Found")


class Strict(BaseModel):
    """A request body: unknown fields are refused, types are not coerced (``"5"`` is not 5)."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


def _rule(what: str, rule: names.Rule = names.NAME) -> AfterValidator:
    """A pydantic check that refuses a name as the store does: the naming rule, in words."""

    def check(value: str) -> str:
        found = names.problem(what, value, rule)
        if found:
            raise ValueError(found)
        return value

    return AfterValidator(check)


# A body field that names something new: checked against the one naming rule (store/names.py).
EndpointName = Annotated[str, _rule("endpoint name")]
KeyName = Annotated[str, _rule("key name")]
CollectionName = Annotated[str, _rule("collection name")]
Alias = Annotated[str, _rule("alias", names.ALIAS)]


class NameIn(Strict):
    """A body that names one thing (an endpoint, a collection)."""

    name: str = Field(min_length=1, max_length=64)


def admin(handler: Handler) -> Handler:
    """Every admin handler leaves through here: a BenchError becomes its status and a JSON error."""
    return guarded(render_error)(handler)


async def found(lookup: Awaitable[Found]) -> Found | None:
    """What a store's ``get`` returns, or None where it raises NotFound (a new name, not an error)."""
    try:
        return await lookup
    except NotFound:
        return None


# Body fields of free text (a prompt, a file's text, a description, a reason, code, a key, a path):
# any character, stored exactly. Every other string in an admin body names or picks something (an
# endpoint, an alias, a collection, a call id, a mode) and holds no control character (400).
FREE_TEXT = frozenset({"prompt", "text", "image", "description", "reason", "note", "source", "raw", "key", "path"})


def _control_problem(value: Any, where: str) -> str | None:
    """The first control character in a name of ``value`` (a checked body, its lists, dicts and
    nested bodies; fields in ``FREE_TEXT`` left out), said with where it is; None when none."""
    if isinstance(value, str):
        return names.control_problem(where, value)
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return next((p for name, field in fields.items() if name not in FREE_TEXT
                     if (p := _control_problem(getattr(value, name), field.alias or name))), None)
    if isinstance(value, (list, tuple)):
        return next((p for item in value if (p := _control_problem(item, where))), None)
    if isinstance(value, dict):
        return next((p for k, v in value.items() if (p := _control_problem(k, where) or _control_problem(v, where))),
                    None)
    return None


async def body_as(request: Request, model: type[Body], what: str) -> Body:
    """The JSON body checked against ``model``; 415, 413 or 400 with the reason when it is not (a
    control character in a name included: ``FREE_TEXT``)."""
    ctx = ctx_of(request)
    raw = await read_json(request, min(ctx.settings.max_body, ADMIN_MAX_BODY))
    try:
        body = model.model_validate(raw)
    except ValidationError as e:
        raise BadRequest(f"invalid {what}: {validation_message(e)}") from None
    problem = _control_problem(body, what)
    if problem:
        raise BadRequest(f"invalid {what}: {problem}")
    return body


def query_flag(request: Request, name: str) -> bool:
    return (request.query_params.get(name) or "").strip().lower() in ("1", "true", "yes", "on")


def ok(payload: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse(payload, status_code=status)
