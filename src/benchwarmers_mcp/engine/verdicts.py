"""A verdict as a caller sends it (``POST /bench/verdict``, MCP's ``verdict``), checked into a
``Verdict``: unknown fields refused, nothing coerced, notes and findings trimmed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import validation_message
from benchwarmers_mcp.store import names
from benchwarmers_mcp.store.verdicts import Verdict


class VerdictIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    call: str = Field(min_length=3, max_length=200)
    useful: bool
    note: str = Field("", max_length=4000)
    real: list[str] = Field(default_factory=list, max_length=100)
    false_: list[str] = Field(default_factory=list, max_length=100, alias="false")


def parse_verdict(body: dict[str, Any]) -> Verdict:
    """The verdict in ``body``, or a 400 naming what is wrong."""
    try:
        v = VerdictIn.model_validate(body)
    except ValidationError as e:
        raise BadRequest(f"invalid verdict: {validation_message(e)}") from None
    names.no_control("the call id", v.call)
    return Verdict(v.call.strip(), v.useful, v.note.strip(), tuple(s.strip() for s in v.real if s.strip()),
                   tuple(s.strip() for s in v.false_ if s.strip()))


__all__ = ["VerdictIn", "parse_verdict"]
