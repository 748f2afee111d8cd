"""Issue 5: every dialect parses into the same canonical Ask, tool traffic included (route mode
reuses these parsers): calls, results, ids made and matched, custom tools, options by OpenAI name."""

from __future__ import annotations

import json

import pytest

from benchwarmers_mcp.errors import BadRequest, Unsupported
from benchwarmers_mcp.gateway import anthropic, completions, gemini, ollama, responses
from benchwarmers_mcp.gateway.images import sniff
from benchwarmers_mcp.messages import Image, Text, ToolCall, ToolResult
from tests.kits.dialect import JPEG, PDF, PNG

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_anthropic_tool_traffic_and_options():
    ask = anthropic.parse({
        "model": "bench/core:route", "max_tokens": 100, "temperature": 0.3, "stop_sequences": ["END"], "top_k": 5,
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Cite lines."}],
        "tools": [{"name": "grep", "description": "search", "input_schema": SCHEMA}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "messages": [
            {"role": "user", "content": "find it"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                              {"type": "text", "text": "Searching."},
                                              {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": [
                    {"type": "text", "text": "no match"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]},
                {"type": "text", "text": "try again"}]},
        ]})
    assert ask.reply == "route" and ask.system == "Be brief.\n\nCite lines."
    assert ask.options == {"max_tokens": 100, "temperature": 0.3, "stop": ["END"]}
    assert ask.tool_choice == "required" and ask.parallel_tool_calls is False
    assert ask.tools[0].name == "grep" and ask.tools[0].parameters == SCHEMA
    user, assistant, tool, after = ask.messages
    assert assistant.parts == (Text("Searching."), ToolCall("toolu_1", "grep", '{"q": "x"}'))
    assert tool.role == "tool" and tool.parts == (ToolResult("toolu_1", "no match", is_error=True),)
    assert after.role == "user" and isinstance(after.parts[0], Image) and after.parts[1] == Text("try again")


def test_responses_tool_traffic_custom_tools_and_formats():
    ask = responses.parse({
        "model": "core", "instructions": "Be brief.", "max_output_tokens": 64, "reasoning": {"effort": "low"},
        "text": {"format": {"type": "json_schema", "name": "out", "schema": SCHEMA}},
        "tool_choice": {"type": "function", "name": "grep"}, "parallel_tool_calls": False,
        "tools": [{"type": "function", "name": "grep", "parameters": SCHEMA},
                  {"type": "custom", "name": "apply_patch", "description": "Patch files.",
                   "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}],
        "input": [
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{\"q\":\"x\"}"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "function_call_output", "call_id": "c1", "output": "found"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "ok"}]},
        ]})
    assert ask.system == "Be brief.\n\nUse tools."
    assert ask.options == {"max_tokens": 64, "reasoning_effort": "low"}
    assert ask.response_format == {"type": "json_schema", "json_schema": {"name": "out", "schema": SCHEMA}}
    assert ask.tool_choice == {"type": "function", "function": {"name": "grep"}} and ask.parallel_tool_calls is False
    custom = ask.tools[1]
    assert custom.kind == "custom" and custom.parameters["required"] == ["input"] and "start: /.+/" in custom.description
    user, assistant, first, second = ask.messages
    assert assistant.parts == (Text("Looking."), ToolCall("c1", "grep", '{"q":"x"}'),
                               ToolCall("c2", "apply_patch", json.dumps({"input": "*** Begin Patch"}), "custom"))
    assert first.parts == (ToolResult("c1", "found"),) and second.parts == (ToolResult("c2", "ok"),)


def test_gemini_ids_are_made_and_matched_oldest_first():
    ask = gemini.parse({
        "model": "bench/core", "stream": False,
        "system_instruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 50, "stop_sequences": ["END"], "responseMimeType": "application/json"},
        "tools": [{"function_declarations": [{"name": "grep", "parameters": {
            "type": "OBJECT", "properties": {"q": {"type": "STRING"}}}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["grep"]}},
        "contents": [
            {"role": "user", "parts": [{"text": "find both"}]},
            {"role": "model", "parts": [{"text": "thinking", "thought": True},
                                        {"functionCall": {"name": "grep", "args": {"q": "a"}}},
                                        {"functionCall": {"name": "grep", "args": {"q": "b"}}, "thoughtSignature": "x"}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "grep", "response": {"hits": 1}}},
                                       {"functionResponse": {"name": "grep", "response": {"hits": 2}}}]},
        ]})
    assert ask.system == "Be brief." and ask.options == {"max_tokens": 50, "stop": ["END"]}
    assert ask.response_format == {"type": "json_object"}
    assert ask.tools[0].parameters == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert ask.tool_choice == {"type": "function", "function": {"name": "grep"}}
    _, model, first, second = ask.messages
    assert [c.id for c in model.tool_calls] == ["call_1", "call_2"]
    assert first.parts == (ToolResult("call_1", '{"hits":1}', name="grep"),)
    assert second.parts == (ToolResult("call_2", '{"hits":2}', name="grep"),)


def test_ollama_ids_options_format_and_latest_tag():
    ask = ollama.parse({
        "model": "bench/core:latest", "format": "json", "tools": [],
        "options": {"temperature": 0.1, "num_predict": -1, "num_ctx": 8192, "top_k": 4},
        "messages": [
            {"role": "user", "content": "look", "images": [PNG, JPEG]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "grep", "arguments": {"q": "x"}}},
                {"function": {"name": "read", "arguments": {"path": "a.py"}}}]},
            {"role": "tool", "content": "contents", "tool_name": "read"},
            {"role": "tool", "content": "hits", "tool_name": "grep"},
        ]})
    assert ask.collection == "core" and ask.reply is None
    assert ask.options == {"temperature": 0.1} and ask.response_format == {"type": "json_object"}
    user, assistant, read, grep = ask.messages
    assert [i.media_type for i in user.images] == ["image/png", "image/jpeg"]
    assert [(c.id, c.name) for c in assistant.tool_calls] == [("call_1", "grep"), ("call_2", "read")]
    assert read.parts == (ToolResult("call_2", "contents", name="read"),)
    assert grep.parts == (ToolResult("call_1", "hits", name="grep"),)
    assert ask.stream is True, "Ollama streams unless told otherwise"


def test_ollama_generate_and_legacy_completions_take_one_prompt():
    generate = ollama.parse_generate({"model": "core:merged", "prompt": "hi", "system": "Be brief.", "stream": False})
    assert generate.reply == "merged" and generate.system == "Be brief." and generate.messages[0].text == "hi"
    legacy = completions.parse({"model": "bench/core", "prompt": ["only one"], "max_tokens": 10})
    assert legacy.messages[0].text == "only one" and legacy.options == {"max_tokens": 10}


def test_sniffing_reads_the_first_bytes():
    assert sniff(PNG) == "image/png" and sniff(JPEG) == "image/jpeg" and sniff(PDF) is None
    assert sniff("UklGRiQAAABXRUJQVlA4IBgAAAAwAQCdASoBAAEAAwA0JaQAA3AA/vuUAAA=") == "image/webp"


@pytest.mark.parametrize(("parser", "body", "error"), [
    (anthropic.parse, {"model": "c", "messages": [{"role": "system", "content": "x"}]}, BadRequest),
    (anthropic.parse, {"model": "c", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"},
     BadRequest),
    (responses.parse, {"model": "c", "input": "x", "background": True}, Unsupported),
    (responses.parse, {"model": "c", "input": [{"type": "item_reference", "id": "msg_1"}]}, Unsupported),
    (gemini.parse, {"model": "c", "contents": [{"parts": [{"text": "x"}]}], "cachedContent": "cachedContents/1"},
     Unsupported),
    (gemini.parse, {"model": "c", "contents": [{"parts": [{"executableCode": {"code": "1"}}]}]}, Unsupported),
    (gemini.parse, {"model": "c", "contents": [{"parts": [{"inlineData": {"mimeType": "audio/wav", "data": "AA"}}]}]},
     Unsupported),
    (ollama.parse, {"model": "c", "messages": [{"role": "user", "content": 5}]}, BadRequest),
    (ollama.parse_generate, {"model": "c", "prompt": "x", "suffix": "y"}, Unsupported),
])
def test_refusals_name_the_field(parser, body, error):
    with pytest.raises(error) as caught:
        parser(body)
    assert caught.value.status == 400 and caught.value.message
