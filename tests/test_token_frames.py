"""A streamed reply's frame for each token is made from the frame's fixed parts (``sse.Frame``),
and its bytes are exactly what the encoder makes of the whole frame, in every dialect that uses it."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers_mcp.gateway import anthropic, openai_chat, responses
from benchwarmers_mcp.gateway.sse import Frame, sse
from benchwarmers_mcp.messages import Ask, Message

TEXTS = ["", "a word", ' "quoted" \\ back', "é€😀 and 中文", "new\nline\ttab\r\x00\x1f", "\u2028\u2029",
         "\ue000hole 0\ue000", "</script>", "{\"json\": [1, 2]}"]


def _chunk(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "bench/a",
            "choices": [{"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}]}


@pytest.mark.parametrize("text", TEXTS)
def test_a_frame_is_the_encoders_bytes(text: str) -> None:
    assert Frame(_chunk)(text) == sse(_chunk(text))
    named = Frame(lambda t: {"type": "delta", "text": t}, event="delta")
    assert named(text) == sse({"type": "delta", "text": text}, event="delta")


def test_a_frame_with_two_values_and_any_json_value() -> None:
    def make(n: Any, t: Any) -> dict[str, Any]:
        return {"type": "x", "sequence_number": n, "delta": t, "after": [None, True]}

    frame = Frame(make, event="x", holes=2)
    for n, t in ((0, "é"), (12345, ""), (7, {"nested": ["a"]}), (None, 1.5)):
        assert frame(n, t) == sse(make(n, t), event="x")
    three = Frame(lambda a, b, c: [a, {"b": b}, c], holes=3)
    assert three("x", 2, None) == sse(["x", {"b": 2}, None])


def test_a_frame_refuses_what_it_cannot_make() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        Frame(lambda t: {"a": t, "b": t})  # placed twice
    with pytest.raises(ValueError, match="exactly once"):
        Frame(lambda t: {"a": "fixed"})  # not placed
    with pytest.raises(TypeError, match="takes 1 values, not 2"):
        Frame(_chunk)("a", "b")


@pytest.mark.parametrize("text", TEXTS)
def test_each_dialects_token_frame_is_its_whole_frame(text: str) -> None:
    out = openai_chat.ChunkWriter("bench/a")
    assert out.text(text) == out.chunk({"content": text})
    assert out.reasoning(text) == out.chunk({"reasoning_content": text})

    for index in (0, 3):
        assert anthropic._text_delta_at(index)(text) == anthropic.event(
            "content_block_delta", index=index, delta={"type": "text_delta", "text": text})

    reply = responses.Reply(Ask("a", (Message("user", "hi"),), model_name="bench/a"), {})
    reply.sequence = 41
    made = reply.text_delta(text)
    assert reply.sequence == 42, "a token's frame takes its sequence number"
    reply.sequence = 41
    assert made == reply.text_event("response.output_text.delta", delta=text, logprobs=[])
