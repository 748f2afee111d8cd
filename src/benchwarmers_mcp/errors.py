"""The error tree. Every error a client can see is one of these; each carries its HTTP status.

    BenchError (500)
    ├── BadRequest (400)
    │   ├── Unsupported (400)      tools on a panel, PDFs, file ids, ...
    │   └── NoSeatCanSee (400)
    ├── Unauthorized (401)
    ├── Forbidden (403)
    ├── NotFound (404)
    │   └── UnknownCollection (404)
    ├── RequestTimeout (408)       the body did not arrive in time
    ├── TooLarge (413)
    ├── UnsupportedMediaType (415)
    ├── HeadersTooLarge (431)
    ├── HungUp (499)               the client went away mid-request: logged, answered to nobody
    ├── TooManyRequests (429)      carries retry_after
    ├── BadGateway (502)
    ├── NobodySeatable (503)
    └── ProviderError (502)        raised by providers/, mapped from foreign errors at one boundary
        ├── RateLimited            429 upstream, or paced by the bench (carries retry_after)
        ├── ModelGone              404 "no such model"
        ├── AuthOrBilling          401/402/403, billing and quota-exhausted notices
        ├── UpstreamFailure        5xx and other unexpected statuses or bodies
        ├── UpstreamTimeout        no answer in time
        └── EmptyAnswer            the model answered nothing

Gateway faces render a BenchError in their own wire shape (gateway/*): one body, one handler.
"""

from __future__ import annotations


class BenchError(Exception):
    status = 500
    kind = "error"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class BadRequest(BenchError):
    status = 400


class Unsupported(BadRequest):
    pass


class NoSeatCanSee(BadRequest):
    pass


class Unauthorized(BenchError):
    status = 401


class Forbidden(BenchError):
    status = 403


class NotFound(BenchError):
    status = 404


class UnknownCollection(NotFound):
    pass


class RequestTimeout(BenchError):
    status = 408


class TooLarge(BenchError):
    status = 413


class UnsupportedMediaType(BenchError):
    status = 415


class HeadersTooLarge(BenchError):
    status = 431


class HungUp(BenchError):
    """The client closed the connection before its request arrived whole. Nobody reads the answer;
    the status (nginx's 499) is for the access log."""

    status = 499


class TooManyRequests(BenchError):
    status = 429

    def __init__(self, message: str, *, retry_after: float | None = None, headers: dict[str, str] | None = None):
        headers = dict(headers or {})
        if retry_after is not None:
            headers.setdefault("Retry-After", str(max(1, int(retry_after + 0.999))))
        super().__init__(message, headers=headers)
        self.retry_after = retry_after


class BadGateway(BenchError):
    status = 502


class NobodySeatable(BenchError):
    status = 503


class ProviderError(BenchError):
    """An upstream call failed. ``status`` is what the gateway answers if it must answer one."""

    status = 502
    kind = "error"

    def __init__(self, message: str, *, upstream_status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.upstream_status = upstream_status
        self.retry_after = retry_after


class RateLimited(ProviderError):
    kind = "rate_limited"


class ModelGone(ProviderError):
    kind = "model_gone"


class AuthOrBilling(ProviderError):
    kind = "auth"


class UpstreamFailure(ProviderError):
    kind = "error"


class UpstreamTimeout(ProviderError):
    kind = "timeout"


class EmptyAnswer(ProviderError):
    kind = "empty"
