"""``bench endpoint(s)``, ``bench candidates``, ``bench models`` and ``bench model ...``:
putting models on the bench and taking them off."""

from __future__ import annotations

import argparse
from typing import Any

from benchwarmers_mcp.cli import cmd_catalog
from benchwarmers_mcp.cli.console import confirm, note, read_key, server_note, show_json
from benchwarmers_mcp.cli.remote import CliError, Remote, UsageError, given, present
from benchwarmers_mcp.cli.tables import ago, table, yes_no_unknown

# ---- endpoints -----------------------------------------------------------------------------

async def endpoint_list(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/endpoints")
    if show_json(args, reply):
        return 0
    rows = [(e["name"], e["api"], e["kind"], e["base_url"], e.get("key_source") or "none", e["models"])
            for e in reply["endpoints"]]
    if not rows:
        note("no endpoints yet: bench endpoint add <name> --base https://.../v1")
    table(("name", "api", "kind", "base URL", "key", "models"), rows)
    return 0


async def endpoint_add(args: argparse.Namespace, remote: Remote) -> int:
    if not args.base and args.api != "simulated":  # asked before the key, which would be asked for nothing
        known = {e["name"] for e in (await remote.get("/api/endpoints")).get("endpoints", [])}
        if args.name not in known:
            raise UsageError(f"a new endpoint needs the base URL of its API: bench endpoint add {args.name} "
                             "--base https://host/v1 (for example https://api.groq.com/openai/v1)")
    key = await read_key(args.name, from_stdin=args.key_stdin, skip=args.no_key or args.api == "simulated")
    body = {"name": args.name, **present(base=args.base, api=args.api, kind=args.kind,
                                         key_name=args.key_name or None, key=key)}
    reply = await remote.post("/api/endpoint", body)
    if show_json(args, reply):
        return 0
    e = reply["endpoint"]
    verb = "added" if reply.get("created") else "updated"
    print(f"{verb} endpoint {e['name']} ({e['api']}, {e['kind']}) at {e['base_url']}")
    if reply.get("key_saved"):
        note(f"its key is in the server's key store as {e['key_name']!r} (never in the data folder)")
    server_note(reply)
    note(f"next: bench endpoint test {e['name']}; bench candidates --endpoint {e['name']} --new")
    return 0


async def endpoint_key(args: argparse.Namespace, remote: Remote) -> int:
    key = await read_key(args.name, from_stdin=args.key_stdin, skip=False)
    if key is None:
        raise UsageError("no key given; nothing changed")
    reply = await remote.post("/api/endpoint/key", {"name": args.name, "key": key})
    if show_json(args, reply):
        return 0
    print(f"key saved for {args.name} in the server's key store")
    server_note(reply)
    return 0


async def endpoint_test(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/endpoint/test", {"name": args.name})
    if show_json(args, reply):
        return 0 if reply.get("ok") else 1
    if not reply.get("ok"):
        raise CliError(f"{args.name} did not answer its model listing: {reply.get('error')}")
    sample = ", ".join(reply.get("sample") or [])
    print(f"{args.name} answers: {reply['served']} model(s) served in {reply['seconds']:.1f}s"
          + (f" ({sample}{', ...' if reply['served'] > len(reply.get('sample') or []) else ''})" if sample else ""))
    return 0


async def endpoint_remove(args: argparse.Namespace, remote: Remote) -> int:
    what = f"Remove endpoint {args.name}" + (" and retire its models?" if args.with_models else "?")
    await confirm(what, args.yes)
    reply = await remote.post("/api/endpoint/remove", {"name": args.name, "with_models": args.with_models})
    if show_json(args, reply):
        return 0
    print(f"removed endpoint {args.name}")
    if reply.get("retired"):
        note(f"retired with it: {', '.join(reply['retired'])} (bench model restore <alias> once it is back)")
    if reply.get("key_removed"):
        note("its key was removed from the key store")
    return 0


# ---- candidates and models -------------------------------------------------------------------

async def candidates(args: argparse.Namespace, remote: Remote) -> int:
    if args.action:
        return await cmd_catalog.candidates_dismiss(args, remote)
    wanted = {"endpoint": args.endpoint, "new": args.new, "find": args.find, "dismissed": args.dismissed}
    reply = await remote.post("/api/candidates", {k: v for k, v in wanted.items() if v})
    if show_json(args, reply):
        return 0
    rows = [(c["endpoint"], c["served"], c["status"], c["alias"] or c["suggested"],
             cmd_catalog.price({"free": c.get("free"), **c.get("facts", {})}),
             cmd_catalog.tokens(c.get("facts", {}).get("context_window")),
             cmd_catalog.flag(c.get("facts", {}).get("tools")), cmd_catalog.flag(c.get("facts", {}).get("vision")))
            for c in reply["candidates"]]
    table(("endpoint", "served name", "status", "alias", "price in/out", "context", "tools", "vision"), rows)
    for failure in reply.get("errors") or ():
        note(f"{failure['endpoint']}: {failure['error']}")
    if reply.get("errors") and not rows:
        return 1
    if not rows:
        note("nothing new served" if args.new else "no endpoint serves anything yet")
    elif any(c["status"] == "new" for c in reply["candidates"]):
        note("onboard one (checked, registered, probed): bench onboard <served name>@<endpoint> [--quick]; "
             "or at once: bench model register <served name> --endpoint <endpoint>")
    return 0


async def models(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/models", {"active": None if args.all else "1", "find": args.find,
                                             "role": args.role})
    if show_json(args, reply):
        return 0
    rows = [(m["alias"], m["status"] + (" (resting)" if m.get("resting") else ""), m["role"], m["endpoint"],
             m["served"], m["calls"], f"{m['useful']}/{m['judged']}", ago(m.get("last_used")))
            for m in reply["models"]]
    table(("alias", "status", "role", "endpoint", "served name", "calls", "useful", "last used"), rows)
    if not rows:
        note("no models match" if (args.find or args.role) else
             "no models yet: bench candidates --new, then bench model register <served name> --endpoint E")
    return 0


async def model_register(args: argparse.Namespace, remote: Remote) -> int:
    body = {"served": args.served, "endpoint": args.endpoint,
            **given(alias=args.alias, role=args.role, ad_hoc=args.ad_hoc)}
    reply = await remote.post("/api/model/register", body)
    if show_json(args, reply):
        return 0
    m = reply["model"]
    print(f"registered {m['alias']} ({m['served']} on {m['endpoint']}, {m['status']})")
    note(f"add it to a collection: bench collection save <name> --add {m['alias']}")
    return 0


FACT_NAMES = {"context_window": "context window", "max_output": "output limit", "tools": "tools",
              "vision": "vision", "input_modalities": "takes", "output_modalities": "gives", "reasoning": "reasoning",
              "structured_output": "structured output", "price_in": "price in ($/M)", "price_out": "price out ($/M)",
              "knowledge": "knowledge cut-off", "released": "released", "open_weights": "open weights",
              "free_limits": "free tier"}


def _fact_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return yes_no_unknown(value)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in value.items())
    if isinstance(value, float):
        return cmd_catalog.number(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


async def model_facts(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/model/facts", {"alias": args.alias})
    if show_json(args, reply):
        return 0
    where = f" (served by {reply['provider']})" if reply.get("provider") else ""
    print(f"{reply['alias']}: {reply['served']} on {reply['endpoint']}{where}")
    rows = []
    for fact, item in reply["facts"].items():
        why = item.get("evidence") or item.get("detail") or ""
        rows.append((FACT_NAMES.get(fact, fact), _fact_value(item["value"]), item["from"], why))
    table(("fact", "value", "source", "from"), rows)
    if not rows:
        note("nothing is known about it yet: the catalog has no entry for its served name; "
             "bench model set <alias> --context N --tools on|off tells it")
    matched = [f"{k}: {v}" for k, v in (reply.get("catalog") or {}).items() if v]
    if matched:
        note("catalog entries matched: " + "; ".join(matched))
    overridden = [f"{FACT_NAMES.get(f, f)} {_fact_value(o['value'])} ({o['source']})"
                  for f, item in reply["facts"].items() for o in item.get("overrides", [])]
    if overridden:
        note("overridden: " + "; ".join(overridden))
    return 0


async def model_retire(args: argparse.Namespace, remote: Remote) -> int:
    await confirm(f"Retire {args.alias}? It stops being seated; its record stays.", args.yes)
    reply = await remote.post("/api/model/retire", {"alias": args.alias, "reason": args.reason})
    if show_json(args, reply):
        return 0
    print(f"retired {args.alias}: {args.reason}")
    if reply.get("member_of"):
        note(f"still listed in: {', '.join(reply['member_of'])} (not seated while retired)")
    note(f"bring it back with: bench model restore {args.alias}")
    return 0


async def model_restore(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/model/restore", {"alias": args.alias})
    if show_json(args, reply):
        return 0
    print(f"restored {args.alias} ({reply['model']['status']})")
    if reply.get("rejoined"):
        note(f"back in: {', '.join(reply['rejoined'])}")
    return 0


SWITCH = {"on": True, "off": False, "yes": True, "no": False, "unknown": None}


def changes(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if getattr(args, "role", None):
        body["role"] = args.role
    for name in ("vision", "tools", "ad_hoc"):
        value = getattr(args, name, None)
        if value is not None:
            body[name] = SWITCH[value]
    context, max_output = getattr(args, "context", None), getattr(args, "max_output", None)
    if context is not None:
        body["context_window"] = None if context == "unknown" else _positive(context, "--context")
    if max_output is not None:
        body["max_output"] = None if max_output == "unknown" else _positive(max_output, "--max-output")
    return body


def _positive(value: str, flag: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"{flag} takes a number of tokens (or 'unknown'), not {value!r}")
    return int(value)


async def model_set(args: argparse.Namespace, remote: Remote) -> int:
    body = changes(args)
    if not body:
        raise UsageError("nothing to change: give --role, --vision, --tools, --context, --max-output or --ad-hoc")
    reply = await remote.post("/api/model", {"alias": args.alias, **body})
    if show_json(args, reply):
        return 0
    m = reply["model"]
    print(f"{m['alias']}: role {m['role']}, {m['status']}, vision {yes_no_unknown(m['vision'])}, "
          f"tools {yes_no_unknown(m['tools'])}, context {m['context_window'] or 'unknown'}, "
          f"max output {m['max_output'] or 'unknown'}")
    return 0
