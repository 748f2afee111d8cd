"""Log lines as JSON (``BENCH_LOG_FORMAT=json``): one object a line, for a log shipper to read
without parsing text. Every record keeps its masking: the handlers' key filter
(``upstream.masking.KeyMaskFilter``) runs before this formatter, so the message and traceback it
writes are the masked ones, and an access log line carries only what the text line does
(``access.access_log``: method, path masked, status, who, milliseconds).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

REQUEST = "bench_request"  # the access log's fields on its record (``extra``)


class JsonLines(logging.Formatter):
    """``{"time", "level", "logger", "message"}``, plus ``request`` for an access line and
    ``exception`` for a traceback; never more than one line (JSON escapes every newline)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = getattr(record, REQUEST, None)
        if isinstance(request, dict):
            line["request"] = request
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = record.stack_info
        return json.dumps(line, ensure_ascii=False, default=str)


def use_json(config: dict[str, Any]) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` (uvicorn's and ours) with every formatter writing JSON lines."""
    for name in config.get("formatters", {}):
        config["formatters"][name] = {"()": JsonLines}
    return config


__all__ = ["REQUEST", "JsonLines", "use_json"]
