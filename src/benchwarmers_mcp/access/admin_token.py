"""The admin token and the login cookie that stands for it.

The cookie is ``bw_session=<expiry>.<HMAC-SHA256(token, "session|<expiry>")>``: nothing is kept
on the server, a changed token signs everyone out, and it lasts seven days. It is HttpOnly and
SameSite=Strict, and Secure when the public URL is https. The CLI sends the token itself as
``Authorization: Bearer``. Every comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import Response

from benchwarmers_mcp.errors import Unauthorized

COOKIE = "bw_session"
SESSION_SECONDS = 7 * 24 * 3600
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="benchwarmers"'}


def _sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def token_matches(given: str, token: str) -> bool:
    """Equal digests, compared in constant time (the lengths never leak)."""
    return hmac.compare_digest(_sha(given), _sha(token))


def _signature(token: str, expiry: int) -> str:
    return hmac.new(token.encode("utf-8", "surrogatepass"), f"session|{expiry}".encode(), hashlib.sha256).hexdigest()


def expiry_from(now: float) -> int:
    return int(now) + SESSION_SECONDS


def session_value(token: str, now: float) -> str:
    expiry = expiry_from(now)
    return f"{expiry}.{_signature(token, expiry)}"


def session_valid(value: str, token: str, now: float) -> bool:
    expiry_text, _, signature = value.partition(".")
    if not expiry_text.isdigit() or len(expiry_text) > 12:
        return False
    expiry = int(expiry_text)
    good = hmac.compare_digest(signature.encode("ascii", "replace"), _signature(token, expiry).encode())
    return good and now < expiry <= now + SESSION_SECONDS + 60


def set_session(response: Response, token: str, *, secure: bool, now: float) -> None:
    response.set_cookie(COOKIE, session_value(token, now), max_age=SESSION_SECONDS, path="/", secure=secure,
                        httponly=True, samesite="strict")


def clear_session(response: Response, *, secure: bool) -> None:
    response.set_cookie(COOKIE, "", max_age=0, expires=0, path="/", secure=secure, httponly=True,
                        samesite="strict")


def _bearer(headers: Headers) -> str | None:
    scheme, _, value = (headers.get("authorization") or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def bearer_is(headers: Headers, token: str) -> bool:
    """Whether the request sends ``token`` as Bearer (compared in constant time)."""
    bearer = _bearer(headers)
    return bearer is not None and token_matches(bearer, token)


def admin_who(token: str, headers: Headers, now: float) -> str:
    """``admin`` (the token as Bearer) or ``session`` (the cookie); else 401 saying what was wrong."""
    bearer = _bearer(headers)
    if bearer is not None and token_matches(bearer, token):
        return "admin"
    cookie = cookie_parser(headers.get("cookie") or "").get(COOKIE)
    if cookie and session_valid(cookie, token, now):
        return "session"
    if bearer is not None and bearer.startswith("bwk_"):
        raise Unauthorized("a gateway key opens /v1 only; the dashboard and the admin API want a login "
                           "or the admin token as Bearer", headers=CHALLENGE)
    if bearer is not None:
        raise Unauthorized("wrong admin token", headers=CHALLENGE)
    if cookie:
        raise Unauthorized("the login has expired or is no longer valid; log in again", headers=CHALLENGE)
    raise Unauthorized("log in first (POST /login), or send BENCHWARMERS_ADMIN_TOKEN as Authorization: Bearer",
                       headers=CHALLENGE)
