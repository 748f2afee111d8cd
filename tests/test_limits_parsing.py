"""Every spelling of a limit, a reset and a wait that providers use, table by table."""

from __future__ import annotations

import httpx
import pytest

from benchwarmers_mcp.errors import RateLimited
from benchwarmers_mcp.providers.base import error_for_status
from benchwarmers_mcp.upstream import quota
from benchwarmers_mcp.upstream.quota import QuotaRecord

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(("text", "seconds"), [
    ("6m0s", 360.0), ("2m59.56s", 179.56), ("20ms", 0.02), ("1s", 1.0), ("0s", 0.0), ("7.66s", 7.66),
    ("32s", 32.0), ("0.5s", 0.5), ("9m38.016s", 578.016), ("1h2m", 3720.0), ("1.984999999s", 1.984999999),
    ("250us", 0.00025), ("30", 30.0), ("1.5", 1.5), (" 12s ", 12.0),
    ("abc", None), ("6mx", None), ("", None), ("-3", None), ("s", None),
])
def test_durations(text, seconds):
    got = quota.parse_duration(text)
    assert got == pytest.approx(seconds) if seconds is not None else got is None


@pytest.mark.parametrize(("value", "expected"), [
    ("6m0s", NOW + 360), ("20ms", NOW + 0.02), ("0s", NOW),  # Go durations (OpenAI, Groq)
    ("30", NOW + 30), ("1.5", NOW + 1.5),  # seconds from now
    ("1768348800", 1768348800.0),  # epoch seconds
    ("1768348800000", 1768348800.0),  # epoch milliseconds (OpenRouter)
    ("2026-01-01T00:00:01Z", NOW + 1), ("2026-01-01T01:00:01+01:00", NOW + 1),  # RFC 3339 (Anthropic)
    ("2026-01-01T00:00:01", NOW + 1),  # RFC 3339 without a zone is UTC
    ("Thu, 01 Jan 2026 00:00:30 GMT", NOW + 30),  # HTTP date
    ("-1", None), ("0", None), ("", None), ("soon", None),  # Azure's -1/0 and nonsense are unknown
])
def test_reset_spellings(value, expected):
    got = quota.parse_reset(value, NOW)
    assert got == pytest.approx(expected) if expected is not None else got is None


OPENAI = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499",
          "x-ratelimit-reset-requests": "120ms", "x-ratelimit-limit-tokens": "30000",
          "x-ratelimit-remaining-tokens": "29950", "x-ratelimit-reset-tokens": "6m0s",
          "x-ratelimit-limit-tokens_usage_based": "1", "content-type": "application/json"}


@pytest.mark.parametrize(("headers", "host", "status", "message", "expected"), [
    (OPENAI, "api.openai.com", 200, "", {
        QuotaRecord("requests", "minute", 500, 499, NOW + 0.12),
        QuotaRecord("tokens", "minute", 30000, 29950, NOW + 360)}),
    ({"X-RateLimit-Limit-Requests": "14400", "X-RateLimit-Remaining-Requests": "14370",
      "X-RateLimit-Reset-Requests": "2m59.56s", "X-RateLimit-Limit-Tokens": "6000",
      "X-RateLimit-Remaining-Tokens": "5997", "X-RateLimit-Reset-Tokens": "7.66s"}, "api.groq.com", 200, "", {
        QuotaRecord("requests", "day", 14400, 14370, NOW + 179.56),  # Groq: requests per DAY
        QuotaRecord("tokens", "minute", 6000, 5997, NOW + 7.66)}),
    ({"x-ratelimit-limit-requests-day": "14400", "x-ratelimit-remaining-requests-day": "14399",
      "x-ratelimit-reset-requests-day": "33011.4", "x-ratelimit-limit-tokens-minute": "60000",
      "x-ratelimit-remaining-tokens-minute": "59000", "x-ratelimit-reset-tokens-minute": "11.4"},
     "api.cerebras.ai", 200, "", {  # Cerebras names its windows
        QuotaRecord("requests", "day", 14400, 14399, NOW + 33011.4),
        QuotaRecord("tokens", "minute", 60000, 59000, NOW + 11.4)}),
    ({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
      "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:01Z",
      "anthropic-ratelimit-tokens-limit": "90000", "anthropic-ratelimit-tokens-remaining": "89000",
      "anthropic-ratelimit-tokens-reset": "2026-01-01T00:00:02Z",
      "anthropic-ratelimit-input-tokens-limit": "80000", "anthropic-ratelimit-input-tokens-remaining": "79000",
      "anthropic-ratelimit-input-tokens-reset": "2026-01-01T00:00:03Z",
      "anthropic-ratelimit-output-tokens-limit": "16000", "anthropic-ratelimit-output-tokens-remaining": "15000",
      "anthropic-ratelimit-output-tokens-reset": "2026-01-01T00:00:04Z"}, "api.anthropic.com", 200, "", {
        QuotaRecord("requests", "minute", 50, 49, NOW + 1), QuotaRecord("tokens", "minute", 90000, 89000, NOW + 2),
        QuotaRecord("input-tokens", "minute", 80000, 79000, NOW + 3),
        QuotaRecord("output-tokens", "minute", 16000, 15000, NOW + 4)}),
    ({"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1767312000000"},
     "openrouter.ai", 429, "Rate limit exceeded: free-models-per-day", {  # OpenRouter, only on a 429
        QuotaRecord("requests", "day", 50, 0, 1767312000.0, scope="connection")}),
    ({"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1767225660000"},
     "openrouter.ai", 429, "Rate limit exceeded: free-models-per-min", {
        QuotaRecord("requests", "minute", 20, 0, 1767225660.0, scope="connection")}),
    ({"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "3"}, "openrouter.ai", 200, "", set()),
    ({"x-ratelimit-limit-requests": "100", "x-ratelimit-reset-requests": "-1"}, "azure.com", 200, "", {
        QuotaRecord("requests", "minute", 100, None, None)}),
])
def test_header_families(headers, host, status, message, expected):
    assert set(quota.records_from_headers(headers, host, NOW, status=status, message=message)) == expected


GEMINI_429 = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                        "message": "You exceeded your current quota. Please retry in 32.5s.",
                        "details": [
                            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                                {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                 "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                                 "quotaValue": "10"},
                                {"quotaMetric": "generativelanguage.googleapis.com/generate_content_input_token_count",
                                 "quotaId": "GenerateContentInputTokensPerDayPerProject", "quotaValue": "1000000"}]},
                            {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
                            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "32s"}]}}
OPENROUTER_429 = {"error": {"code": 429, "message": "Rate limit exceeded: free-models-per-day",
                            "metadata": {"headers": {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0",
                                                     "X-RateLimit-Reset": "1767312000000"},
                                         "limit_source": "openrouter_free_tier_daily"}}}


@pytest.mark.parametrize(("headers", "body", "message", "wait"), [
    ({"retry-after-ms": "1500", "retry-after": "30"}, {}, "", 1.5),  # ms first
    ({"Retry-After": "30"}, {}, "", 30.0),
    ({"retry-after": "Thu, 01 Jan 2026 00:01:00 GMT"}, {}, "", 60.0),
    ({}, GEMINI_429, "", 32.0),  # RetryInfo.retryDelay beats the message's 32.5s
    ({}, {"error": {"message": "slow down", "retry_after": 12}}, "", 12.0),
    ({}, {}, "Rate limit reached ... Please try again in 1.984999999s. Need more tokens?", 1.984999999),
    ({}, {}, "Rate limit reached on tokens per day (TPD): Please try again in 9m38.016s", 578.016),
    ({}, {}, "Please retry in 32.5s.", 32.5),
    ({}, {}, "rate limited, retry after 20 seconds", 20.0),
    ({}, {}, "try again in 2 hours", 7200.0),
    ({"X-RateLimit-Reset": "1767225645000"}, OPENROUTER_429, "Rate limit exceeded", 45.0),  # epoch ms
    ({}, {}, "Rate limit exceeded", None),
    ({"retry-after": "soon"}, {}, "", None),  # unreadable: no wait, not an exception
])
def test_stated_waits(headers, body, message, wait):
    got = quota.stated_wait(headers, quota.error_envelope(body), message, NOW)
    assert got == pytest.approx(wait) if wait is not None else got is None


@pytest.mark.parametrize(("headers", "wait"), [
    ({"retry-after-ms": "1500", "retry-after": "30"}, 1.5), ({"Retry-After": "30"}, 30.0),
    ({"retry-after": "soon"}, None), ({}, None),
])
def test_error_for_status_reads_the_same_waits(headers, wait):
    """Providers map a 429 with the same reading of retry-after that pacing uses; nonsense is no wait."""
    error = error_for_status(429, httpx.Headers(headers), b'{"error": {"message": "slow down"}}')
    assert isinstance(error, RateLimited) and error.message == "upstream 429: slow down"
    assert error.retry_after == pytest.approx(wait) if wait is not None else error.retry_after is None


def test_quota_failure_and_copied_headers_in_bodies():
    gemini = quota.records_from_body(quota.error_envelope(GEMINI_429), NOW, 32.0)
    assert gemini == [QuotaRecord("requests", "minute", 10, 0, NOW + 32, "model", "body"),
                      QuotaRecord("tokens", "day", 1000000, 0, NOW + 32, "connection", "body")]
    openrouter = quota.records_from_body(quota.error_envelope(OPENROUTER_429), NOW, None)
    assert openrouter == [QuotaRecord("requests", "day", 50, 0, 1767312000.0, "connection", "body")]


@pytest.mark.parametrize(("message", "learned"), [
    ("Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_1` service tier `on_demand` "
     "on tokens per minute (TPM): Limit 12000, Used 2542, Requested 9855. Please try again in 1.98s.",
     [("tpm", 12000)]),
    ("... on requests per day (RPD): Limit 1000, Used 1000, Requested 1.", [("rpd", 1000)]),
    ("on requests per minute (RPM): Limit 30 and on tokens per minute (TPM): Limit 6000", []),  # two axes: neither
    ("Rate limit exceeded", []),
])
def test_limits_learned_from_text(message, learned):
    assert quota.learned_limits(message) == learned


@pytest.mark.parametrize(("status", "body", "problem"), [
    (402, {"error": {"code": 402, "message": "Insufficient credits"}}, "billing"),
    (429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                     "code": "insufficient_quota"}}, "billing"),
    (400, {"type": "error", "error": {"type": "billing_error", "message": "low balance"}}, "billing"),
    (400, {"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT", "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}, "auth"),
    ([{"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}], None, "auth"),
    (401, {"error": "unauthorized"}, "auth"),
    (429, {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}, None),
    (500, b"<html>oops</html>", None),
])
def test_account_problems(status, body, problem):
    if isinstance(status, list):  # a Vertex-style one-element list
        status, body = 403, status
    assert quota.account_problem(status, quota.error_envelope(body if body is not None else {})) == problem


@pytest.mark.parametrize(("seconds", "text"), [(0.2, "1 s"), (42, "42 s"), (578, "10 m"), (7200, "2 h"),
                                               (3 * 3600 + 300, "3 h 5 m")])
def test_waits_read_well(seconds, text):
    assert quota.describe_wait(seconds) == text
