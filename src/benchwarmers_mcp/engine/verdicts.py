"""A verdict as a caller sends it (``POST /bench/verdict``, ``/api/verdict``, MCP's ``verdict``),
checked into a ``Judged``: the ``Verdict`` (which replaces the call's last one whole,
``store.verdicts``) and the claim groups it marks; and a claim mark alone (``POST /bench/claims``).
Unknown fields refused, nothing coerced, notes and findings trimmed. (What a judgement does is
``engine/judging.py``.)"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchwarmers_mcp.engine.judging import Judged
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import validation_message
from benchwarmers_mcp.store import names
from benchwarmers_mcp.store.verdicts import Verdict

Judgement = Literal["real", "false", "none"]


class ClaimIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(min_length=1, max_length=64)
    judgement: Judgement


class VerdictIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    call: str = Field(min_length=3, max_length=200)
    useful: bool
    note: str = Field("", max_length=4000)
    real: list[str] = Field(default_factory=list, max_length=100)
    false_: list[str] = Field(default_factory=list, max_length=100, alias="false")
    claims: list[ClaimIn] = Field(default_factory=list, max_length=200)


class ClaimMarkIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    panel: str = Field(min_length=3, max_length=200)
    claim: str = Field(min_length=1, max_length=64)
    judgement: Judgement


def _texts(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s.strip() for s in items if s.strip()))


def parse_verdict(body: dict[str, Any]) -> Judged:
    """The verdict in ``body``, or a 400 naming what is wrong."""
    try:
        v = VerdictIn.model_validate(body)
    except ValidationError as e:
        raise BadRequest(f"invalid verdict: {validation_message(e)}") from None
    names.no_control("the call id", v.call)
    verdict = Verdict(v.call.strip(), v.useful, v.note.strip(), _texts(v.real), _texts(v.false_))
    return Judged(verdict, tuple((c.id.strip(), c.judgement) for c in v.claims))


def parse_claim_mark(body: dict[str, Any]) -> ClaimMarkIn:
    try:
        mark = ClaimMarkIn.model_validate(body)
    except ValidationError as e:
        raise BadRequest(f"invalid claim mark: {validation_message(e)}") from None
    names.no_control("the panel id", mark.panel)
    return mark


__all__ = ["ClaimIn", "ClaimMarkIn", "Judged", "VerdictIn", "parse_claim_mark", "parse_verdict"]
