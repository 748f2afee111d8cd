"""Issue 8, the guard: Host allow-list, same-origin JSON writes and CORS, on every route family,
each refusal in the family's own error shape."""

from __future__ import annotations

import logging
from dataclasses import replace

import anthropic
import openai
import pytest

from benchwarmers_mcp.access.access_log import LOGGER, AccessLog
from benchwarmers_mcp.access.policy import startup_problems
from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.errors import BadRequest, Forbidden, TooLarge, UnsupportedMediaType
from benchwarmers_mcp.routes import access_class as route_class
from benchwarmers_mcp.settings import Settings
from tests.kits.loopback import Loopback
from tests.kits.security import ADMIN_TOKEN, FAMILIES, app_client, raw_asgi, same_shape

pytestmark = pytest.mark.anyio
JSON = {"Content-Type": "application/json"}


async def test_a_dns_rebinding_host_is_refused_on_every_family(settings: Settings) -> None:
    async with app_client(settings) as client:
        for family, path in FAMILIES:
            for method in ("GET", "POST"):
                for host in ("evil.example:8122", "evil.example", "127.0.0.1:9", "localhost"):
                    r = await client.request(method, path, headers={**JSON, "Host": host}, content=b"{}")
                    assert r.status_code == 403, (family, method, host, r.text)
                    assert same_shape(r, path, Forbidden("x")), (family, r.text)
                    assert "unknown Host" in r.text


async def test_a_cross_site_post_is_refused_on_every_family(settings: Settings) -> None:
    async with app_client(settings) as client:
        for family, path in FAMILIES:
            r = await client.post(path, json={"model": "bench/core"}, headers={"Sec-Fetch-Site": "cross-site"})
            assert r.status_code == 403 and "cross-site" in r.text, (family, r.text)
            assert same_shape(r, path, Forbidden("x")), family


async def test_a_foreign_origin_is_refused_on_every_family(settings: Settings) -> None:
    async with app_client(settings) as client:
        for family, path in FAMILIES:
            for origin in ("http://evil.example", "null", "http://127.0.0.1:9999", "http://localhost:8122.evil.io"):
                r = await client.post(path, json={}, headers={"Origin": origin})
                assert r.status_code == 403 and "Origin" in r.text, (family, origin, r.text)
                assert same_shape(r, path, Forbidden("x")), family


async def test_a_form_encoded_post_is_refused_on_every_family(settings: Settings) -> None:
    async with app_client(settings) as client:
        for family, path in FAMILIES:
            untyped = [] if family == "ollama" else [{"content": b"{}"}]  # Ollama's routes take untyped JSON
            for body in ({"data": {"model": "bench/core"}}, {"content": b"{}", "headers": {"Content-Type": "text/plain"}},
                         *untyped):
                r = await client.post(path, **body)
                assert r.status_code == 415, (family, r.text)
                assert same_shape(r, path, UnsupportedMediaType("x")), family


async def test_a_bad_or_oversized_length_is_400_or_413(settings: Settings) -> None:
    async with app_client(settings, max_body=1000) as client:
        for family, path in FAMILIES:
            for length, status, error in (("abc", 400, BadRequest("x")), ("-1", 400, BadRequest("x")),
                                          ("5000", 413, TooLarge("x"))):
                request = client.build_request("POST", path, content=b"{}",
                                               headers={**JSON, "Content-Length": length})
                r = await client.send(request)
                assert r.status_code == status, (family, length, r.text)
                assert same_shape(r, path, error), family


async def test_same_origin_writes_and_programs_pass(settings: Settings) -> None:
    async with app_client(settings) as client:
        for headers in ({}, {"Origin": "http://127.0.0.1:8122", "Sec-Fetch-Site": "same-origin"},
                        {"Origin": "http://localhost:8122"}, {"Sec-Fetch-Site": "none"}):
            r = await client.post("/v1/chat/completions", json={"model": "bench/none", "messages": []},
                                  headers=headers)
            assert r.status_code in (400, 404), r.text  # the route answered: the guard let it through
        assert (await client.get("/v1/models", headers={"Origin": "http://evil.example"})).status_code == 200
        assert (await client.get("/health")).json()["ok"] is True


async def test_dot_segments_are_refused(settings: Settings) -> None:
    async with app_client(settings) as client:
        host = [(b"host", b"127.0.0.1:8122")]
        for path in ("/v1/../api/gateway-keys", "/v1/./models", "/bench/.."):
            status, body = await raw_asgi(client.asgi_app, "GET", path, host)
            assert status == 400 and b"segments" in body, path


async def test_allowed_hosts_and_the_public_url_host_are_answered(settings: Settings) -> None:
    async with app_client(settings, allowed_hosts=("bench.lan", "box:9000"),
                          public_url="https://bench.example.com") as client:
        for host in ("bench.lan", "bench.lan:8122", "box:9000", "bench.example.com", "bench.example.com:443",
                     "[::1]:8122", "LOCALHOST:8122"):
            assert (await client.get("/v1/models", headers={"Host": host})).status_code == 200, host
        for host in ("box", "box:8122", "bench.example.com:8443", "evil.bench.lan"):
            assert (await client.get("/v1/models", headers={"Host": host})).status_code == 403, host
        r = await client.post("/bench/pending", json={"calls": []},
                              headers={"Host": "bench.example.com", "Origin": "https://bench.example.com"})
        assert r.status_code == 200, r.text


async def test_a_bodiless_delete_needs_no_json_type(settings: Settings) -> None:
    async with app_client(settings) as client:
        r = await client.delete("/mcp")
        assert r.status_code != 415
        assert (await client.delete("/mcp", headers={"Origin": "http://evil.example"})).status_code == 403


ORIGIN = "https://app.example"


async def test_cors_preflight_on_gateway_routes_for_listed_origins(settings: Settings) -> None:
    async with app_client(settings, allowed_origins=(ORIGIN,)) as client:
        asks = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type, authorization, x-stainless-os, bad header!"}
        for _family, path in FAMILIES[:7]:
            r = await client.options(path, headers=asks)
            assert r.status_code == 204, (path, r.text)
            h = r.headers
            assert h["access-control-allow-origin"] == ORIGIN and h["vary"] == "Origin"
            assert h["access-control-allow-methods"] == "GET, POST, OPTIONS"
            assert h["access-control-allow-headers"] == "Authorization, Content-Type, x-stainless-os"
            assert h["access-control-max-age"] == "600"
            assert "access-control-allow-credentials" not in h
        foreign = await client.options("/v1/chat/completions", headers={**asks, "Origin": "https://evil.example"})
        assert foreign.status_code == 403 and "access-control-allow-origin" not in foreign.headers
        admin = await client.options("/api/gateway-keys", headers=asks)
        assert admin.status_code == 403 and "access-control-allow-origin" not in admin.headers


async def test_cors_answers_carry_the_origin_only_on_gateway_routes(settings: Settings) -> None:
    async with app_client(settings, allowed_origins=(ORIGIN,)) as client:
        cross = {"Origin": ORIGIN, "Sec-Fetch-Site": "cross-site"}
        r = await client.post("/bench/pending", json={"calls": []}, headers=cross)
        assert r.status_code == 200, r.text
        assert r.headers["access-control-allow-origin"] == ORIGIN
        exposed = r.headers["access-control-expose-headers"]
        assert all(h in exposed for h in ("X-Bench-Panel", "X-Bench-Seats", "X-Bench-Call", "X-Bench-Conversation"))
        refused = await client.post("/v1/chat/completions", content=b"x", headers=cross)
        assert refused.status_code == 415 and refused.headers["access-control-allow-origin"] == ORIGIN
        admin = await client.post("/api/gateway-key", json={"name": "app"}, headers=cross)
        assert admin.status_code == 403 and "access-control-allow-origin" not in admin.headers
        plain = await client.get("/v1/models")
        assert "access-control-allow-origin" not in plain.headers
        assert all(v != "*" for v in r.headers.values())


def test_real_clients_read_a_host_refusal_as_permission_denied(gateway: str, net: Loopback) -> None:
    evil = {"Host": "rebound.evil.example"}
    oa = openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key="x", max_retries=0, default_headers=evil)
    with pytest.raises(openai.PermissionDeniedError) as e:
        oa.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "hi"}])
    assert "unknown Host" in e.value.message
    an = anthropic.Anthropic(http_client=net.client2(), base_url=gateway, api_key="x", max_retries=0, default_headers=evil)
    with pytest.raises(anthropic.PermissionDeniedError):
        an.messages.create(model="bench/core", max_tokens=10, messages=[{"role": "user", "content": "hi"}])


def test_route_classes() -> None:
    for path in ("/v1/chat/completions", "/v1beta/models", "/bench/verdict", "/api/chat", "/api/tags/",
                 "/mcp", "/mcp/", "/v1/mcp", "//v1//models", "/chat/completions", "/models", "/responses",
                 "/completions"):
        assert route_class(path) == "gateway", path
    for path in ("/api/models", "/api/gateway-keys", "/", "/ui/", "/api/chatter", "/apichat"):
        assert route_class(path) == "admin", path
    for path in ("/health", "/login", "/logout", "/health/"):
        assert route_class(path) == "open", path


def test_every_route_a_dialect_renders_is_a_gateway_route(settings: Settings) -> None:
    """A face added later under a new path must not fall into the admin class by accident."""
    dialect_prefixes = ("/v1/chat/completions", "/v1/messages", "/v1/responses", "/responses", "/v1/completions",
                        "/completions", "/v1beta", "/v1/models/", "/api/chat", "/api/generate", "/api/show",
                        "/api/tags", "/api/version", "/api/ps", "/mcp", "/v1/mcp")
    checked = 0
    for route in create_app(settings).routes:
        if route.path.startswith(dialect_prefixes):
            assert route_class(route.path) == "gateway", route.path
            checked += 1
    assert checked >= 4


def test_startup_problems(settings: Settings) -> None:
    assert startup_problems(settings) == []
    assert startup_problems(replace(settings, bind="::1")) == []
    assert startup_problems(replace(settings, bind="0.0.0.0", admin_token="x" * 16)) == []
    assert "BENCHWARMERS_ADMIN_TOKEN" in startup_problems(replace(settings, bind="0.0.0.0"))[0]
    assert "shorter than 16" in startup_problems(replace(settings, bind="192.168.1.5", admin_token="x" * 15))[0]
    assert "shorter than 16" in startup_problems(replace(settings, admin_token="short"))[0]
    for url in ("bench.example.com", "ftp://x", "https://x/prefix", "https://u:p@x", "https://x:99999",
                "https://x/?a=1"):
        assert startup_problems(replace(settings, public_url=url)), url
    for url in ("https://bench.example.com", "http://10.0.0.2:8122/"):
        assert startup_problems(replace(settings, public_url=url)) == [], url
    assert "'*'" in startup_problems(replace(settings, allowed_origins=("*",)))[0]
    assert startup_problems(replace(settings, allowed_origins=("app.example",)))
    assert startup_problems(replace(settings, allowed_hosts=("*.example.com",)))


async def test_the_access_log_has_who_and_never_a_query_or_key(settings: Settings, caplog) -> None:
    secret = "bwk_" + "Q" * 43
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with app_client(settings, admin_token=ADMIN_TOKEN) as client:
        await client.get(f"/v1/models?key={secret}&api_key=sk-zzz", headers={"x-api-key": secret})
        await client.get(f"/v1/models/{secret}")
        await client.get(f"/nowhere/{ADMIN_TOKEN}/x", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        await client.get("/health", headers={"Host": "evil.example"})
        assert (await client.get("/health")).status_code == 200  # a container's probe: no line
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 4
    assert " GET /v1/models 401 - " in lines[0] and " GET /v1/models/bwk_*** 401 - " in lines[1]
    assert " GET /nowhere/***/x 404 admin " in lines[2] and " GET /health 403 - " in lines[3]
    assert not any(s in "\n".join(lines) for s in (secret, ADMIN_TOKEN, "sk-zzz", "?"))
    forged = AccessLog().clean_path("/x\n2026-01-01T00:00:00Z GET /admin 200 admin")
    assert "\n" not in forged and " " not in forged
