"""Every Responses tool kind in route mode, the official openai SDK as the client: what the member
gets (namespaces flattened, client-run builtins as functions, hosted tools left out and listed in
``bench.dropped_tools``, long names shortened), what goes back (each call as the item its kind calls
for, checked against the SDK's own output-item types) and the conversation sent back after it."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.responses import ResponseOutputItem, Tool
from pydantic import TypeAdapter

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.gateway import responses, responses_tools
from benchwarmers_mcp.messages import ToolCall
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import route_server, said, seed_members, tool_call

OUTPUT_ITEM: TypeAdapter[Any] = TypeAdapter(ResponseOutputItem)
LONG_TOOL = "write_the_given_text_into_a_file_in_the_working_folder"
SERVER = "mcp__scribe_of_the_benchwarmers_test_suite"
CHAT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

# What Codex 0.171 sent (captured from `codex exec` against a logging fake; prompts cut short).
CODEX = {
    "model": "bench/codex:route", "stream": False, "tool_choice": "auto", "parallel_tool_calls": True,
    "reasoning": {"summary": "auto"}, "store": False, "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "01a2312d-b321-7581-9cec-19dd84e128e5", "client_metadata": {"thread_id": "01a2312d"},
    "tools": [
        {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY.", "strict": False,
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
        {"type": "namespace", "name": "multi_agent_v1", "description": "Tools for sub-agents.", "tools": [
            {"type": "function", "name": "close_agent", "strict": False,
             "parameters": {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}}]},
        {"type": "namespace", "name": "mcp__probe", "description": "Tools in the mcp__probe namespace.", "tools": [
            {"type": "function", "name": "write_marker", "description": "Write text to a file at path.",
             "strict": False, "parameters": {"type": "object", "properties": {
                 "path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path", "text"]}}]},
        {"type": "web_search", "external_web_access": False},
    ],
    "input": [
        {"type": "message", "id": "msg_1", "role": "developer",
         "content": [{"type": "input_text", "text": "You are a coding agent running in the Codex CLI."}]},
        {"type": "message", "id": "msg_2", "role": "user", "content": [{"type": "input_text", "text": "do it"}]},
        {"type": "function_call", "status": "completed", "id": "fc_1", "name": "write_marker",
         "namespace": "mcp__probe", "arguments": "{\"path\":\"m.txt\",\"text\":\"ok\"}", "call_id": "call_ns_1"},
        {"type": "function_call_output", "id": "fco_1", "call_id": "call_ns_1",
         "output": "Wall time: 0.0054 seconds\nOutput:\n{\"result\":\"written\"}"},
    ],
}


def sdk_tool_kinds() -> list[str]:
    """Every ``type`` the installed openai SDK's Responses ``Tool`` union allows."""
    members = typing.get_args(typing.get_args(Tool)[0])
    return [k for m in members for k in typing.get_args(m.model_fields["type"].annotation)]


def test_every_tool_kind_the_sdk_knows_is_mapped_or_left_out_never_refused() -> None:
    mapped = {"function", "custom", "namespace", "local_shell", "shell", "apply_patch", "tool_search"}
    kinds = sdk_tool_kinds()
    assert set(kinds) <= mapped | set(responses_tools.HOSTED), "a kind the gateway has no plan for"
    for kind in kinds:
        box = responses_tools.toolbox([{"type": kind, "name": "t", "tools": [{"type": "function", "name": "f"}],
                                        "execution": "server",
                                        "environment": {"type": "container_auto"}}])
        assert box.tools or box.dropped, kind


def test_codex_request_parses_into_the_member_s_tools_and_conversation() -> None:
    ask = responses.parse(CODEX)
    assert [t.name for t in ask.tools] == ["exec_command", "multi_agent_v1__close_agent", "mcp__probe__write_marker"]
    assert ask.system == "You are a coding agent running in the Codex CLI."
    call = ask.messages[1].tool_calls[0]
    assert call == ToolCall("call_ns_1", "mcp__probe__write_marker", "{\"path\":\"m.txt\",\"text\":\"ok\"}")
    assert ask.messages[2].tool_results[0].call_id == "call_ns_1"
    box = responses.parse_tools(CODEX)[0]
    assert box.dropped == [{"type": "web_search", "why": "OpenAI's web search runs on OpenAI's servers"}]
    assert responses_tools.call_item(ToolCall("c9", "mcp__probe__write_marker", "{}"), box) == {
        "type": "function_call", "id": "fc_c9", "call_id": "c9", "name": "write_marker", "namespace": "mcp__probe",
        "arguments": "{}", "status": "completed"}


def test_codex_tool_search_round_offers_the_tools_it_found() -> None:
    """Captured from Codex 0.171 with a model it knows (`-m gpt-5.5`): MCP tools deferred behind its
    own client-run tool search, and the search's output bringing them in."""
    body = {"model": "bench/codex:route", "tools": [
        {"type": "tool_search", "execution": "client", "description": "# Tool discovery",
         "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
        {"type": "web_search", "external_web_access": False, "search_content_types": ["text", "image"]}],
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do it"}]},
            {"type": "tool_search_call", "id": "ts_1", "call_id": "call_ts_1", "status": "completed",
             "execution": "client", "arguments": {"query": "write a marker file"}},
            {"type": "tool_search_output", "id": "tso_1", "call_id": "call_ts_1", "status": "completed",
             "execution": "client", "tools": [{"type": "namespace", "name": "mcp__probe",
                                               "description": "Tools in the mcp__probe namespace.", "tools": [
                 {"type": "function", "name": "write_marker", "description": "Write text to a file at path.",
                  "strict": False, "defer_loading": True, "parameters": {"type": "object", "properties": {}}}]}]}]}
    ask = responses.parse(body)
    assert [t.name for t in ask.tools] == ["tool_search", "mcp__probe__write_marker"]
    assert ask.messages[1].tool_calls == (ToolCall("call_ts_1", "tool_search", '{"query": "write a marker file"}'),)
    assert json.loads(ask.messages[2].tool_results[0].content) == {"tools_found": [
        {"name": "mcp__probe__write_marker", "description": "Write text to a file at path."}]}


@pytest.mark.parametrize(("choice", "expected"), [
    ({"type": "function", "name": "write_marker"}, {"type": "function", "function": {"name": "mcp__probe__write_marker"}}),
    ({"type": "web_search_preview"}, "auto"),
    ({"type": "mcp", "server_label": "deepwiki"}, "auto"),
    ({"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "exec_command"}]},
     "required"),
])
def test_tool_choice_in_every_form(choice: dict[str, Any], expected: Any) -> None:
    ask = responses.parse({**CODEX, "tool_choice": choice})
    assert ask.tool_choice == expected
    if choice["type"] == "allowed_tools":
        assert [t.name for t in ask.tools] == ["exec_command"]


def test_a_tool_choice_naming_no_tool_is_refused() -> None:
    with pytest.raises(BadRequest, match="not among the tools"):
        responses.parse({**CODEX, "tool_choice": {"type": "function", "name": "nothing"}})


def test_hosted_items_in_the_conversation_are_left_out() -> None:
    items = [{"role": "user", "content": "find it"},
             {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
             {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
             {"type": "mcp_call", "id": "mc_1", "server_label": "x", "name": "y", "arguments": "{}", "output": "z"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "found"}]}]
    ask = responses.parse({"model": "bench/codex:route", "input": items})
    assert [(m.role, m.text) for m in ask.messages] == [("user", "find it"), ("assistant", "found")]


# ---- through the gateway, the SDK as Codex ------------------------------------------------------

ALL_KINDS = [
    {"type": "namespace", "name": SERVER, "description": "Tools in the scribe namespace.", "tools": [
        {"type": "function", "name": LONG_TOOL, "description": "Write text into a file.",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}}},
        {"type": "custom", "name": "sketch", "description": "Free-form sketch."}]},
    {"type": "local_shell"},
    {"type": "shell", "environment": {"type": "local"}},
    {"type": "apply_patch"},
    {"type": "tool_search", "execution": "client", "description": "Find more tools.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
    {"type": "web_search_preview"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "code_interpreter", "container": {"type": "auto"}},
    {"type": "image_generation"},
    {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp"},
    {"type": "computer_use_preview", "display_width": 1024, "display_height": 768, "environment": "linux"},
    {"type": "shell", "environment": {"type": "container_auto"}},
]


@pytest.fixture
def oa(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha"}, {"codex": ["alpha"]})
    with route_server(net, settings) as base, openai.OpenAI(http_client=net.client2(), base_url=base + "/v1",
                                                            api_key="x", max_retries=0) as client:
        yield client


def member_tools(fake: FakeUpstream) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in fake.calls[-1].body.get("tools", [])}


def raw_output(oa: openai.OpenAI, **body: Any) -> dict[str, Any]:
    """The response as the wire has it (so each item can be checked against the SDK's types)."""
    return json.loads(oa.responses.with_raw_response.create(**body).text)


def test_every_kind_reaches_the_member_as_a_function_or_is_listed_as_left_out(
        oa: openai.OpenAI, fake: FakeUpstream) -> None:
    fake.script["alpha"].append(said("noted"))
    reply = raw_output(oa, model="bench/codex:route", input="hi", tools=ALL_KINDS)
    tools = member_tools(fake)
    long_name = next(n for n in tools if n.startswith(SERVER))
    assert sorted(n for n in tools if n != long_name) == sorted(
        [f"{SERVER}__sketch", "local_shell", "shell", "apply_patch", "tool_search"])
    assert all(CHAT_NAME.fullmatch(n) for n in tools)
    assert tools[f"{SERVER}__sketch"]["parameters"]["required"] == ["input"]
    assert tools["shell"]["parameters"]["required"] == ["commands"]
    bench = reply["bench"]
    assert [d["type"] for d in bench["dropped_tools"]] == [
        "web_search_preview", "file_search", "code_interpreter", "image_generation", "mcp", "computer_use_preview",
        "shell"]
    assert bench["dropped_tools"][4] == {"type": "mcp", "name": "deepwiki",
                                         "why": "a remote MCP server is called by OpenAI's servers, not by the client"}
    assert bench["renamed_tools"] == {f"{SERVER}__{LONG_TOOL}": long_name}


def scripted_calls(fake: FakeUpstream, long_name: str) -> None:
    """One turn calling every client-run kind at once."""
    calls = [("c_long", long_name, {"path": "a.txt", "text": "hello"}),
             ("c_sketch", f"{SERVER}__sketch", {"input": "a box"}),
             ("c_local", "local_shell", {"command": ["ls", "-la"], "working_directory": "/tmp"}),
             ("c_shell", "shell", {"commands": ["echo hi", "pwd"], "timeout_ms": 5000}),
             ("c_patch", "apply_patch", {"type": "create_file", "path": "b.txt", "diff": "+hello\n"}),
             ("c_search", "tool_search", {"query": "weather"})]
    message = tool_call(*calls[0])
    message["tool_calls"] += [tool_call(*c)["tool_calls"][0] for c in calls[1:]]
    fake.script["alpha"].append(message)


def test_each_call_goes_back_as_its_kind_and_the_outputs_reach_the_member(oa: openai.OpenAI,
                                                                          fake: FakeUpstream) -> None:
    fake.script["alpha"].append(said("first"))
    oa.responses.create(model="bench/codex:route", input="hi", tools=ALL_KINDS)
    long_name = next(n for n in member_tools(fake) if n.startswith(SERVER))
    scripted_calls(fake, long_name)
    reply = raw_output(oa, model="bench/codex:route", input="go", tools=ALL_KINDS)
    items = reply["output"]
    for item in items:
        OUTPUT_ITEM.validate_python(item)  # the SDK's own type for each item, strictly
    by_id = {i["call_id"]: i for i in items}
    assert {k: by_id["c_long"][k] for k in ("type", "name", "namespace")} == {
        "type": "function_call", "name": LONG_TOOL, "namespace": SERVER}
    assert {k: by_id["c_sketch"][k] for k in ("type", "name", "namespace", "input")} == {
        "type": "custom_tool_call", "name": "sketch", "namespace": SERVER, "input": "a box"}
    assert by_id["c_local"]["action"] == {"type": "exec", "command": ["ls", "-la"], "env": {},
                                         "working_directory": "/tmp"}
    assert by_id["c_shell"]["action"] == {"commands": ["echo hi", "pwd"], "timeout_ms": 5000}
    assert by_id["c_patch"]["operation"] == {"type": "create_file", "path": "b.txt", "diff": "+hello\n"}
    assert (by_id["c_search"]["type"], by_id["c_search"]["arguments"]) == ("tool_search_call", {"query": "weather"})

    found = {"type": "namespace", "name": "weather", "description": "Weather tools.", "tools": [
        {"type": "function", "name": "forecast", "description": "The forecast for a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}
    history = [{"role": "user", "content": "go"}, *items,
               {"type": "function_call_output", "call_id": "c_long", "output": "wrote 5"},
               {"type": "custom_tool_call_output", "call_id": "c_sketch", "output": "sketched"},
               {"type": "local_shell_call_output", "id": "c_local", "output": "total 0"},
               {"type": "shell_call_output", "call_id": "c_shell", "output": [
                   {"stdout": "hi\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
               {"type": "apply_patch_call_output", "call_id": "c_patch", "status": "completed", "output": "Created"},
               {"type": "tool_search_output", "call_id": "c_search", "execution": "client", "tools": [found]}]
    fake.script["alpha"].append(tool_call("c_fc", "weather__forecast", {"city": "Paris"}))
    after = raw_output(oa, model="bench/codex:route", input=history, tools=ALL_KINDS)
    sent = fake.calls[-1].body
    assert "weather__forecast" in member_tools(fake), "a tool the search found is offered from then on"
    calls = [(c["id"], c["function"]["name"]) for m in sent["messages"] for c in m.get("tool_calls") or []]
    assert calls == [("c_long", long_name), ("c_sketch", f"{SERVER}__sketch"), ("c_local", "local_shell"),
                     ("c_shell", "shell"), ("c_patch", "apply_patch"), ("c_search", "tool_search")]
    assert json.loads(sent["messages"][1]["tool_calls"][2]["function"]["arguments"]) == {
        "command": ["ls", "-la"], "env": {}, "working_directory": "/tmp"}
    results = {m["tool_call_id"]: m["content"] for m in sent["messages"] if m["role"] == "tool"}
    assert results["c_local"] == "total 0" and results["c_patch"] == "Created"
    assert results["c_shell"] == "stdout:\nhi\n\nexit code: 0"
    assert json.loads(results["c_search"]) == {"tools_found": [
        {"name": "weather__forecast", "description": "The forecast for a city."}]}
    (forecast,) = after["output"]
    assert {k: forecast[k] for k in ("type", "name", "namespace")} == {
        "type": "function_call", "name": "forecast", "namespace": "weather"}


def test_a_namespaced_call_streams_with_its_namespace(oa: openai.OpenAI, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [{**tool_call("c_s", f"{SERVER}__sketch", {"input": "x"}), "content": "Sketching."},
                             tool_call("c_l", "local_shell", {"command": ["true"]})]
    with oa.responses.stream(model="bench/codex:route", input="sketch", tools=ALL_KINDS) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert "response.custom_tool_call_input.delta" in kinds
    assert [(o.type, getattr(o, "namespace", None)) for o in final.output] == [
        ("message", None), ("custom_tool_call", SERVER)]
    with oa.responses.stream(model="bench/codex:route", input="run", tools=ALL_KINDS) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert kinds[-3:] == ["response.output_item.added", "response.output_item.done", "response.completed"]
    (local,) = final.output
    assert (local.type, local.action.command) == ("local_shell_call", ["true"])
