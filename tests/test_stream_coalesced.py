"""A streamed route turn writes the frames it already has the events for as one write, and never
holds a frame back that would have to wait (``gateway.face.coalesced``); and on a real turn the
driver's bookkeeping tells the face when that is (``RouteTurn.waiting``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from benchwarmers_mcp.gateway.face import coalesced

pytestmark = pytest.mark.anyio


class Turn:
    """Answers ``waiting()`` from a script, one answer a call (the last one repeats)."""

    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)

    def waiting(self) -> bool:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class Frames:
    def __init__(self, n: int) -> None:
        self.n, self.closed = n, False

    async def run(self) -> AsyncIterator[bytes]:
        try:
            for i in range(self.n):
                yield b"<%d>" % i
        finally:
            self.closed = True


async def writes(turn: Turn, frames: Frames) -> list[bytes]:
    return [w async for w in coalesced(turn, frames.run())]  # type: ignore[arg-type]


async def test_frames_whose_events_are_there_go_out_as_one_write() -> None:
    frames = Frames(5)
    assert await writes(Turn(False), frames) == [b"<0><1><2><3><4>"]
    assert frames.closed


async def test_a_frame_that_must_wait_goes_alone() -> None:
    assert await writes(Turn(True), Frames(3)) == [b"<0>", b"<1>", b"<2>"]
    # the first waits; then two are there; then the driver must be waited for again
    assert await writes(Turn(True, False, False, False, True), Frames(5)) == [b"<0>", b"<1><2><3>", b"<4>"]


async def test_a_reader_that_stops_early_closes_the_frames() -> None:
    frames = Frames(5)
    stream = coalesced(Turn(True), frames.run())  # type: ignore[arg-type]
    assert await anext(stream) == b"<0>"
    await stream.aclose()
    assert frames.closed
