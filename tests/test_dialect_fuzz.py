"""Issue 5: random JSON never breaks a dialect. Every parser either builds an Ask or refuses with
a 4xx BenchError; every route, in process with the app's lifespan entered, never answers 5xx."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio.from_thread
import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway import anthropic, completions, gemini, ollama, responses
from benchwarmers_mcp.messages import Ask, estimate_tokens
from benchwarmers_mcp.settings import Settings
from tests.kits.dialect import PNG
from tests.kits.seed import seed

# Words the dialects look for, so random bodies reach deep into each parser, not just its first check.
KEYS = ["model", "messages", "role", "content", "type", "text", "input", "instructions", "contents", "parts",
        "tools", "tool_choice", "stream", "system", "prompt", "images", "source", "data", "media_type", "url",
        "image_url", "function", "name", "arguments", "input_schema", "tool_use_id", "call_id", "output",
        "functionCall", "functionResponse", "args", "response", "inlineData", "fileData", "mimeType", "mime_type",
        "fileUri", "generationConfig", "options", "format", "bench", "with", "reply", "max_tokens", "temperature",
        "stop", "suffix", "echo", "context", "previous_response_id", "tool_calls", "tool_name",
        "systemInstruction", "id", "is_error", "thought", "functionDeclarations", "parameters", "file_id",
        "tool_config", "functionCallingConfig", "mode", "reasoning", "effort", "metadata", "generateContentRequest"]
WORDS = ["", "bench/core", "core", "bench/core:merged", "bench/core:route", "models/core", "user", "assistant",
         "model", "tool", "system", "developer", "text", "image", "tool_use", "tool_result", "thinking", "document",
         "function_call", "function_call_output", "custom_tool_call", "message", "reasoning", "input_text",
         "input_image", "input_file", "output_text", "base64", "url", "file", "image/png", "application/pdf",
         f"data:image/png;base64,{PNG}", "data:text/plain;base64,AA", "https://example.com/a.png", "ftp://x",
         PNG, "function", "custom", "web_search", "json", "{}", "{\"q\": 1}", "not json", "AUTO", "ANY", "OBJECT"]
scalars = (st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
           | st.sampled_from(WORDS) | st.text(max_size=6))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=5),
                      max_leaves=30)
loose = st.dictionaries(st.sampled_from(KEYS), values, max_size=7)


def one(*choices: Any) -> st.SearchStrategy:
    """Half the time a value the dialect knows, half the time anything at all."""
    return st.sampled_from(choices) | values


def obj(required: dict[str, st.SearchStrategy], **optional: st.SearchStrategy) -> st.SearchStrategy:
    return st.fixed_dictionaries(required, optional=optional)


def some(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(strategy, max_size=3)


# Bodies shaped like each API's requests, with random values at every level.
model = st.sampled_from(["core", "bench/core", "core:merged", "core:all", "models/core"])
text = st.text(max_size=8) | values
image_url = one(f"data:image/png;base64,{PNG}", "https://example.com/a.png", "data:application/pdf;base64,AA")
a_source = obj({"type": one("base64", "url", "file")}, data=one(PNG, ""), url=image_url,
               media_type=one("image/png", "application/pdf", "image/x y"))
a_block = obj({"type": one("text", "image", "tool_use", "tool_result", "thinking", "document", "server_tool_use")},
              text=text, source=a_source, id=one("t1"), name=one("grep"), input=values, tool_use_id=one("t1"),
              content=text | some(obj({"type": one("text", "image")}, text=text, source=a_source)), is_error=values)
ANTHROPIC = obj({"model": model, "messages": some(obj({"role": one("user", "assistant")}, content=text | some(a_block)))},
                system=text | some(obj({"type": one("text")}, text=text)), stream=st.booleans(),
                tools=some(obj({"name": one("grep")}, type=one("custom", "web_search_20250305"), input_schema=values)),
                tool_choice=obj({"type": one("auto", "any", "none", "tool")}, name=one("grep")), max_tokens=values,
                temperature=values, stop_sequences=values, bench=obj({}, reply=one("all", "merged", "route")))
r_part = obj({"type": one("input_text", "output_text", "input_image", "input_file", "refusal")}, text=text,
             image_url=image_url, file_id=values, refusal=text)
r_item = obj({"type": one("message", "function_call", "function_call_output", "custom_tool_call", "reasoning",
                          "item_reference", "web_search_call", "shell_call", "shell_call_output", "local_shell_call",
                          "apply_patch_call", "apply_patch_call_output", "tool_search_call", "tool_search_output",
                          "additional_tools")},
             role=one("user", "assistant", "system", "developer"), content=text | some(r_part), call_id=one("c1"),
             name=one("grep"), arguments=one("{}", "{\"q\": 1}", "nope"), output=text | some(r_part), input=text,
             namespace=one("mcp__x"), action=values, operation=values, execution=one("client", "server"),
             tools=values)
RESPONSES = obj({"model": model, "input": text | some(r_item)}, instructions=st.text(max_size=8) | values, stream=st.booleans(),
                tools=some(obj({"type": one("function", "custom", "web_search", "namespace", "shell", "local_shell",
                                            "apply_patch", "tool_search", "mcp")}, name=one("grep"), parameters=values,
                               format=obj({"type": one("grammar", "text")}, definition=text), tools=values,
                               environment=values, execution=one("client", "server"))),
                tool_choice=one("auto", "required") | obj({"type": one("function", "allowed_tools", "shell")},
                                                          name=one("grep"), tools=values, mode=one("auto")),
                text=obj({"format": obj({"type": one("json_schema", "json_object", "text")}, schema=values)}),
                previous_response_id=st.none() | st.none() | values, max_output_tokens=values,
                reasoning=obj({}, effort=one("low", "high")))
g_part = obj({}, text=text, thought=values, inlineData=obj({}, mime_type=one("image/png", "audio/wav"), data=one(PNG)),
             fileData=obj({}, mimeType=one("image/png", "application/pdf"), fileUri=image_url),
             functionCall=obj({"name": one("grep")}, args=values, id=values),
             functionResponse=obj({"name": one("grep")}, response=values), executableCode=values)
GEMINI = obj({"model": model, "contents": some(obj({"parts": some(g_part)}, role=one("user", "model", "function")))},
             systemInstruction=text | obj({"parts": some(obj({}, text=text))}), stream=st.booleans(),
             tools=some(obj({}, functionDeclarations=some(obj({"name": one("grep")}, parameters=values)),
                            googleSearch=values)),
             toolConfig=obj({"functionCallingConfig": obj({"mode": one("ANY", "AUTO", "NONE")},
                                                          allowedFunctionNames=values)}),
             generationConfig=obj({}, maxOutputTokens=values, stop_sequences=values, responseMimeType=values,
                                  responseSchema=values), cachedContent=st.none() | st.none() | values)
o_message = obj({"role": one("system", "user", "assistant", "tool")}, content=text, images=some(one(PNG, "AAAA")),
                tool_calls=some(obj({"function": obj({"name": one("grep")}, arguments=values)})), tool_name=one("grep"))
OLLAMA = obj({"model": model}, messages=some(o_message), prompt=text, system=text, images=some(one(PNG, "AAAA")),
             options=obj({}, temperature=one(0.2), num_predict=one(-1, 50), stop=one(["END"])), format=one("json") | values,
             context=st.none() | st.none() | values, suffix=st.none() | text, stream=st.booleans(),
             tools=some(obj({"type": one("function")}, function=obj({"name": one("grep")}, parameters=values))))
COMPLETIONS = obj({"model": model, "prompt": text | some(text)}, stream=st.booleans(), echo=values, suffix=values,
                  max_tokens=values, stop=values)
PARSERS: list[tuple[Callable[[dict[str, Any], str], Ask], st.SearchStrategy]] = [
    (anthropic.parse, ANTHROPIC), (responses.parse, RESPONSES), (gemini.parse, GEMINI), (ollama.parse, OLLAMA),
    (ollama.parse_generate, OLLAMA), (completions.parse, COMPLETIONS)]
FUZZ = hypothesis_settings(max_examples=150, deadline=None,
                           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize(("parser", "shape"), PARSERS,
                         ids=[f"{p.__module__.rsplit('.', 1)[-1]}.{p.__name__}" for p, _ in PARSERS])
@FUZZ
@given(data=st.data())
def test_parsers_build_an_ask_or_refuse_with_a_4xx(parser, shape, data):
    body = data.draw(shape | loose)
    try:
        ask = parser(body, "local")
    except BenchError as e:
        assert 400 <= e.status < 500 and e.message
        return
    assert isinstance(ask, Ask) and ask.collection and estimate_tokens(ask, count_tools=True) >= 0


@pytest.fixture
def asgi(home, settings: Settings) -> Iterator[Callable[[str, str, Any], httpx.Response]]:
    """The app in process (lifespan entered once), called from sync code through a portal."""
    seed(home, base_url=None, api="simulated", endpoint="sim", served=["sage", "quill"],
         collections={"core": ["sage", "quill"]})
    app = create_app(settings)
    with anyio.from_thread.start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(app.router.lifespan_context(app)):
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                       base_url=f"http://127.0.0.1:{settings.port}")

            async def send(method: str, path: str, body: Any) -> httpx.Response:
                content = json.dumps(body).encode()
                return await client.request(method, path, content=content, timeout=30,
                                            headers={"content-type": "application/json"})

            yield lambda method, path, body: portal.call(send, method, path, body)
            portal.call(client.aclose)


ROUTES = [("/v1/messages", ANTHROPIC), ("/v1/messages/count_tokens", ANTHROPIC), ("/v1/responses", RESPONSES),
          ("/v1/completions", COMPLETIONS), ("/v1beta/models/bench/core:generateContent", GEMINI),
          ("/v1/models/core:streamGenerateContent?alt=sse", GEMINI), ("/v1beta/models/core:streamGenerateContent", GEMINI),
          ("/v1beta/models/core:countTokens", GEMINI), ("/api/chat", OLLAMA), ("/api/generate", OLLAMA),
          ("/api/show", OLLAMA)]


@pytest.mark.parametrize(("path", "shape"), ROUTES, ids=[path for path, _ in ROUTES])
@hypothesis_settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_routes_never_answer_5xx(asgi, path, shape, data):
    response = asgi("POST", path, data.draw(shape | loose | values))
    assert response.status_code < 500, response.text[:500]
    if response.status_code >= 400:
        assert "error" in response.json()
