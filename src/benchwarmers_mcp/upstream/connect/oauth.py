"""The sign-in protocols on the wire: PKCE (RFC 7636, S256), the authorization code and its
exchange (RFC 6749), refresh, revocation (RFC 7009), the device grant (RFC 8628), and the PKCE key
exchange of OpenRouter and NanoGPT.

Authlib writes the protocol (the verifier and its S256 challenge, the authorization URL, the token
request bodies, the callback's state check, the revocation body and the device grant's names); the
requests go through the app's one outbound client (``ctx.client``: it follows no redirect, and the
test seam routes it to fakes on loopback), so sign-ins are paced by nothing and seen by the same
transport as every other upstream call. Transport failures become ``ProviderError`` at the
providers' one boundary (``map_transport_errors``); a provider's refusal (an OAuth ``error`` body,
on any status: GitHub answers its device errors with 200) becomes ``Refused`` with the provider's
own error code, which the flows read (``authorization_pending``, ``slow_down``...).

Nothing here logs; a token appears only in a ``Tokens`` value (never in its repr) and in the
request that carries it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx

from benchwarmers_mcp.errors import AuthOrBilling, UpstreamFailure
from benchwarmers_mcp.providers.base import map_transport_errors
from benchwarmers_mcp.upstream.connect.presets import Preset

TIMEOUT = 30.0
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
JSON = {"Content-Type": "application/json", "Accept": "application/json"}


class Refused(AuthOrBilling):
    """The provider answered with an OAuth error: ``error`` is its code (``invalid_grant``,
    ``authorization_pending``, ``slow_down``, ``expired_token``, ``access_denied``...)."""

    def __init__(self, error: str, description: str = "", *, upstream_status: int | None = None) -> None:
        said = f": {description}" if description else ""
        super().__init__(f"the provider refused the sign-in ({error}{said})", upstream_status=upstream_status)
        self.error = error


@dataclass(frozen=True)
class Tokens:
    """What a token endpoint handed back. ``expires_at``: epoch seconds (None: it does not say)."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    scope: str = ""
    client_id: str = ""  # the client the tokens were issued to (a client issued on the callback)

    @classmethod
    def of(cls, data: dict[str, Any], now: float, client_id: str = "") -> Tokens:
        token = data.get("access_token") or data.get("key")  # the PKCE key exchange answers {"key": ...}
        if not isinstance(token, str) or not token:
            raise UpstreamFailure("the provider's token answer holds no access token")
        refresh = data.get("refresh_token")
        expires_in = data.get("expires_in")
        expires_at = now + float(expires_in) if isinstance(expires_in, (int, float)) and expires_in > 0 else None
        return cls(token, refresh if isinstance(refresh, str) and refresh else None, expires_at,
                   str(data.get("scope") or ""), client_id)


@dataclass(frozen=True)
class DeviceCode:
    """An RFC 8628 device authorization answer."""

    device_code: str = field(repr=False)
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float
    interval: float


# ---- PKCE and the authorization URL -------------------------------------------------------------

def new_secret(length: int = 64) -> str:
    """A random string of unreserved characters: a PKCE verifier (43 to 128) or a state."""
    from authlib.common.security import generate_token

    return str(generate_token(length))


def challenge(verifier: str) -> str:
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    return str(create_s256_code_challenge(verifier))


def authorize_url(preset: Preset, client_id: str, redirect_uri: str, state: str, verifier: str) -> str:
    """Where the browser goes to sign in. ``key`` flows (OpenRouter's PKCE key exchange) take the
    callback as ``callback_url`` and no client; ``oauth`` is RFC 6749's code grant with PKCE S256."""
    from authlib.common.urls import add_params_to_uri
    from authlib.oauth2.rfc6749.parameters import prepare_grant_uri

    code_challenge = challenge(verifier)
    if not client_id:  # the key flow: the state rides on the callback, which is all it carries back
        callback = add_params_to_uri(redirect_uri, [("state", state)])
        params = [("callback_url", callback), ("code_challenge", code_challenge), ("code_challenge_method", "S256")]
        if preset.scope:
            params.append(("scope", preset.scope))
        return str(add_params_to_uri(preset.authorize_url, params))
    return str(prepare_grant_uri(preset.authorize_url, client_id, "code", redirect_uri, preset.scope or None, state,
                                 code_challenge=code_challenge, code_challenge_method="S256",
                                 **dict(preset.authorize_params)))


def callback_params(url: str, state: str) -> dict[str, str]:
    """The callback's parameters once its state is the one sent (Authlib's check); raises
    ``Refused`` with the provider's error when the callback carries one instead of a code."""
    from authlib.oauth2.rfc6749.errors import MismatchingStateException, MissingCodeException
    from authlib.oauth2.rfc6749.parameters import parse_authorization_code_response

    params = dict(parse_qsl(httpx.URL(url).query.decode()))
    if params.get("error"):
        raise Refused(params["error"], params.get("error_description", ""))
    try:
        return dict(parse_authorization_code_response(url, state))
    except MismatchingStateException:
        raise Refused("invalid_state", "the callback's state is not this sign-in's") from None
    except MissingCodeException:
        raise Refused("invalid_request", "the callback carries no code") from None


# ---- requests ----------------------------------------------------------------------------------

def _parsed(response: httpx.Response) -> dict[str, Any]:
    """A token endpoint's answer as a dict: JSON, or a form (GitHub without ``Accept``)."""
    text = response.content.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = dict(parse_qsl(text))
    return data if isinstance(data, dict) else {}


async def _post(client: httpx.AsyncClient, url: str, *, form: str | None = None,
                body: dict[str, Any] | None = None) -> dict[str, Any]:
    """POST a form (or JSON) and return the answer; an OAuth error body (on any status) is
    ``Refused``, any other failure an ``UpstreamFailure`` naming the status."""
    headers = FORM if form is not None else JSON
    with map_transport_errors():
        response = await client.post(url, content=form if form is not None else json.dumps(body or {}),
                                     headers=headers, timeout=TIMEOUT)
        await response.aread()
    data = _parsed(response)
    if isinstance(data.get("error"), str):
        raise Refused(data["error"], str(data.get("error_description") or ""), upstream_status=response.status_code)
    if response.status_code >= 300:
        raise UpstreamFailure(f"the provider's sign-in endpoint answered {response.status_code}",
                              upstream_status=response.status_code)
    return data


async def exchange_code(client: httpx.AsyncClient, preset: Preset, client_id: str, code: str, redirect_uri: str,
                        verifier: str, now: float) -> Tokens:
    """The authorization code for tokens (with the PKCE verifier)."""
    from authlib.oauth2.rfc6749.parameters import prepare_token_request

    form = prepare_token_request("authorization_code", code=code, redirect_uri=redirect_uri, client_id=client_id,
                                 code_verifier=verifier)
    return Tokens.of(await _post(client, preset.token_url, form=form), now, client_id)


async def exchange_key(client: httpx.AsyncClient, preset: Preset, code: str, verifier: str, now: float) -> Tokens:
    """The PKCE key exchange (OpenRouter's ``/auth/keys``): the code for an ordinary API key."""
    data = await _post(client, preset.token_url, body={"code": code, "code_verifier": verifier,
                                                       "code_challenge_method": "S256"})
    return Tokens.of(data, now)


async def refresh(client: httpx.AsyncClient, preset: Preset, client_id: str, refresh_token: str,
                  now: float) -> Tokens:
    """New tokens for a refresh token; a provider that sends no new refresh token keeps the old one."""
    from authlib.oauth2.rfc6749.parameters import prepare_token_request

    form = prepare_token_request("refresh_token", refresh_token=refresh_token, client_id=client_id)
    tokens = Tokens.of(await _post(client, preset.token_url, form=form), now, client_id)
    if tokens.refresh_token is None:
        tokens = Tokens(tokens.access_token, refresh_token, tokens.expires_at, tokens.scope, client_id)
    return tokens


async def revoke(client: httpx.AsyncClient, preset: Preset, client_id: str, token: str, hint: str) -> None:
    """RFC 7009: ask the provider to forget a token (a refusal raises; sign-out goes on anyway)."""
    from authlib.common.urls import add_params_to_qs
    from authlib.oauth2.rfc7009 import prepare_revoke_token_request

    body, _ = prepare_revoke_token_request(token, hint)
    await _post(client, preset.revoke_url, form=str(add_params_to_qs(body, [("client_id", client_id)])))


async def device_code(client: httpx.AsyncClient, preset: Preset, client_id: str) -> DeviceCode:
    """RFC 8628 section 3.1: a device code, the code the user types and where."""
    fields = {"client_id": client_id, **({"scope": preset.scope} if preset.scope else {})}
    if preset.device_json:
        data = await _post(client, preset.device_url, body=fields)
    else:
        from authlib.common.urls import url_encode

        data = await _post(client, preset.device_url, form=str(url_encode(list(fields.items()))))
    try:
        return DeviceCode(str(data["device_code"]), str(data["user_code"]), str(data["verification_uri"]),
                          data.get("verification_uri_complete") or None, float(data.get("expires_in") or 900),
                          float(data.get("interval") or 5))
    except (KeyError, TypeError, ValueError):
        raise UpstreamFailure("the provider's device answer lacks device_code, user_code or verification_uri") from None


async def poll_device(client: httpx.AsyncClient, preset: Preset, client_id: str, code: str, now: float) -> Tokens:
    """One poll of the token endpoint (RFC 8628 section 3.4); ``Refused`` with the provider's
    error while the user has not finished (``authorization_pending``, ``slow_down``)."""
    from authlib.oauth2.rfc6749.parameters import prepare_token_request
    from authlib.oauth2.rfc8628 import DEVICE_CODE_GRANT_TYPE

    form = prepare_token_request(DEVICE_CODE_GRANT_TYPE, device_code=code, client_id=client_id)
    return Tokens.of(await _post(client, preset.token_url, form=form), now, client_id)


def device_errors() -> tuple[str, str, str]:
    """RFC 8628's error codes a poll reads: still waiting, poll slower, the code ran out."""
    from authlib.oauth2.rfc8628 import AuthorizationPendingError, ExpiredTokenError, SlowDownError

    return AuthorizationPendingError.error, SlowDownError.error, ExpiredTokenError.error


__all__ = ["DeviceCode", "Refused", "Tokens", "authorize_url", "callback_params", "challenge", "device_code",
           "device_errors", "exchange_code", "exchange_key", "new_secret", "poll_device", "refresh", "revoke"]
