"""Token renewal: every signed-in endpoint's token is renewed before it expires, once across every
process and replica on the store.

Each server looks every ``tick`` seconds (the scheduler's tick) for sign-ins whose token ends within
``RENEW_BEFORE`` seconds. For each it takes the store's lease ``signin:<endpoint>`` (the leases of
``store/scheduler.py``: one owner at a time, expiring on its own if the owner dies), reads the
sign-in again under it (another server may have renewed it a moment ago and let the lease go), and
only then calls the provider with the refresh token. The new tokens go to the key store, the new
expiry to the store.

A refresh the provider refuses (an OAuth error: the refresh token was revoked or ran out) ends the
sign-in: one ``signin`` alert saying "sign in again" with the action that does it, and the
endpoint's connection paused until then, so its calls are refused here with that reason instead of
going out with a dead token (``store/signins.ended``). A refresh that fails for the network's or
the provider's own trouble is tried again at the next tick.
"""

from __future__ import annotations

import logging

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import NotFound, ProviderError
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import scheduler as lease_store
from benchwarmers_mcp.store import signins as signin_store
from benchwarmers_mcp.store.signins import SignIn
from benchwarmers_mcp.upstream.connect import oauth
from benchwarmers_mcp.upstream.connect.presets import presets
from benchwarmers_mcp.upstream.keys import refresh_name

log = logging.getLogger("benchwarmers.connect")

RENEW_BEFORE = 300.0  # renew a token this long before it expires
LEASE_TTL = 120.0  # longer than one refresh call takes; a dead owner's lease runs out by itself


def lease_name(endpoint: str) -> str:
    return f"signin:{endpoint}"


class Renewer:
    def __init__(self, ctx: Context, tick: float | None = None) -> None:
        self.ctx = ctx
        self.tick = ctx.settings.scheduler_tick if tick is None else tick
        self.owner = ctx.replica or "renewer"

    async def run_forever(self) -> None:
        while True:
            try:
                await self.renew_due()
            except Exception:  # a store or provider hiccup never stops the loop; the next tick tries again
                log.exception("renewing sign-ins failed; trying again in %g s", self.tick)
            await self.ctx.clock.sleep(self.tick)

    async def renew_due(self) -> dict[str, str]:
        """Renew every sign-in due now; what became of each (``renewed``, ``ended``, ``held``: another
        server has it, ``current``: already renewed, ``retry``: try again next tick)."""
        now = self.ctx.clock.now()
        return {s.endpoint: await self.renew(s.endpoint) for s in await signin_store.due(self.ctx.db,
                                                                                          now + RENEW_BEFORE)}

    async def renew(self, endpoint: str) -> str:
        db, now = self.ctx.db, self.ctx.clock.now()
        name = lease_name(endpoint)
        if not await lease_store.take_lease(db, name, self.owner, now, LEASE_TTL):
            return "held"
        try:
            signin = await signin_store.get(db, endpoint)
            if (signin is None or signin.ended or signin.expires_at is None
                    or signin.expires_at >= self.ctx.clock.now() + RENEW_BEFORE):
                return "current"
            return await self._refresh(signin)
        finally:
            await lease_store.drop_lease(db, name, self.owner)

    async def _refresh(self, signin: SignIn) -> str:
        ctx = self.ctx
        try:
            endpoint = await endpoint_store.get(ctx.db, signin.endpoint)
        except NotFound:
            return "current"  # the endpoint was removed: nothing to renew
        key_name = endpoint.key_name or endpoint.name
        preset = presets(ctx.settings.connect_env).get(signin.preset)
        refresh_token = ctx.keys.get(refresh_name(key_name))
        if preset is None or not refresh_token:
            why = "no refresh token is kept for it" if preset else f"its preset {signin.preset!r} is gone"
            await self._end(signin, endpoint.connection_name, why)
            return "ended"
        try:
            tokens = await oauth.refresh(ctx.client, preset, signin.client_id, refresh_token, ctx.clock.now())
        except oauth.Refused as e:
            await self._end(signin, endpoint.connection_name, e.message)
            return "ended"
        except ProviderError as e:
            log.warning("renewing %s's sign-in failed (%s); trying again in %g s", signin.endpoint, e.message,
                        self.tick)
            return "retry"
        ctx.keys.update({key_name: tokens.access_token, refresh_name(key_name): tokens.refresh_token})
        await signin_store.renewed(ctx.db, signin.endpoint, tokens.expires_at, ctx.clock.now(),
                                   endpoint.connection_name)
        return "renewed"

    async def _end(self, signin: SignIn, connection: str, why: str) -> None:
        preset = presets(self.ctx.settings.connect_env).get(signin.preset)
        provider = preset.name if preset else signin.preset
        device = " --device" if signin.flow == "device" else ""
        command = f"bench endpoint connect {signin.preset}{device}" + (
            f" --name {signin.endpoint}" if signin.endpoint != signin.preset else "")
        message = (f"{signin.endpoint}: the {provider} sign-in could not be renewed ({why}); sign in again"
                   f" ({command}). Its calls are held here until then.")
        detail = {"endpoint": signin.endpoint, "preset": signin.preset, "flow": signin.flow, "why": why,
                  "command": command}
        await signin_store.ended(self.ctx.db, signin, connection, why, message, detail, self.ctx.clock.now())
        log.warning("%s", message)


__all__ = ["LEASE_TTL", "RENEW_BEFORE", "Renewer", "lease_name"]
