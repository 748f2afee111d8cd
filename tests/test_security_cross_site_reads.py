"""Issue 29.11 and 29.13, the guard: an admin route's read from another site's page is refused as a
write is (``Sec-Fetch-Site`` cross-site or same-site, which another port of 127.0.0.1 is, or a
foreign ``Origin``), on every admin GET of the route table, each refusal in the route's own shape;
a link another site's page follows to a dashboard page still opens it; gateway reads keep their
CORS rules. The Origin check compares the scheme as well as the host. Chromium's part is in
``tests/e2e/test_cross_site_reads.py``."""

from __future__ import annotations

import pytest

from benchwarmers_mcp import routes
from benchwarmers_mcp.access.policy import Policy
from benchwarmers_mcp.errors import Forbidden
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.web.registry import discover
from tests.kits.security import app_client, same_shape

pytestmark = pytest.mark.anyio

EXAMPLES = {"/static/{rest:path}": "/static/app.js"}
IMAGE = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
LINK = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
FOREIGN = [IMAGE, {**IMAGE, "Sec-Fetch-Site": "same-site"}, {"Sec-Fetch-Site": "cross-site"},
           {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},
           {**LINK, "Sec-Fetch-Dest": "iframe"}, {"Origin": "http://evil.example"}, {"Origin": "null"},
           {"Origin": "https://127.0.0.1:8122"}, {"Origin": "http://127.0.0.1:9999", "Sec-Fetch-Site": "same-site"},
           {"Sec-Fetch-Site": "same-origin", "Origin": "http://localhost:8122.evil.io"}]
OWN = [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none", **{k: v for k, v in LINK.items()
                                                                             if k != "Sec-Fetch-Site"}},
       {"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8122"}, {"Origin": "http://localhost:8122"}]


def admin_gets() -> list[str]:
    out = []
    for e in routes.TABLE:
        if "GET" in e.methods and e.access == "admin":
            out += [p.path for p in discover()] if e is routes.PAGES else [EXAMPLES.get(e.path, e.path)]
    return out


async def test_an_admin_read_from_another_sites_page_is_refused_on_every_admin_get(settings: Settings) -> None:
    paths = admin_gets()
    assert "/api/status" in paths and "/registered" in paths and len(paths) > 40
    async with app_client(settings) as client:
        for path in paths:
            for headers in FOREIGN:
                r = await client.get(path, headers=headers)
                assert r.status_code == 403, (path, headers, r.status_code)
                assert same_shape(r, path, Forbidden("x")) and "refused" in r.text, (path, r.text)
            assert (await client.head(path, headers=IMAGE)).status_code == 403, path
            r = await client.get(path, headers={"Sec-Fetch-Site": "same-origin"}, params={"alias": "none", "id": "none"})
            assert r.status_code != 403, (path, r.text)  # the dashboard's own fetch
        for path in ("/api/status", "/registered", "/api/logs"):
            for headers in OWN:
                r = await client.get(path, headers=headers)
                assert r.status_code == 200, (path, headers, r.text)


async def test_a_link_from_another_site_opens_a_dashboard_page_and_nothing_else(settings: Settings) -> None:
    async with app_client(settings) as client:
        for page in discover():
            r = await client.get(page.path, headers=LINK)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), page.path
        for path in ("/api/status", "/api/endpoints", "/api/events", "/api/logs"):
            r = await client.get(path, headers=LINK)  # an admin route that is no page: refused even as a link
            assert r.status_code == 403, (path, r.text)


async def test_open_and_gateway_reads_keep_their_own_rules(settings: Settings) -> None:
    async with app_client(settings) as client:
        for path in ("/health", "/login", "/static/app.css", "/v1/models", "/bench/suggestions", "/api/tags"):
            r = await client.get(path, headers={**IMAGE, "Origin": "http://evil.example"})
            assert r.status_code == 200, (path, r.text)


async def test_a_write_from_the_right_host_on_the_wrong_scheme_is_refused(settings: Settings) -> None:
    async with app_client(settings) as client:
        for origin in ("https://127.0.0.1:8122", "https://localhost:8122", "ws://127.0.0.1:8122",
                       "http://127.0.0.1:8122/", "http://127.0.0.1:8122?x", "http://u@127.0.0.1:8122"):
            r = await client.post("/api/collection", json={"name": "x", "members": []}, headers={"Origin": origin})
            assert r.status_code == 403 and "Origin" in r.text, (origin, r.text)
        r = await client.post("/bench/pending", json={"calls": []}, headers={"Origin": "HTTP://127.0.0.1:8122"})
        assert r.status_code == 200, r.text


async def test_the_public_urls_host_is_its_scheme_only(settings: Settings) -> None:
    async with app_client(settings, public_url="https://bench.example.com", allowed_hosts=("bench.lan",)) as client:
        for origin, status in (("https://bench.example.com", 200), ("https://bench.example.com:443", 200),
                               ("http://bench.example.com", 403), ("http://bench.example.com:443", 403),
                               ("https://bench.example.com:8443", 403), ("http://bench.lan:8122", 200),
                               ("https://bench.lan", 200), ("http://127.0.0.1:8122", 200),
                               ("https://127.0.0.1:8122", 403)):
            r = await client.post("/bench/pending", json={"calls": []},
                                  headers={"Host": "bench.example.com", "Origin": origin})
            assert r.status_code == status, (origin, r.text)


def test_the_origins_are_scheme_and_host(settings: Settings) -> None:
    from dataclasses import replace

    policy = Policy.from_settings(replace(settings, port=8122, public_url="https://bench.example.com:8443",
                                          allowed_hosts=("box:9000",)))
    assert policy.origins == {"http://127.0.0.1:8122", "http://localhost:8122", "http://[::1]:8122",
                              "https://bench.example.com:8443", "http://box:9000", "https://box:9000"}
    assert "bench.example.com:8443" in policy.hosts
