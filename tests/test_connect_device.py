"""Issue 33 item 1: the device sign-in (RFC 8628) against a fake authorization server.

The poller's own pace is checked on a clock that records each wait and moves by it (the poll loop
is the only thing on that clock): ``authorization_pending`` waits the interval again, ``slow_down``
adds five seconds for good, ``expired_token`` and ``access_denied`` end it, and the provider's
``expires_in`` passing gives up without another poll. Then the whole path from a terminal:
``bench endpoint connect github --device`` prints the code and the address, and ends signed in."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC
from pathlib import Path

import anyio
import anyio.lowlevel
import httpx
import pytest

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import signins as signin_store
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.connect.flows import SignIns
from benchwarmers_mcp.upstream.keys import KeyStore
from tests.fakes.auth_server import FakeAuthServer
from tests.kits.cli import run_in_process
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback

pytestmark = pytest.mark.anyio
POLL = "token:urn:ietf:params:oauth:grant-type:device_code"
AUTH = "http://auth.test"


class PacedClock:
    """Each sleep is recorded and moves the time on by itself, at once."""

    tz = UTC

    def __init__(self) -> None:
        self.t = 1_000_000.0
        self.waits: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.t += seconds
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def device_ctx(home: Path, fake: FakeAuthServer, clock: PacedClock, *, cancel: bool = True
                     ) -> AsyncIterator[Context]:
    settings = Settings.from_env(fake.env(AUTH, "github"), home=home, config_dir=home.parent / "config")
    async with Database(settings.db_path) as db, httpx.AsyncClient(
            transport=httpx.ASGITransport(app=fake.app())) as client, anyio.create_task_group() as tg:
        keys = KeyStore(settings.config_dir, {})
        yield Context(settings, db, keys, client, ModelCaller(db, keys, client), tg, clock=clock, replica="r1")
        if cancel:
            tg.cancel_scope.cancel()


async def run_device(home: Path, fake: FakeAuthServer) -> tuple[str, PacedClock, dict[str, str]]:
    """Start github's device flow and wait for it to end; its status, the clock, the keys file."""
    clock = PacedClock()
    async with device_ctx(home, fake, clock) as ctx:
        flows = SignIns(ctx)
        started = await flows.start("github", client_id="test-client")
        assert started["flow"]["user_code"] == "WDJB-MJHT" and started["flow"]["verification_uri"].endswith("/activate")
        flow = await flows.status(started["flow"]["id"], wait=30)
        keys = ctx.settings.config_dir / "keys.json"
        return flow.status, clock, json.loads(keys.read_text()) if keys.exists() else {}


async def test_pending_waits_the_interval_and_slow_down_adds_five_seconds(home: Path) -> None:
    fake = FakeAuthServer(device_interval=5, device_script=["authorization_pending", "slow_down",
                                                             "authorization_pending"])
    status, clock, keys = await run_device(home, fake)
    assert status == "done"
    assert clock.waits == [5, 5, 10, 10]  # after slow_down, every later wait is five seconds longer
    assert fake.calls[POLL] == 4 and fake.calls["device"] == 1
    assert keys["github"] == fake.issued[0] and keys["github.refresh"].startswith("rt-")


async def test_the_flow_gives_up_when_the_providers_time_runs_out(home: Path) -> None:
    fake = FakeAuthServer(device_interval=5, device_expires_in=12, device_script=["authorization_pending"] * 10)
    status, clock, keys = await run_device(home, fake)
    assert status == "expired" and keys == {}
    assert fake.calls[POLL] == 2  # at 5 s and 10 s; at 15 s the code's 12 s are over: no third poll
    assert clock.waits == [5, 5, 5]


@pytest.mark.parametrize(("answer", "status"), [("expired_token", "expired"), ("access_denied", "denied"),
                                                ("invalid_client", "failed")])
async def test_a_final_answer_ends_the_flow(home: Path, answer: str, status: str) -> None:
    fake = FakeAuthServer(device_interval=1, device_script=["authorization_pending", answer])
    got, _, keys = await run_device(home, fake)
    assert got == status and keys == {}
    assert fake.calls[POLL] == 2
    async with Database(home / "benchwarmers.db") as db:
        assert await signin_store.all_signins(db) == []


async def test_a_cancelled_flow_stops_polling(home: Path) -> None:
    fake = FakeAuthServer(device_interval=5, device_script=["authorization_pending"] * 3)
    clock, gate = PacedClock(), anyio.Event()
    paced = clock.sleep

    async def gated(seconds: float) -> None:  # the first wait lasts until the test has cancelled
        if not clock.waits:
            await gate.wait()
        await paced(seconds)

    clock.sleep = gated  # type: ignore[method-assign]
    async with device_ctx(home, fake, clock, cancel=False) as ctx:
        flows = SignIns(ctx)
        started = await flows.start("github", client_id="test-client")
        assert (await flows.cancel(started["flow"]["id"])).status == "cancelled"
        gate.set()  # the poll loop wakes, sees the flow is over and returns: the task group ends
    assert fake.calls[POLL] == 0 and clock.waits == [5]


def test_bench_endpoint_connect_device_prints_the_code_and_ends_signed_in(
        net: Loopback, settings: Settings) -> None:
    fake = FakeAuthServer(client_id="gh-app", device_interval=0.05, device_script=["authorization_pending"])
    base = net.serve(fake.app())
    gw = serve_gateway(net, settings, connect_env=fake.env(base, "github"))
    done = run_in_process(net, gw, "endpoint", "connect", "github", "--device", "--client-id", "gh-app")
    assert done.returncode == 0, done.stderr
    assert f"open {base}/activate and enter the code:  WDJB-MJHT" in done.stdout
    assert "signed in: endpoint github (github, device)" in done.stdout
    token = fake.issued[0]
    assert token not in done.stdout + done.stderr
    keys = json.loads((settings.config_dir / "keys.json").read_text())
    assert keys["github"] == token
    again = run_in_process(net, gw, "endpoint", "connect", "github", "--device")  # the client id was kept
    assert again.returncode == 0, again.stderr
    listed = run_in_process(net, gw, "endpoint", "signins")
    assert "github" in listed.stdout and "device" in listed.stdout
    fake.device_script[:] = ["access_denied"]
    refused = run_in_process(net, gw, "endpoint", "connect", "github", "--device")
    assert refused.returncode == 1 and "did not finish: denied" in refused.stderr
