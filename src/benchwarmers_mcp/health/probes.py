"""Probes: the cheapest call that proves a model is alive, and what a few more calls measure.

Every probe caps its output (16 to 64 tokens) and asks for reasoning off or minimal where the
model is known or named to reason (``reasoning_effort`` "minimal", which each provider maps:
OpenAI chat passes it with ``max_completion_tokens``, Responses sends ``reasoning.effort``,
Anthropic sends no ``thinking``, Gemini ``thinkingBudget: 0``, Ollama ``think: false``). A model that
refuses one of those parameters (a 400 naming it) is asked once more without it, and the quirk is
remembered, so its next probe is one call again. Probes go through the model caller like every call
(paced, in the ledger as ``caller=probe, purpose=measurement``) and each lands in ``probes``.

Kinds: ``availability`` (one "ready"), ``speed`` (3 tiny and 3 large, ~18 KB in), ``capabilities``
(tools: a ``get_time`` function; reasoning: "What is 9*7?"; only positives are learned, as facts of
the ``learned`` source, so the user's say still wins), and ``confirm`` / ``retry`` / ``onboarding``
for the retire rules, ``bench model retry`` and onboarding. A ``confirm`` (or ``witness``) call is
sent even while its connection is paused (``CallInfo.past_pause``).

Not probed: ``served_as`` (which model a router actually served); a probe's answer does not say it
in a way every API shares, so it is left to the ledger.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any

from benchwarmers_mcp.clock import iso
from benchwarmers_mcp.context import CallInfo, Context
from benchwarmers_mcp.errors import NotFound, ProviderError
from benchwarmers_mcp.health import alerts
from benchwarmers_mcp.health.classify import classify, safe_detail, worst
from benchwarmers_mcp.messages import Answer, ModelRequest, Tool, user
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store.health import ProbeRow
from benchwarmers_mcp.store.models import ModelRecord

READY = "Reply with exactly one word: ready"
SUMMARISE = "Summarise these settings in one short sentence."
NINE_SEVENS = "What is 9*7? Think it through, then answer with the number."
WHAT_TIME = "What time is it now? Call the get_time tool to find out."
GET_TIME = Tool("get_time", "The current time, as ISO 8601 text.", {"type": "object", "properties": {}})
CAPS = {"ready": 16, "tiny": 16, "large": 48, "tools": 64, "reasoning": 64}
TIMEOUTS = {"ready": 90.0, "tiny": 90.0, "large": 180.0, "tools": 90.0, "reasoning": 120.0}
PLANS: dict[str, tuple[tuple[str, int], ...]] = {
    "availability": (("ready", 1),), "confirm": (("ready", 1),), "retry": (("ready", 1),),
    "speed": (("tiny", 3), ("large", 3)), "onboarding": (("tiny", 2), ("large", 2)),
    "capabilities": (("tools", 1), ("reasoning", 1)), "witness": (("ready", 1),),
}
KINDS = tuple(PLANS)
PROBE_OPTIONS = ("max_tokens", "max_completion_tokens", "reasoning_effort", "temperature", "top_p", "top_k")
INFO = CallInfo(caller="probe", purpose="measurement", key_name="local")
# the one confirming call of a failure: sent even when that failure paused its connection (a 402 or
# 403 pauses the whole connection for an hour, and must still be seen twice before a model retires)
CONFIRM_INFO = CallInfo(caller="probe", purpose="measurement", key_name="local", past_pause=True)
CAPABILITY_PROMPTS = ("tools", "reasoning")
REASONS_BY_NAME = re.compile(
    r"(^|[/:_-])(o[134](-mini|-pro)?|gpt-5[\w.-]*|gpt-oss[\w.-]*|deepseek-r1[\w.-]*|deepseek-reasoner|qwq[\w.-]*"
    r"|qwen3[\w.-]*|magistral[\w.-]*|gemini-(2\.5|3)[\w.-]*|claude-[\w.-]*(thinking)|grok-(3-mini|4)[\w.-]*"
    r"|[\w.-]*(thinking|reasoning|reasoner)[\w.-]*)($|[/:_-])", re.I)
PARAM_WORDS = re.compile(r"reasoning|thinking|\bthink\b|budget|effort|max_tokens|max_completion_tokens"
                         r"|max_output_tokens|maxoutputtokens|num_predict|unsupported (parameter|value)|unrecognized"
                         r"|unknown (parameter|field|argument)|extra (inputs|fields)|additional properties", re.I)


def large_prompt() -> str:
    """About 18 KB: 400 generated settings to summarise."""
    lines = [f"setting_{i:03d} = value_{i:03d}  # generated option {i:03d} of 400, left at its default"
             for i in range(400)]
    return SUMMARISE + "\n\n" + "\n".join(lines)


PROMPTS = {"ready": READY, "tiny": READY, "large": large_prompt(), "tools": WHAT_TIME, "reasoning": NINE_SEVENS}


@dataclass(frozen=True)
class Quirks:
    """What a model's API refused before: send its cap under another name, or no reasoning option."""

    cap: str | None = None
    no_reasoning: bool = False

    @classmethod
    def of(cls, value: Any) -> Quirks:
        value = value if isinstance(value, dict) else {}
        return cls(value.get("cap"), bool(value.get("no_reasoning")))

    def as_dict(self) -> dict[str, Any]:
        return {"cap": self.cap, "no_reasoning": self.no_reasoning}


def thinks(model: ModelRecord, known: dict[str, Any]) -> bool:
    """Known to reason (a fact from any source: the catalog, a probe), asked to by its options, or
    named like a model that does."""
    return bool(known.get("reasoning")) or "reasoning_effort" in model.options or bool(
        REASONS_BY_NAME.search(model.served))


def probe_options(api: str, prompt: str, reasoning: bool, quirks: Quirks) -> dict[str, Any]:
    """The options of one probe call: an output cap, and reasoning as low as the API allows."""
    cap_name = quirks.cap or ("max_completion_tokens" if api == "chat" and reasoning else "max_tokens")
    options: dict[str, Any] = {cap_name: CAPS[prompt]}
    if not quirks.no_reasoning and (reasoning or prompt == "reasoning"):
        options["reasoning_effort"] = "low" if prompt == "reasoning" else "minimal"
    return options


def probe_request(model: ModelRecord, api: str, prompt: str, reasoning: bool, quirks: Quirks) -> ModelRequest:
    tools = (GET_TIME,) if prompt == "tools" else ()
    return ModelRequest(model.served, (user(PROMPTS[prompt]),), tools=tools, tool_choice="auto" if tools else None,
                        options=probe_options(api, prompt, reasoning, quirks))


def adjusted(quirks: Quirks, options: dict[str, Any], error: BaseException) -> Quirks | None:
    """New quirks when ``error`` is the API refusing one of the probe's own parameters, else None."""
    if not isinstance(error, ProviderError) or error.upstream_status not in (400, 422):
        return None
    message = error.message.lower()
    if not PARAM_WORDS.search(message):
        return None
    new = quirks
    if "max_tokens" in options and "max_completion_tokens" in message:
        new = replace(new, cap="max_completion_tokens")
    elif "max_completion_tokens" in options and "max_completion_tokens" in message:
        new = replace(new, cap="max_tokens")
    if "reasoning_effort" in options and (new == quirks or re.search(r"reasoning|think|budget|effort", message)):
        new = replace(new, no_reasoning=True)
    return None if new == quirks else new


def answered(answer: Answer | None) -> bool:
    """Text or a tool call; or cut by the cap while still thinking (it is alive, just slow to say so)."""
    if answer is None:
        return False
    if answer.text.strip() or answer.tool_calls:
        return True
    thought = bool(answer.reasoning) or bool(answer.usage and answer.usage.reasoning_tokens)
    return answer.finish_reason == "length" and thought


@dataclass
class Run:
    seconds: float
    answer: Answer | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and answered(self.answer)

    @property
    def failure(self) -> str | None:
        if self.ok:
            return None
        return classify(self.error) if self.error is not None else "empty"


@dataclass
class Prober:
    """Runs probes for one context: the caller, the store, the clock (``ctx.clock``)."""

    ctx: Context
    known: dict[str, Any] = field(default_factory=dict)  # the model's effective facts
    quirks: Quirks = field(default_factory=Quirks)

    async def probe(self, model: ModelRecord, kind: str = "availability",
                    only: tuple[str, ...] | None = None) -> list[ProbeRow]:
        """Run one probe of ``kind`` now (``only``: just these of its prompts), record its rows, and
        act on an answer (alerts cleared)."""
        if kind not in PLANS:
            raise NotFound(f"no probe kind {kind!r}; kinds: {', '.join(KINDS)}")
        endpoint = await endpoint_store.get(self.ctx.db, model.endpoint)
        self.known = (await health_store.known_facts(self.ctx.db, [model.alias])).get(model.alias, {})
        self.quirks = Quirks.of(await health_store.quirks(self.ctx.db, model.alias))
        info = CONFIRM_INFO if kind in ("confirm", "witness") else INFO
        rows = []
        for prompt, n in PLANS[kind]:
            if only is not None and prompt not in only:
                continue
            runs = [await self._call(model, endpoint.api, prompt, info) for _ in range(n)]
            rows.append(await self._record(model, endpoint.connection_name, kind, prompt, runs,
                                           secrets=(self.ctx.keys.get(endpoint.key_name) or "",)))
            if kind in ("onboarding", "speed") and prompt == "tiny" and not any(r.ok for r in runs):
                break  # it does not answer the tiny prompt: the large one would say nothing more
        if any(r.answered for r in rows):
            await alerts.answered(self.ctx.db, model.alias, endpoint.connection_name, self.ctx.clock.now())
        return rows

    async def _call(self, model: ModelRecord, api: str, prompt: str, info: CallInfo) -> Run:
        bare = replace(model, options={k: v for k, v in model.options.items() if k not in PROBE_OPTIONS})
        for _ in range(2):
            request = probe_request(bare, api, prompt, thinks(model, self.known), self.quirks)
            run = await self._once(bare, request, TIMEOUTS[prompt], info)
            better = adjusted(self.quirks, request.options, run.error) if run.error is not None else None
            if better is None:
                return run
            self.quirks = better
            await health_store.save_quirks(self.ctx.db, model.alias, better.as_dict(), self.ctx.clock.now())
        return run

    async def _once(self, model: ModelRecord, request: ModelRequest, timeout: float, info: CallInfo) -> Run:
        started = time.monotonic()
        try:
            answer = await self.ctx.caller.complete(model, request, timeout=timeout, info=info)
        except ProviderError as e:
            return Run(time.monotonic() - started, error=e)
        return Run(time.monotonic() - started, answer)

    async def _record(self, model: ModelRecord, connection: str, kind: str, prompt: str, runs: list[Run],
                      secrets: tuple[str, ...]) -> ProbeRow:
        good = [r for r in runs if r.ok]
        failures = [r for r in runs if not r.ok]
        classes = [c for c in (r.failure for r in failures) if c]
        worst_class = worst(classes)
        detail = next((_words(r) for r in failures if r.failure == worst_class), "")
        row = ProbeRow(
            at=self.ctx.clock.now(), alias=model.alias, connection=connection, kind=kind, prompt=prompt, n=len(runs),
            answered=len(good), refused=sum(1 for r in failures if _not_sent(r)),
            errors=sum(1 for c in classes if c != "timeout"), timeouts=classes.count("timeout"),
            failure=worst_class, detail=safe_detail(detail, secrets), **_speed(good),
            tokens_in=sum(_usage(r, "input_tokens") for r in runs),
            tokens_out=sum(_usage(r, "output_tokens") for r in runs),
            reasoning=sum(_usage(r, "reasoning_tokens") for r in runs), learned=_learned(prompt, good))
        row = replace(row, id=await health_store.add_probe(self.ctx.db, row))
        if row.learned:
            evidence = f"a {kind} probe, {iso(row.at)}: " + ("it called the get_time tool" if "tools" in row.learned
                                                             else "it reasoned before answering")
            await health_store.learn_capabilities(self.ctx.db, model.alias,
                                                  [(fact, value, evidence) for fact, value in row.learned.items()])
            self.known.update(row.learned)
        return row


def _not_sent(run: Run) -> bool:
    """Refused by the bench before it went out (a rest, a pause, a limit)."""
    return isinstance(run.error, ProviderError) and "not sent" in run.error.message[:60]


def _words(run: Run) -> str:
    if run.error is not None:
        return getattr(run.error, "message", "") or str(run.error)
    finish = run.answer.finish_reason if run.answer else "none"
    return f"answered nothing (finish reason {finish})"


def _usage(run: Run, name: str) -> int:
    usage = run.answer.usage if run.answer else None
    return int(getattr(usage, name)) if usage else 0


def _speed(good: list[Run]) -> dict[str, Any]:
    if not good:
        return {"p50_s": None, "p95_s": None, "min_s": None, "max_s": None, "chars_per_s": None,
                "tokens_per_s": None}
    seconds = sorted(r.seconds for r in good)
    total = sum(seconds) or 1e-9
    chars = sum(len(r.answer.text) for r in good if r.answer)
    tokens = sum(_usage(r, "output_tokens") for r in good)
    rank = max(0, min(len(seconds) - 1, int(round(0.95 * len(seconds) + 0.5)) - 1))
    return {"p50_s": round(statistics.median(seconds), 3), "p95_s": round(seconds[rank], 3),
            "min_s": round(seconds[0], 3), "max_s": round(seconds[-1], 3), "chars_per_s": round(chars / total, 1),
            "tokens_per_s": round(tokens / total, 1) if tokens else None}


def _learned(prompt: str, good: list[Run]) -> dict[str, Any]:
    """Positives only: a tool call proves tools; reasoning text, a <think> block or reasoning tokens
    prove reasoning. A probe that saw neither teaches nothing."""
    if prompt == "tools" and any(r.answer and r.answer.tool_calls for r in good):
        return {"tools": True}
    if prompt == "reasoning" and any(r.answer and (r.answer.reasoning or "<think>" in r.answer.text or (
            r.answer.usage and r.answer.usage.reasoning_tokens)) for r in good):
        return {"reasoning": True}
    return {}
