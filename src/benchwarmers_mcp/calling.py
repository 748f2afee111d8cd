"""One upstream call: find the model's endpoint and key, build its provider, bound it in time,
and write the usage ledger. Every model call in the product goes through ``ModelCaller``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import httpx

from benchwarmers_mcp.errors import ProviderError, UpstreamFailure, UpstreamTimeout
from benchwarmers_mcp.keystore import KeyStore
from benchwarmers_mcp.messages import Answer, AnswerBuilder, Finish, ModelRequest, StreamEvent, Usage
from benchwarmers_mcp.providers import Connection, Provider, make_provider
from benchwarmers_mcp.store import Database, endpoints, ledger
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord


@dataclass(frozen=True)
class CallInfo:
    """Who is calling, for the ledger."""

    caller: str = "gateway"
    purpose: str = ""
    key_name: str = "local"


def status_of(error: BaseException | None, answer: Answer | None) -> str:
    if error is None:
        return "ok" if answer and (answer.text.strip() or answer.tool_calls) else "empty"
    if isinstance(error, UpstreamTimeout):
        return "timeout"
    return "error"


class ModelCaller:
    def __init__(self, db: Database, keys: KeyStore, client: httpx.AsyncClient) -> None:
        self.db = db
        self.keys = keys
        self.client = client

    async def endpoint_of(self, model: ModelRecord) -> Endpoint:
        return await endpoints.get(self.db, model.endpoint)

    def provider(self, endpoint: Endpoint, timeout: float) -> Provider:
        connection = Connection(endpoint.base_url, self.keys.get(endpoint.key_name), self.client,
                                dict(endpoint.headers), timeout)
        return make_provider(endpoint.api, connection)

    def request_for(self, model: ModelRecord, request: ModelRequest) -> ModelRequest:
        """The model's own served name and call options (its options win over the caller's)."""
        options = {**request.options, **{k: v for k, v in model.options.items() if not k.startswith("_")}}
        if model.max_output and (options.get("max_tokens") or 0) > model.max_output:
            options["max_tokens"] = model.max_output
        return ModelRequest(model.served, request.messages, request.system, request.tools, request.tool_choice,
                            request.parallel_tool_calls, request.response_format, options)

    async def complete(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                       info: CallInfo = CallInfo()) -> Answer:
        endpoint = await self.endpoint_of(model)
        started = time.monotonic()
        answer: Answer | None = None
        error: BaseException | None = None
        try:
            with anyio.fail_after(timeout):
                answer = await self.provider(endpoint, timeout).complete(self.request_for(model, request))
            return answer
        except TimeoutError as e:
            error = UpstreamTimeout(f"no answer in {timeout:g} s")
            raise error from e
        except ProviderError as e:
            error = e
            raise
        except LookupError as e:
            error = UpstreamFailure(str(e))
            raise error from e
        finally:
            await self._record(model, endpoint, info, answer, error, time.monotonic() - started)

    async def stream(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                     info: CallInfo = CallInfo()) -> AsyncIterator[StreamEvent]:
        """Stream one call. The whole call is bounded by ``timeout``; the ledger row is written at the end."""
        endpoint = await self.endpoint_of(model)
        started = time.monotonic()
        builder = AnswerBuilder()
        error: BaseException | None = None
        try:
            with anyio.fail_after(timeout):
                async for event in self.provider(endpoint, timeout).stream(self.request_for(model, request)):
                    builder.add(event)
                    yield event
        except TimeoutError as e:
            error = UpstreamTimeout(f"no answer in {timeout:g} s")
            raise error from e
        except BaseException as e:
            error = e
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self._record(model, endpoint, info, builder.answer(), error, time.monotonic() - started)

    async def _record(self, model: ModelRecord, endpoint: Endpoint, info: CallInfo, answer: Answer | None,
                      error: BaseException | None, seconds: float) -> None:
        usage = (answer.usage if answer else None) or Usage()
        status = status_of(error, answer) if error is None or isinstance(error, ProviderError) else "cancelled"
        await ledger.append(self.db, ledger.UsageRow(
            alias=model.alias, connection=endpoint.connection_name, endpoint=endpoint.name, served=model.served,
            status=status, attempts=1, tokens_in=usage.input_tokens, tokens_out=usage.output_tokens,
            reasoning=usage.reasoning_tokens, seconds=round(seconds, 3), caller=info.caller, purpose=info.purpose,
            key_name=info.key_name))


__all__ = ["CallInfo", "Finish", "ModelCaller", "status_of"]
