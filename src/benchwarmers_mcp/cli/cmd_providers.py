"""``bench client [builtin|llm|default]`` and ``bench own-app [<provider> on|off]``: the two
provider settings (``/api/client``, ``/api/own-app-free``), as on the Settings page."""

from __future__ import annotations

import argparse
from typing import Any

from benchwarmers_mcp.cli.console import note, show_json
from benchwarmers_mcp.cli.remote import Remote, UsageError


async def client(args: argparse.Namespace, remote: Remote) -> int:
    if args.choice is None:
        reply = await remote.get("/api/client")
    else:
        reply = await remote.post("/api/client", {"client": None if args.choice == "default" else args.choice})
    if show_json(args, reply):
        return 0
    how = "chosen here" if reply["chosen"] else f"the default (BENCH_CLIENT={reply['default']})"
    print(f"upstream calls go through the {reply['client']} client ({how})")
    if reply["client"] == "llm" or args.choice == "llm":
        note("what the built-in client does that the llm one cannot:")
        for line in reply["differences"]:
            note(f"  - {line}")
    elif not reply["llm_installed"]:
        note("the llm client is not installed: pip install 'benchwarmers[llm]'")
    return 0


async def own_app(args: argparse.Namespace, remote: Remote) -> int:
    if args.provider is None:
        reply = await remote.get("/api/own-app-free")
    else:
        if args.state is None:
            raise UsageError(f"say on or off: bench own-app {args.provider} on")
        reply = await remote.post("/api/own-app-free", {"provider": args.provider,
                                                        "own_app_only": args.state == "on"})
    if show_json(args, reply):
        return 0
    providers = reply["providers"]
    print("free only in their own app: " + (", ".join(providers) if providers else "no provider"))
    for alias, why in reply["kept_off"].items():
        note(f"{alias}: off panels, {why}")
    return 0


def register(b: Any, sub: Any) -> None:
    c = b.command(sub, "client", client, "who calls upstreams: the built-in client or llm's Python API",
                  ["bench client", "bench client llm", "bench client default"])
    c.add_argument("choice", nargs="?", choices=("builtin", "llm", "default"), help="the client (default: show)")
    o = b.command(sub, "own-app", own_app, "providers whose free models work only in their own app (kept off panels "
                  "and out of Discover's free list)", ["bench own-app", "bench own-app nanogpt on"])
    o.add_argument("provider", nargs="?", help="the catalog's provider id (bench discover shows them)")
    o.add_argument("state", nargs="?", choices=("on", "off"))
