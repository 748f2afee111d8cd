"""``bench catalog``, ``bench discover`` and ``bench candidates dismiss``: the catalog from a terminal.

The server does the work (``/api/catalog``, ``/api/discover``, ``/api/candidates/dismiss``); these
commands only ask and print. ``bench discover add`` hands the model to the onboarding queue (as
``bench onboard`` does), or registers it at once with ``--now``.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchwarmers_mcp.cli import cmd_health
from benchwarmers_mcp.cli.console import note, server_note, show_json
from benchwarmers_mcp.cli.remote import Remote, UsageError, given
from benchwarmers_mcp.cli.tables import ago, table, yes_no_unknown

REACH_WORDS = {"bench": "on the bench", "connected": "connected", "easy": "easy to add", "other": "other"}


def tokens(value: Any) -> str:
    """128000 as ``128k``, 1048576 as ``1M``; unknown as ``-``."""
    if not isinstance(value, int) or isinstance(value, bool):
        return "-"
    if value >= 1_000_000:
        return f"{value / 1_048_576:.0f}M" if value % 1_048_576 == 0 else f"{value / 1_000_000:.1f}M"
    return f"{value // 1000}k" if value >= 1000 else str(value)


def price(row: dict[str, Any]) -> str:
    if row.get("free"):
        return "free"
    if row.get("subscription"):
        return "subscription"
    pin, pout = row.get("price_in"), row.get("price_out")
    if pin is None and pout is None:
        return "-"
    return f"${number(pin)}/{number(pout)}"


def number(value: Any) -> str:
    """A price as it reads best: ``0.59``, ``15``, ``-`` when unknown."""
    return f"{value:.6g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def flag(value: Any) -> str:
    return {True: "yes", False: "no"}.get(value, "?")


# ---- bench catalog ------------------------------------------------------------------------------

async def catalog_status(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/catalog")
    if show_json(args, reply):
        return 0
    print(f"catalog: {reply['entries']:,} models from {reply['providers']} providers ({reply['base']} models.dev data)")
    table(("feed", "entries", "last good", "last tried", "error", "URL"),
          [(f["feed"], f["entries"], ago(f["fetched_at"]), ago(f["tried_at"]), f["error"], f["url"] or "(not set)")
           for f in reply["feeds"]])
    note("refresh from the feeds: bench catalog refresh (only ever when you ask, or the catalog job is on)")
    return 0


async def catalog_refresh(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/catalog/refresh", {})
    if show_json(args, reply):
        return 0
    for feed in reply["feeds"]:
        if feed["ok"]:
            print(f"{feed['feed']}: {feed['entries']:,} entries")
        elif feed["ok"] is None:
            print(f"{feed['feed']}: skipped, {feed['skipped']}")
        else:
            print(f"{feed['feed']}: failed ({feed['error']}); kept {feed['kept']}")
    for listing in reply["listings"]:
        if not listing["ok"]:
            note(f"{listing['endpoint']}'s listing: {listing['error']}")
    print(f"facts derived again for {reply['models']} model(s); the catalog has {reply['entries']:,} entries")
    return 0 if any(f["ok"] for f in reply["feeds"]) or all(f["ok"] is None for f in reply["feeds"]) else 1


# ---- bench discover -----------------------------------------------------------------------------

async def discover(args: argparse.Namespace, remote: Remote) -> int:
    if args.action == "add":
        return await discover_add(args, remote)
    if args.target:
        raise UsageError(f"unexpected {args.target!r}: did you mean bench discover add {args.target}?")
    reply = await remote.get("/api/discover", {"free": "1" if args.free else None, "new": "1" if args.new else None,
                                               "every_kind": "1" if args.every_kind else None,
                                               "find": args.find, "reach": args.reach, "provider": args.provider,
                                               "limit": str(args.limit)})
    if show_json(args, reply):
        return 0
    rows = [(r["key"], price(r), tokens(r["context_window"]), tokens(r["max_output"]), flag(r["tools"]),
             flag(r["reasoning"]), flag(r["vision"]), r["released"],
             {True: "open", False: "closed"}.get(r["open_weights"], "?"),
             (("as " + ", ".join(r["aliases"])) if r["aliases"] else REACH_WORDS[r["reach"]])
             + (" (new)" if r["new"] else "")) for r in reply["rows"]]
    table(("model", "price in/out", "context", "output", "tools", "reasons", "vision", "released", "weights",
           "reach"), rows)
    if not rows:
        note("nothing in the catalog matches")
    elif reply["total"] > len(rows):
        note(f"{len(rows)} of {reply['total']:,} shown (--limit N for more, --find TEXT to narrow)")
    if rows:
        note("add one: bench discover add <provider>/<model> [--endpoint NAME]")
    return 0


async def discover_add(args: argparse.Namespace, remote: Remote) -> int:
    """To the onboarding queue (checked, registered, probed, the suite), or at once with ``--now``."""
    if not args.target:
        raise UsageError("name the model: bench discover add <provider>/<model> (as bench discover lists it)")
    mode = "quick-adhoc" if args.ad_hoc else "quick" if args.quick else "full"
    body = {"model": args.target, "mode": mode, "now": bool(args.now),
            **given(endpoint=args.endpoint, alias=args.alias, role=args.role)}
    reply = await remote.post("/api/discover/add", body)
    if "queued" in reply:
        if args.wait:
            return await cmd_health.follow(args, remote, [reply["queued"]])
        if show_json(args, reply):
            return 0
        print(f"queued {reply['served']} on {reply['endpoint']} ({reply['via']}, {mode}) from {reply['entry']}")
        server_note(reply)
        note("follow it: bench onboarding (or add --wait)")
        return 0
    if show_json(args, reply):
        return 0
    m = reply["model"]
    print(f"registered {m['alias']} ({reply['served']} on {reply['endpoint']}, {reply['via']}) from {reply['entry']}")
    print(f"  context {tokens(m['context_window'])}, output {tokens(m['max_output'])}, tools "
          f"{yes_no_unknown(m['tools'])}, vision {yes_no_unknown(m['vision'])}")
    server_note(reply)
    note(f"add it to a collection: bench collection save <name> --add {m['alias']}")
    return 0


# ---- bench candidates dismiss ----------------------------------------------------------------------

async def candidates_dismiss(args: argparse.Namespace, remote: Remote) -> int:
    if not args.key or "@" not in args.key:
        raise UsageError(f"bench candidates {args.action} <served>@<endpoint> (the key bench candidates lists)")
    reply = await remote.post("/api/candidates/dismiss", {"key": args.key, "undo": args.action == "undismiss"})
    if show_json(args, reply):
        return 0
    if reply["dismissed"]:
        print(f"dismissed {args.key}: bench candidates leaves it out (bench candidates undismiss {args.key})")
    else:
        print(f"{args.key} is a candidate again")
    return 0


# ---- the parsers --------------------------------------------------------------------------------

def add_commands(b: Any, sub: Any) -> None:
    """``discover`` and ``catalog``; ``b`` is the client's command builder."""
    disc = b.command(sub, "discover", discover, "every model the catalog knows: price, window, tools, reach here", [
        "bench discover --free", "bench discover --new", "bench discover --find qwen --reach connected",
        "bench discover --every-kind --find whisper",
        "bench discover add groq/llama-3.3-70b-versatile --wait", "bench discover add openai/gpt-4o --endpoint openrouter",
        "bench discover add groq/qwen/qwen3-32b --now"])
    disc.add_argument("action", nargs="?", choices=("add",),
                      help="add: onboard one through an endpoint that serves it (the onboarding queue)")
    disc.add_argument("target", nargs="?", metavar="PROVIDER/MODEL", help="with add: the model, as Discover lists it")
    disc.add_argument("--free", action="store_true", help="only models callable with a free key at no charge "
                      "(no price, :free, or a free tier; never a subscription plan's)")
    disc.add_argument("--every-kind", action="store_true",
                      help="embedding, rerank, speech, image, music and video models too (default: chat models)")
    disc.add_argument("--new", action="store_true", help="only models first seen here in the last 7 days")
    disc.add_argument("--find", metavar="TEXT", help="only models whose name contains TEXT")
    disc.add_argument("--reach", choices=("bench", "connected", "easy", "other"), help="only this reach")
    disc.add_argument("--provider", help="only this provider (as the catalog names it)")
    disc.add_argument("--limit", type=int, default=50, help="rows to show (default 50)")
    disc.add_argument("--endpoint", help="with add: the endpoint to register it on")
    disc.add_argument("--alias", help="with add: the bench's name for it")
    disc.add_argument("--role", help="with add: general (default), code, light, image, vision or decision")
    disc.add_argument("--now", action="store_true", help="with add: register at once (no probe, no suite)")
    disc.add_argument("--quick", action="store_true", help="with add: onboard without the suite now")
    disc.add_argument("--ad-hoc", action="store_true", help="with add: onboard ad hoc (never probed or scored)")
    disc.add_argument("--wait", action="store_true", help="with add: show each onboarding step until done")
    _, csub = b.group(sub, "catalog", "the catalog of model facts: where it comes from, and a refresh", [
        "bench catalog status", "bench catalog refresh"])
    b.command(csub, "status", catalog_status, "the catalog's feeds and when each last worked",
              ["bench catalog status", "bench catalog status --json"])
    b.command(csub, "refresh", catalog_refresh, "fetch models.dev, OpenRouter and FreeLLMAPI now", [
        "bench catalog refresh", "bench catalog refresh --json"])
