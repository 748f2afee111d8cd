""""Sign in with ..." beside "Paste a key", on the Endpoints page and the first run: every preset of
the connect table (``upstream/connect/presets.py``) as one button per flow it signs in with, each a
form posting to ``POST /api/connect/start`` (``web/static/connect.js`` follows the reply: a browser
flow opens the provider's page, which comes back to ``/connect/callback`` and then
``/endpoints?signin=<id>``; a device flow shows its code and waits on ``GET /api/connect/flow``; a
local one is done at once). ``?signin=<id>`` on the Endpoints page says how that flow ended;
``?reconnect=<endpoint>`` (the "Sign in again" of an alert that a renewal failed) signs that
endpoint in again under its own name."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store import signins as signin_store
from benchwarmers_mcp.upstream.connect.presets import BROWSER_FLOWS, Preset, presets
from benchwarmers_mcp.web.registry import View

OUTCOMES = {"done": "ok", "pending": "", "failed": "err", "denied": "err", "expired": "err", "cancelled": "warn"}


def buttons(preset: Preset) -> list[dict[str, str]]:
    """One button per flow: "Sign in with <name>", and "... with a code" for a device flow beside a
    browser one (the code is typed on any device, so the browser may be on another machine)."""
    both = any(f in BROWSER_FLOWS for f in preset.flows)
    return [{"flow": f, "label": f"Sign in with {preset.name}" + (" using a code" if f == "device" and both else "")}
            for f in preset.flows]


async def choices(view: View) -> dict[str, Any]:
    """What the sign-in buttons need: the presets, the sign-ins there are, the flow ``?signin=`` names."""
    db = view.ctx.db
    kept = await signin_store.client_ids(db)
    table = presets(view.ctx.settings.connect_env)
    rows = [{"id": p.id, "name": p.name, "kind": p.kind, "base_url": p.base_url, "free_tier": p.free_tier,
             "needs_client_id": p.needs_client_id and not kept.get(p.id), "buttons": buttons(p)}
            for p in table.values()]
    signed = {s.endpoint: {"preset": s.preset, "name": table[s.preset].name if s.preset in table else s.preset,
                           "flow": s.flow, "ended": s.ended, "ended_why": s.ended_why, "expires_at": s.expires_at}
              for s in await signin_store.all_signins(db)}
    outcome = None
    asked = view.arg("signin")
    if asked:
        flow = await signin_store.flow(db, asked[:64])
        if flow is not None:
            name = table[flow.preset].name if flow.preset in table else flow.preset
            outcome = {**flow.describe(), "name": name, "tone": OUTCOMES.get(flow.status, "")}
    again = signed.get(view.arg("reconnect")[:64])  # "Sign in again" (an alert's button) names the endpoint
    if again is not None:
        for row in rows:
            if row["id"] == again["preset"]:
                row["endpoint"] = view.arg("reconnect")[:64]
    return {"presets": rows, "signins": signed, "signin_result": outcome}


__all__ = ["buttons", "choices"]
