"""Issue 29: every content block type Anthropic documents is accepted in the Anthropic dialect, each by
its one rule (gateway/anthropic_blocks.py), judged through the anthropic SDK in route mode; Claude
Code's tool search (``tool_reference`` blocks, ``defer_loading`` tools) reaches members as the tool
names it references, with the referenced tools offered in full."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import content_block_param, tool_result_block_param
from anthropic.types.beta import beta_content_block_param, beta_tool_result_block_param

from benchwarmers_mcp.gateway import anthropic_blocks as blocks
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits import dialect as kit
from tests.kits.loopback import Loopback
from tests.kits.route import route_server, said, seed_members

LOOKUP = {"name": "lookup", "description": "Look a code up", "input_schema": {
    "type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}
TOOL_SEARCH = {"name": "ToolSearch", "description": "Fetches full schema definitions for deferred tools",
               "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
PLACEHOLDER = {"name": "DeferredToolPlaceholder", "description": "never call this tool", "defer_loading": True,
               "input_schema": {"type": "object", "properties": {}}}
DEFERRED = {"name": "mcp__codes__launch_code", "description": "The launch code", "defer_loading": True,
            "input_schema": {"type": "object", "properties": {}}}
OTHER_DEFERRED = {**DEFERRED, "name": "mcp__codes__other"}


def _documented(*unions: Any) -> set[str]:
    """The ``type`` of every block in the SDK's unions (TypedDicts, and response models sent back)."""
    found: set[str] = set()
    for union in unions:
        for member in typing.get_args(union):
            member = typing.get_args(member)[0] if typing.get_origin(member) is typing.Annotated else member
            if typing.get_origin(member) is typing.Union:
                found |= _documented(member)
                continue
            fields = getattr(member, "model_fields", None)  # a response model (pydantic), else a TypedDict
            hint = fields["type"].annotation if fields else typing.get_type_hints(member, include_extras=True)["type"]
            while typing.get_origin(hint) is not typing.Literal:
                hint = typing.get_args(hint)[0]
            found |= set(typing.get_args(hint))
    return found


DOCUMENTED = _documented(content_block_param.ContentBlockParam, beta_content_block_param.BetaContentBlockParam,
                         tool_result_block_param.Content, beta_tool_result_block_param.Content)


def test_every_type_the_sdk_documents_has_a_rule():
    assert {"tool_reference", "search_result", "container_upload", "document", "compaction"} <= DOCUMENTED
    assert DOCUMENTED - set(blocks.RULES) - set(blocks.TURN_BLOCKS) == set()


@pytest.fixture
def claude(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha"}, {"agents": ["alpha"]}, max_output=4096)
    with route_server(net, settings) as url:
        with anthropic.Anthropic(http_client=net.client2(), base_url=url, api_key="anything", max_retries=0) as c:
            yield c


def ask(claude: anthropic.Anthropic, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None):
    return claude.messages.create(model="bench/agents:route", max_tokens=100, messages=messages,
                                  tools=tools or [LOOKUP])


# the minimal block of each type a member gets nothing of (each with the fields its type requires)
DROPPED = {
    "thinking": {"thinking": "let me see", "signature": "sig"},
    "redacted_thinking": {"data": "opaque"},
    "server_tool_use": {"id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
    "web_search_tool_result": {"tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "title": "T", "url": "https://example.com", "encrypted_content": "e"}]},
    "web_fetch_tool_result": {"tool_use_id": "srvtoolu_2", "content": {"type": "web_fetch_tool_result_error",
                                                                      "error_code": "unavailable"}},
    "code_execution_tool_result": {"tool_use_id": "srvtoolu_3", "content": {
        "type": "code_execution_result", "stdout": "1", "stderr": "", "return_code": 0, "content": []}},
    "bash_code_execution_tool_result": {"tool_use_id": "srvtoolu_4", "content": {
        "type": "bash_code_execution_result", "stdout": "", "stderr": "", "return_code": 0, "content": []}},
    "text_editor_code_execution_tool_result": {"tool_use_id": "srvtoolu_5", "content": {
        "type": "text_editor_code_execution_view_result", "content": "x", "file_type": "text"}},
    "tool_search_tool_result": {"tool_use_id": "srvtoolu_6", "content": {
        "type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "x"}]}},
    "advisor_tool_result": {"tool_use_id": "srvtoolu_7", "content": {"type": "advisor_result", "text": "ok"}},
    "mcp_tool_use": {"id": "mcptoolu_1", "name": "echo", "server_name": "srv", "input": {}},
    "mcp_tool_result": {"tool_use_id": "mcptoolu_1", "content": "echoed", "is_error": False},
    "container_upload": {"file_id": "file_1"},
    "fallback": {"to": {"model": "claude-x"}},
    "tool_addition": {"tool": {"type": "tool_reference", "tool_name": "lookup"}},
    "tool_removal": {"tool": {"type": "tool_reference", "tool_name": "lookup"}},
    "mcp_tool_listing": {"mcp_server_name": "srv", "tools": []},
    "compaction": {"content": None},
}


def test_blocks_a_member_gets_nothing_of_are_dropped_never_refused(claude, fake: FakeUpstream):
    assert set(DROPPED) - {"compaction"} == set(blocks.REASONING + blocks.HOSTED_RECORDS + blocks.SERVER_DIRECTIVES) \
        - {"browser_state"}
    fake.script["alpha"] += [said("done")]
    assistant = [{"type": kind, **fields} for kind, fields in DROPPED.items()] + [{"type": "text", "text": "Earlier."}]
    reply = ask(claude, [{"role": "user", "content": "go"}, {"role": "assistant", "content": assistant},
                         {"role": "user", "content": [{"type": "text", "text": "and now?"},
                                                      {"type": "container_upload", "file_id": "file_2"}]}])
    assert reply.content[0].text == "done"
    sent = fake.calls[-1].body["messages"]
    assert sent[-2:] == [{"role": "assistant", "content": "Earlier."}, {"role": "user", "content": "and now?"}]


def test_blocks_with_content_reach_the_member_as_text(claude, fake: FakeUpstream):
    fake.script["alpha"] += [said("read")]
    user = [
        {"type": "document", "title": "notes.txt",
         "source": {"type": "text", "media_type": "text/plain", "data": "The code is 7."}},
        {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "inner text"}]}},
        {"type": "document", "title": "spec.pdf",
         "source": {"type": "base64", "media_type": "application/pdf", "data": kit.PDF}},
        {"type": "search_result", "title": "Guide", "source": "https://example.com/guide",
         "content": [{"type": "text", "text": "Step one."}]},
        {"type": "text", "text": "What is the code?"}]
    ask(claude, [{"role": "user", "content": "earlier"},
                 {"role": "assistant", "content": [{"type": "compaction", "content": "We spoke of codes."}]},
                 {"role": "user", "content": user}])
    sent = fake.calls[-1].body["messages"]
    assert sent[-2] == {"role": "assistant", "content": "We spoke of codes."}
    assert sent[-1] == {"role": "user", "content": (
        "\n[document: notes.txt]\nThe code is 7.\ninner text"
        "\n[document 'spec.pdf' (application/pdf): not carried here, as this gateway's members read text and "
        "images only]\n\n[search result: Guide https://example.com/guide]\nStep one.\nWhat is the code?")}


def test_tool_search_reaches_the_member_as_tool_names_and_offers_what_it_referenced(claude, fake: FakeUpstream):
    """Claude Code's tool search, as it sends it: ToolSearch's result is tool_reference blocks, and the
    referenced tool comes with ``defer_loading: true`` (its placeholder too, never referenced)."""
    fake.script["alpha"] += [said("first"), said("second")]
    ask(claude, [{"role": "user", "content": "What is the launch code?"}], [TOOL_SEARCH, PLACEHOLDER, LOOKUP])
    assert [t["function"]["name"] for t in fake.calls[-1].body["tools"]] == ["ToolSearch", "lookup"]
    messages = [
        {"role": "user", "content": "What is the launch code?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch",
                                           "input": {"query": "select:mcp__codes__launch_code"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "cache_control": {
            "type": "ephemeral"}, "content": [{"type": "tool_reference", "tool_name": "mcp__codes__launch_code"}]}]}]
    reply = ask(claude, messages, [TOOL_SEARCH, PLACEHOLDER, DEFERRED, OTHER_DEFERRED])
    assert reply.content[0].text == "second"
    body = fake.calls[-1].body
    assert [t["function"]["name"] for t in body["tools"]] == ["ToolSearch", "mcp__codes__launch_code"]
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "toolu_1", "content": "mcp__codes__launch_code"}


def test_an_undocumented_type_is_still_a_400_naming_it(claude):
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(claude, [{"role": "user", "content": [{"type": "hologram", "data": "x"}]}])
    assert "unknown content block type 'hologram'" in caught.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(claude, [{"role": "user", "content": [{"type": "tool_reference"}]}])
    assert "tool_name must be a tool's name" in caught.value.body["error"]["message"]
