"""The ``llm`` CLI's Python API as the client of upstream calls (``BENCH_CLIENT=llm``, or the choice on
Settings: ``store/clients.py``), instead of the built-in one.

A call still goes through the bench's own caller (``upstream/caller.py``): it is paced by the
user's and learned limits, counted in flight, settled in the ledger, masked, bounded by its
deadline and retried as every call is. What changes is who speaks to the upstream: llm's model
classes, over their own HTTP client (the openai SDK's, for OpenAI-compatible endpoints), so

- the rate-limit headers of the upstream's answers are not seen: no provider windows are learned
  (an error's status, headers and body are: a 429's stated wait still rests the model);
- the shared outbound client is not used: no connection pool shared with the rest of the bench, no
  prepared-bytes path, and proxies are whatever llm's client reads from the environment;
- errors arrive as llm's and the SDK's exceptions, mapped here by their status where they carry one;
- tool calls, images and reasoning are what the llm model class supports.

Endpoints of ``api: chat`` (and ``responses``) are called with llm's own OpenAI plugin classes at
their base URL; any other API through whatever plugin llm has installed for the served name
(``llm install llm-anthropic``...), found with ``llm.get_async_model``. The key: the bench's, when
it has one; else llm's own ``keys.json`` (``LLM_USER_PATH``) under the endpoint's key name
(``shared_key``, read by the caller so that it is masked as the bench's keys are), so keys set with
``llm keys set <name>`` serve the bench too. The SDK's own retries are off: the caller retries.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from benchwarmers_mcp.errors import ProviderError, UpstreamFailure, UpstreamTimeout
from benchwarmers_mcp.messages import (
    Answer,
    AnswerBuilder,
    Finish,
    Image,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
)
from benchwarmers_mcp.providers.base import Connection, error_for_status
from benchwarmers_mcp.store import Database, clients

DIFFERENCES = (
    "Pacing by the provider's own rate limits: the built-in client reads every answer's rate-limit headers, so "
    "it learns the provider's windows and paces calls before a 429; through llm those headers are not seen, so "
    "no window is learned (your limits still hold, and a 429's stated wait still rests the model).",
    "The ledger's full record: calls through llm are still counted in the ledger by the bench, but with the "
    "tokens llm reports and without the provider's quota records (Quotas shows no reported windows for them).",
    "One guarded outbound client: the built-in client never follows a redirect (a key never reaches another "
    "host) and shares one connection pool; llm's client is its own (the openai SDK's for OpenAI-compatible "
    "endpoints), with its own redirect and proxy behaviour.",
    "Every API the bench speaks: through llm, chat and responses endpoints use llm's OpenAI plugin at their "
    "base URL, and any other API needs the llm plugin that serves it (llm install llm-anthropic, ...).",
)


def llm_installed() -> bool:
    return importlib.util.find_spec("llm") is not None


async def client_view(db: Database, default: str) -> dict[str, object]:
    """Who calls upstreams, as ``GET /api/client`` and Settings show it: the client, the choice made
    on Settings (or None), the environment's default (``BENCH_CLIENT``), whether llm is installed,
    and what the built-in client does that the llm one cannot (``DIFFERENCES``)."""
    chosen = await clients.chosen(db)
    return {"client": chosen or default, "chosen": chosen, "default": default, "choices": list(clients.CLIENTS),
            "llm_installed": llm_installed(), "differences": list(DIFFERENCES)}


OPTIONS = ("max_tokens", "temperature", "top_p", "seed", "stop", "frequency_penalty", "presence_penalty")


def shared_key(name: str | None) -> str | None:
    """The key llm's own ``keys.json`` keeps under ``name`` (``llm keys set <name>``; its folder is
    ``LLM_USER_PATH``, else llm's default), for an endpoint whose key the bench does not hold. The
    caller reads it before the call, so the key is masked like the bench's own."""
    if not name:
        return None
    import llm

    value = llm.load_keys().get(name)  # type: ignore[no-untyped-call]
    return value if isinstance(value, str) and value else None


def _bounded(cls: Any, timeout: float) -> Any:
    """llm's OpenAI model class, its SDK client made without the SDK's own retries (the bench's
    caller retries, within the call's deadline) and with the call's time left as its timeout."""

    class Bounded(cls):  # type: ignore[misc]
        made: list[Any]  # the SDK clients made for this call: closed when it ends (llm leaves them open)

        def get_client(self, key: Any, *, async_: bool = False) -> Any:
            client = super().get_client(key, async_=async_).with_options(max_retries=0, timeout=timeout)
            self.made = [*getattr(self, "made", []), client]
            return client

    return Bounded


def _map_model(conn: Connection, served: str) -> Any:
    """llm's model for one call: its OpenAI classes at the endpoint's base for chat and responses,
    else the installed plugin's model for the served name. The key is the one the caller resolved
    (``conn.api_key``), never another llm would find by itself (its ``openai`` key, ``OPENAI_API_KEY``):
    an endpoint without one is called without one."""
    import llm
    from llm.default_plugins.openai_models import AsyncChat, AsyncResponses

    model: Any
    if conn.api in ("chat", "responses"):
        cls = _bounded(AsyncChat if conn.api == "chat" else AsyncResponses, conn.timeout)
        model = cls(f"benchwarmers/{served}", model_name=served, api_base=conn.base_url,
                    headers=dict(conn.headers) or None, vision=True, supports_tools=True, supports_schema=True)
    else:
        try:
            model = llm.get_async_model(served)
        except llm.UnknownModelError:
            raise UpstreamFailure(f"llm has no model {served!r} for an {conn.api} endpoint: install the llm plugin "
                                  f"that serves it (llm install llm-{conn.api}), or call it with the built-in "
                                  "client") from None
    model.key_env_var = None
    if conn.api_key:
        model.key = conn.api_key
    else:
        model.needs_key = None  # no key: llm sends none of its own
    return model


def _map_messages(request: ModelRequest) -> list[Any]:
    from llm import Attachment
    from llm.parts import Message as LlmMessage
    from llm.parts import TextPart, ToolCallPart, ToolResultPart

    out = []
    for message in request.messages:
        parts: list[Any] = []
        for part in message.parts:
            if isinstance(part, Text):
                parts.append(TextPart(text=part.text))
            elif isinstance(part, Image):
                from llm.parts import AttachmentPart

                parts.append(AttachmentPart(attachment=Attachment(url=part.url)))
            elif isinstance(part, ToolCall):
                parts.append(ToolCallPart(name=part.name, arguments=_arguments(part.arguments),
                                          tool_call_id=part.id))
            elif isinstance(part, ToolResult):
                parts.append(ToolResultPart(name=part.name or "", output=part.content, tool_call_id=part.call_id))
        out.append(LlmMessage(role=_role(message), parts=parts))
    return out


def _role(message: Message) -> str:
    return "tool" if message.tool_results and not message.text else message.role


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}


def _map_tools(request: ModelRequest) -> list[Any] | None:
    if not request.tools:
        return None
    from llm import Tool

    return [Tool(name=t.name, description=t.description or None, input_schema=t.parameters) for t in request.tools]


def _map_error(e: Exception) -> ProviderError:
    """llm's and its SDK's exceptions in the error tree: by the HTTP status they carry, else by kind."""
    if isinstance(e, ProviderError):
        return e
    response = getattr(e, "response", None)
    status = getattr(e, "status_code", None) or getattr(response, "status_code", None)
    if isinstance(status, int):
        headers = httpx.Headers({str(k): str(v) for k, v in dict(getattr(response, "headers", None) or {}).items()})
        return error_for_status(status, headers, getattr(e, "body", None) or str(e))
    if "timeout" in type(e).__name__.lower():
        return UpstreamTimeout(f"upstream timed out (llm: {type(e).__name__})")
    return UpstreamFailure(f"llm client: {type(e).__name__}: {e}"[:500])


class LlmClient:
    """One upstream call through llm's Python API (see the module docstring)."""

    def __init__(self, connection: Connection) -> None:
        self.conn = connection

    def _response(self, model: Any, request: ModelRequest, stream: bool) -> Any:
        options = {k: v for k, v in request.options.items() if k in OPTIONS and v is not None}
        return model.prompt(None, messages=_map_messages(request), system=request.system, tools=_map_tools(request),
                            stream=stream, **options)

    async def complete(self, request: ModelRequest) -> Answer:
        builder = AnswerBuilder()
        async for event in self.stream(request, whole=True):
            builder.add(event)
        return builder.answer()

    async def stream(self, request: ModelRequest, whole: bool = False) -> AsyncIterator[StreamEvent]:
        model = None
        try:
            model = _map_model(self.conn, request.model)
            response = self._response(model, request, stream=not whole)
            calls: dict[str, int] = {}
            async for event in response.astream_events():
                kind, chunk = getattr(event, "type", "text"), getattr(event, "chunk", "") or ""
                if kind == "text" and chunk:
                    yield TextDelta(chunk)
                elif kind == "reasoning" and chunk:
                    yield ReasoningDelta(chunk)
                elif kind in ("tool_call_name", "tool_call_args"):
                    call_id = getattr(event, "tool_call_id", None) or f"call_{len(calls)}"
                    first = call_id not in calls
                    index = calls.setdefault(call_id, len(calls))
                    yield ToolCallDelta(index, call_id if first else None,
                                        chunk if kind == "tool_call_name" else None,
                                        chunk if kind == "tool_call_args" else "")
            usage = await response.usage()
        except Exception as e:  # the one boundary where llm's exceptions become ours
            raise _map_error(e) from e
        finally:
            for client in getattr(model, "made", ()):
                with anyio.CancelScope(shield=True):
                    await client.close()
        yield Finish("tool_calls" if calls else "stop",
                     Usage(int(usage.input or 0), int(usage.output or 0)))


__all__ = ["DIFFERENCES", "LlmClient", "client_view", "llm_installed", "shared_key"]
