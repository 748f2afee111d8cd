"""The usage ledger against the upstreams' own counts: one collection mixing all five APIs (chat
completions, Responses, Anthropic, Gemini, Ollama), panels whole and streamed, failures retried
and not, and never the prompt in the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import anyio
import openai
import pytest

from benchwarmers_mcp.store import ledger
from tests.fakes.anthropic_upstream import FakeAnthropic
from tests.fakes.gemini_upstream import FakeGemini
from tests.fakes.native import Reply
from tests.fakes.ollama_upstream import FakeOllama
from tests.fakes.responses_upstream import FakeResponses
from tests.kits.loopback import Loopback
from tests.kits.seed import seed
from tests.kits.store import store_of

SECRET = "the-prompt-marker-7f3a"


@pytest.fixture
def fakes() -> dict:
    return {"anth": FakeAnthropic(), "gem": FakeGemini(), "oll": FakeOllama(), "resp": FakeResponses()}


@pytest.fixture
def bench(home: Path, upstream: str, fakes: dict, net: Loopback) -> Iterator[None]:
    with ExitStack() as stack:
        urls = {name: stack.enter_context(net.serving(f.app())) for name, f in fakes.items()}
        seed(home, base_url=upstream, served={"gpt": "gpt"}, collections={}, endpoint="chat")
        seed(home, base_url=urls["anth"], served={"claude": "claude", "claude-busy": "claude-busy?fail=429"},
             collections={}, api="anthropic", endpoint="anth")
        seed(home, base_url=urls["gem"] + "/v1beta", served={"gemini": "gemini", "gemini-down": "gemini-down?fail=500"},
             collections={}, api="gemini", endpoint="gem")
        seed(home, base_url=urls["oll"], served={"llama": "llama", "llama-gone": "llama-gone?fail=404"},
             collections={}, api="ollama", endpoint="oll")
        seed(home, base_url=urls["resp"] + "/v1", served={"o-mini": "o-mini"}, api="responses", endpoint="resp",
             collections={"mixed": ["gpt", "claude", "gemini", "llama", "o-mini"],
                          "flaky": ["claude-busy", "gemini-down", "llama-gone"]})
        yield


def client(net: Loopback, base: str) -> openai.OpenAI:
    return openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="anything", max_retries=0)


async def _rows(home: Path) -> list[ledger.UsageRow]:
    async with store_of(home) as db:
        return await ledger.rows(db)


def test_a_collection_mixes_every_api_and_the_ledger_matches_each_upstream(bench, home, gateway, fake, fakes, net):
    fakes["resp"].script["o-mini"].append(Reply("reasoned answer", thinking="let me think about it " * 3))
    whole = client(net, gateway).chat.completions.create(
        model="bench/mixed", messages=[{"role": "user", "content": f"Review {SECRET} please"}])
    seats = whole.model_extra["bench"]["seats"]
    assert {s["alias"]: s["status"] for s in seats} == dict.fromkeys(["gpt", "claude", "gemini", "llama", "o-mini"],
                                                                      "ok")
    stream = client(net, gateway).chat.completions.create(
        model="bench/mixed", stream=True, messages=[{"role": "user", "content": f"Again {SECRET}"}])
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert all(f"answer from {name}" in text for name in ("gpt", "claude", "gemini", "llama", "o-mini"))
    flaky = client(net, gateway).chat.completions.create(
        model="bench/flaky", messages=[{"role": "user", "content": SECRET}])
    members = [s for s in flaky.model_extra["bench"]["seats"] if s["seat"] == "member"]
    assert {s["alias"]: s["status"] for s in members} == dict.fromkeys(["claude-busy", "gemini-down", "llama-gone"],
                                                                        "error")

    rows = anyio.run(_rows, home)
    upstreams = {"chat": fake, **fakes}
    for connection, upstream in upstreams.items():
        mine = [r for r in rows if r.connection == connection]
        assert sum(r.attempts for r in mine) == len(upstream.calls), connection
        assert sum(r.tokens_in for r in mine) == sum(c.tokens_in for c in upstream.calls), connection
        assert sum(r.tokens_out for r in mine) == sum(c.tokens_out for c in upstream.calls), connection
    assert sum(r.reasoning for r in rows) == sum(c.reasoning for c in fakes["resp"].calls) > 0
    by_alias = {r.alias: r for r in rows}
    assert (by_alias["gemini-down"].status, by_alias["gemini-down"].attempts) == ("error", 3)  # 5xx retried twice
    assert (by_alias["claude-busy"].status, by_alias["claude-busy"].attempts) == ("error", 1)  # a 40 s wait rests
    assert (by_alias["llama-gone"].status, by_alias["llama-gone"].attempts) == ("error", 1)
    assert {(r.caller, r.purpose) for r in rows} == {("gateway", "panel")}
    assert all(SECRET not in repr(r) for r in rows), "the ledger never holds the prompt"
