"""Issue 8, the admin side: login and logout, the admin token as Bearer, and the Settings view."""

from __future__ import annotations

import time

import httpx
import pytest

from benchwarmers_mcp.access import admin_token as auth
from benchwarmers_mcp.settings import Settings
from tests.kits.security import ADMIN_TOKEN, app_client

pytestmark = pytest.mark.anyio
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def session_cookie(response: httpx.Response) -> tuple[str, str]:
    """(the cookie's value, the whole Set-Cookie line)."""
    line = response.headers["set-cookie"]
    value = line.split(";", 1)[0].split("=", 1)[1]
    return value, line


async def test_login_gives_a_strict_httponly_cookie_and_logout_clears_it(settings: Settings) -> None:
    async with app_client(settings, admin_token=ADMIN_TOKEN) as client:
        refused = await client.get("/api/gateway-keys")
        assert refused.status_code == 401 and "log in" in refused.json()["error"]["message"]
        assert refused.headers["www-authenticate"] == 'Bearer realm="benchwarmers"'
        wrong = await client.post("/login", json={"token": ADMIN_TOKEN + "x"})
        assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
        r = await client.post("/login", json={"token": ADMIN_TOKEN})
        assert r.status_code == 200 and r.json()["ok"] is True
        value, line = session_cookie(r)
        flags = {part.strip().lower() for part in line.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/", f"max-age={auth.SESSION_SECONDS}"} <= flags
        assert "secure" not in flags
        assert ADMIN_TOKEN not in line and ADMIN_TOKEN not in r.text
        client.cookies.clear()
        inside = await client.get("/api/gateway-keys", headers={"Cookie": f"bw_session={value}"})
        assert inside.status_code == 200 and inside.json() == {"keys": []}
        out = await client.post("/logout", json={})
        assert out.status_code == 200
        cleared, out_line = session_cookie(out)
        assert cleared in ("", '""') and "max-age=0" in out_line.lower()


async def test_a_forged_expired_or_old_token_cookie_is_refused(settings: Settings) -> None:
    now = time.time()
    forged = f"{int(now) + 3600}.{'0' * 64}"
    expired = auth.session_value(ADMIN_TOKEN, now - auth.SESSION_SECONDS - 10)
    too_long = f"{int(now) + 10 * auth.SESSION_SECONDS}.{'a' * 64}"
    other_token = auth.session_value("another-token-of-16+chars", now)
    async with app_client(settings, admin_token=ADMIN_TOKEN) as client:
        for value in (forged, expired, too_long, other_token, "garbage", ".", ""):
            r = await client.get("/api/security", headers={"Cookie": f"bw_session={value}"})
            assert r.status_code == 401, value
        good = auth.session_value(ADMIN_TOKEN, now)
        assert (await client.get("/api/security", headers={"Cookie": f"bw_session={good}"})).status_code == 200


async def test_a_changed_token_signs_everyone_out(settings: Settings) -> None:
    async with app_client(settings, admin_token=ADMIN_TOKEN) as client:
        value, _ = session_cookie(await client.post("/login", json={"token": ADMIN_TOKEN}))
    async with app_client(settings, admin_token=ADMIN_TOKEN + "-rotated") as client:
        client.cookies.clear()
        r = await client.get("/api/security", headers={"Cookie": f"bw_session={value}"})
        assert r.status_code == 401 and "log in again" in r.text


async def test_the_cookie_is_secure_behind_an_https_public_url(settings: Settings) -> None:
    async with app_client(settings, admin_token=ADMIN_TOKEN, public_url="https://bench.example.com") as client:
        r = await client.post("/login", json={"token": ADMIN_TOKEN},
                              headers={"Host": "bench.example.com", "Origin": "https://bench.example.com"})
        assert r.status_code == 200
        assert "secure" in {p.strip().lower() for p in session_cookie(r)[1].split(";")}


async def test_the_cli_sends_the_token_as_bearer_and_a_gateway_key_never_opens_admin(settings: Settings) -> None:
    async with app_client(settings, admin_token=ADMIN_TOKEN) as client:
        made = await client.post("/api/gateway-key", json={"name": "ci"}, headers=BEARER)
        assert made.status_code == 200, made.text
        key = made.json()["key"]
        listed = await client.get("/api/gateway-keys", headers=BEARER)
        assert [k["name"] for k in listed.json()["keys"]] == ["ci"]
        by_key = await client.get("/api/gateway-keys", headers={"Authorization": f"Bearer {key}"})
        assert by_key.status_code == 401 and "opens /v1 only" in by_key.text and key not in by_key.text
        wrong = await client.get("/api/gateway-keys", headers={"Authorization": "Bearer not-the-token-at-all"})
        assert wrong.status_code == 401 and "wrong admin token" in wrong.text
        # the gateway wants a key once a token is set; the token and the cookie are never a key
        assert (await client.get("/v1/models")).status_code == 401
        assert (await client.get("/v1/models", headers=BEARER)).status_code == 401
        assert (await client.get("/v1/models", headers={"Authorization": f"Bearer {key}"})).status_code == 200
        assert (await client.get("/health")).status_code == 200


async def test_the_settings_view_says_whether_a_secret_is_set_never_its_value(settings: Settings) -> None:
    async with app_client(settings, admin_token=ADMIN_TOKEN, allowed_origins=("https://app.example",)) as client:
        r = await client.get("/api/security", headers=BEARER)
        body = r.json()
        assert body["admin_token_set"] is True and body["keys_required"] is True and body["require_keys"] is False
        assert body["allowed_origins"] == ["https://app.example"] and body["bind"] == "127.0.0.1"
        assert ADMIN_TOKEN not in r.text
        status = (await client.get("/api/status", headers=BEARER)).json()
        assert status["auth"] == {"admin_token": True, "keys_required": True}, "a token means keys are required"
    async with app_client(settings) as client:
        body = (await client.get("/api/security")).json()
        assert body["admin_token_set"] is False and body["keys_required"] is False


async def test_login_without_a_token_set_says_there_is_none(settings: Settings) -> None:
    async with app_client(settings) as client:
        r = await client.post("/login", json={"token": "anything-at-all-here"})
        assert r.status_code == 400 and "no admin token" in r.text
        assert (await client.get("/api/gateway-keys")).status_code == 200  # loopback, no token: open
