"""The access log as the server writes it (``to_stderr``): one line a request straight to the
stream, the same line logging would print, and a stream that is gone never fails the request."""

from __future__ import annotations

import io
import logging
import re
import sys
from collections.abc import Iterator

import pytest

from benchwarmers_mcp.access.access_log import LOGGER, AccessLog, to_stderr


@pytest.fixture
def stderr(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    logger = logging.getLogger(LOGGER)
    saved = (logger.handlers[:], logger.level, logger.propagate)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    logger.handlers = []
    to_stderr()
    try:
        yield stream
    finally:
        logger.handlers, logger.level, logger.propagate = saved[0], saved[1], saved[2]


def test_each_request_is_one_line_on_the_stream(stderr: io.StringIO) -> None:
    log = AccessLog(secrets=["an-admin-token-0123456789"])
    log.write("POST", "/v1/chat/completions", 200, "key:app", 0.0042)
    log.write("GET", "/v1/models/bwk_secretish/x an-admin-token-0123456789\n", 404, "-", 0.0)
    log.write("GET", "/health", 200, "anyone", 0.0)  # quiet when it succeeds
    lines = stderr.getvalue().splitlines()
    assert len(lines) == 2
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    assert re.fullmatch(stamp + r" POST /v1/chat/completions 200 key:app 4ms", lines[0]), lines[0]
    assert re.fullmatch(stamp + r" GET /v1/models/bwk_\*\*\*/x%20\*\*\*%0A 404 - 0ms", lines[1]), lines[1]


def test_a_stream_that_is_gone_does_not_fail_the_request(stderr: io.StringIO) -> None:
    stderr.close()
    AccessLog().write("POST", "/v1/chat/completions", 200, "local", 0.001)  # no exception


def test_another_handler_gets_the_record_through_logging(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=LOGGER):
        AccessLog().write("POST", "/v1/messages", 201, "local", 0.002)
    assert [r.getMessage()[21:] for r in caplog.records if r.name == LOGGER] == ["POST /v1/messages 201 local 2ms"]
