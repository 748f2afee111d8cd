"""A fake OpenAI Responses API (``POST /v1/responses``), built from wire-formats.md section 4:
typed SSE events with ``sequence_number`` and no ``[DONE]``, usage only in ``response.completed``,
``function_call`` output items with argument deltas, errors in the chat envelope. A 429 carries
OpenAI's ``x-ratelimit-*`` headers and "Please try again in 20s."; ``fail=quota`` is the
``insufficient_quota`` 429. It refuses nested (chat-style) tools, an ``input_image`` whose
``image_url`` is not a string, and a ``function_call_output`` for an unknown ``call_id``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.native import NativeFake, Reply, delay, pieces

RATE_HEADERS = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "20s", "x-ratelimit-limit-tokens": "30000",
                "x-ratelimit-remaining-tokens": "29000", "x-ratelimit-reset-tokens": "2ms"}


def error(status: int, message: str, code: str, kind: str = "invalid_request_error",
          headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}}, status,
                        headers=headers)


def problems(body: dict[str, Any]) -> str | None:
    for tool in body.get("tools") or []:
        if "function" in tool or not tool.get("name"):
            return "Missing required parameter: 'tools[0].name'."
    calls: set[str] = set()
    items = body.get("input") if isinstance(body.get("input"), list) else []
    for item in items:
        if item.get("type") == "function_call":
            calls.add(item["call_id"])
        if item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            return f"No tool call found for function call output with call_id {item.get('call_id')}."
        for part in item.get("content") or [] if isinstance(item.get("content"), list) else []:
            if part.get("type") == "input_image" and not isinstance(part.get("image_url"), str):
                return "Invalid type for 'input[0].content[1].image_url': expected a string."
    return None


def prompt_of(body: dict[str, Any]) -> str:
    if isinstance(body.get("input"), str):
        return body["input"]
    return " ".join(p.get("text", "") for i in body.get("input", []) if i.get("role") == "user"
                    for p in (i.get("content") if isinstance(i.get("content"), list) else [])
                    if p.get("type") == "input_text")


class FakeResponses(NativeFake):
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/responses", self.responses, methods=["POST"])])

    async def responses(self, request: Request) -> Response:
        body, prompt, call = await self.received(request, prompt_of)
        model = call.model
        if problem := problems(body):
            call.status = 400
            return error(400, problem, "invalid_request")
        fail = await delay(model)
        if fail in ("429", "quota", "500", "404", "401"):
            name = self.failed(call, 429 if fail == "quota" else int(fail))
            if fail == "429":
                return error(429, f"Rate limit reached for {name} on requests per min (RPM): Limit 500, Used 500, "
                                  "Requested 1. Please try again in 20s.", "rate_limit_exceeded", "requests",
                             RATE_HEADERS)
            if fail == "quota":
                return error(429, "You exceeded your current quota, please check your plan and billing details.",
                             "insufficient_quota", "insufficient_quota")
            return error(call.status, f"fake {fail} for {name}", fail)
        reply = self.reply_for(model, call, prompt)
        call.reasoning = len(reply.thinking) // 4 + 1 if reply.thinking else 0
        call.tokens_out += call.reasoning  # output tokens include the reasoning ones, as OpenAI counts them
        usage = {"input_tokens": call.tokens_in, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": call.tokens_out, "output_tokens_details": {"reasoning_tokens": call.reasoning},
                 "total_tokens": call.tokens_in + call.tokens_out}
        if not body.get("stream"):
            return JSONResponse(self.response(model, self.items(reply), usage, "completed"), headers=self.headers)
        return StreamingResponse(self.events(model, reply, usage, fail == "midstream"), headers=self.headers,
                                 media_type="text/event-stream")

    @staticmethod
    def items(reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.thinking:
            out.append({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": reply.thinking}]})
        if reply.text or not reply.tool_calls:
            out.append({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}]})
        out += [{"type": "function_call", "id": f"fc_{i}", "call_id": cid, "name": n, "arguments": json.dumps(a),
                 "status": "completed"} for i, (cid, n, a) in enumerate(reply.tool_calls)]
        return out

    @staticmethod
    def response(model: str, output: list[dict[str, Any]], usage: dict[str, Any] | None, status: str) -> dict[str, Any]:
        return {"id": "resp_fake", "object": "response", "created_at": 1767225600, "status": status, "error": None,
                "incomplete_details": None, "model": model, "output": output, "usage": usage, "store": False}

    async def events(self, model: str, reply: Reply, usage: dict[str, Any], cut: bool):
        seq = 0

        def event(kind: str, **data: Any) -> bytes:
            nonlocal seq
            seq += 1
            return f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': seq - 1, **data})}\n\n".encode()

        yield event("response.created", response=self.response(model, [], None, "in_progress"))
        items = self.items(reply)
        for index, item in enumerate(items):
            if item["type"] == "reasoning":
                yield event("response.output_item.added", output_index=index, item={**item, "summary": []})
                yield event("response.reasoning_summary_text.delta", item_id=item["id"], output_index=index,
                            summary_index=0, delta=reply.thinking)
            elif item["type"] == "message":
                yield event("response.output_item.added", output_index=index, item={**item, "content": []})
                for piece in pieces(reply.text):
                    yield event("response.output_text.delta", item_id="msg_1", output_index=index, content_index=0,
                                delta=piece, logprobs=[])
                    if cut:
                        yield event("error", code="server_error", message="The server had an error", param=None)
                        return
            else:
                yield event("response.output_item.added", output_index=index, item={**item, "arguments": ""})
                for piece in pieces(item["arguments"], 5):
                    yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                                delta=piece)
                yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                            arguments=item["arguments"], name=item["name"])
            yield event("response.output_item.done", output_index=index, item=item)
        yield event("response.completed", response=self.response(model, items, usage, "completed"))
