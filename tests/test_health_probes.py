"""Issue 16.1: probes are the cheapest call that proves life: output capped, reasoning off or
minimal, paced and in the ledger as measurement, their history in the store."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp.errors import AuthOrBilling, ModelGone, RateLimited, UpstreamFailure, UpstreamTimeout
from benchwarmers_mcp.health import jobs
from benchwarmers_mcp.health.classify import classify, safe_detail
from benchwarmers_mcp.health.probes import Prober
from benchwarmers_mcp.store import facts, ledger, models
from benchwarmers_mcp.store import health as health_store
from tests.kits.health import ManualClock, Scripted, answer_for, failure, health_ctx, seat

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("api", "served", "check"), [
    ("chat", "gpt-5-mini", lambda b: b["max_completion_tokens"] == 16 and b["reasoning_effort"] == "minimal"
     and "max_tokens" not in b),
    ("chat", "llama-3.3-70b", lambda b: b["max_tokens"] == 16 and "reasoning_effort" not in b),
    ("responses", "o4-mini", lambda b: b["max_output_tokens"] == 16 and b["reasoning"] == {"effort": "minimal"}),
    ("anthropic", "claude-sonnet-4", lambda b: b["max_tokens"] == 16 and "thinking" not in b),
    ("gemini", "gemini-2.5-flash", lambda b: b["generationConfig"]["maxOutputTokens"] == 16
     and b["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}),
    ("ollama", "qwen3:8b", lambda b: b["options"]["num_predict"] == 16 and b["think"] is False),
])
async def test_a_probe_caps_output_and_reasoning_in_each_api(home: Path, api, served, check) -> None:
    upstream = Scripted()
    async with health_ctx(home, upstream, ManualClock()) as ctx:
        [model] = await seat(ctx.db, "up", served, api=api)
        [row] = await Prober(ctx).probe(model, "availability")
    [body] = upstream.bodies()
    assert check(body), body
    assert row.answered == 1 and row.failure is None and row.kind == "availability"


async def test_probes_are_paced_calls_in_the_ledger_marked_as_measurement(home: Path) -> None:
    upstream = Scripted()
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        [model] = await seat(ctx.db, "up", "m1")
        await Prober(ctx).probe(model, "speed")
        rows = await ledger.rows(ctx.db)
        history = await health_store.probes(ctx.db, alias="m1")
    assert len(rows) == 6 and {(r.caller, r.purpose) for r in rows} == {("probe", "measurement")}
    assert [(h.prompt, h.n, h.answered) for h in history] == [("large", 3, 3), ("tiny", 3, 3)]
    large = history[0]
    assert large.p50_s is not None and large.p95_s is not None and large.chars_per_s and large.tokens_per_s
    assert max(len(b["messages"][0]["content"]) for b in upstream.bodies()) > 17_000  # the ~18 KB prompt
    assert {b["max_tokens"] for b in upstream.bodies()} == {16, 48}


async def test_a_refused_parameter_is_dropped_once_and_remembered(home: Path) -> None:
    upstream = Scripted(queues={"o3": [failure(400, "Unsupported parameter: 'reasoning_effort' is not supported "
                                                    "with this model.")]})
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        [model] = await seat(ctx.db, "up", "o3")
        [first] = await Prober(ctx).probe(model, "availability")
        [second] = await Prober(ctx).probe(model, "availability")
        quirks = await health_store.quirks(ctx.db, "o3")
    bodies = upstream.bodies()
    assert len(bodies) == 3  # the refusal, the call without it, then one call next time
    assert bodies[0]["reasoning_effort"] == "minimal" and "reasoning_effort" not in bodies[1]
    assert "reasoning_effort" not in bodies[2] and bodies[2]["max_completion_tokens"] == 16
    assert first.answered and second.answered and quirks["no_reasoning"] is True


async def test_a_reasoning_model_cut_by_the_cap_while_thinking_is_alive(home: Path) -> None:
    cut = httpx.Response(200, json={"choices": [{"message": {"content": "", "reasoning_content": "Let me see"},
                                                 "finish_reason": "length"}],
                                    "usage": {"prompt_tokens": 9, "completion_tokens": 16,
                                              "completion_tokens_details": {"reasoning_tokens": 16}}})
    upstream = Scripted(always={"deepseek-r1": cut})
    async with health_ctx(home, upstream, ManualClock()) as ctx:
        [model] = await seat(ctx.db, "up", "deepseek-r1")
        [row] = await Prober(ctx).probe(model, "availability")
    assert row.answered == 1 and row.reasoning == 16


async def test_capability_probes_learn_positives_only_as_learned_facts(home: Path) -> None:
    upstream = Scripted(queues={"m1": [answer_for("chat", "", tool="get_time"),
                                       answer_for("chat", "63", reasoning="9*7 is 63")],
                                "m2": [answer_for("chat", "It is noon."), answer_for("chat", "63")]})
    async with health_ctx(home, upstream, ManualClock()) as ctx:
        m1, m2 = await seat(ctx.db, "up", "m1", "m2")
        await Prober(ctx).probe(m1, "capabilities")
        await Prober(ctx).probe(m2, "capabilities")
        learned = await health_store.learned_facts(ctx.db)
        rows = await facts.rows_for(ctx.db, ["m1"])
        tools = (await models.get(ctx.db, "m1")).tools, (await models.get(ctx.db, "m2")).tools
    assert learned["m1"] == {"tools": True, "reasoning": True} and not learned.get("m2")
    assert {(r.fact, r.source) for r in rows["m1"]} == {("tools", "learned"), ("reasoning", "learned")}
    assert "get_time" in next(r.evidence for r in rows["m1"] if r.fact == "tools")
    assert tools == (True, None)  # the row carries the effective fact
    tool_body, reasoning_body = upstream.bodies("m1")
    assert tool_body["tools"][0]["function"]["name"] == "get_time" and tool_body["max_tokens"] == 64
    assert reasoning_body["reasoning_effort"] == "low" and reasoning_body["max_tokens"] == 64


async def test_a_learned_capability_never_overrides_what_the_user_set(home: Path) -> None:
    upstream = Scripted(queues={"m1": [answer_for("chat", "", tool="get_time")]})
    async with health_ctx(home, upstream, ManualClock()) as ctx:
        [m1] = await seat(ctx.db, "up", "m1")
        await models.update(ctx.db, "m1", tools=False)  # the user says: no tools here
        [row] = await Prober(ctx).probe(m1, "capabilities", only=("tools",))
        shown = facts.effective((await facts.rows_for(ctx.db, ["m1"]))["m1"])
        record = await models.get(ctx.db, "m1")
    assert row.learned == {"tools": True}
    assert shown["tools"].winner.source == "user" and [r.source for r in shown["tools"].under] == ["learned"]
    assert record.tools is False and len(upstream.bodies("m1")) == 1  # ``only``: no reasoning probe


async def test_the_capabilities_job_asks_only_what_no_source_knows(home: Path) -> None:
    upstream = Scripted(always={"m1": answer_for("chat", "", tool="get_time")})
    async with health_ctx(home, upstream, ManualClock()) as ctx:
        m1, m2 = await seat(ctx.db, "up", "m1", "m2")
        await models.update(ctx.db, "m2", tools=True)
        async with ctx.db.transaction() as tx:
            await facts.learn(tx, "m2", "reasoning", False, "its catalog entry")
        report = await jobs.capabilities(ctx)
        second = await jobs.capabilities(ctx)
    assert report["probed"] == 1 and set(report["results"]["m1"]) == {"tools", "reasoning"}
    assert upstream.count("m2") == 0  # tools set by the user, reasoning known: nothing to ask
    assert second["results"] == {"m1": {"reasoning": "answered"}}  # tools learned; reasoning still unknown


async def test_a_failed_probe_records_its_class_and_the_providers_words_without_a_key(home: Path) -> None:
    key = "sk-live-" + "a1" * 20
    upstream = Scripted(always={"gone": failure(404, f"The model gone does not exist (key {key})")})
    async with health_ctx(home, upstream, ManualClock()) as ctx:
        [model] = await seat(ctx.db, "up", "gone")
        [row] = await Prober(ctx).probe(model, "availability")
    assert row.answered == 0 and row.failure == "structural" and "does not exist" in row.detail
    assert key not in row.detail and len(row.detail) <= 300


@pytest.mark.parametrize(("error", "expected"), [
    (ModelGone("upstream 404: no such model", upstream_status=404), "structural"),
    (UpstreamFailure("upstream 400: The model `x` has been decommissioned", upstream_status=400), "structural"),
    (UpstreamFailure("upstream 400: bad temperature", upstream_status=400), "other"),
    (AuthOrBilling("upstream 402: this model requires a paid plan", upstream_status=402), "paywalled"),
    (AuthOrBilling("upstream 402: monthly quota exceeded", upstream_status=402), "capacity"),
    (AuthOrBilling("upstream 403: you do not have access to this model", upstream_status=403), "entitlement"),
    (AuthOrBilling("upstream 403: invalid API key", upstream_status=403), "signin"),
    (AuthOrBilling("upstream 401: unauthorized", upstream_status=401), "signin"),
    (AuthOrBilling("not sent: connection x is paused until ... after the key was refused"), "signin"),
    (RateLimited("upstream 429: slow down", upstream_status=429), "capacity"),
    (UpstreamFailure("upstream 503: overloaded", upstream_status=503), "capacity"),
    (UpstreamFailure("upstream 500: oops", upstream_status=500), "other"),
    (UpstreamTimeout("no answer in 90 s"), "timeout"),
])
def test_failure_classes(error, expected) -> None:
    assert classify(error) == expected


def test_the_providers_words_are_cut_and_keys_taken_out() -> None:
    text = safe_detail("bad key AIzaSyA1234567890abcdefghij and " + "x" * 400, ("my-secret",))
    assert "AIza" not in text and len(text) == 300
    assert safe_detail("key my-secret refused", ("my-secret",)) == "key [key] refused"
    assert safe_detail("model meta-llama/llama-3.3-70b-instruct:free not found") \
        == "model meta-llama/llama-3.3-70b-instruct:free not found"


def test_reasoning_effort_turns_thinking_on_with_a_budget_in_each_native_api() -> None:
    from benchwarmers_mcp.messages import ModelRequest, user
    from benchwarmers_mcp.providers import anthropic, gemini, ollama

    asked = ModelRequest("m", (user("hi"),), options={"reasoning_effort": "low", "max_tokens": 64, "temperature": 0.2})
    claude = anthropic.build_body(asked, stream=False)
    assert claude["thinking"] == {"type": "enabled", "budget_tokens": 1024} and claude["max_tokens"] == 1088
    assert "temperature" not in claude
    assert gemini.build_body(asked)["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024,
                                                                              "includeThoughts": True}
    assert ollama.build_body(asked, stream=False)["think"] is True
    plain = ModelRequest("m", (user("hi"),), options={"max_tokens": 64})
    assert "thinking" not in anthropic.build_body(plain, stream=False) and "think" not in ollama.build_body(
        plain, stream=False) and "thinkingConfig" not in gemini.build_body(plain)["generationConfig"]
