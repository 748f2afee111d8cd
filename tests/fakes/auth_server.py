"""A fake authorization server on loopback, built from the RFCs the presets speak: RFC 6749's
authorization code (with RFC 7636 PKCE S256), refresh and errors, RFC 7009 revocation, RFC 8628's
device grant, and OpenRouter's PKCE key exchange (``/auth``, then ``POST /auth/keys`` with the code
and verifier for a key).

It approves every sign-in at once (``deny`` makes it refuse), checks what a real server checks (the
client id, the redirect URI, the verifier against the challenge, a code used once), and counts every
call, so tests can say "the token endpoint was called exactly once". ``device_script`` is the
answers the device poll gives in turn before the tokens (``authorization_pending``, ``slow_down``,
``expired_token``, ``access_denied``); ``refuse_refresh`` makes every refresh ``invalid_grant``.
Tokens are ``at-<n>`` and ``rt-<n>`` (access tokens expire in ``expires_in`` seconds).
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    used: bool = False


@dataclass
class FakeAuthServer:
    client_id: str = "test-client"
    expires_in: int = 3600
    deny: bool = False
    refuse_refresh: bool = False
    device_script: list[str] = field(default_factory=list)
    device_expires_in: int = 900
    device_interval: float = 5.0
    issue_client: str | None = None  # a client id the callback carries (a provider that registers one)
    renewed_expires_in: int | None = None  # what a refresh's tokens last (None: expires_in)
    hold_refresh: float = 0.0  # the first refresh is answered after this long, or when a second arrives
    consent: bool = False  # /authorize shows an "Allow" link (as a provider's page does) rather than redirecting
    calls: Counter[str] = field(default_factory=Counter)
    grants: dict[str, Grant] = field(default_factory=dict)
    refresh_tokens: dict[str, str] = field(default_factory=dict)  # refresh token -> client id
    revoked: list[str] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)  # every access token and key issued
    bodies: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _n: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/authorize", self.authorize, methods=["GET"]),
            Route("/auth", self.key_authorize, methods=["GET"]),
            Route("/token", self.token, methods=["POST"]),
            Route("/auth/keys", self.key_exchange, methods=["POST"]),
            Route("/device", self.device, methods=["POST"]),
            Route("/revoke", self.revoke, methods=["POST"]),
        ])

    def env(self, base: str, preset: str, **extra: str) -> dict[str, str]:
        """``BENCH_CONNECT_<PRESET>_*`` pointing a preset at this server (served at ``base``)."""
        up = preset.upper()
        return {f"BENCH_CONNECT_{up}_AUTHORIZE_URL": f"{base}/auth" if preset in ("openrouter", "nanogpt")
                else f"{base}/authorize",
                f"BENCH_CONNECT_{up}_TOKEN_URL": f"{base}/auth/keys" if preset in ("openrouter", "nanogpt")
                else f"{base}/token",
                f"BENCH_CONNECT_{up}_DEVICE_URL": f"{base}/device", f"BENCH_CONNECT_{up}_REVOKE_URL": f"{base}/revoke",
                **extra}

    def _error(self, error: str, status: int = 400) -> Response:
        return JSONResponse({"error": error, "error_description": f"fake {error}"}, status_code=status)

    async def _form(self, request: Request) -> dict[str, str]:
        raw = (await request.body()).decode()
        if request.headers.get("content-type", "").startswith("application/json"):
            data = {k: str(v) for k, v in json.loads(raw or "{}").items()}
        else:
            data = dict(parse_qsl(raw))
        with self.lock:
            self.bodies.append(data)
        return data

    def _code(self, client_id: str, redirect: str, challenge: str) -> str:
        code = f"code-{next(self._n)}"
        self.grants[code] = Grant(client_id, redirect, challenge)
        return code

    def _tokens(self, client_id: str, expires_in: int | None = None) -> dict[str, Any]:
        n = next(self._n)
        access, refresh = f"at-{n}-{'x' * 24}", f"rt-{n}-{'y' * 24}"
        self.refresh_tokens[refresh] = client_id
        self.issued.append(access)
        return {"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
                "expires_in": expires_in or self.expires_in, "scope": "inference-api"}

    async def _held(self) -> None:
        """The first refresh waits ``hold_refresh`` seconds, or until a second refresh arrives: a
        second sender has that long to show itself."""
        if self.calls["token:refresh_token"] == 1 and self.hold_refresh:
            self._second = anyio.Event()
            with anyio.move_on_after(self.hold_refresh):
                await self._second.wait()
        elif getattr(self, "_second", None) is not None:
            self._second.set()

    # ---- RFC 6749 + 7636 -------------------------------------------------------------------------

    async def authorize(self, request: Request) -> Response:
        self.calls["authorize"] += 1
        q = request.query_params
        redirect, state = q.get("redirect_uri", ""), q.get("state", "")
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return self._error("invalid_request")
        if q.get("client_id") != self.client_id:
            return self._error("unauthorized_client")
        if self.deny:
            return RedirectResponse(with_query(redirect, {"error": "access_denied", "state": state}), 302)
        code = self._code(q["client_id"], redirect, q["code_challenge"])
        params = {"code": code, "state": state, **({"client_id": self.issue_client} if self.issue_client else {})}
        if self.issue_client:
            self.grants[code].client_id = self.issue_client
        if self.consent:  # the user allows it on the provider's own page: the way back starts on its site
            back = html.escape(with_query(redirect, params), quote=True)
            return HTMLResponse(f"<!doctype html><title>Allow?</title><a href='{back}'>Allow</a>")
        return RedirectResponse(with_query(redirect, params), 302)

    async def token(self, request: Request) -> Response:
        data = await self._form(request)
        grant_type = data.get("grant_type", "")
        self.calls[f"token:{grant_type}"] += 1
        if grant_type == "authorization_code":
            grant = self.grants.get(data.get("code", ""))
            if grant is None or grant.used:
                return self._error("invalid_grant")
            grant.used = True  # a code is used once, whatever happens next
            if (data.get("client_id") != grant.client_id or data.get("redirect_uri") != grant.redirect_uri
                    or s256(data.get("code_verifier", "")) != grant.challenge):
                return self._error("invalid_grant")
            return JSONResponse(self._tokens(grant.client_id))
        if grant_type == "refresh_token":
            token = data.get("refresh_token", "")
            await self._held()
            if self.refuse_refresh or token not in self.refresh_tokens or token in self.revoked:
                return self._error("invalid_grant")
            client = self.refresh_tokens.pop(token)  # rotated: the old one works once
            return JSONResponse(self._tokens(client, self.renewed_expires_in))
        if grant_type == "urn:ietf:params:oauth:grant-type:device_code":
            if data.get("device_code") != "dev-code-1" or data.get("client_id") != self.client_id:
                return self._error("invalid_grant")
            if self.device_script:
                return self._error(self.device_script.pop(0))
            return JSONResponse(self._tokens(self.client_id))
        return self._error("unsupported_grant_type")

    # ---- RFC 8628 ----------------------------------------------------------------------------------

    async def device(self, request: Request) -> Response:
        self.calls["device"] += 1
        data = await self._form(request)
        if data.get("client_id") != self.client_id:
            return self._error("invalid_client", 401)
        host = request.headers.get("host", "127.0.0.1")
        return JSONResponse({"device_code": "dev-code-1", "user_code": "WDJB-MJHT",
                             "verification_uri": f"http://{host}/activate",
                             "verification_uri_complete": f"http://{host}/activate?user_code=WDJB-MJHT",
                             "expires_in": self.device_expires_in, "interval": self.device_interval})

    # ---- RFC 7009 -------------------------------------------------------------------------------------

    async def revoke(self, request: Request) -> Response:
        self.calls["revoke"] += 1
        data = await self._form(request)
        self.revoked.append(data.get("token", ""))
        return Response(status_code=200)

    # ---- OpenRouter's PKCE key exchange -------------------------------------------------------------

    async def key_authorize(self, request: Request) -> Response:
        self.calls["key_authorize"] += 1
        q = request.query_params
        callback = q.get("callback_url", "")
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge") or not callback:
            return self._error("invalid_request")
        code = self._code("", callback, q["code_challenge"])
        return RedirectResponse(with_query(callback, {"code": code}), 302)

    async def key_exchange(self, request: Request) -> Response:
        self.calls["key_exchange"] += 1
        data = await self._form(request)
        grant = self.grants.get(data.get("code", ""))
        if grant is None or grant.used or s256(data.get("code_verifier", "")) != grant.challenge:
            return JSONResponse({"error": {"message": "invalid code"}}, status_code=403)
        grant.used = True
        key = f"sk-or-v1-{next(self._n)}-{'k' * 32}"
        self.issued.append(key)
        return JSONResponse({"key": key, "user_id": "user-1"})
