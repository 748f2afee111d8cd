"""Tool names a member's API takes (``providers.convert``): each API's rule, a short name made from
the name alone, and ``ToolNames`` renaming a request's tools, choice and conversation for the member
and mapping its calls back, with nothing kept between requests."""

from __future__ import annotations

import re

import pytest

from benchwarmers_mcp.messages import (
    Message,
    ModelRequest,
    Text,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    user,
)
from benchwarmers_mcp.providers.convert import CHAT_NAMES, ToolNames, name_rule, short_name

LONG = "mcp__benchwarmers_panel_gateway_with_a_rather_long_server_name__list_collections"
CHAT = re.compile(r"[A-Za-z0-9_-]{1,64}")


@pytest.mark.parametrize(("api", "name", "fits"), [
    ("chat", "exec_command", True),
    ("chat", "a" * 64, True),
    ("chat", "a" * 65, False),
    ("chat", "files.read", False),
    ("chat", "", False),
    ("anthropic", "mcp__x__y-z", True),
    ("anthropic", "a" * 65, False),
    ("gemini", "files.read:v2", True),
    ("gemini", "9lives", False),
    ("gemini", "_private", True),
    ("unknown-api", "a" * 65, False),
])
def test_each_api_has_its_rule(api: str, name: str, fits: bool) -> None:
    assert name_rule(api).fits(name) is fits


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini", "ollama", "responses"])
def test_a_short_name_fits_its_rule_and_is_made_from_the_name_alone(api: str) -> None:
    rule = name_rule(api)
    for name in (LONG, "9" + LONG, "server/tool.with spaces" * 4):
        short = short_name(name, rule)
        assert rule.fits(short) and short == short_name(name, rule)
    assert short_name(LONG + "_a", rule) != short_name(LONG + "_b", rule), "names that start alike stay apart"


def test_names_that_fit_stay_and_the_rest_are_shortened_both_ways() -> None:
    names = ToolNames(["exec_command", LONG, "files.read"], CHAT_NAMES)
    assert names.theirs("exec_command") == "exec_command"
    short = names.theirs(LONG)
    assert CHAT.fullmatch(short) and short.startswith("mcp__benchwarmers_panel") and len(short) == 64
    assert names.theirs("files.read").startswith("files_read_")
    assert names.ours(short) == LONG and names.ours(names.theirs("files.read")) == "files.read"
    assert names.ours("never_offered") == "never_offered"
    assert names.renamed == {LONG: short, "files.read": names.theirs("files.read")}


def test_the_same_tools_shorten_the_same_way_in_every_request() -> None:
    first = ToolNames([LONG, "a"], CHAT_NAMES)
    again = ToolNames(["a", LONG], CHAT_NAMES)
    assert first.theirs(LONG) == again.theirs(LONG)


def test_a_short_name_never_takes_a_name_another_tool_has() -> None:
    squatter = short_name(LONG, CHAT_NAMES)
    names = ToolNames([LONG, squatter], CHAT_NAMES)
    assert names.theirs(squatter) == squatter
    assert names.theirs(LONG) != squatter and CHAT.fullmatch(names.theirs(LONG))
    assert names.ours(names.theirs(LONG)) == LONG


def test_a_request_reaches_the_member_renamed_and_its_calls_come_back() -> None:
    request = ModelRequest(
        "m", (user("go"), Message("assistant", (Text("calling"), ToolCall("c1", LONG, "{}"))),
              Message("tool", (ToolResult("c1", "ok", name=LONG),))),
        tools=(Tool(LONG), Tool("short")), tool_choice={"type": "function", "function": {"name": LONG}})
    names = ToolNames.of(request, CHAT_NAMES)
    sent = names.request(request)
    short = names.theirs(LONG)
    assert [t.name for t in sent.tools] == [short, "short"]
    assert sent.tool_choice == {"type": "function", "function": {"name": short}}
    assert sent.messages[1].tool_calls[0].name == short and sent.messages[1].text == "calling"
    assert sent.messages[2].tool_results[0].name == short
    assert names.event(ToolCallDelta(0, "c2", short, "{")) == ToolCallDelta(0, "c2", LONG, "{")
    assert names.event(ToolCallDelta(0, arguments="}")) == ToolCallDelta(0, arguments="}")
    assert ToolNames.of(sent, CHAT_NAMES).request(sent) is sent, "a request that fits goes as it is"


def test_a_call_in_the_conversation_to_a_tool_no_longer_offered_is_shortened_too() -> None:
    request = ModelRequest("m", (user("go"), Message("assistant", (ToolCall("c1", LONG, "{}"),))), tools=(Tool("a"),))
    sent = ToolNames.of(request, CHAT_NAMES).request(request)
    assert sent.messages[1].tool_calls[0].name == short_name(LONG, CHAT_NAMES)
