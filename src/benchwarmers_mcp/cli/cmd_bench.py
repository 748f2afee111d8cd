"""``bench status``, ``collections``, ``collection ...``, ``settings``, ``quotas`` and gateway keys."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchwarmers_mcp import __version__
from benchwarmers_mcp.cli.console import confirm, note, show_json
from benchwarmers_mcp.cli.remote import CliError, Remote, UsageError, present
from benchwarmers_mcp.cli.tables import ago, table, when


def csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


# ---- status --------------------------------------------------------------------------------

async def status(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/status")
    if show_json(args, reply):
        return 0
    c, auth = reply["counts"], reply.get("auth") or {}
    found = "" if remote.config.source == "the default" else f"; found at {remote.url} through {remote.config.source}"
    print(f"Benchwarmers {reply['version']} at {reply['url']} (listening on {reply['bind']}:{reply['port']}{found})")
    print(f"data folder    {reply['data_folder']}")
    print(f"config folder  {reply.get('config_folder', '-')} (the keys file)")
    print(f"bench          {c['endpoints']} endpoint(s), {c['models']} model(s), {c['ad_hoc']} ad hoc, "
          f"{c['retired']} retired, {c['collections']} collection(s)")
    print(f"record         {c['panels']} panel(s), {c['calls']} call(s), {c['verdicts']} judged, "
          f"{c['owed']} owed a verdict")
    store, replicas = reply.get("store") or {}, reply.get("replicas") or {}
    if store:
        where = store.get("path") if store.get("backend") == "sqlite" else store.get("url")
        seen = len(replicas.get("recent") or ())
        print(f"store          {store.get('version') or store.get('backend')} at {where}; {seen} server(s) seen in"
              f" the last {int(replicas.get('window_seconds') or 0)} s")
    print(f"access         admin token {'set' if auth.get('admin_token') else 'not set'}, gateway keys "
          f"{'required' if auth.get('keys_required') else 'not required'}")
    if reply.get("endpoints_without_key"):
        note(f"no key for: {', '.join(reply['endpoints_without_key'])} (bench endpoint key <name>)")
    for loose in reply.get("loose_modes") or ():  # store/modes.py says it in words
        note(str(loose["message"]))
    if reply["version"] != __version__:
        note(f"this CLI is {__version__}; the server is {reply['version']}")
    return 0


# ---- collections ---------------------------------------------------------------------------

async def collections(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/v1/models")
    if show_json(args, reply):
        return 0
    items = [m for m in reply.get("data") or () if ":" not in str(m.get("id"))]
    rows = [(m["id"], ", ".join(m.get("members") or ()), m.get("reply"), m.get("shape"), m.get("description"))
            for m in items]
    table(("collection", "members", "reply", "shape", "description"), rows)
    if not rows:
        note("no collections yet: bench collection save <name> --members a,b --description \"...\"")
    return 0


async def _collection(remote: Remote, name: str) -> dict[str, Any]:
    reply = await remote.get("/api/collections")
    bare = name.removeprefix("bench/")
    for c in reply["collections"]:
        if c["name"] == bare:
            return dict(c)
    raise CliError(f"no collection named {bare!r}; bench collections lists them")


CAN = {"tools": "calls tools", "vision": "sees images"}


async def collection_show(args: argparse.Namespace, remote: Remote) -> int:
    c = await _collection(remote, args.name)
    if show_json(args, c):
        return 0
    together = c.get("together") or {}
    print(f"{c['id']}  {c.get('description') or ''}".rstrip())
    print(f"members     {', '.join(c['members'])}")
    print(f"explorers   {c['explorers']} per panel")
    print(f"shape       {c['shape']}    reply {c['reply']}    merger {c.get('merger') or 'chosen by record'}")
    print(f"tags        {', '.join(c.get('tags') or ()) or '-'}")
    window = together.get("context_window")
    shared = together.get("capabilities") or ()
    can = f"every member {' and '.join(CAN.get(c, c) for c in shared)}" if shared else \
        "no member capability shared by all (tools, vision)"
    print(f"together    context {f'{window:,} tokens' if window else 'unknown'}; {can}")
    return 0


async def collection_save(args: argparse.Namespace, remote: Remote) -> int:
    body = {"name": args.name.removeprefix("bench/"), **present(
        members=csv(args.members), add=csv(args.add), remove=csv(args.remove), tags=csv(args.tags),
        description=args.description, shape=args.shape, reply=args.reply, merger=args.merger)}
    if len(body) == 1:
        raise UsageError("nothing to save: give --members, --add, --remove, --description, --tags, --shape, "
                         "--reply or --merger")
    reply = await remote.post("/api/collection", body)
    if show_json(args, reply):
        return 0
    c = reply["collection"]
    verb = "created" if reply.get("created") else "saved"
    print(f"{verb} {c['id']}: {', '.join(c['members'])} (+{c['explorers']} explorer(s), reply {c['reply']})")
    return 0


async def collection_delete(args: argparse.Namespace, remote: Remote) -> int:
    name = args.name.removeprefix("bench/")
    await confirm(f"Delete collection {name}? Its panels and verdicts stay on the record.", args.yes)
    reply = await remote.post("/api/collection/remove", {"name": name})
    if show_json(args, reply):
        return 0
    print(f"deleted bench/{name}")
    return 0


# ---- settings and quotas -------------------------------------------------------------------

async def retention(args: argparse.Namespace, remote: Remote) -> int:
    """``bench settings retention [--days N]``: how long prompts and answers are kept."""
    days = getattr(args, "days", None)
    reply = await (remote.post("/api/settings/retention", {"days": days}) if days is not None
                   else remote.get("/api/settings/retention"))
    if show_json(args, reply):
        return 0
    print(f"retention  prompts and answers kept {reply['days']} days (default {reply['default']}), then pruned; "
          "verdicts and ratings stay")
    pruned = reply.get("pruned") or {}
    if pruned.get("panels") or pruned.get("route_turns"):
        print(f"pruned now: {pruned.get('panels', 0)} panels, {pruned.get('route_turns', 0)} route turns")
    return 0


async def settings(args: argparse.Namespace, remote: Remote) -> int:
    if getattr(args, "section", None) == "retention":
        return await retention(args, remote)
    if getattr(args, "days", None) is not None:
        raise UsageError("--days belongs to: bench settings retention --days N")
    if getattr(args, "section", None) == "learning":
        from benchwarmers_mcp.cli.cmd_ratings import learning_settings

        return await learning_settings(args, remote)
    changing = getattr(args, "max_calls", None) is not None or getattr(args, "max_explorers", None) is not None
    if getattr(args, "section", None) == "gateway" and changing:
        reply = await remote.post("/api/gateway-settings",
                                  present(max_calls=args.max_calls, max_explorers=args.max_explorers))
    else:
        reply = await remote.get("/api/gateway-settings")
    if show_json(args, reply):
        return 0
    g = reply["gateway"]
    print(f"gateway  max calls {g['max_calls']} (seats per panel), max explorers {g['max_explorers']}")
    if getattr(args, "section", None) is None:
        from benchwarmers_mcp.cli.cmd_ratings import learning_settings

        await learning_settings(args, remote)
        await retention(args, remote)
    return 0


async def quotas(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/bench/quotas")
    if show_json(args, reply):
        return 0
    summary, windows, resting = [], [], []
    for conn in reply.get("connections") or ():
        name, month = conn.get("connection"), conn.get("month") or {}
        paused = conn.get("paused")
        unknown = month.get("tokens_unknown") or 0
        summary.append((name, month.get("calls", 0), month.get("tokens_in", 0), month.get("tokens_out", 0),
                        f"{unknown} call{'s' if unknown != 1 else ''}" if unknown else "-",
                        f"until {when(paused.get('until'))}: {paused.get('why')}" if paused else "-"))
        for w in conn.get("windows") or ():
            windows.append((name, w.get("alias") or "all", w.get("metric"), w.get("window"), w.get("limit"),
                            w.get("used"), w.get("remaining"), when(w.get("resets_at"))))
        for r in conn.get("resting") or ():
            resting.append((name, r.get("alias"), when(r.get("until")), r.get("why")))
    table(("connection", "calls this month", "tokens in", "tokens out", "tokens unknown", "paused"), summary)
    for headers, rows in ((("connection", "model", "metric", "window", "limit", "used", "remaining", "resets"),
                           windows), (("connection", "resting", "until", "why"), resting)):
        if rows:
            print()
            table(headers, rows)
    if not summary:
        note("no connections yet: add an endpoint (bench endpoint add)")
    elif not windows:
        note("no limits known yet: they are learned from providers' headers and errors, or set per connection")
    return 0


# ---- gateway keys --------------------------------------------------------------------------

async def key_list(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/gateway-keys")
    if show_json(args, reply):
        return 0
    rows = [(k.get("name"), k.get("hint"), ", ".join(k.get("collections") or ()) or "all", k.get("rpm") or "-",
             _age(k.get("created")), _age(k.get("last_used"))) for k in reply.get("keys") or ()]
    table(("name", "hint", "collections", "rpm", "created", "last used"), rows)
    if not rows:
        note("no gateway keys: bench key create <name> [--collections a,b] [--rpm N]")
    return 0


def _age(value: Any) -> str:
    """Epoch seconds as an age; text (an ISO date) as given."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ago(float(value))
    return str(value) if value else "never"


async def key_create(args: argparse.Namespace, remote: Remote) -> int:
    body = {"name": args.name, **present(collections=csv(args.collections or None), rpm=args.rpm)}
    reply = await remote.post("/api/gateway-key", body)
    if show_json(args, reply):
        return 0
    sys.stdout.write(f"{reply['key']}\n")
    sys.stdout.flush()
    scope = ", ".join(reply.get("collections") or ()) or "every collection"
    note(f"gateway key {reply['name']!r} for {scope}" + (f", {reply['rpm']} requests a minute" if reply.get("rpm")
                                                         else "") + ". It is shown this once: keep it now.")
    return 0


async def key_revoke(args: argparse.Namespace, remote: Remote) -> int:
    await confirm(f"Revoke gateway key {args.name}? Apps using it are refused from now on.", args.yes)
    reply = await remote.post("/api/gateway-key/remove", {"name": args.name})
    if show_json(args, reply):
        return 0
    print(f"revoked gateway key {args.name}")
    return 0
