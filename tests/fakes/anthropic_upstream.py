"""A fake Anthropic Messages API (``POST /v1/messages``), built from the shapes in wire-formats.md
section 5: named SSE events with ``ping``, the error envelope with its ``error.type`` per status,
``retry-after`` and ``anthropic-ratelimit-*`` headers on a 429. It refuses what the real API
refuses: no ``max_tokens``, a missing ``anthropic-version``, roles that do not alternate, a
``tool_result`` for an unknown ``tool_use`` id, a wrong key.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.native import NativeFake, Reply, delay, pieces

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 503: "api_error",
               529: "overloaded_error"}


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message},
            "request_id": "req_fake"}
    return JSONResponse(body, status_code=status, headers=headers)


def problems(body: dict[str, Any], headers: dict[str, str], key: str | None) -> str | None:
    if "anthropic-version" not in headers:
        return "anthropic-version: header is required"
    if key is not None and headers.get("x-api-key") != key:
        return "401"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    roles = [m.get("role") for m in body.get("messages", [])]
    if any(a == b for a, b in zip(roles, roles[1:], strict=False)) or (roles and roles[0] != "user"):
        return "messages: roles must alternate between user and assistant, starting with user"
    seen: set[str] = set()
    for m in body["messages"]:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for block in content:
            if block.get("type") == "tool_use":
                if not isinstance(block.get("input"), dict):
                    return "tool_use.input: must be an object"
                seen.add(block["id"])
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in seen:
                return f"tool_result: unknown tool_use_id {block.get('tool_use_id')}"
            if block.get("type") == "image" and block["source"].get("type") not in ("base64", "url"):
                return "image.source.type must be base64 or url"
    return None


def prompt_of(body: dict[str, Any]) -> str:
    chunks = []
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        chunks += [b.get("text", "") for b in content if b.get("type") == "text"]
    return " ".join(chunks)


class FakeAnthropic(NativeFake):
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/messages", self.messages, methods=["POST"])])

    async def messages(self, request: Request) -> Response:
        body, prompt, call = await self.received(request, prompt_of)
        model = call.model
        problem = problems(body, dict(request.headers), self.key)
        if problem:
            call.status = 401 if problem == "401" else 400
            return error(call.status, "invalid x-api-key" if problem == "401" else problem)
        fail = await delay(model)
        if fail in ("429", "500", "503", "529", "404", "401", "402"):
            name = self.failed(call, int(fail))
            headers = {"retry-after": "40", "anthropic-ratelimit-requests-limit": "50",
                       "anthropic-ratelimit-requests-remaining": "0",
                       "anthropic-ratelimit-requests-reset": "2099-01-01T00:00:00Z"} if fail == "429" else {}
            return error(call.status, f"fake {fail} for {name}", headers)
        reply = self.reply_for(model, call, prompt)
        usage = {"input_tokens": call.tokens_in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "output_tokens": call.tokens_out}
        if not body.get("stream"):
            return JSONResponse(self.whole(model, reply, usage), headers=self.headers)
        return StreamingResponse(self.events(model, reply, usage, fail == "midstream"), headers=self.headers,
                                 media_type="text/event-stream")

    @staticmethod
    def blocks(reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.thinking:
            out.append({"type": "thinking", "thinking": reply.thinking, "signature": "sig"})
        if reply.text or not reply.tool_calls:
            out.append({"type": "text", "text": reply.text})
        out += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in reply.tool_calls]
        return out

    def whole(self, model: str, reply: Reply, usage: dict[str, int]) -> dict[str, Any]:
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": self.blocks(reply), "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                "stop_sequence": None, "usage": usage}

    async def events(self, model: str, reply: Reply, usage: dict[str, int], cut: bool):
        def event(kind: str, data: dict[str, Any]) -> bytes:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

        start = {**self.whole(model, Reply(), usage), "content": [], "stop_reason": None,
                 "usage": {**usage, "output_tokens": 1}}
        yield event("message_start", {"message": start})
        yield event("ping", {})
        for index, block in enumerate(self.blocks(reply)):
            if block["type"] == "text":
                yield event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
                for piece in pieces(block["text"]):
                    yield event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
                    if cut:
                        yield event("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}})
                        return
            elif block["type"] == "thinking":
                yield event("content_block_start", {"index": index, "content_block": {"type": "thinking",
                                                                                      "thinking": ""}})
                yield event("content_block_delta", {"index": index, "delta": {"type": "thinking_delta",
                                                                              "thinking": block["thinking"]}})
            else:
                opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                yield event("content_block_start", {"index": index, "content_block": opening})
                for piece in pieces(json.dumps(block["input"]), 7):
                    yield event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta",
                                                                                  "partial_json": piece}})
            yield event("content_block_stop", {"index": index})
        stop = "tool_use" if reply.tool_calls else "end_turn"
        yield event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": usage["output_tokens"]}})
        yield event("message_stop", {})
