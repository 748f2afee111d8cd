"""Issue 29.6: where the login page sends the browser after the token (``?next=``) is a path on this
server, never another host, a script or a second step of the form's ``data-then``. Hostile forms
in every spelling; the page itself with the value it was given. Chromium's part is in
``tests/e2e/test_login_redirect.py``."""

from __future__ import annotations

import re

import httpx
import pytest

from benchwarmers_mcp.web.site import safe_next
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback

TOKEN = "a-long-enough-admin-token-for-tests"

KEPT = ["/", "/collections", "/ask?collection=core", "/registered?find=a%20b", "/v1/models/bench:x",
        "/ratings?collection=core&shape=code", "/a%2Fb", "/logs?kind=verdict&limit=50",
        "/x'y"]

HOSTILE = [
    "", "collections", "https://evil.example/", "http:evil.example", "HTTPS://evil.example",
    "//evil.example", "///evil.example", "//evil.example/path", "/\\evil.example", "\\\\evil.example",
    "/\\/evil.example", "\\/evil.example", "/%2F%2Fevil.example", "/%2f/evil.example", "/%5Cevil.example",
    "/%5C%5Cevil.example", "%2F%2Fevil.example", "/%09/evil.example", "/\t/evil.example", "/\n/evil.example",
    "/\r\n//evil.example", "/\x00", "/\x0bx", "\t//evil.example", " /collections", "/ go:https://evil.example/",
    "/%20go:https://evil.example/", "/x go:https://evil.example/", "/x\tgo://evil.example", "/x\u00a0go:x",
    "/x\u2028go:x", "javascript:alert(1)", "JaVaScRiPt:alert(1)", "/javascript:alert(1) go:javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>", "vbscript:x", "/x#go:evil", "/%", "/%zz", "/%2", "/é",
    "/x\"><script>", "/<script>", "/x`y", "/x{y}", "/x|y", "/x^y", "/" + "a" * 3000,
]


@pytest.mark.parametrize("target", KEPT, ids=repr)
def test_a_path_on_this_server_is_kept(target: str) -> None:
    assert safe_next(target) == target


@pytest.mark.parametrize("target", HOSTILE, ids=lambda t: repr(t)[:40])
def test_anything_else_goes_to_the_root(target: str) -> None:
    assert safe_next(target) == "/"


def test_whatever_is_kept_is_one_same_origin_step() -> None:
    """What the form's ``data-then="go:..."`` gets: one token, a path that a browser resolves on this
    origin (``httpx.URL.join`` resolves as a browser does)."""
    here = httpx.URL("http://127.0.0.1:8122/login")
    for target in KEPT + HOSTILE:
        kept = safe_next(target)
        assert kept.split() == [kept], target
        assert here.join(kept).host == "127.0.0.1" and here.join(kept).port == 8122, target


def test_the_login_page_carries_only_a_safe_next(settings, net: Loopback) -> None:
    base = serve_gateway(net, settings, admin_token=TOKEN)
    with net.client(base_url=base) as client:
        for raw, expected in (("/%20go:https://evil.example/", "/"), ("//evil.example", "/"),
                              ("/collections", "/collections"), ("/%5Cevil", "/")):
            html = client.get("/login?next=" + raw).text
            [then] = re.findall(r'<form data-api="/login" data-then="go:([^"]*)"', html)
            assert then == expected, (raw, then)
        html = client.get("/login", params={"next": "/x'onmouseover='alert(1)"}).text
        assert 'data-then="go:/x&#39;onmouseover=&#39;alert(1)"' in html  # a quote it keeps is escaped
