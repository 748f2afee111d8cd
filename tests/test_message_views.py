"""The canonical messages' views (a message's text, images, tool calls and results; an ask's
``has_images``) are sorted out once, when the message is made, and stay true to its parts: through
``dataclasses.replace``, and without counting in equality or the repr."""

from __future__ import annotations

from dataclasses import replace

from benchwarmers_mcp.messages import Ask, Image, Message, Reasoning, Text, ToolCall, ToolResult


def test_a_messages_views_are_its_parts_by_kind() -> None:
    call, result = ToolCall("c1", "grep", '{"q": "x"}'), ToolResult("c0", "found")
    image = Image(url="https://example.test/a.png")
    message = Message("assistant", (Text("one "), Reasoning("hm"), image, call, Text("two"), result))
    assert message.text == "one two"
    assert (message.images, message.tool_calls, message.tool_results) == ((image,), (call,), (result,))
    bare = Message("user", ())
    assert (bare.text, bare.images, bare.tool_calls, bare.tool_results) == ("", (), (), ())


def test_the_views_follow_a_replace_and_stay_out_of_equality_and_repr() -> None:
    message = Message("user", (Text("look"),))
    seen = replace(message, parts=(Text("look"), Image(url="https://example.test/b.png")))
    assert seen.images and not message.images, "made again from the new parts"
    assert message == Message("user", (Text("look"),)) and message != seen
    assert repr(message) == "Message(role='user', parts=(Text(text='look'),))"


def test_an_ask_knows_once_whether_it_carries_an_image() -> None:
    plain = Ask("core", tuple(Message("user", (Text(f"turn {i}"),)) for i in range(200)))
    assert not plain.has_images
    late = replace(plain, messages=(*plain.messages, Message("user", (Image(url="https://example.test/c.png"),))))
    assert late.has_images, "an image in the last of 201 messages"
    assert plain == Ask("core", plain.messages) and "has_images" not in repr(plain)
