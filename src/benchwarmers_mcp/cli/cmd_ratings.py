"""``bench ratings``, ``bench suggestions [accept ID]`` and ``bench settings learning``: what the
verdicts say about each model, who to promote or bench, and how the bench learns (a thin client
of ``/bench/ratings``, ``/bench/suggestions`` and ``/api/learning-settings``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from benchwarmers_mcp.cli.console import note, show_json
from benchwarmers_mcp.cli.remote import Remote, UsageError
from benchwarmers_mcp.cli.tables import ago, table

if TYPE_CHECKING:
    from benchwarmers_mcp.cli.client import Builder, Subparsers


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def _interval(pair: list[float]) -> str:
    return f"{pair[0] * 100:.0f}-{pair[1] * 100:.0f}%"


def _evidence(e: dict[str, dict[str, int]]) -> str:
    parts = []
    for source in ("panel", "route", "shadow", "suite"):
        c = e.get(source)
        if c and (c["good"] or c["bad"]):
            parts.append(f"{source} {c['good']}/{c['good'] + c['bad']}")
    return ", ".join(parts) or "-"


async def ratings(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/bench/ratings", {"collection": args.collection, "shape": args.shape})
    if show_json(args, reply):
        return 0
    rows = []
    for m in reply["models"]:
        health = m["health"]
        rows.append((m["alias"], "member" if m["member"] else "", _pct(m["mean"]), _interval(m["interval"]),
                     _evidence(m["evidence"]), _pct(m["confidently_wrong"]["share"]),
                     _interval(m["confidently_wrong"]["interval"]),
                     f"{_pct(health['share'])} of {health['calls']}" if health["calls"] else "-", m["status"]))
    table(("model", "", "useful", "90% interval", "verdicts (useful/judged)", "conf. wrong", "interval", "answers",
           "status"), rows)
    scope = reply["collection"] or "every collection"
    note(f"ratings on {scope}, shape {reply['shape'] or 'any'}: the posterior mean with its 90% interval")
    return 0


def _suggestion_rows(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(s["id"], f"bench/{s['collection']}", s["kind"], s["alias"], s["replaces"] or "-",
             "yes" if s["auto"] else "", s["state"], ago(s["updated_at"]), s["reason"]) for s in items]


async def suggestions(args: argparse.Namespace, remote: Remote) -> int:
    if args.action == "accept":
        if args.id is None:
            raise UsageError("bench suggestions accept ID: which suggestion (bench suggestions lists them)")
        reply = await remote.post("/api/suggestion/accept", {"id": args.id})
        if show_json(args, reply):
            return 0
        s = reply["suggestion"]
        print(f"accepted {s['id']}: {reply['collection']} members now {', '.join(reply['members'])}")
        note(f"why: {s['reason']}")
        return 0
    if args.id is not None:
        raise UsageError("an id goes with accept: bench suggestions accept ID")
    reply = await remote.post("/bench/suggestions", {"state": "all" if args.all else "open"})  # reviews first
    if show_json(args, reply):
        return 0
    table(("id", "collection", "kind", "model", "replaces", "auto", "state", "updated", "why"),
          _suggestion_rows(reply["suggestions"]))
    if not reply["suggestions"]:
        note("no suggestions: the verdicts so far back the members you have")
    note("automatic mode is " + ("on: strong suggestions are applied on their own" if reply["auto"] else
                                 "off (bench settings learning --auto on)"))
    return 0


def _shadow_changes(values: list[str] | None) -> dict[str, bool]:
    out = {}
    for value in values or ():
        name, _, state = value.partition(":")
        if state not in ("on", "off") or not name:
            raise UsageError(f"--shadow takes NAME:on or NAME:off, not {value!r}")
        out[name] = state == "on"
    return out


async def learning_settings(args: argparse.Namespace, remote: Remote) -> int:
    body: dict[str, Any] = {}
    if args.auto is not None:
        body["auto"] = args.auto == "on"
    if args.shadow:
        body["shadow"] = _shadow_changes(args.shadow)
    if args.explore is not None:
        body["explore"] = args.explore
    if args.scoped_verdicts is not None:
        body["scoped_verdicts"] = args.scoped_verdicts
    reply = await (remote.post("/api/learning-settings", body) if body else remote.get("/api/learning-settings"))
    if show_json(args, reply):
        return 0
    print(f"learning  automatic changes {'on' if reply['auto'] else 'off'}, explorers by {reply['explore']}, "
          f"shadow seats on {', '.join('bench/' + c for c in reply['shadow']) or 'no collection'}, "
          f"scoped keys' verdicts count {_SCOPED_WORDS.get(reply.get('scoped_verdicts', 'own'), 'on their collections')}")
    return 0


_SCOPED_WORDS = {"own": "on their own collections only", "everywhere": "everywhere"}


def register(b: Builder, sub: Subparsers) -> None:
    rate = b.command(sub, "ratings", ratings, "each model's rating from verdicts: mean, interval, evidence", [
        "bench ratings core", "bench ratings core --shape review --json", "bench ratings"])
    rate.add_argument("collection", nargs="?", help="the collection (default: every collection and shape)")
    rate.add_argument("--shape", help="the shape to rate on (default: the collection's)")
    sug = b.command(sub, "suggestions", suggestions, "who to promote or bench, with the evidence; accept one", [
        "bench suggestions", "bench suggestions --all --json", "bench suggestions accept 3"])
    sug.add_argument("action", nargs="?", choices=("accept",), help="accept: apply the suggestion ID")
    sug.add_argument("id", nargs="?", type=int, help="with accept: the suggestion's id")
    sug.add_argument("--all", action="store_true", help="the decided ones too")


def add_learning_flags(settings: argparse.ArgumentParser) -> None:
    """``bench settings learning ...``: the flags the ``learning`` section takes."""
    settings.add_argument("--auto", choices=("on", "off"), help="learning: apply strong suggestions on their own")
    settings.add_argument("--shadow", action="append", metavar="NAME:on|off",
                          help="learning: shadow seats for a route collection (repeatable)")
    settings.add_argument("--explore", choices=("ucb", "thompson"), help="learning: how explorers are drawn")
    settings.add_argument("--scoped-verdicts", choices=("own", "everywhere"),
                          help="learning: where a scoped gateway key's verdicts count (default own: its collections)")
