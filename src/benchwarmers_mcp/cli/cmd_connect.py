"""``bench endpoint connect|signout|presets|signins``: signing in with a provider from a terminal.

``connect <preset>`` starts the preset's flow on the server (``POST /api/connect/start``): a device
flow prints the code and where to type it, a browser flow the address to open (the provider sends
the browser back to the server, which finishes it), a local one the models it found; then it waits
for the flow to end (``GET /api/connect/flow?wait=``: the server answers when it ends, no polling
loop) and says how. No token is ever printed: the server keeps them in its key store.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchwarmers_mcp.cli.console import note, show_json
from benchwarmers_mcp.cli.remote import CliError, Remote, given
from benchwarmers_mcp.cli.tables import ago, table

WAIT = 30.0  # each wait the server holds for the flow to end


async def connect(args: argparse.Namespace, remote: Remote) -> int:
    flow = "device" if args.device else args.flow
    reply = await remote.post("/api/connect/start", {"preset": args.preset, **given(
        flow=flow, endpoint=args.name, client_id=args.client_id)})
    started = reply["flow"]
    if started["flow"] == "local":
        if show_json(args, reply):
            return 0
        models = reply.get("models") or []
        print(f"connected {started['endpoint']}: {len(models)} model(s) found"
              + (f" ({', '.join(models[:8])}{', ...' if len(models) > 8 else ''})" if models else ""))
        note(f"next: bench candidates --endpoint {started['endpoint']} --new")
        return 0
    if not args.json:
        _show_start(reply)
    if args.no_wait:
        if args.json:
            show_json(args, reply)
        return 0
    final = await _wait(remote, started)
    if show_json(args, {"flow": final}):
        return 0 if final["status"] == "done" else 1
    if final["status"] != "done":
        raise CliError(f"the sign-in did not finish: {final['status']}"
                       + (f" ({final['error']})" if final.get("error") else "")
                       + f"; start again with bench endpoint connect {args.preset}")
    print(f"signed in: endpoint {final['endpoint']} ({final['preset']}, {final['flow']})")
    note(f"its tokens are in the server's key store, renewed before they expire; next: bench endpoint test "
         f"{final['endpoint']}")
    return 0


def _show_start(reply: dict[str, Any]) -> None:
    flow = reply["flow"]
    if flow["flow"] == "device":
        where = flow.get("verification_uri_complete") or flow["verification_uri"]
        print(f"On any device, open {flow['verification_uri']} and enter the code:  {flow['user_code']}",
              flush=True)
        if where != flow["verification_uri"]:
            print(f"(or open {where}, which carries the code)", flush=True)
    else:
        print(f"Open this address in a browser on this machine to sign in:\n  {reply['authorize_url']}", flush=True)
        note(f"the provider sends the browser back to {reply.get('redirect_uri')}, which finishes the sign-in")
    note("waiting for the sign-in to finish (Ctrl-C stops waiting; the server keeps the flow until it expires)")


async def _wait(remote: Remote, flow: dict[str, Any]) -> dict[str, Any]:
    deadline = float(flow["expires_at"]) + 60
    while True:
        got = (await remote.get("/api/connect/flow", {"id": flow["id"], "wait": str(WAIT)}))["flow"]
        if got["status"] != "pending" or time.time() > deadline:
            return dict(got)


async def signout(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.post("/api/connect/signout", {"endpoint": args.name})
    if show_json(args, reply):
        return 0
    print(f"signed out {args.name}: its tokens are removed" if reply.get("tokens_removed") else
          f"signed out {args.name}")
    if reply.get("revoked"):
        note(f"revoked at the provider: {', '.join(reply['revoked'])}")
    for problem in reply.get("revoke_problems") or ():
        note(f"the provider did not revoke {problem}")
    note(f"its calls are held until you sign in again: bench endpoint connect {reply['preset']}")
    return 0


async def presets(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/connect/presets")
    if show_json(args, reply):
        return 0
    rows = [(p["id"], p["name"], "/".join(p["flows"]), p["api"], p["base_url"],
             "needed" if p["needs_client_id"] else (p["client_id"] or "-"), p["free_tier"]) for p in reply["presets"]]
    table(("preset", "provider", "flows", "api", "base URL", "client id", "free tier"), rows)
    note(f"browser sign-ins come back to {reply['callback']}; bench endpoint connect <preset> [--device]")
    return 0


async def signins(args: argparse.Namespace, remote: Remote) -> int:
    reply = await remote.get("/api/connect/signins")
    if show_json(args, reply):
        return 0
    now = time.time()
    rows = [(s["endpoint"], s["preset"], s["flow"], ago(s["signed_in_at"]),
             _until(s["expires_at"], now), "ENDED: " + (s["ended_why"] or "") if s["ended"] else "ok")
            for s in reply["signins"]]
    table(("endpoint", "preset", "flow", "signed in", "token ends", "state"), rows)
    if not rows:
        note("nothing signed in: bench endpoint presets lists what you can sign in to")
    return 0


def _until(moment: float | None, now: float) -> str:
    if moment is None:
        return "never"
    left = moment - now
    if left <= 0:
        return "ended"
    return f"in {int(left // 3600)} h" if left >= 3600 else f"in {int(left // 60)} min"


def add_commands(b: Any, esub: Any) -> None:
    """The sign-in commands under ``bench endpoint``."""
    c = b.command(esub, "connect", connect, "sign in with a provider (a preset): browser, device code or local", [
        "bench endpoint connect openrouter", "bench endpoint connect github --device",
        "bench endpoint connect huggingface --client-id <your app's id>", "bench endpoint connect ollama"],
        args=("preset",))
    c.add_argument("--device", action="store_true", help="the device flow: a code to type on any device")
    c.add_argument("--flow", choices=("key", "oauth", "device", "local"), help="the flow (default: the preset's)")
    c.add_argument("--name", help="the endpoint to save it as (default: the preset's id)")
    c.add_argument("--client-id", help="the client id of the app you registered with the provider (kept)")
    c.add_argument("--no-wait", action="store_true", help="print the code or address and return")
    b.command(esub, "signout", signout, "sign out: revoke and remove an endpoint's tokens",
              ["bench endpoint signout huggingface"], args=("name",))
    b.command(esub, "presets", presets, "the providers you can sign in to, and how",
              ["bench endpoint presets"])
    b.command(esub, "signins", signins, "the endpoints signed in with a provider, and when their tokens end",
              ["bench endpoint signins"])
