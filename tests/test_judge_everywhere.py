"""Judging from anywhere (issue 30), each face judged by its real client: who asked each panel is
recorded (the openai SDK's User-Agent, the MCP client's ``clientInfo`` over ``/mcp``, the ``bench``
CLI); a verdict changed from not useful to useful keeps no old false claims through the CLI and
MCP as through the API; MCP's ``pending_verdicts`` lists each owed seat's claims and their groups
and its ``verdict`` takes claim judgements; a scoped gateway key's ``GET /bench/panels`` and
inbox count see only its collections; a merged reply carries ``bench.claims`` and lists its lone
claims."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.types import Implementation

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.cli import Bench, bench  # noqa: F401 (the fixture)
from tests.kits.gateway import openai_sdk, serve_gateway
from tests.kits.judging import ANSWERS, lines_of, seat_calls, seed_judging, shared_group
from tests.kits.loopback import Loopback

pytestmark = pytest.mark.backends
CLAUDE = Implementation(name="claude-code", version="2.1.3")


@pytest.fixture
def judging(home: Path, upstream: str, fake: FakeUpstream) -> Path:
    seed_judging(home, upstream, fake)
    return home


def listed(http: httpx.Client, base: str, **params: str) -> list[dict[str, object]]:
    reply = http.get(base + "/bench/panels", params=params)
    assert reply.status_code == 200, reply.text
    return list(reply.json()["panels"])


async def mcp_call(net: Loopback, base: str, tool: str, args: dict[str, object], *, mode: str = "auto",
                   headers: dict[str, str] | None = None) -> str:
    """One tool call from an MCP client that says it is Claude Code; its first text (an error fails)."""
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    async with net.aclient2(headers=headers, timeout=timeout) as http, \
            Client(streamable_http_client(base + "/mcp", http_client=http), mode=mode,  # type: ignore[arg-type]
                   client_info=CLAUDE) as client:
        result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return str(result.content[0].text)


def test_who_asked_is_recorded_for_the_sdk_mcp_and_the_cli(judging: Path, gateway: str, net: Loopback,
                                                            http: httpx.Client, bench: Bench) -> None:  # noqa: F811
    import openai

    openai_sdk(net, gateway).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "a"}])
    for mode in ("auto", "legacy"):
        anyio.run(lambda mode=mode: mcp_call(net, gateway, "ask", {"collection": "other", "prompt": "b"}, mode=mode))
    result = bench(gateway, "ask", "core", "c")
    assert result.returncode == 0, result.stderr
    with http.stream("POST", gateway + "/api/ask", json={"collection": "other", "prompt": "d"}) as asked:
        assert asked.status_code == 200 and any(line.startswith("event: done") for line in asked.iter_lines())

    panels = listed(http, gateway)
    by_source = {(p["source"], p["client"], p["collection"]) for p in panels}
    assert by_source == {("gateway", f"OpenAI/Python {openai.__version__}", "bench/core"),
                         ("mcp", "claude-code/2.1.3", "bench/other"),
                         ("cli", f"benchwarmers-cli/{__version__}", "bench/core"),
                         ("dashboard", "", "bench/other")}
    assert len(panels) == 5 and {p["asked_by"] for p in panels} == {"local", "dashboard"}
    assert listed(http, gateway, source="mcp")[0]["prompt_preview"] == "b"
    assert http.get(gateway + "/bench/panels", params={"source": "phone"}).status_code == 400


def test_a_changed_verdict_keeps_no_old_false_claims_through_the_cli_and_mcp(
        judging: Path, gateway: str, net: Loopback, http: httpx.Client, bench: Bench) -> None:  # noqa: F811
    calls = seat_calls(http.post(gateway + "/v1/chat/completions", timeout=60, json={
        "model": "bench/core", "messages": [{"role": "user", "content": "Review"}]}).json()["bench"])

    result = bench(gateway, "verdict", calls["alpha"], "--not-useful", "--note", "no", "--false", "the SQL is fine")
    assert result.returncode == 0, result.stderr
    assert bench(gateway, "verdict", calls["alpha"], "--useful").returncode == 0
    latest = lines_of(judging, calls["alpha"])[-1].verdict
    assert (latest.useful, latest.note, latest.false) == (True, "", ())

    anyio.run(lambda: mcp_call(net, gateway, "verdict", {"call": calls["beta"], "useful": False,
                                                         "false": ["retry is fine"], "real": ["cache"]}))
    text = anyio.run(lambda: mcp_call(net, gateway, "verdict", {"call": calls["beta"], "useful": True}))
    assert text == f"Recorded {calls['beta']}: useful, 0 real, 0 false."
    latest = lines_of(judging, calls["beta"])[-1].verdict
    assert (latest.useful, latest.real, latest.false) == (True, (), ())
    assert len(lines_of(judging, calls["beta"])) == 2


def test_mcp_pending_verdicts_lists_claims_and_groups_and_verdict_takes_them(
        judging: Path, gateway: str, net: Loopback, http: httpx.Client) -> None:
    calls = seat_calls(http.post(gateway + "/v1/chat/completions", timeout=60, json={
        "model": "bench/core", "messages": [{"role": "user", "content": "Review"}]}).json()["bench"])
    owed = json.loads(anyio.run(lambda: mcp_call(net, gateway, "pending_verdicts", {})))
    assert owed["owed_total"] == 3
    (panel,) = owed["panels"]
    assert {s["call"] for s in panel["seats"]} == set(calls.values())
    assert {s["alias"]: s["answer"] for s in panel["seats"]} == ANSWERS
    shared = [g for g in panel["groups"] if len(g["seats"]) == 2]
    assert len(shared) == 1 and set(shared[0]["calls"]) == {calls["alpha"], calls["beta"]}
    beta = next(s for s in panel["seats"] if s["alias"] == "beta")
    assert shared[0]["id"] in {c["group"] for c in beta["claims"]} and len(beta["claims"]) == 2

    text = anyio.run(lambda: mcp_call(net, gateway, "verdict", {
        "call": calls["beta"], "useful": False, "claims": [{"id": shared[0]["id"], "judgement": "false"}]}))
    assert text == f"Recorded {calls['beta']}: not useful, 0 real, 1 false."
    assert len(lines_of(judging, calls["alpha"])[-1].verdict.false) == 1  # on the other seat too
    after = json.loads(anyio.run(lambda: mcp_call(net, gateway, "pending_verdicts", {"collection": "core"})))
    assert after["owed_total"] == 2 and {s["alias"] for s in after["panels"][0]["seats"]} == {"alpha", "gamma"}
    assert next(g for g in after["panels"][0]["groups"] if g["id"] == shared[0]["id"])["judgement"] == "false"


def test_a_scoped_key_lists_only_its_collections_panels(home: Path, upstream: str, fake: FakeUpstream,
                                                        settings: Settings, net: Loopback, http: httpx.Client) -> None:
    seed_judging(home, upstream, fake)

    async def make() -> dict[str, str]:
        async with Database(settings.store_target) as db:
            return {name: (await gateway_keys.create(db, f"{name}-key", scope))[1]
                    for name, scope in (("core", ["core"]), ("other", ["other"]), ("all", None))}

    keys = anyio.run(make)
    base = serve_gateway(net, settings, require_keys=True)
    for name, collection in (("core", "core"), ("other", "other"), ("all", "core")):
        openai_sdk(net, base, api_key=keys[name]).chat.completions.create(
            model=f"bench/{collection}", messages=[{"role": "user", "content": f"asked by {name}"}])

    def panels_for(name: str, **params: str) -> httpx.Response:
        return http.get(base + "/bench/panels", params=params, headers={"Authorization": f"Bearer {keys[name]}"})

    core = panels_for("core").json()
    assert {p["collection"] for p in core["panels"]} == {"bench/core"} and len(core["panels"]) == 2
    assert {p["asked_by"] for p in core["panels"]} == {"core-key", "all-key"}
    assert core["owed_total"] == 6  # alpha, beta and gamma on each of its two panels
    other = panels_for("other").json()
    assert [p["collection"] for p in other["panels"]] == ["bench/other"]
    assert other["owed_total"] == sum(p["owed"] for p in other["panels"])
    assert len(panels_for("all").json()["panels"]) == 3
    assert panels_for("core", collection="other").status_code == 403
    count = http.get(base + "/bench/inbox/count", headers={"Authorization": f"Bearer {keys['other']}"})
    assert count.json() == {"owed": other["owed_total"]}
    # paging: one at a time, newest first, to the end
    first = panels_for("core", limit="1").json()
    second = panels_for("core", limit="1", before=first["next"]).json()
    assert [first["panels"][0]["id"], second["panels"][0]["id"]] == [p["id"] for p in core["panels"]]
    assert second["next"] is None
    assert panels_for("core", before=other["panels"][0]["id"]).status_code == 400  # not one it can see
    # MCP with the same key: pending_verdicts lists only its collections' seats
    owed = json.loads(anyio.run(lambda: mcp_call(net, base, "pending_verdicts", {},
                                                 headers={"Authorization": f"Bearer {keys['other']}"})))
    assert {p["collection"] for p in owed["panels"]} == {"bench/other"} and owed["owed_total"] == other["owed_total"]


def test_a_merged_reply_carries_the_claims_and_lists_the_lone_ones(judging: Path, gateway: str, net: Loopback,
                                                                  fake: FakeUpstream) -> None:
    for alias, text in ANSWERS.items():  # whoever merges says so; every seat says its own answer
        fake.responders[alias] = lambda body, text=text: {"role": "assistant", "content": (
            "Merged: the cache never expires." if "# The answers" in str(body["messages"]) else text)}
    reply = openai_sdk(net, gateway).chat.completions.create(
        model="bench/core:merged", messages=[{"role": "user", "content": "Review"}])
    bench_field = reply.model_extra["bench"]
    assert bench_field["reply"] == "merged"
    claims = bench_field["claims"]
    calls = seat_calls(bench_field)
    shared = shared_group({"claims": claims})
    assert set(shared["calls"]) == {calls["alpha"], calls["beta"]} and shared["judgement"] is None
    content = reply.choices[0].message.content or ""
    assert content.startswith("Merged: the cache never expires.")
    lone = [g for g in claims if len(g["seats"]) == 1]
    assert len(lone) == 3
    for group in lone:
        assert f"- {group['text']} (" in content and f"claim `{group['id']}`" in content
    assert shared["text"] not in content.split("Claims only one seat made", 1)[1]


@pytest.mark.anyio
async def test_the_stdio_face_passes_the_client_and_the_claims_through(judging: Path, gateway: str,
                                                                     net: Loopback) -> None:
    from benchwarmers_mcp.client import ServerClient, ServerConfig
    from benchwarmers_mcp.mcp.stdio import AGENT, RemoteTools
    from benchwarmers_mcp.mcp.tools import AskArgs, PendingArgs, Progress, VerdictArgs, pending_text

    async def quiet(value: float, total: float | None, message: str | None) -> None:
        return None

    async with ServerClient(ServerConfig(url=gateway), agent=f"{AGENT}/{__version__}",
                            transport=net.transport(httpx)) as server:
        tools = RemoteTools(server)
        _, bench_field = await tools.ask(AskArgs(collection="core", prompt="over stdio"), None, Progress(quiet),
                                         "claude-code/2.1.3")
        listed = await server.get("/bench/panels", {"source": "mcp"})
        assert [(p["id"], p["client"]) for p in listed["panels"]] == [(bench_field["panel"], "claude-code/2.1.3")]
        owed = json.loads(await pending_text(tools, PendingArgs(), None))
        shared = next(g for g in owed["panels"][0]["groups"] if len(g["seats"]) == 2)
        calls = seat_calls(bench_field)
        recorded, written = await tools.verdict(VerdictArgs.model_validate(
            {"call": calls["gamma"], "useful": True, "claims": [{"id": shared["id"], "judgement": "real"}]}), None)
    assert written and recorded["real"] == []  # gamma did not make that claim: its own list is untouched
    assert lines_of(judging, calls["alpha"])[-1].verdict.real and lines_of(judging, calls["beta"])[-1].verdict.real
