"""One upstream call: find the model's endpoint and key, pace it, send it (with retries), bound it
in time, and settle it: the usage ledger row and what the response taught about limits, in one
transaction. Every model call in the product goes through ``ModelCaller``.

The hot path with nothing limiting a connection is one store read before the call (the endpoint
and the gate, in one query) and one transaction after it (the ledger row), as before pacing.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field, replace

import anyio
import httpx

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
from benchwarmers_mcp.providers import Connection, Provider, make_provider
from benchwarmers_mcp.store import Database, ledger
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.limits import Gate, Settlement
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import (
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
    started: float = field(default_factory=time.time)
    clock: float = field(default_factory=time.monotonic)
    ticket: int | None = None
    attempts: int = 0
    response: httpx.Response | None = None

    def observe(self, response: httpx.Response) -> None:
        self.response = response

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class ModelCaller:
    def __init__(self, db: Database, keys: KeyStore, client: httpx.AsyncClient,
                 policy: PacingPolicy | None = None) -> None:
        self.db = db
        self.keys = keys
        self.client = client
        self.policy = policy or PacingPolicy()
        self.pacer = Pacer(db, self.policy)

    async def gate_of(self, model: ModelRecord) -> Gate:
        gate = await limit_store.gate(self.db, model.endpoint, model.alias, time.time())
        if gate is None:
            raise NotFound(f"no endpoint named {model.endpoint!r} (model {model.alias})")
        return gate

    def provider(self, endpoint: Endpoint, timeout: float, call: _Call | None = None) -> Provider:
        connection = Connection(endpoint.base_url, self.keys.get(endpoint.key_name), self.client,
                                dict(endpoint.headers), timeout, call.observe if call else None)
        return make_provider(endpoint.api, connection)

    def request_for(self, model: ModelRecord, request: ModelRequest) -> ModelRequest:
        """The model's own served name and call options (its options win over the caller's)."""
        options = {**request.options, **{k: v for k, v in model.options.items() if not k.startswith("_")}}
        if model.max_output and (options.get("max_tokens") or 0) > model.max_output:
            options["max_tokens"] = model.max_output
        return ModelRequest(model.served, request.messages, request.system, request.tools, request.tool_choice,
                            request.parallel_tool_calls, request.response_format, options)

    async def _open(self, model: ModelRecord, request: ModelRequest, timeout: float, info: CallInfo) -> _Call:
        """Read the gate and admit the call, or settle it as refused (never sent) and raise."""
        call = _Call(model, await self.gate_of(model), info, time.monotonic() + timeout)
        try:
            call.ticket = await self.pacer.admit(call.gate, model.alias, estimate_request_tokens(request),
                                                 time.time() + timeout, past_pause=info.past_pause)
        except Refused as refused:
            with anyio.CancelScope(shield=True):
                await self._settle(call, None, refused.error, refused=refused)
            raise refused.error from None
        except BaseException as e:
            with anyio.CancelScope(shield=True):
                await self._settle(call, None, e)
            raise
        return call

    def _retry_wait(self, call: _Call, error: ProviderError) -> float | None:
        """Seconds before another attempt, or None: connection errors, 408, 409, 5xx and a 429 with a
        short stated wait are retried (as often as the caller's policy allows) within the deadline."""
        policy = self.policy if call.info.retries is None else replace(self.policy, retries=call.info.retries)
        wait = retry_wait(policy, error, call.attempts)
        return None if wait is None or wait >= call.remaining() else wait

    async def _complete_attempts(self, call: _Call, request: ModelRequest) -> Answer:
        while True:
            call.attempts += 1
            try:
                return await self.provider(call.gate.endpoint, call.remaining(), call).complete(request)
            except ProviderError as e:
                wait = self._retry_wait(call, e)
                if wait is None:
                    raise
                await anyio.sleep(wait)

    def _classified(self, call: _Call, error: ProviderError) -> ProviderError:
        """A refused key or billing problem is reported as such, whatever status carried it."""
        if not isinstance(error, AuthOrBilling) and account_problem(error, Seen.of(call.response)):
            return AuthOrBilling(error.message, upstream_status=error.upstream_status)
        return error

    @asynccontextmanager
    async def _bounded(self, call: _Call, timeout: float,
                       answer_of: Callable[[], Answer | None]) -> AsyncIterator[None]:
        """Bound the call by its deadline, report what escapes it in our terms, and settle it
        whatever happens (shielded): the one ending both ``complete`` and ``stream`` share."""
        error: BaseException | None = None
        try:
            with anyio.fail_after(call.remaining()):
                yield
        except TimeoutError as e:
            error = UpstreamTimeout(f"no answer in {timeout:g} s")
            raise error from e
        except ProviderError as e:
            error = self._classified(call, e)
            if error is e:
                raise
            raise error from e
        except LookupError as e:
            error = UpstreamFailure(str(e))
            raise error from e
        except BaseException as e:
            error = e
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self._settle(call, answer_of(), error)

    async def complete(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                       info: CallInfo = ANONYMOUS) -> Answer:
        call = await self._open(model, request, timeout, info)
        answer: Answer | None = None
        async with self._bounded(call, timeout, lambda: answer):
            answer = await self._complete_attempts(call, self.request_for(model, request))
            return answer

    async def stream(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                     info: CallInfo = ANONYMOUS) -> AsyncIterator[StreamEvent]:
        """Stream one call, bounded by ``timeout``; retried only before its first event."""
        call = await self._open(model, request, timeout, info)
        builder = AnswerBuilder()
        async with self._bounded(call, timeout, builder.answer):
            async with aclosing(self._stream_attempts(call, self.request_for(model, request))) as events:
                async for event in events:
                    builder.add(event)
                    yield event

    async def _stream_attempts(self, call: _Call, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        while True:
            call.attempts += 1
            started = False
            try:
                provider = self.provider(call.gate.endpoint, call.remaining(), call)
                async with aclosing(provider.stream(request)) as events:
                    async for event in events:
                        started = True
                        yield event
                return
            except ProviderError as e:
                wait = None if started else self._retry_wait(call, e)
                if wait is None:
                    raise
                await anyio.sleep(wait)

    async def _settle(self, call: _Call, answer: Answer | None, error: BaseException | None,
                      refused: Refused | None = None) -> None:
        usage = (answer.usage if answer else None) or Usage()
        if refused is not None:
            status = "refused"
        elif error is None or isinstance(error, ProviderError):
            status = status_of(error, answer)
        else:
            status = "cancelled"
        endpoint = call.gate.endpoint
        row = ledger.UsageRow(
            alias=call.model.alias, connection=endpoint.connection_name, endpoint=endpoint.name,
            served=call.model.served, status=status, attempts=call.attempts, tokens_in=usage.input_tokens,
            tokens_out=usage.output_tokens, reasoning=usage.reasoning_tokens,
            seconds=round(time.monotonic() - call.clock, 3), caller=call.info.caller, purpose=call.info.purpose,
            key_name=call.info.key_name, t=call.started)
        settlement = Settlement(row, call.ticket)
        if refused is not None:
            settlement.rest = refused.rest
        else:
            consequences(self.policy, settlement, call.gate, error, Seen.of(call.response), time.time())
        if answer is not None and answer.tool_calls and call.model.tools is not True:
            settlement.facts.append(("tools", True, f"answered with a tool call ({answer.tool_calls[0].name})"))
        await limit_store.settle(self.db, settlement)


__all__ = ["CallInfo", "Finish", "ModelCaller", "PacingPolicy", "status_of"]
