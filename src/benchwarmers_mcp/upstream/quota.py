"""What providers say about their limits, read into plain values. Pure parsing: no store access and
no clock; the one import from the package is the record type, which the store owns and holds.

Sources: the ``x-ratelimit-*`` family (OpenAI, Groq, Cerebras, and OpenRouter's bare form on a
429), ``anthropic-ratelimit-*``, ``retry-after-ms`` / ``retry-after``, Gemini's ``RetryInfo`` and
``QuotaFailure`` details, "try again in 9m38s"-style phrases, and Groq's "on tokens per minute
(TPM): Limit 12000". Resets come in five spellings, all turned into absolute epoch seconds:
Go durations (``6m0s``, ``20ms``), plain seconds, epoch seconds or milliseconds, RFC 3339 and
HTTP dates.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from benchwarmers_mcp.store.limits import QuotaRecord

DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
# the longest wait a provider's word is taken for (a day): past it a reset is a provider's error, and
# a model rests no longer (``pacing.PacingPolicy.max_rest``), nor does a client get told to wait longer
MOST_WAIT = 86400.0
UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
# "try again in 9m38.016s", "Please retry in 32.5s", "retry after 20 seconds" (a unit word's
# first letter is its Go unit: 20 s, 5 m, 2 h).
WAIT_PHRASE = re.compile(r"(?:try again|retry)(?:\s+after|\s+in)?\s+(?:about\s+)?"
                         r"((?:\d+(?:\.\d+)?\s*(?:h|ms|m|s|us|µs|ns)\s*)+)", re.I)
OPENAI_HEADER = re.compile(r"^x-ratelimit-(limit|remaining|reset)-(requests|tokens)(?:-(minute|hour|day))?$")
BARE_HEADER = re.compile(r"^x-ratelimit-(limit|remaining|reset)$")
ANTHROPIC_HEADER = re.compile(r"^anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens)-(limit|remaining|reset)$")
LEARNED_LIMIT = re.compile(r"on (requests|tokens) per (minute|day) \((RPM|RPD|TPM|TPD)\):\s*Limit (\d+)", re.I)
# Hosts whose unsuffixed x-ratelimit-* headers are not per minute.
WINDOW_PROFILES: dict[str, dict[str, str]] = {"groq.com": {"requests": "day", "tokens": "minute"}}
BILLING_CODES = {"insufficient_quota", "billing_error", "billing_hard_limit_reached", "insufficient_balance"}
AUTH_CODES = {"authentication_error", "permission_error", "invalid_api_key", "API_KEY_INVALID",
              "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED"}


def parse_duration(text: str) -> float | None:
    """Seconds in a Go/proto duration (``6m0s``, ``2m59.56s``, ``20ms``, ``32s``) or a plain number."""
    value = text.strip()
    try:
        number = float(value)
    except ValueError:
        pass
    else:
        return number if math.isfinite(number) and number >= 0 else None
    compact = value.replace(" ", "")
    parts = DURATION_PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        return None
    return sum(float(n) * UNIT[u] for n, u in parts)


def parse_reset(value: str, now: float) -> float | None:
    """An absolute epoch time for a reset in any of the five spellings; ``None`` when unknown.

    A bare number is epoch milliseconds above 1e12, epoch seconds above 1e9, else seconds from
    now; zero or less is unknown (Azure sends ``-1`` and ``0``).
    """
    text = value.strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        if not math.isfinite(number) or number <= 0:
            return None
        if number > 1e12:
            return number / 1000
        return number if number > 1e9 else now + number
    seconds = parse_duration(text)
    if seconds is not None:
        return now + seconds
    return _parse_date(text)


def _parse_date(text: str) -> float | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return int(number) if math.isfinite(number) else None


def _window_for(host: str, metric: str, suffix: str | None) -> str:
    if suffix:
        return suffix
    for domain, profile in WINDOW_PROFILES.items():
        if host == domain or host.endswith("." + domain):
            return profile.get(metric, "minute")
    return "minute"


def window_in_message(message: str) -> str:
    """The window an OpenRouter-style message names ("free-models-per-day", "per-min")."""
    if re.search(r"per[- ]?day|daily", message, re.I):
        return "day"
    if re.search(r"per[- ]?min", message, re.I):
        return "minute"
    return ""


def records_from_headers(headers: Mapping[str, str], host: str, now: float, *, status: int = 200,
                         message: str = "") -> list[QuotaRecord]:
    """Quota records from one response's headers (every family a provider may send)."""
    groups: dict[tuple[str, str, str], dict[str, str]] = {}
    for raw_name, value in headers.items():
        name = raw_name.lower()
        if "ratelimit-" not in name:  # every family's names have it; a response's other headers skip the patterns
            continue
        if m := OPENAI_HEADER.match(name):
            field, metric, suffix = m.groups()
            key = (metric, _window_for(host, metric, suffix), "model")
        elif m := ANTHROPIC_HEADER.match(name):
            metric, field = m.groups()
            key = (metric, "minute", "model")
        elif (m := BARE_HEADER.match(name)) and status == 429:
            field = m.group(1)
            key = ("requests", window_in_message(message), "connection")
        else:
            continue
        groups.setdefault(key, {})[field] = value
    return [_record(key, fields, now) for key, fields in groups.items()]


def _record(key: tuple[str, str, str], fields: dict[str, str], now: float) -> QuotaRecord:
    metric, window, scope = key
    reset = parse_reset(fields["reset"], now) if "reset" in fields else None
    return QuotaRecord(metric, window, _int(fields.get("limit")), _int(fields.get("remaining")), reset, scope)


def error_envelope(body: bytes | str | Any) -> dict[str, Any]:
    """The ``error`` object of a provider's error body (any of the shapes), or ``{}``."""
    data = body
    if isinstance(body, (bytes, str)):
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return {}
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        return {}
    error = data.get("error")
    if isinstance(error, dict):
        return error
    return {"message": error} if isinstance(error, str) else {}


def _details(error: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    details = error.get("details")
    if not isinstance(details, list):
        return []
    return [d for d in details if isinstance(d, dict) and str(d.get("@type", "")).endswith(kind)]


def records_from_body(error: Mapping[str, Any], now: float, wait: float | None) -> list[QuotaRecord]:
    """Gemini's ``QuotaFailure`` violations and OpenRouter's copied headers, from a 429 body."""
    records = []
    reset = None if wait is None else now + wait
    for detail in _details(error, "google.rpc.QuotaFailure"):
        for v in detail.get("violations") or []:
            if not isinstance(v, dict):
                continue
            quota_id = str(v.get("quotaId", ""))
            metric = "tokens" if "token" in (quota_id + str(v.get("quotaMetric", ""))).lower() else "requests"
            window = next((w for w in ("minute", "hour", "day") if f"per{w}" in quota_id.lower()), "")
            scope = "model" if "permodel" in quota_id.lower() else "connection"
            records.append(QuotaRecord(metric, window, _int(str(v.get("quotaValue", ""))), 0, reset, scope, "body"))
    metadata = error.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    copied = metadata.get("headers")
    if isinstance(copied, dict):
        message = f"{error.get('message', '')} {metadata.get('limit_source', '')}"
        headers = {str(k): str(v) for k, v in copied.items()}
        records += [replace(r, source="body")
                    for r in records_from_headers(headers, "", now, status=429, message=message)]
    return records


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (a number, a duration or an HTTP date);
    None when neither is there or readable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value:
            seconds = parse_duration(value)
            if seconds is not None:
                return seconds * scale
            moment = _parse_date(value)
            if moment is not None:
                return max(0.0, moment - now)
    return None


def stated_wait(headers: Mapping[str, str], error: Mapping[str, Any], message: str, now: float) -> float | None:
    """How long a 429 says to wait, in seconds: the later of the wait the provider stated (the retry
    headers, Gemini's RetryInfo, the body, the message: the first of these it gives) and the reset
    of the windows its headers report used up, since both must pass (``Retry-After: 30`` beside a
    window used up for 6 minutes is a wait of 6 minutes); else a bare ``x-ratelimit-reset``."""
    stated = _stated(headers, error, message, now)
    used_up = used_up_until(records_from_headers(headers, "", now, status=429, message=message))
    waits = [w for w in (stated, None if used_up is None else max(0.0, used_up - now)) if w is not None]
    if waits:
        return min(max(waits), MOST_WAIT)
    reset = {k.lower(): v for k, v in headers.items()}.get("x-ratelimit-reset")
    moment = parse_reset(reset, now) if reset else None
    return None if moment is None else min(max(0.0, moment - now), MOST_WAIT)


def _stated(headers: Mapping[str, str], error: Mapping[str, Any], message: str, now: float) -> float | None:
    """The wait a provider states outright, from the first place that says it."""
    in_headers = retry_after(headers, now)
    if in_headers is not None:
        return in_headers
    for detail in _details(error, "google.rpc.RetryInfo"):
        seconds = parse_duration(str(detail.get("retryDelay", "")))
        if seconds is not None:
            return seconds
    in_body = error.get("retry_after")
    if isinstance(in_body, (int, float)) and not isinstance(in_body, bool) and in_body >= 0:
        return float(in_body)
    return wait_in_text(message or str(error.get("message", "")))


def used_up_until(records: Iterable[QuotaRecord]) -> float | None:
    """The latest reset among the windows reported used up (none left), or None: every one of them
    must reopen before a call can go."""
    resets = [r.reset_at for r in records if r.remaining is not None and r.remaining <= 0 and r.reset_at is not None]
    return max(resets) if resets else None


def wait_in_text(text: str) -> float | None:
    """Seconds in "try again in 9m38.016s", "Please retry in 32.5s", "retry after 20 seconds"."""
    m = WAIT_PHRASE.search(text)
    return parse_duration(m.group(1).lower()) if m else None


def learned_limits(message: str) -> list[tuple[str, int]]:
    """Limits named in a 429 message ("on tokens per minute (TPM): Limit 12000"), one axis only."""
    found = {(m.group(3).lower(), int(m.group(4))) for m in LEARNED_LIMIT.finditer(message)}
    return sorted(found) if len(found) == 1 else []


def account_problem(status: int | None, error: Mapping[str, Any]) -> str | None:
    """'billing' or 'auth' when the whole key is refused (by status or a structured code), else None."""
    codes = {str(error.get(k)) for k in ("code", "type", "status") if error.get(k) is not None}
    for detail in _details(error, "google.rpc.ErrorInfo"):
        codes.add(str(detail.get("reason", "")))
    if status == 402 or codes & BILLING_CODES:
        return "billing"
    if status in (401, 403) or codes & AUTH_CODES:
        return "auth"
    return None


def describe_wait(seconds: float) -> str:
    """``42 s``, ``9 m``, ``3 h 5 m``: for messages people read."""
    seconds = max(0, math.ceil(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{math.ceil(seconds / 60)} m"
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {math.ceil(rest / 60)} m" if rest >= 60 else f"{hours} h"


def iso(moment: float | None) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")
