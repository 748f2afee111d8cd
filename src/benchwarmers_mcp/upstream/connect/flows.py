"""Sign-in flows, start to finish: ``SignIns`` runs them for one server.

``start`` begins a flow of a preset (``presets.py``): for ``key`` and ``oauth`` it makes a PKCE
verifier and a state, keeps both in this server's memory, records the flow in the store (its state
only as a SHA-256) and hands back the provider's authorization URL; the provider sends the browser
back to this server's own ``/connect/callback`` (``callback``), which checks the state, exchanges
the code once and finishes. ``device`` asks the provider for a device code, records the code and
address the user types it at, and polls the token endpoint in the app's task group (every
``interval`` seconds, five more after each ``slow_down``; ``authorization_pending`` waits on;
``expired_token``, ``access_denied`` or the provider's ``expires_in`` passing ends it). ``local``
asks the runtime on this machine for its models (``local.py``).

Finishing one writes the tokens to the key store (the access token under the endpoint's key name,
the refresh token beside it), the endpoint (the preset's base URL, API, kind and headers) and its
sign-in row (``store/signins.py``: when the token expires, whether it can be renewed), which also
ends a pause or alert a previous sign-in's end had left. ``sign_out`` revokes what the provider can
revoke, removes the tokens and pauses the connection until a new sign-in.

A flow's secrets live only in the server that started it: a callback that reaches another replica,
or this one after a restart, is refused with a clear "start again" (its row says ``failed``).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

import anyio

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, NotFound, ProviderError
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import names
from benchwarmers_mcp.store import signins as signin_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.signins import Flow, SignIn
from benchwarmers_mcp.upstream.connect import oauth
from benchwarmers_mcp.upstream.connect.oauth import Refused, Tokens
from benchwarmers_mcp.upstream.connect.presets import BROWSER_FLOWS, Preset, find, presets
from benchwarmers_mcp.upstream.keys import env_name, refresh_name

log = logging.getLogger("benchwarmers.connect")

CALLBACK_PATH = "/connect/callback"
BROWSER_TTL = 600.0  # a browser flow not finished in ten minutes is over
SLOW_DOWN = 5.0  # RFC 8628 section 3.5: each slow_down adds five seconds to the interval
FORGET_FLOWS = 30 * 86400.0


@dataclass
class _Pending:
    """A flow's secrets, in this server's memory only."""

    flow: Flow
    preset: Preset
    client_id: str
    redirect_uri: str = ""
    state: str = field(default="", repr=False)
    verifier: str = field(default="", repr=False)
    device_code: str = field(default="", repr=False)
    interval: float = 5.0


class SignIns:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._pending: dict[str, _Pending] = {}
        self._changed: dict[str, anyio.Event] = {}  # set when a flow this server runs leaves pending

    def presets(self) -> dict[str, Preset]:
        return presets(self.ctx.settings.connect_env)

    # ---- starting ---------------------------------------------------------------------------------

    async def start(self, preset_id: str, *, flow: str | None = None, endpoint: str | None = None,
                    client_id: str | None = None, base: str = "") -> dict[str, Any]:
        """Begin a sign-in. ``base``: this server's address as the browser reaches it (the callback's
        origin). The reply: the flow (its id, status, a device flow's code and address) and, for a
        browser flow, ``authorize_url``; a ``local`` flow is finished at once (with its models)."""
        preset = find(preset_id, self.ctx.settings.connect_env)
        chosen = preset.flow(flow)
        name = names.check("endpoint name", (endpoint or preset.id).strip().lower())
        if chosen == "local":
            return await self._local(preset, name)
        client = await self._client_id(preset, chosen, client_id)
        now = self.ctx.clock.now()
        flow_id = secrets.token_urlsafe(12)
        if chosen in BROWSER_FLOWS:
            return await self._browser(preset, chosen, name, client, flow_id, base, now)
        return await self._device(preset, name, client, flow_id, now)

    async def _client_id(self, preset: Preset, flow: str, given: str | None) -> str:
        """The OAuth client: the one given (kept for next time: a client id is public), else the one
        kept for this preset, else the preset's own. ``key`` flows have none."""
        if flow == "key":
            return ""
        if given and given.strip():
            value = given.strip()
            if len(value) > 200 or any(c.isspace() for c in value):
                raise BadRequest("a client id is one word of at most 200 characters")
            await signin_store.set_client_id(self.ctx.db, preset.id, value)
            return value
        kept = (await signin_store.client_ids(self.ctx.db)).get(preset.id)
        if kept or preset.client_id:
            return kept or preset.client_id
        raise BadRequest(f"{preset.name} signs in through an app you register with it (no secret, a redirect to "
                         f"{CALLBACK_PATH} on this server for oauth): give its client id once, e.g. "
                         f"bench endpoint connect {preset.id} --client-id <id> (docs/PROVIDERS.md says how)")

    async def _browser(self, preset: Preset, flow: str, name: str, client: str, flow_id: str, base: str,
                       now: float) -> dict[str, Any]:
        if not base:
            raise BadRequest("a browser sign-in needs this server's address to come back to")
        state, verifier = oauth.new_secret(43), oauth.new_secret(64)
        redirect = base.rstrip("/") + CALLBACK_PATH
        url = oauth.authorize_url(preset, client if flow == "oauth" else "", redirect, state, verifier)
        record = Flow(flow_id, preset.id, flow, name, "pending", now, now + BROWSER_TTL, self.ctx.replica)
        await signin_store.start_flow(self.ctx.db, record, state)
        self._pending[flow_id] = _Pending(record, preset, client, redirect, state, verifier)
        return {"flow": record.describe(), "authorize_url": url, "redirect_uri": redirect}

    async def _device(self, preset: Preset, name: str, client: str, flow_id: str, now: float) -> dict[str, Any]:
        code = await oauth.device_code(self.ctx.client, preset, client)
        record = Flow(flow_id, preset.id, "device", name, "pending", now, now + code.expires_in, self.ctx.replica,
                      user_code=code.user_code, verification_uri=code.verification_uri,
                      verification_uri_complete=code.verification_uri_complete)
        await signin_store.start_flow(self.ctx.db, record, None)
        pending = _Pending(record, preset, client, device_code=code.device_code, interval=max(0.0, code.interval))
        self._pending[flow_id] = pending
        self.ctx.spawn(self._poll, pending, name="sign-in device poll")
        return {"flow": record.describe()}

    async def _local(self, preset: Preset, name: str) -> dict[str, Any]:
        from benchwarmers_mcp.upstream.connect.local import local_models  # the listing module loads when used

        served = await local_models(self.ctx, preset)
        now = self.ctx.clock.now()
        endpoint = await self._save_endpoint(preset, name, key_name=None)
        await signin_store.save(self.ctx.db, SignIn(name, preset.id, "local", "", now), endpoint.connection_name)
        record = Flow(secrets.token_urlsafe(12), preset.id, "local", name, "done", now, now, self.ctx.replica,
                      finished_at=now)
        await signin_store.start_flow(self.ctx.db, record, None)
        return {"flow": record.describe(), "models": served}

    # ---- finishing ----------------------------------------------------------------------------------

    async def callback(self, url: str, state: str) -> Flow:
        """The browser came back with ``state`` (and a code, or the provider's error): finish the
        flow once. Refused: a state no flow here sent, a flow already finished (a code used once),
        one started on another server, one past its time."""
        db, now = self.ctx.db, self.ctx.clock.now()
        record = await signin_store.flow_by_state(db, state) if state else None
        if record is None:
            raise BadRequest("no sign-in was started here with this state: start it again from the Endpoints page")
        if record.status != "pending":
            raise BadRequest(f"this sign-in has already {'finished' if record.status == 'done' else record.status}:"
                             " a sign-in's code is used once; start a new one")
        pending = self._pending.pop(record.id, None)  # claimed here: a second callback finds nothing to finish
        if pending is None:
            await self._end(record.id, "failed", "its secrets are on another server, or this one restarted since")
            raise BadRequest("this sign-in was started on another server, or before this one restarted:"
                             " start it again")
        if now > record.expires_at:
            await self._end(record.id, "expired", f"not finished within {BROWSER_TTL:g} s")
            raise BadRequest("this sign-in took too long (ten minutes): start it again")
        try:
            params = oauth.callback_params(url, pending.state)
            if record.flow == "key":
                tokens = await oauth.exchange_key(self.ctx.client, pending.preset, params["code"], pending.verifier,
                                                  now)
            else:
                client = params.get("client_id") if pending.preset.client_from_callback else None
                tokens = await oauth.exchange_code(self.ctx.client, pending.preset, client or pending.client_id,
                                                   params["code"], pending.redirect_uri, pending.verifier, now)
        except Refused as e:
            await self._end(record.id, "denied" if e.error == "access_denied" else "failed", e.message)
            raise
        except ProviderError as e:
            await self._end(record.id, "failed", e.message)
            raise
        await self._finish(pending, tokens)
        return await signin_store.flow(db, record.id) or record

    async def _poll(self, pending: _Pending) -> None:
        """Poll a device flow's token endpoint until the user finishes, says no, or time runs out."""
        record, clock = pending.flow, self.ctx.clock
        waiting, slower, expired = oauth.device_errors()
        status, why = "failed", "the server stopped while waiting"
        try:
            while True:
                await clock.sleep(pending.interval)
                if record.id not in self._pending:
                    return  # cancelled
                if clock.now() >= record.expires_at:
                    status, why = "expired", "the code was not entered before the provider's time ran out"
                    return
                try:
                    tokens = await oauth.poll_device(self.ctx.client, pending.preset, pending.client_id,
                                                     pending.device_code, clock.now())
                except Refused as e:
                    if e.error == waiting:
                        continue
                    if e.error == slower:
                        pending.interval += SLOW_DOWN
                        continue
                    status = "expired" if e.error == expired else "denied" if e.error == "access_denied" else "failed"
                    why = e.message
                    return
                except ProviderError as e:
                    if e.upstream_status is None or e.upstream_status >= 500:
                        continue  # the network or the provider stumbled: the next poll may do
                    why = e.message
                    return
                self._pending.pop(record.id, None)
                why = "its tokens could not be kept"
                await self._finish(pending, tokens)
                status = "done"
                return
        finally:
            if status != "done":  # a flow already finished (cancelled) is left as it is: the update is conditional
                with anyio.CancelScope(shield=True):
                    await self._end(record.id, status, why)

    async def _end(self, flow_id: str, status: str, why: str) -> None:
        self._pending.pop(flow_id, None)
        await signin_store.finish_flow(self.ctx.db, flow_id, status, self.ctx.clock.now(), why)
        self._signal(flow_id)

    def _signal(self, flow_id: str) -> None:
        event = self._changed.pop(flow_id, None)
        if event is not None:
            event.set()

    async def _finish(self, pending: _Pending, tokens: Tokens) -> None:
        """Keep the tokens, save the endpoint and its sign-in, mark the flow done."""
        preset, name, now = pending.preset, pending.flow.endpoint, self.ctx.clock.now()
        key_name = name
        self.ctx.keys.update({key_name: tokens.access_token, refresh_name(key_name): tokens.refresh_token})
        endpoint = await self._save_endpoint(preset, name, key_name)
        renewable = tokens.refresh_token is not None and tokens.expires_at is not None
        await signin_store.save(self.ctx.db, SignIn(name, preset.id, pending.flow.flow, tokens.client_id, now,
                                                    tokens.expires_at, None, renewable), endpoint.connection_name)
        await signin_store.finish_flow(self.ctx.db, pending.flow.id, "done", now)
        self._signal(pending.flow.id)
        if self.ctx.keys.source(key_name) == "environment":
            log.warning("%s is signed in, but BENCHWARMERS_KEY_%s in the environment wins over its token", name,
                        env_name(key_name))

    async def _save_endpoint(self, preset: Preset, name: str, key_name: str | None) -> Endpoint:
        existing = None
        try:
            existing = await endpoint_store.get(self.ctx.db, name)
        except NotFound:
            pass
        headers = {**dict(preset.headers), **(existing.headers if existing else {})}
        return await endpoint_store.add(self.ctx.db, Endpoint(name, preset.base_url, preset.api, preset.kind, key_name,
                                                              headers, existing.connection if existing else None))

    # ---- the rest ---------------------------------------------------------------------------------------

    async def status(self, flow_id: str, wait: float = 0.0) -> Flow:
        """A flow as the store has it; one past its time that nobody finished is reported expired.
        ``wait``: while it is pending on this server, wait up to that long for it to end (a client
        waiting for the user asks again, never polls in a loop)."""
        changed = self._changed.setdefault(flow_id, anyio.Event()) if wait > 0 and flow_id in self._pending else None
        record = await signin_store.flow(self.ctx.db, flow_id)
        if record is None:
            raise NotFound(f"no sign-in flow {flow_id!r}")
        if changed is not None and record.status == "pending":
            with anyio.move_on_after(wait):
                await changed.wait()
            record = await signin_store.flow(self.ctx.db, flow_id) or record
        if record.status == "pending" and self.ctx.clock.now() > record.expires_at + 60:
            await self._end(record.id, "expired", "nobody finished it in time")
            record = await signin_store.flow(self.ctx.db, flow_id) or record
        return record

    async def cancel(self, flow_id: str) -> Flow:
        record = await self.status(flow_id)
        if record.status == "pending":
            await self._end(flow_id, "cancelled", "cancelled")
        return await self.status(flow_id)

    async def sign_out(self, name: str) -> dict[str, Any]:
        """Revoke what the provider can revoke, remove the tokens, end the sign-in (its connection
        rests until a new one). The endpoint and its models stay."""
        db = self.ctx.db
        signin = await signin_store.get(db, name)
        if signin is None:
            raise NotFound(f"{name} is not signed in with a provider (bench endpoint connect <preset> signs in)")
        endpoint = await endpoint_store.get(db, name)
        key_name = endpoint.key_name or name
        preset = self.presets().get(signin.preset)
        revoked: list[str] = []
        problems: list[str] = []
        if preset is not None and preset.revoke_url:
            for hint, held in (("refresh_token", refresh_name(key_name)), ("access_token", key_name)):
                token = self.ctx.keys.get(held)
                if not token:
                    continue
                try:
                    await oauth.revoke(self.ctx.client, preset, signin.client_id, token, hint)
                    revoked.append(hint)
                except ProviderError as e:
                    problems.append(f"{hint}: {e.message}")
        tokens = signin.flow != "local"
        if tokens:
            self.ctx.keys.update({key_name: None, refresh_name(key_name): None})
        await signin_store.signed_out(db, signin, endpoint.connection_name, self.ctx.clock.now(), pause=tokens)
        return {"endpoint": name, "preset": signin.preset, "revoked": revoked, "revoke_problems": problems,
                "tokens_removed": tokens}


__all__ = ["BROWSER_TTL", "CALLBACK_PATH", "SLOW_DOWN", "SignIns"]
