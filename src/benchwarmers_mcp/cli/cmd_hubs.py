"""``bench hub upstreams|sync|add``: a hub's upstreams, keeping the bench in step with it, and
adding a model through the hub's admin API (``/api/hub/*``). The hub itself is an endpoint added
with its hub (``bench endpoint add <name> --base URL --hub litellm``) and, for its admin API, its
admin key (``bench endpoint key <name> --admin``, asked hidden)."""

from __future__ import annotations

import argparse
from typing import Any

from benchwarmers_mcp.cli.console import note, show_json
from benchwarmers_mcp.cli.remote import Remote, given
from benchwarmers_mcp.cli.tables import table


async def upstreams(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/hub/upstreams", {"endpoint": args.name})
    if show_json(args, reply):
        return 0
    rows = [(u["served"], u["connection"], u["upstream_model"], u["alias"] or "-") for u in reply["upstreams"]]
    table(("served name", "comes through", "upstream's name", "alias"), rows)
    note(f"bench hub sync {args.name} puts each registered model on the endpoint of its upstream")
    return 0


def _show_sync(report: dict[str, Any]) -> None:
    for connection, served in report["connections"].items():
        print(f"{connection}: {len(served)} model(s), endpoint {report['routes'][connection]}")
    for alias, names in report["renamed"].items():
        note(f"{alias}: the hub renamed {names['from']} to {names['to']}; followed")
    for alias, endpoint in report["placed"].items():
        note(f"{alias} now calls through {endpoint}")


async def sync(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/hub/sync", {"endpoint": args.name})
    if show_json(args, reply):
        return 0
    _show_sync(reply)
    return 0


async def add(args: argparse.Namespace, remote: Remote) -> int:
    body = {"endpoint": args.name, "upstream_model": args.upstream_model, "base_url": args.base,
            "connection": args.connection, **given(served=args.served, key_name=args.key_name)}
    if args.no_bench:
        body["bench"] = False
    reply = await remote.post("/api/hub/register", body)
    if show_json(args, reply):
        return 0
    print(f"{args.name} now serves {reply['added']}")
    if reply.get("model"):
        m = reply["model"]
        print(f"registered {m['alias']} ({m['served']} on {m['endpoint']})")
    return 0


def register(b: Any, sub: Any) -> None:
    _, hsub = b.group(sub, "hub", "a hub's upstreams (LiteLLM, Open WebUI, CLI Proxy API), sync, add a model", [
        "bench hub upstreams mylite", "bench hub sync mylite",
        "bench hub add mylite llama-3.1-8b-instant --base https://api.groq.com/openai/v1 --connection groq "
        "--key-name groq"])
    b.command(hsub, "upstreams", upstreams, "what the hub serves, and the upstream each comes through",
              ["bench hub upstreams mylite"], args=("name",))
    b.command(hsub, "sync", sync, "follow the hub's renames; each model on the endpoint of its upstream",
              ["bench hub sync mylite"], args=("name",))
    a = b.command(hsub, "add", add, "add a model through the hub's admin API (its admin key), then bench it",
                  ["bench hub add mylite gpt-4o-mini --base https://api.openai.com/v1 --connection openai "
                   "--key-name openai"], args=("name", "upstream_model"))
    a.add_argument("--base", required=True, help="the upstream's base URL (where the hub sends it)")
    a.add_argument("--connection", required=True, help="the upstream's name, e.g. groq: its limits are its own")
    a.add_argument("--served", help="the name the hub lists it as (default: the upstream's name)")
    a.add_argument("--key-name", help="the key store name of the upstream's key (sent to the hub's admin API)")
    a.add_argument("--no-bench", action="store_true", help="add it to the hub only")
