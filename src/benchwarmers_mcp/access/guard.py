"""The guard: a pure ASGI middleware in front of every route (streams pass through untouched).

In order, for each HTTP request:

1. the Host must be on the allow-list (against DNS rebinding), else 403; the head must be plain:
   more than ``max_headers`` headers or ``max_head_bytes`` of them is 431, ``Content-Length``
   together with ``Transfer-Encoding`` (the request-smuggling pair) is 400, whatever the method;
2. a CORS preflight is answered 204 on a gateway route from an allowed origin, else 403;
3. a write must be same-origin JSON: ``Sec-Fetch-Site: cross-site`` or a foreign ``Origin`` (its
   scheme and host compared: ``Policy.same_origin``) is 403 (unless CORS allows the origin on a
   gateway route), a non-JSON type 415, a bad length 400/413; an admin route's read from another
   site's page (``Sec-Fetch-Site`` cross-site or same-site, or a foreign ``Origin``) is 403 too,
   but for a link followed to a dashboard page (``check_admin_read``);
   a route whose shape takes untyped JSON (``UNTYPED_JSON``: Ollama's, as real Ollama reads any
   body as JSON) takes a body with no ``Content-Type`` at all as JSON, never another type;
4. the route's access class (``routes.py``) decides the credential: a gateway key, the login cookie
   or admin token, or none; a request it lets through to a gateway or admin route carries the
   caller's ``Access`` (``access_of(request)``), which the faces hand the engine;
5. a request with a body is read whole before any route sees it, within ``body_timeout`` seconds
   from the head (408 after that, however the bytes trickle) and ``max_body`` bytes (413, chunked
   bodies too); a client that hangs up mid-body is logged as a hang-up (499 in the access log),
   never as a failure, and no route runs for it. A JSON body must be JSON a program can keep
   (``inbound.loads_strict``: no NaN or Infinity, no lone surrogate), else 400 on every route, MCP's
   included; the value is left on the request (``BODY_KEY``) so the route does not parse it again;
6. the access log gets one line, whatever happened.

Each refusal is rendered by the route's own error renderer, so a client reads it in its own shape.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchwarmers_mcp.access import admin_token as auth
from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.access.access_log import AccessLog
from benchwarmers_mcp.access.policy import Policy
from benchwarmers_mcp.context import Access
from benchwarmers_mcp.errors import (
    BadRequest,
    BenchError,
    Forbidden,
    HeadersTooLarge,
    HungUp,
    RequestTimeout,
    TooLarge,
    UnsupportedMediaType,
)
from benchwarmers_mcp.inbound import BODY_KEY, STATE_KEY, loads_strict
from benchwarmers_mcp.routes import AccessClass, access_class, is_page, shape_of, takes_query_key
from benchwarmers_mcp.settings import Settings

log = logging.getLogger("benchwarmers.guard")

RenderError = Callable[[str, BenchError, Headers], Response]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PLAIN_HEADER = re.compile(r"^[A-Za-z0-9-]{1,64}$")
# Route shapes whose clients send a JSON body with no Content-Type, which their real server reads
# as JSON: LiteLLM's ollama/ and ollama_chat/ providers do (issue 29). No type at all, never another:
# a browser's cross-site form or text/plain post is still 415, and the cross-site rules come first.
UNTYPED_JSON = frozenset({"ollama"})
EXPOSE = "X-Bench-Panel, X-Bench-Seats, X-Bench-Conversation, X-Bench-Model, X-Bench-Call, X-Bench-Overhead-Ms"


def json_typed(path: str, headers: Headers) -> bool:
    """Whether the body is JSON by its type: ``application/json``, or no Content-Type at all on a
    route whose shape takes untyped JSON (``UNTYPED_JSON``)."""
    if "content-type" not in headers:
        return shape_of(path) in UNTYPED_JSON
    return headers["content-type"].split(";", 1)[0].strip().lower() == "application/json"


@dataclass
class Visit:
    """One request as the access log and the CORS headers see it."""

    method: str
    path: str
    started: float
    status: int = 0
    who: str = "-"
    cors_origin: str | None = None


class _Headers(Headers):
    """A request's headers (Starlette's ``Headers``), looked up through a dict made once: the guard
    asks a dozen names of every request, and ``Headers`` walks its list for each (starlette's
    ``get`` goes through ``Mapping.get`` and ``__getitem__`` too). The first value of a name, as
    ``Headers`` gives, and every value for ``getlist``."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope=scope)
        index: dict[bytes, list[bytes]] = {}
        for name, value in self.raw:
            index.setdefault(name, []).append(value)
        self._index = index

    def get(self, key: str, default: Any = None) -> Any:
        values = self._index.get(key.lower().encode("latin-1"))
        return values[0].decode("latin-1") if values else default

    def __getitem__(self, key: str) -> str:
        values = self._index.get(key.lower().encode("latin-1"))
        if not values:
            raise KeyError(key)
        return values[0].decode("latin-1")

    def __contains__(self, key: Any) -> bool:
        return isinstance(key, str) and key.lower().encode("latin-1") in self._index

    def getlist(self, key: str) -> list[str]:
        return [v.decode("latin-1") for v in self._index.get(key.lower().encode("latin-1"), ())]


class Guard:
    def __init__(self, app: ASGIApp, settings: Settings, render_error: RenderError,
                 access_log: AccessLog | None = None) -> None:
        self.app = app
        self.policy = Policy.from_settings(settings)
        self.body_timeout = settings.body_timeout
        self.max_headers = settings.max_headers
        self.max_head_bytes = settings.max_head_bytes
        self.render_error = render_error
        self.access_log = access_log or AccessLog(secrets=[self.policy.admin_token])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})  # no websocket routes exist
            return
        visit = Visit(scope["method"], scope["path"], time.perf_counter())
        send = self._sending(visit, send)
        try:
            try:
                headers = _Headers(scope)
                answer = await self.screen(scope, visit, headers)
                if answer is None:
                    receive = await self.read_body(scope, receive, headers)
            except HungUp as e:
                log.info("%s %s: %s", visit.method, scope["path"], e.message)
                return
            except BenchError as e:
                answer = self.refusal(scope, e)
            except Exception:
                log.exception("the guard failed on %s %s", visit.method, scope["path"])
                answer = self.refusal(scope, BenchError("internal error in the guard"))
            if answer is not None:
                await answer(scope, receive, send)
            else:
                await self.app(scope, receive, send)
        except Exception:
            visit.status = visit.status or 500  # the error middleware outside answers it
            raise
        finally:
            # no status at all: the caller went away before an answer started (nginx's 499)
            self.access_log.write(visit.method, visit.path, visit.status or 499, visit.who,
                                  time.perf_counter() - visit.started)

    def _sending(self, visit: Visit, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                visit.status = message["status"]
                if visit.cors_origin:
                    headers = MutableHeaders(scope=message)
                    headers["Access-Control-Allow-Origin"] = visit.cors_origin
                    headers["Access-Control-Expose-Headers"] = EXPOSE
                    headers.add_vary_header("Origin")
            await send(message)

        return sending

    def refusal(self, scope: Scope, error: BenchError) -> Response:
        response = self.render_error(scope["path"], error, Headers(scope=scope))
        response.headers.update(error.headers)
        return response

    async def read_body(self, scope: Scope, receive: Receive, headers: Headers) -> Receive:
        """The whole body, read within the deadline and the size limit, handed on as one message;
        after it the route's ``receive`` is the server's own (a later disconnect still reaches it)."""
        if "content-length" not in headers and "transfer-encoding" not in headers:
            return receive
        chunks: list[bytes] = []
        size = 0
        closing = {"Connection": "close"}  # the rest of a refused body is never read
        try:  # asyncio's own timeout: 3.9 us against anyio's 6.5 (nothing inside is shielded)
            async with asyncio.timeout(self.body_timeout) as deadline:
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise HungUp("the client hung up before its body arrived")
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.policy.max_body:
                        raise TooLarge(f"the body is over {self.policy.max_body:,} bytes", headers=closing)
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            if not deadline.expired():
                raise
            raise RequestTimeout(f"the body did not arrive within {self.body_timeout:g} s", headers=closing) from None
        body = b"".join(chunks)
        if body and json_typed(scope["path"], headers):
            scope.setdefault("state", {})[BODY_KEY] = (len(body), loads_strict(body))
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    async def screen(self, scope: Scope, visit: Visit, headers: Headers) -> Response | None:
        """None to let the request through; a Response to answer it here. Raises BenchError to refuse."""
        path, method = scope["path"], scope["method"]
        kind = access_class(path)
        hosts = headers.getlist("host")
        if len(hosts) != 1 or not self.policy.host_allowed(hosts[0].strip()):
            raise Forbidden("unknown Host: this server answers only to its own names (127.0.0.1, localhost, "
                            "[::1] with its port, BENCH_ALLOWED_HOSTS and the public URL's host)")
        if any(part in (".", "..") for part in path.split("/")):
            raise BadRequest("the path has '.' or '..' segments")
        if len(scope["headers"]) > self.max_headers:
            raise HeadersTooLarge(f"the request has more than {self.max_headers} headers")
        if sum(len(name) + len(value) for name, value in scope["headers"]) > self.max_head_bytes:
            raise HeadersTooLarge(f"the request's headers are over {self.max_head_bytes:,} bytes")
        if "content-length" in headers and "transfer-encoding" in headers:
            raise BadRequest("a request may not carry both Content-Length and Transfer-Encoding",
                             headers={"Connection": "close"})
        origin = headers.get("origin")
        if kind == "gateway" and origin and self.policy.cors_allowed(origin):
            visit.cors_origin = origin.strip()
        if method == "OPTIONS" and "access-control-request-method" in headers:
            return self.preflight(kind, visit, headers)
        if method not in SAFE_METHODS:
            self.check_write(method, headers, visit)
        elif kind == "admin":
            self.check_admin_read(path, headers)
        await self.authenticate(scope, headers, kind, visit)
        return None

    def preflight(self, kind: AccessClass, visit: Visit, headers: Headers) -> Response:
        if kind != "gateway":
            raise Forbidden("no cross-origin requests here: only gateway routes answer a CORS preflight")
        if visit.cors_origin is None:
            raise Forbidden("this origin may not call the gateway; list it in BENCH_ALLOWED_ORIGINS")
        allow = ["Authorization", "Content-Type"]
        for name in (headers.get("access-control-request-headers") or "").split(","):
            name = name.strip()
            if PLAIN_HEADER.match(name) and name.lower() not in {a.lower() for a in allow}:
                allow.append(name)
        return Response(status_code=204, headers={
            "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
            "Access-Control-Allow-Headers": ", ".join(allow),
            "Access-Control-Max-Age": "600",
        })

    def check_admin_read(self, path: str, headers: Headers) -> None:
        """An admin route's GET (or HEAD) from another site's page is refused, as a write is: an
        ``<img>``, a script, a frame or a fetch from there (``Sec-Fetch-Site`` cross-site or
        same-site, which is another port of this host too; or an ``Origin`` not this server's own).
        Only a link the user follows to a dashboard page is answered (a top-level navigation to a
        document: the page shows the user their own dashboard and changes nothing). Programs send
        no ``Sec-Fetch-Site``; a typed address or a bookmark sends ``none``."""
        origin = headers.get("origin")
        if origin is not None and not self.policy.same_origin(origin.strip()):
            raise Forbidden("foreign Origin refused: the admin API and the dashboard answer only this server's "
                            "own pages")
        site = (headers.get("sec-fetch-site") or "").strip().lower()
        if site in ("cross-site", "same-site") and not (
                is_page(path) and (headers.get("sec-fetch-mode") or "").strip().lower() == "navigate"
                and (headers.get("sec-fetch-dest") or "").strip().lower() == "document"):
            raise Forbidden("cross-site request refused: the admin API answers only this server's own pages "
                            "or a program (another site may link to a dashboard page, nothing more)")

    def check_write(self, method: str, headers: Headers, visit: Visit) -> None:
        """Same-origin JSON only (a DELETE with no body, as MCP clients end a session, needs no type)."""
        cors = visit.cors_origin is not None
        if (headers.get("sec-fetch-site") or "").strip().lower() == "cross-site" and not cors:
            raise Forbidden("cross-site request refused: writes must come from this server's own pages "
                            "or from a program")
        origin = headers.get("origin")
        if origin is not None and not cors and not self.policy.same_origin(origin.strip()):
            raise Forbidden("foreign Origin refused: list it in BENCH_ALLOWED_ORIGINS to call the gateway "
                            "from a browser app")
        lengths = headers.getlist("content-length")
        bodiless = method == "DELETE" and lengths in ([], ["0"]) and "transfer-encoding" not in headers
        if not bodiless and not json_typed(visit.path, headers):
            raise UnsupportedMediaType("Content-Type must be application/json")
        if len(lengths) > 1 or (lengths and not lengths[0].strip().isdigit()):
            raise BadRequest("Content-Length is not a single number")
        if lengths and int(lengths[0]) > self.policy.max_body:
            raise TooLarge(f"the body is over {self.policy.max_body:,} bytes")

    async def authenticate(self, scope: Scope, headers: Headers, kind: AccessClass, visit: Visit) -> None:
        if kind == "open":
            visit.who = "anyone"
            return
        if kind == "admin":
            token = self.policy.admin_token
            visit.who = auth.admin_who(token, headers, time.time()) if token else "local"
            access = Access.unscoped()
        elif not self.policy.keys_required:
            visit.who = "local"
            access = Access.unscoped()
        else:
            ctx = getattr(getattr(scope.get("app"), "state", None), "ctx", None)
            if ctx is None:
                raise BenchError("the server is still starting")
            key = await gateway_keys.judge(ctx.db, headers, scope.get("query_string", b""),
                                           gemini=takes_query_key(scope["path"]))
            access = gateway_keys.access_for(key)
            visit.who = f"key:{key.name}"
        scope.setdefault("state", {})[STATE_KEY] = access
