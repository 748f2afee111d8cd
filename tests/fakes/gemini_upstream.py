"""A fake Gemini API (``/{v1,v1beta}/models/{m}:generateContent`` and ``:streamGenerateContent``),
built from wire-formats.md section 6: ``data:``-only SSE with no terminator, camelCase keys, the
google.rpc.Status error body with ``QuotaFailure``/``Help``/``RetryInfo`` details on a 429, and a
bad key as a 400 with ``API_KEY_INVALID``. It refuses roles other than user/model, a
``functionResponse`` that answers no earlier ``functionCall``, and an ``inlineData`` without data.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.native import NativeFake, Reply, delay, pieces

STATUS_NAMES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                500: "INTERNAL", 503: "UNAVAILABLE"}


def rpc_error(code: int, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": STATUS_NAMES.get(code, "UNKNOWN")}
    if details:
        error["details"] = details
    return {"error": error}


def quota_error(model: str) -> dict[str, Any]:
    return rpc_error(429, "You exceeded your current quota, please check your plan and billing details. "
                          "Please retry in 32.5s.", [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
             "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
             "quotaDimensions": {"location": "global", "model": model}, "quotaValue": "10"}]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "quotas", "url": "https://x"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "32s"}])


def problems(body: dict[str, Any]) -> str | None:
    calls: list[str] = []
    for content in body.get("contents", []):
        if content.get("role") not in ("user", "model"):
            return f"Please use a valid role: user, model (got {content.get('role')!r})"
        for part in content.get("parts", []):
            if "functionCall" in part:
                if not isinstance(part["functionCall"].get("args", {}), dict):
                    return "functionCall.args must be an object"
                calls.append(part["functionCall"]["name"])
            if "functionResponse" in part and part["functionResponse"].get("name") not in calls:
                return "functionResponse does not answer a functionCall"
            inline = part.get("inlineData")
            if inline is not None and not (inline.get("data") and (inline.get("mimeType") or inline.get("mime_type"))):
                return "inlineData needs data and mimeType"
    return None


def prompt_of(body: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for c in body.get("contents", []) if c.get("role") == "user"
                    for p in c.get("parts", []) if "text" in p)


class FakeGemini(NativeFake):
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{version}/models/{target:path}", self.generate, methods=["POST"])])

    async def generate(self, request: Request) -> Response:
        model, _, method = request.path_params["target"].rpartition(":")
        body, prompt, call = await self.received(request, prompt_of, model)
        if self.key is not None and request.headers.get("x-goog-api-key") != self.key:
            call.status = 400
            return JSONResponse(rpc_error(400, "API key not valid. Please pass a valid API key.", [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]), 400)
        if (problem := problems(body)) or method not in ("generateContent", "streamGenerateContent"):
            call.status = 400
            return JSONResponse(rpc_error(400, problem or f"unknown method {method}"), 400)
        fail = await delay(model)
        if fail in ("429", "500", "503", "404", "403"):
            name = self.failed(call, int(fail))
            return JSONResponse(quota_error(name) if fail == "429" else rpc_error(int(fail), f"fake {fail} for {name}"),
                                int(fail))
        reply = self.reply_for(model, call, prompt)
        usage = {"promptTokenCount": call.tokens_in, "candidatesTokenCount": call.tokens_out,
                 "totalTokenCount": call.tokens_in + call.tokens_out}
        if method == "generateContent":
            return JSONResponse(self.chunk(model, self.parts(reply), "STOP", usage), headers=self.headers)
        if request.query_params.get("alt") != "sse":
            return JSONResponse(rpc_error(400, "the fake streams only with alt=sse"), 400)
        return StreamingResponse(self.events(model, reply, usage, fail == "midstream"), headers=self.headers,
                                 media_type="text/event-stream")

    @staticmethod
    def parts(reply: Reply) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        if reply.thinking:
            parts.append({"text": reply.thinking, "thought": True})
        if reply.text or not reply.tool_calls:
            parts.append({"text": reply.text})
        parts += [{"functionCall": {"name": name, "args": args}} for _id, name, args in reply.tool_calls]
        return parts

    @staticmethod
    def chunk(model: str, parts: list[dict[str, Any]], finish: str | None, usage: dict[str, int]) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": "fake"}

    async def events(self, model: str, reply: Reply, usage: dict[str, int], cut: bool):
        def line(data: dict[str, Any]) -> bytes:
            return f"data: {json.dumps(data)}\n\n".encode()

        partial = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"]}
        if reply.thinking:
            yield line(self.chunk(model, [{"text": reply.thinking, "thought": True}], None, partial))
        for piece in pieces(reply.text):
            yield line(self.chunk(model, [{"text": piece}], None, partial))
            if cut:
                yield line(rpc_error(500, "boom"))
                return
        calls = [{"functionCall": {"name": n, "args": a}} for _i, n, a in reply.tool_calls]
        yield line(self.chunk(model, calls, "STOP", usage))
