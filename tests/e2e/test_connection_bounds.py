"""The server's connections are bounded, on a real socket of ``benchwarmers serve``: a connection that
sends nothing, a request head that trickles in, a body that trickles in and a kept-alive connection
left idle are each closed after their timeout (a head or a body cut short is answered 408 first);
a head too large or with too many headers is refused; ``Content-Length`` with ``Transfer-Encoding``
is 400; a client that hangs up mid-body is logged as a hang-up, with no traceback."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kits.servers import free_port, spawn_server

pytestmark = pytest.mark.e2e

# Generous: the server's own timeouts are 1 s; this only keeps a broken server from hanging the test.
PATIENCE = 30


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """One server for the module: each test opens its own connections."""
    root = tmp_path_factory.mktemp("bounds")
    port, log = free_port(), root / "server.log"
    with spawn_server(root / "data", port, log=log, BENCH_HEAD_TIMEOUT="1", BENCH_BODY_TIMEOUT="1",
                      BENCH_KEEP_ALIVE_TIMEOUT="1"):
        yield port, log


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
    return sock


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a timeout fails the test)."""
    received = b""
    with sock:
        while True:
            try:
                piece = sock.recv(65536)
            except TimeoutError:
                pytest.fail(f"the server kept the connection open; it sent {received[:200]!r}")
            except ConnectionResetError:
                return received
            if not piece:
                return received
            received += piece


def head(port: int, method: str = "POST", path: str = "/v1/chat/completions", *extra: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_and_body(reply: bytes) -> tuple[int, bytes]:
    top, _, body = reply.partition(b"\r\n\r\n")
    return int(top.split(b" ", 2)[1]), body


def test_a_connection_that_sends_nothing_is_closed(server: tuple[int, Path]) -> None:
    assert until_closed(connect(server[0])) == b""


def test_a_head_that_trickles_in_is_cut_off_with_408(server: tuple[int, Path]) -> None:
    sock = connect(server[0])
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    sock.settimeout(0.25)
    try:
        for _ in range(4 * PATIENCE):  # a header line every quarter second, never the end of the head
            sock.sendall(b"X-Slow: 1\r\n")
            try:
                if sock.recv(65536, socket.MSG_PEEK):
                    break
            except TimeoutError:
                continue
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.settimeout(PATIENCE)
    reply = until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]


def test_a_body_that_trickles_in_is_408_in_the_routes_shape(server: tuple[int, Path]) -> None:
    port = server[0]
    for path, key in (("/v1/chat/completions", "error"), ("/api/chat", "error"), ("/v1/messages", "type")):
        sock = connect(port)
        sock.sendall(head(port, "POST", path, "Content-Type: application/json", "Content-Length: 500") + b'{"m')
        status, body = status_and_body(until_closed(sock))
        assert status == 408 and key in json.loads(body), (path, body)


def test_a_kept_alive_connection_left_idle_is_closed(server: tuple[int, Path]) -> None:
    port = server[0]
    sock = connect(port)
    sock.sendall(head(port, "GET", "/health"))
    status, body = status_and_body(until_closed(sock))
    assert status == 200 and json.loads(body)["ok"] is True


def test_heads_too_large_or_with_too_many_headers_are_refused(server: tuple[int, Path]) -> None:
    port = server[0]
    many = [f"X-Many-{i}: 1" for i in range(150)]
    sock = connect(port)
    sock.sendall(head(port, "GET", "/v1/models", *many))
    status, body = status_and_body(until_closed(sock))
    assert status == 431 and json.loads(body)["error"]["code"] == 431

    sock = connect(port)  # whole, and large
    sock.sendall(head(port, "GET", "/v1/models", "X-Large: " + "a" * 40_000))
    assert status_and_body(until_closed(sock))[0] == 431

    sock = connect(port)  # large and never finished: the parser's own bound
    sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Large: " + b"a" * 40_000)
    assert status_and_body(until_closed(sock))[0] == 400


def test_content_length_with_transfer_encoding_is_400(server: tuple[int, Path]) -> None:
    port = server[0]
    sock = connect(port)
    sock.sendall(head(port, "POST", "/bench/verdict", "Content-Type: application/json", "Content-Length: 4",
                      "Transfer-Encoding: chunked") + b"2\r\n{}\r\n0\r\n\r\n")
    status, body = status_and_body(until_closed(sock))
    assert status == 400 and "Transfer-Encoding" in json.loads(body)["error"]["message"]


def test_a_client_that_hangs_up_mid_body_is_logged_as_a_hang_up(server: tuple[int, Path]) -> None:
    port, log = server
    with connect(port) as sock:
        sock.sendall(head(port, "POST", "/v1/chat/completions", "Content-Type: application/json",
                          "Content-Length: 4000") + b'{"model": "bench/co')
    deadline = time.monotonic() + PATIENCE
    while " /v1/chat/completions 499 " not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    text = log.read_text()
    assert " /v1/chat/completions 499 " in text, text
    assert "Traceback" not in text and "unexpected failure" not in text and " 500 " not in text, text


def test_pipelined_requests_are_answered_in_turn(server: tuple[int, Path]) -> None:
    """Two heads in one write: both answered, in order, on the one connection (the head deadline of
    the second is not armed while the first is answered, and the second's answer closes it)."""
    port = server[0]
    sock = connect(port)
    sock.sendall(head(port, "GET", "/health") + head(port, "GET", "/v1/models", "Connection: close"))
    reply = until_closed(sock)
    assert reply.count(b"HTTP/1.1 200 ") == 2, reply[:400]
    assert reply.index(b'"ok"') < reply.index(b'"data"'), reply[:400]


def test_a_kept_alive_connection_has_a_head_deadline_for_its_next_request(server: tuple[int, Path]) -> None:
    port = server[0]
    sock = connect(port)
    sock.sendall(head(port, "GET", "/health"))
    first = b""
    while b'"ok"' not in first:
        first += sock.recv(65536)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the next head, never finished
    assert until_closed(sock).startswith(b"HTTP/1.1 408"), "the second head was left open"
