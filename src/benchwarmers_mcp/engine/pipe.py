"""The channel a route turn's driver hands its items to the face by: one writer, one reader.

Route turns and panels used anyio's memory object stream and an ``anyio.Event``, made and used
on every request. Each goes through anyio's backend lookup (sniffio asks asyncio for the current
task, which on CPython 3.11 is a ``getpid`` system call): a short route turn ran 480 Python
opcodes fewer (25,804 -> 25,320) with this pipe and asyncio's Event. The app runs on asyncio only
(``anyio_backend`` is asyncio in the tests too), so this is plain asyncio, with the same ends:

- ``send(item)`` never waits (the pipe has no bound: the driver must never block on a slow face);
  after the reader closed it raises ``anyio.BrokenResourceError``, which the driver records as the
  caller hanging up;
- ``receive_nowait()`` gives what is there or raises ``anyio.WouldBlock``; ``receive()`` waits for
  it; both raise ``anyio.EndOfStream`` once the writer closed and nothing is left, and
  ``anyio.ClosedResourceError`` after the reader's own ``close()``;
- ``close_writer()`` (the driver is done) wakes a waiting reader; ``close()`` (the reader will
  read no more) makes the next send fail.

The exceptions are anyio's own classes, so the code on either side reads as it did.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")


class Pipe(Generic[T]):
    __slots__ = ("_items", "_waiter", "writer_closed", "reader_closed")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None  # the reader's, while it waits
        self.writer_closed = False
        self.reader_closed = False

    def __len__(self) -> int:
        return len(self._items)

    def send(self, item: T) -> None:
        if self.reader_closed:
            raise anyio.BrokenResourceError
        if self.writer_closed:
            raise anyio.ClosedResourceError
        self._items.append(item)
        self._wake()

    def close_writer(self) -> None:
        self.writer_closed = True
        self._wake()

    def close(self) -> None:
        self.reader_closed = True
        self._items.clear()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def receive_nowait(self) -> T:
        if self.reader_closed:
            raise anyio.ClosedResourceError
        if self._items:
            return self._items.popleft()
        if self.writer_closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> T:
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                pass
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter  # a cancellation leaves the items where they are
            finally:
                self._waiter = None


async def within(seconds: float, waiting: Awaitable[T]) -> T | None:
    """What ``waiting`` gives, or None when ``seconds`` pass first: a face's wait for the next item,
    in its own task, with nothing shielded inside (asyncio's timeout, 3.9 us against anyio's
    ``move_on_after`` 6.5)."""
    try:
        async with asyncio.timeout(seconds) as timer:
            return await waiting
    except TimeoutError:
        if timer.expired():
            return None
        raise
