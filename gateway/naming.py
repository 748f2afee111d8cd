"""Collection names as callers send them: ``bench/core``, ``core``, ``bench/core:merged``."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.errors import BadRequest

SUFFIXES = ("all", "merged", "route")


def split_model(model: Any) -> tuple[str, str | None]:
    """``bench/core:merged`` -> (``core``, ``merged``). 400 when no model is named."""
    if not isinstance(model, str) or not model.strip():
        raise BadRequest("no model named: ask for a collection, model \"bench/<collection>\"; "
                         "GET /v1/models lists them")
    name = model.strip()
    if name.startswith("models/"):
        name = name[len("models/"):]
    if name.startswith("bench/"):
        name = name[len("bench/"):]
    reply = None
    if ":" in name:
        name, _, suffix = name.rpartition(":")
        if suffix not in SUFFIXES:
            raise BadRequest(f"unknown reply mode ':{suffix}'; use :all, :merged or :route")
        reply = suffix
    return name, reply


def body_reply(body: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    """The ``bench`` body field (``{"reply": ...}``) and ``with`` (model aliases). 400 when malformed."""
    bench = body.get("bench")
    reply = None
    if bench is not None:
        if not isinstance(bench, dict):
            raise BadRequest("bench must be an object, e.g. {\"reply\": \"merged\"}")
        reply = bench.get("reply")
        if reply is not None and reply not in SUFFIXES:
            raise BadRequest("bench.reply must be \"all\", \"merged\" or \"route\"")
    nominees = body.get("with")
    if nominees is None and isinstance(bench, dict):
        nominees = bench.get("with")
    if nominees is None:
        return reply, ()
    if isinstance(nominees, str):
        nominees = [n for n in nominees.split(",") if n.strip()]
    if not isinstance(nominees, list) or not all(isinstance(n, str) and n.strip() for n in nominees):
        raise BadRequest("with must be a list of model aliases")
    return reply, tuple(n.strip() for n in nominees)


def resolve_reply(body_value: str | None, suffix: str | None) -> str | None:
    """Body first, then suffix; None leaves it to the collection."""
    return body_value or suffix
