"""One upstream call: find the model's endpoint and key, pace it, send it (with retries), bound it
in time, and settle it: the usage ledger row and what the response taught about limits, in one
transaction. Every model call in the product goes through ``ModelCaller``.

The hot path with nothing limiting a connection is one store read before the call (the endpoint
and the gate, in one query) and one transaction after it (the ledger row), as before pacing.

Upstream text enters the product here: answers (whole and streamed), errors and the last response
are masked with what the call sent (``masking.Secrets``) before anything else sees them. A call is
timed from when the pacer lets it go, and each retry is let go by the pacer again. Wall-clock
moments (windows, rests, the ledger's ``t``) are read from ``clock`` (the system's unless a test
moves one); durations from ``time.monotonic``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import cast

import anyio
import httpx

from benchwarmers_mcp.clock import Clock, SystemClock
from benchwarmers_mcp.context import CallInfo
from benchwarmers_mcp.errors import AuthOrBilling, NotFound, ProviderError, UpstreamFailure, UpstreamTimeout
from benchwarmers_mcp.messages import (
    Answer,
    AnswerBuilder,
    Finish,
    ModelRequest,
    StreamEvent,
    Usage,
    estimate_request_tokens,
)
from benchwarmers_mcp.metrics import Metrics
from benchwarmers_mcp.providers import Connection, Provider, make_provider
from benchwarmers_mcp.providers.llm_client import shared_key
from benchwarmers_mcp.store import Database, clients, ledger
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.limits import Gate, Settlement
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.masking import Secrets, StreamMask
from benchwarmers_mcp.upstream.pacing import (
    Admission,
    Pacer,
    PacingPolicy,
    Refused,
    Seen,
    account_problem,
    consequences,
    retry_wait,
)

ANONYMOUS = CallInfo()  # a call with no caller named: the gateway's, for no key


def status_of(error: BaseException | None, answer: Answer | None) -> str:
    if error is None:
        return "ok" if answer and (answer.text.strip() or answer.tool_calls) else "empty"
    if isinstance(error, UpstreamTimeout):
        return "timeout"
    return "error"


@dataclass
class _Call:
    """One call in progress: what the settlement needs at the end."""

    model: ModelRecord
    gate: Gate
    info: CallInfo
    deadline: float  # time.monotonic()
    tokens: int  # the request's estimate, what a token limit counts
    key: str | None
    secrets: Secrets  # what it sends that must never come back out
    asked: float = field(default_factory=time.monotonic)
    sent: float | None = None  # epoch: when its last attempt was let go (the ledger's t)
    clock: float | None = None  # monotonic: when its first attempt was let go
    tickets: list[int] = field(default_factory=list)
    attempts: int = 0
    response: httpx.Response | None = None
    seen_at: float | None = None  # epoch: when the last response's headers came
    wall: Callable[[], float] = time.time  # the caller's clock
    api: str = "chat"  # the provider it goes through: the endpoint's API, or ``llm`` (store/clients.py)

    def observe(self, response: httpx.Response) -> None:
        self.response, self.seen_at = response, self.wall()

    def let_go(self, admission: Admission) -> None:
        self.sent = admission.at
        if self.clock is None:
            self.clock = time.monotonic()
        if admission.ticket is not None:
            self.tickets.append(admission.ticket)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class ModelCaller:
    def __init__(self, db: Database, keys: KeyStore, client: httpx.AsyncClient,
                 policy: PacingPolicy | None = None, *, transport: httpx.AsyncBaseTransport | None = None,
                 clock: Clock | None = None, metrics: Metrics | None = None, calls_by: str = "builtin") -> None:
        """``transport``: the client's own, which model calls are sent to directly
        (``providers.base.Connection``); None sends them through the client. ``clock``: the wall
        clock of pacing and settling (the system's when None). ``metrics``: the app's (``metrics.py``).
        ``calls_by``: the client that speaks to upstreams unless Settings chose another
        (``store/clients.py``: ``builtin`` or ``llm``)."""
        self.db = db
        self.keys = keys
        self.client = client
        self.transport = transport
        self.policy = policy or PacingPolicy()
        self.clock = clock or SystemClock()
        self.metrics = metrics or Metrics()
        self.pacer = Pacer(db, self.policy, self.clock, self.metrics)
        self.calls_by = calls_by
        self._secrets: dict[tuple[str | None, str | None, tuple[tuple[str, str], ...]], Secrets] = {}

    async def gate_of(self, model: ModelRecord) -> Gate:
        gate = await limit_store.gate(self.db, model.endpoint, model.alias, self.clock.now())
        if gate is None:
            raise NotFound(f"no endpoint named {model.endpoint!r} (model {model.alias})")
        return gate

    async def held(self, model: ModelRecord, tokens: int, wait: float) -> ProviderError | None:
        """What a call to ``model`` of about ``tokens`` that may wait at most ``wait`` seconds
        (``CallInfo.wait``) would be refused with now, for having to wait longer; None when it would
        go (``Pacer.held``: nothing is sent or counted). A model whose endpoint is gone is None: its
        call says so."""
        gate = await limit_store.gate(self.db, model.endpoint, model.alias, self.clock.now())
        return None if gate is None else await self.pacer.held(gate, model.alias, tokens, wait)

    def secrets_for(self, endpoint: Endpoint, key: str | None) -> Secrets:
        """What an endpoint's calls send that must not come back out (its key, its header values)."""
        found = self._secrets.get(cached := (endpoint.key_name, key, tuple(endpoint.headers.items())))
        if found is None:
            if len(self._secrets) >= 256:
                self._secrets.clear()
            found = self._secrets[cached] = Secrets.for_endpoint(endpoint.key_name, key, endpoint.headers)
        return found

    def provider(self, call: _Call) -> Provider:
        endpoint = call.gate.endpoint
        connection = Connection(endpoint.base_url, call.key, self.client, dict(endpoint.headers), call.remaining(),
                                call.observe, self.transport, endpoint.api)
        return make_provider(call.api, connection)

    def request_for(self, model: ModelRecord, request: ModelRequest) -> ModelRequest:
        """The model's own served name and call options (its options win over the caller's)."""
        options = {**request.options, **{k: v for k, v in model.options.items() if not k.startswith("_")}}
        if model.max_output and (options.get("max_tokens") or 0) > model.max_output:
            options["max_tokens"] = model.max_output
        return ModelRequest(model.served, request.messages, request.system, request.tools, request.tool_choice,
                            request.parallel_tool_calls, request.response_format, options)

    async def _open(self, model: ModelRecord, request: ModelRequest, timeout: float, info: CallInfo) -> _Call:
        """Read the gate and admit the call, or settle it as refused (never sent) and raise."""
        gate = await self.gate_of(model)
        api = await clients.api_for(self.db, gate.endpoint.api, self.calls_by)
        key = self.keys.get(gate.endpoint.key_name)
        if key is None and api == "llm":  # a key kept by llm itself (its keys.json), masked as ours are
            key = shared_key(gate.endpoint.key_name)
        call = _Call(model, gate, info, time.monotonic() + timeout, estimate_request_tokens(request), key,
                     self.secrets_for(gate.endpoint, key), wall=self.clock.now, api=api)
        try:
            call.let_go(await self.pacer.admit(call.gate, model.alias, call.tokens, self.clock.now() + timeout,
                                               past_pause=info.past_pause, wait=info.wait))
        except Refused as refused:
            await self._settle(call, None, refused.error, refused=refused)
            raise refused.error from None
        except BaseException as e:
            await self._settle(call, None, e)
            raise
        return call

    async def _again(self, call: _Call, error: ProviderError) -> bool:
        """Wait, then admit another attempt of a call whose attempt failed: connection errors, 408,
        409, 5xx and a 429 with a short stated wait are retried (as often as the caller's policy
        allows) within the deadline. Each attempt is a request the pacer counts when it goes."""
        policy = self.policy if call.info.retries is None else replace(self.policy, retries=call.info.retries)
        wait = retry_wait(policy, error, call.attempts)
        if wait is None or wait >= call.remaining():
            return False
        await anyio.sleep(wait)
        try:
            call.let_go(await self.pacer.admit(call.gate, call.model.alias, call.tokens,
                                               self.clock.now() + call.remaining(), wait=call.info.wait))
        except Refused:
            return False  # no room for the retry before the deadline: the attempt's own error stands
        return True

    async def _complete_attempts(self, call: _Call, request: ModelRequest) -> Answer:
        while True:
            call.attempts += 1
            try:
                return await self.provider(call).complete(request)
            except ProviderError as e:
                call.secrets.error(e)
                if not await self._again(call, e):
                    raise

    def _classified(self, call: _Call, error: ProviderError) -> ProviderError:
        """A refused key or billing problem is reported as such, whatever status carried it."""
        if not isinstance(error, AuthOrBilling) and account_problem(error, self._seen(call)):
            return AuthOrBilling(error.message, upstream_status=error.upstream_status)
        return error

    @asynccontextmanager
    async def _bounded(self, call: _Call, timeout: float,
                       answer_of: Callable[[], Answer | None]) -> AsyncIterator[None]:
        """Bound the call by its deadline, report what escapes it in our terms (masked), and settle
        it whatever happens (shielded): the one ending both ``complete`` and ``stream`` share."""
        error: BaseException | None = None
        try:
            with anyio.fail_after(call.remaining()):
                yield
        except TimeoutError as e:
            error = UpstreamTimeout(f"no answer in {timeout:g} s")
            raise error from e
        except ProviderError as e:
            call.secrets.error(e)
            error = self._classified(call, e)
            if error is e:
                raise
            raise error from e
        except LookupError as e:
            error = UpstreamFailure(call.secrets.mask(str(e)))
            raise error from e
        except BaseException as e:
            error = e
            raise
        finally:
            await self._settle(call, answer_of(), error)

    async def complete(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                       info: CallInfo = ANONYMOUS) -> Answer:
        call = await self._open(model, request, timeout, info)
        answer: Answer | None = None
        async with self._bounded(call, timeout, lambda: answer):
            answer = await self._complete_attempts(call, self.request_for(model, request))
            if call.secrets:
                answer = call.secrets.answer(answer)
            return answer

    async def stream(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                     info: CallInfo = ANONYMOUS) -> AsyncGenerator[StreamEvent, None]:
        """Stream one call, bounded by ``timeout``; retried only before its first event. Its text is
        masked on the way (``StreamMask``: a key split across pieces too)."""
        call = await self._open(model, request, timeout, info)
        builder = AnswerBuilder()
        mask = StreamMask(call.secrets) if call.secrets else None
        request = self.request_for(model, request)
        # the attempts are read here, not through a generator of their own: every event of every
        # answer went through each generator between the socket and the turn
        async with self._bounded(call, timeout, builder.answer):
            while True:  # attempts: retried only before the first event
                call.attempts += 1
                started = False
                try:  # every provider's stream is an async generator function
                    stream = cast(AsyncGenerator[StreamEvent, None], self.provider(call).stream(request))
                    async with aclosing(stream) as events:
                        async for event in events:
                            started = True
                            if mask is None:
                                builder.add(event)
                                yield event
                                continue
                            for out in mask.feed(event):
                                builder.add(out)
                                yield out
                    break
                except ProviderError as e:
                    call.secrets.error(e)
                    if started or not await self._again(call, e):
                        raise
            for out in mask.end() if mask else ():
                builder.add(out)
                yield out

    def _seen(self, call: _Call) -> Seen:
        """The last response, masked like everything else upstream sent."""
        seen = Seen.of(call.response)
        if call.secrets and (seen.headers or seen.body):
            body = call.secrets.mask(seen.body.decode("utf-8", "replace")).encode() if seen.body else b""
            seen = replace(seen, headers=call.secrets.headers(seen.headers or {}), body=body)
        return seen

    async def _settle(self, call: _Call, answer: Answer | None, error: BaseException | None,
                      refused: Refused | None = None) -> None:
        """The call's ledger row and what it taught, written whole even when the call's task is
        cancelled meanwhile (``limits.settle``): nothing here awaits but that write."""
        usage = (answer.usage if answer else None) or Usage()
        if refused is not None:
            status = "refused"
        elif error is None or isinstance(error, ProviderError):
            status = status_of(error, answer)
        else:
            status = "cancelled"
        endpoint = call.gate.endpoint
        now = self.clock.now()
        row = ledger.UsageRow(
            alias=call.model.alias, connection=endpoint.connection_name, endpoint=endpoint.name,
            served=call.model.served, status=status, attempts=call.attempts, tokens_in=usage.input_tokens,
            tokens_out=usage.output_tokens, reasoning=usage.reasoning_tokens,
            seconds=round(time.monotonic() - (call.asked if call.clock is None else call.clock), 3),
            caller=call.info.caller, purpose=call.info.purpose, key_name=call.info.key_name,
            t=now if call.sent is None else call.sent)
        settlement = Settlement(row, tuple(call.tickets))
        if refused is not None:
            settlement.rest = refused.rest
        else:
            consequences(self.policy, settlement, call.gate, error, self._seen(call), call.seen_at or now)
        if answer is not None and answer.tool_calls and call.model.tools is not True:
            settlement.facts.append(("tools", True, f"answered with a tool call ({answer.tool_calls[0].name})"))
        await limit_store.settle(self.db, settlement)
        self.metrics.upstream(endpoint.connection_name, status, rested=settlement.rest is not None,
                              paused=settlement.pause is not None)


__all__ = ["CallInfo", "Finish", "ModelCaller", "PacingPolicy", "status_of"]
