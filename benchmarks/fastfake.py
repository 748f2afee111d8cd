"""A zero-latency fake OpenAI upstream and a lean HTTP/1.1 client, for the hot-path benchmark.

Both are plain asyncio on raw sockets so that neither is the bottleneck: the fake answers
``POST /v1/chat/completions`` (whole, or streamed as SSE in chunked encoding when the body asks
for ``"stream": true``) and ``GET /v1/models`` with fixed bodies, keep-alive, no framework. A
prompt asking for "a long answer" gets ``LONG_TOKENS`` words, streamed a word an event. The
client keeps one connection per worker and reads Content-Length and chunked bodies, timing the
first body byte and the last.

    python benchmarks/fastfake.py PORT      serve the fake on 127.0.0.1:PORT until killed
    python benchmarks/fastfake.py --quick   serve it on a free port, ask it once each way with the
                                            client, print what came back, and stop (CI: it still works)
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import cast

ANSWER = "answer from the fake upstream: a short reply of a few words."
USAGE = {"prompt_tokens": 12, "completion_tokens": 14, "total_tokens": 26}


LONG_ASKED = b"a long answer"  # a prompt with these words gets LONG_TOKENS tokens, a piece each when streamed
LONG_TOKENS = 300
LONG = [f" word{i}" for i in range(LONG_TOKENS)]


def _whole(answer: str = ANSWER) -> bytes:
    body = json.dumps({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                    "finish_reason": "stop"}], "usage": USAGE}).encode()
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)) + body


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _stream(pieces: list[str] | None = None) -> bytes:
    def event(delta: dict[str, object], reason: str | None = None, **extra: object) -> bytes:
        payload = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "m",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": reason}], **extra}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    if pieces is None:
        pieces = [ANSWER[i:i + 16] for i in range(0, len(ANSWER), 16)]
    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": piece}) for piece in pieces]
    events.append(event({}, "stop"))
    events.append(b"data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "choices": [],
                                          "usage": USAGE}).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    return head + b"".join(_chunk(e) for e in events) + b"0\r\n\r\n"


def _models() -> bytes:
    body = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in ("m1", "m2", "m3")]}).encode()
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)) + body


WHOLE, STREAM, MODELS = _whole(), _stream(), _models()
LONG_WHOLE, LONG_STREAM = _whole("".join(LONG)), _stream(LONG)


class FakeProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            length = 0
            at = head.find(b"content-length:")
            if at >= 0:
                stop = head.find(b"\r\n", at)
                length = int(head[at + 15:stop if stop >= 0 else len(head)])
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body = self.buffer[end + 4:total]
            self.buffer = self.buffer[total:]
            assert self.transport is not None
            if head.startswith(b"get"):
                self.transport.write(MODELS)
            elif b'"stream":true' in body.replace(b" ", b""):
                self.transport.write(LONG_STREAM if LONG_ASKED in body else STREAM)
            else:
                self.transport.write(LONG_WHOLE if LONG_ASKED in body else WHOLE)


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(FakeProtocol, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


class Response:
    __slots__ = ("status", "ttfb", "total", "body")

    def __init__(self, status: int, ttfb: float, total: float, body: bytes) -> None:
        self.status, self.ttfb, self.total, self.body = status, ttfb, total, body


class Client:
    """One keep-alive connection (reopened when the server closes it)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"", timeout: float = 60.0) -> Response:
        return await asyncio.wait_for(self._request(method, path, body), timeout)

    async def _request(self, method: str, path: str, body: bytes) -> Response:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (f"{method} {path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n").encode()
        start = time.perf_counter()
        self.writer.write(head + body)
        try:
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionError("closed")
            status = int(status_line.split()[1])
            length, chunked, close = None, False, False
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                name, value = name.strip().lower(), value.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "transfer-encoding" and "chunked" in value:
                    chunked = True
                elif name == "connection" and value == "close":
                    close = True
            ttfb = 0.0
            parts: list[bytes] = []
            if chunked:
                while True:
                    size = int((await self.reader.readline()).split(b";")[0], 16)
                    if not ttfb:
                        ttfb = time.perf_counter() - start
                    if size == 0:
                        await self.reader.readline()
                        break
                    parts.append(await self.reader.readexactly(size))
                    await self.reader.readexactly(2)
            else:
                data = await self.reader.readexactly(length or 0)
                ttfb = time.perf_counter() - start
                parts.append(data)
            total = time.perf_counter() - start
            if close:
                await self.close()
            return Response(status, ttfb, total, b"".join(parts))
        except BaseException:
            await self.close()
            raise


async def quick() -> None:
    """The fake and the client, once each way: a model listing, a whole answer, a streamed one, a long one."""
    server = await asyncio.get_running_loop().create_server(FakeProtocol, "127.0.0.1", 0)
    client = Client("127.0.0.1", server.sockets[0].getsockname()[1])
    asks = [("GET", "/v1/models", b""), ("POST", "/v1/chat/completions", b'{"model": "m", "messages": []}'),
            ("POST", "/v1/chat/completions", b'{"model": "m", "stream": true}'),
            ("POST", "/v1/chat/completions", b'{"model": "m", "stream": true, "content": "' + LONG_ASKED + b'"}')]
    try:
        for method, path, body in asks:
            r = await client.request(method, path, body, timeout=30)
            print(f"{method} {path} {body.decode()[:60]}: {r.status}, {len(r.body):,} bytes,"
                  f" first byte {r.ttfb * 1e3:.2f} ms, last {r.total * 1e3:.2f} ms")
    finally:
        await client.close()
        server.close()


if __name__ == "__main__":
    asyncio.run(quick() if sys.argv[1:] == ["--quick"] else serve(int(sys.argv[1])))
