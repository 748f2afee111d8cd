"""Gateway keys: making them, judging the one a request sends, its scope (an ``Access``) and the rpm cap.

A key is ``bwk_`` + 32 random bytes (url-safe base64, 43 characters). It may arrive as
``Authorization: Bearer``, ``x-api-key``, ``x-goog-api-key`` or, on Gemini routes only, ``?key=``;
the first one sent is judged and no other is tried. Its SHA-256 is compared with every stored
digest in constant time. No message ever quotes a key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from urllib.parse import parse_qsl

from starlette.datastructures import Headers

from benchwarmers_mcp.access.admin_token import CHALLENGE
from benchwarmers_mcp.context import Access, bare_collection
from benchwarmers_mcp.errors import BadRequest, TooManyRequests, Unauthorized
from benchwarmers_mcp.store import Database, names
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import keys as key_store
from benchwarmers_mcp.store.keys import GatewayKey

PREFIX = "bwk_"
KEY_RE = re.compile(r"^bwk_[A-Za-z0-9_-]{43}$")
RESERVED = frozenset({"local"})
MAX_RPM = 10_000
HOW = "send it as Authorization: Bearer, x-api-key or x-goog-api-key"


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def credential(headers: Headers, query_string: bytes, gemini: bool) -> str | None:
    """The first credential sent ('' when the Authorization header is not a Bearer); None if none."""
    auth = (headers.get("authorization") or "").strip()
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer":
            return ""
        if value.strip():
            return value.strip()
    for name in ("x-api-key", "x-goog-api-key"):
        value = (headers.get(name) or "").strip()
        if value:
            return value
    if gemini:
        for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
            if name == "key" and value.strip():
                return value.strip()
    return None


def _unauthorized(message: str) -> Unauthorized:
    return Unauthorized(message, headers=dict(CHALLENGE))


def _check_form(sent: str | None) -> None:
    if sent is None:
        raise _unauthorized(f"missing gateway key: {HOW} (make one with `bench key create <name>`)")
    if sent == "":
        raise _unauthorized("malformed credential: the Authorization header must be 'Bearer <gateway key>'")
    if not sent.startswith(PREFIX):
        raise _unauthorized("malformed gateway key: it does not start with bwk_, so it looks like some other "
                            "key (a provider's?); this gateway takes only its own keys")
    if not KEY_RE.match(sent):
        raise _unauthorized("malformed gateway key: a gateway key is bwk_ and 43 url-safe characters")


async def find(db: Database, sent: str) -> GatewayKey | None:
    """The key whose digest matches, compared against every stored digest (no early exit)."""
    wanted = digest(sent).encode()
    found = None
    for key in await key_store.list_all(db):
        if hmac.compare_digest(key.sha256.encode(), wanted):
            found = key
    return found


async def judge(db: Database, headers: Headers, query_string: bytes, *, gemini: bool,
                now: float | None = None) -> GatewayKey:
    """The caller's key, counted against its rpm; 401 or 429 otherwise."""
    sent = credential(headers, query_string, gemini)
    _check_form(sent)
    assert sent is not None
    key = await find(db, sent)
    if key is None:
        raise _unauthorized("unknown gateway key: it was revoked, or never made on this server")
    wait = await key_store.admit(db, key, time.time() if now is None else now)
    if wait is not None:
        raise TooManyRequests(f"gateway key {key.name!r} is over its cap of {key.rpm} requests a minute",
                              retry_after=wait)
    return key


async def _scope_names(db: Database, collections: object) -> tuple[str, ...] | None:
    if collections is None:
        return None
    if not isinstance(collections, list) or not collections or not all(isinstance(c, str) for c in collections):
        raise BadRequest("collections must be a non-empty list of collection names (leave it out for all)")
    names = tuple(dict.fromkeys(bare_collection(c) for c in collections))
    known = {c.name for c in await collection_store.list_all(db)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadRequest(f"unknown collections: {', '.join(unknown)}")
    return names


async def create(db: Database, name: object, collections: object = None, rpm: object = None,
                 now: float | None = None) -> tuple[GatewayKey, str]:
    """A new key and its secret (the only time the secret exists outside the caller)."""
    name = names.check("gateway key name", name)
    if name in RESERVED:
        raise BadRequest(f"{name!r} is reserved: it names every caller when keys are not required")
    if rpm is not None and (isinstance(rpm, bool) or not isinstance(rpm, int) or not 1 <= rpm <= MAX_RPM):
        raise BadRequest(f"rpm is a whole number from 1 to {MAX_RPM:,} (leave it out for no cap)")
    scope = await _scope_names(db, collections)
    secret = new_secret()
    key = GatewayKey(name, digest(secret), secret[-4:], time.time() if now is None else now, scope, rpm)
    if not await key_store.add(db, key):
        raise BadRequest(f"a key named {name!r} exists; revoke it first (`bench key revoke {name}`)")
    return key, secret


def access_for(key: GatewayKey) -> Access:
    """What a request with this key may do: ask (and see) its collections, or all of them."""
    return Access(key.name, key.collections)
