"""Route mode through the Responses API (the openai SDK, as Codex speaks it): a function call and
Codex's custom ``apply_patch`` tool, whole and streamed, and the tool outputs sent back."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import route_server, said, seed_members, tool_call

SHELL = {"type": "function", "name": "shell", "description": "Run a command",
         "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Apply a patch to the files",
               "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"}}
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"


@pytest.fixture
def oa(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha"}, {"codex": ["alpha"]})
    with route_server(net, settings) as base, openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="x", max_retries=0) as client:
        yield client


def test_function_call_and_custom_tool_whole(oa: openai.OpenAI, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [tool_call("call_sh", "shell", {"command": "ls"}),
                             tool_call("call_ap", "apply_patch", {"input": PATCH}), said("Patched.")]
    ask = {"model": "bench/codex:route", "instructions": "You are Codex.", "tools": [SHELL, APPLY_PATCH]}
    history: list = [{"role": "user", "content": "Set x to 2 in a.py"}]
    first = oa.responses.create(input=history, **ask)
    (call,) = first.output
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == ("function_call", "call_sh", "shell",
                                                                                {"command": "ls"})
    upstream = fake.calls[-1].body
    patch_tool = next(t["function"] for t in upstream["tools"] if t["function"]["name"] == "apply_patch")
    assert patch_tool["parameters"]["properties"] == {"input": {"type": "string"}}
    assert "begin_patch hunk+" in patch_tool["description"]
    assert upstream["messages"][0] == {"role": "system", "content": "You are Codex."}

    history += [call.model_dump(exclude_none=True), {"type": "function_call_output", "call_id": "call_sh",
                                                     "output": "a.py"}]
    second = oa.responses.create(input=history, **ask)
    (patch,) = second.output
    assert (patch.type, patch.call_id, patch.name, patch.input) == ("custom_tool_call", "call_ap", "apply_patch", PATCH)
    assert second.model_extra["bench"]["turn"] == 2

    history += [patch.model_dump(exclude_none=True), {"type": "custom_tool_call_output", "call_id": "call_ap",
                                                      "output": "Done!"}]
    third = oa.responses.create(input=history, **ask)
    assert third.output_text == "Patched."
    sent = fake.calls[-1].body["messages"]
    assert json.loads(sent[-2]["tool_calls"][0]["function"]["arguments"]) == {"input": PATCH}
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_ap", "content": "Done!"}


def test_custom_tool_streamed(oa: openai.OpenAI, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [{**tool_call("call_ap2", "apply_patch", {"input": PATCH}), "content": "Patching now."}]
    events = list(oa.responses.create(model="bench/codex:route", input="Set x to 2", tools=[SHELL, APPLY_PATCH],
                                      stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds and "response.custom_tool_call_input.delta" in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert [o.type for o in final.output] == ["message", "custom_tool_call"]
    assert final.output[0].content[0].text == "Patching now." and final.output[1].input == PATCH
    assert final.model_extra["bench"]["alias"] == "alpha" and final.usage.input_tokens > 0


def test_function_call_through_the_stream_helper(oa: openai.OpenAI, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [tool_call("call_sh2", "shell", {"command": "pwd"})]
    with oa.responses.stream(model="bench/codex:route", input="Where am I?", tools=[SHELL]) as stream:
        arguments = "".join(e.delta for e in stream if e.type == "response.function_call_arguments.delta")
        final = stream.get_final_response()
    assert json.loads(arguments) == {"command": "pwd"}
    (call,) = final.output
    assert (call.type, call.call_id, call.name) == ("function_call", "call_sh2", "shell")
