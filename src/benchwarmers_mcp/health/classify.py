"""What a failed probe says about a model: its failure class, and the provider's words made safe.

Classes, most telling first: ``structural`` (the model is not there: 404, 410, "no such model",
"deprecated"), ``paywalled`` (it needs payment now: 402), ``entitlement`` (this account may not use
it: 403), ``other`` (5xx and what else fails), ``empty`` (it answered nothing), ``signin`` (the key
was refused), ``capacity`` (rate limits, overload, account quotas, a call the bench paced), and
``timeout``. The last three never retire a model on their own.

The status decides first (as ``providers.base.error_for_status`` does); words only split the few
statuses that carry several meanings (400, 403).
"""

from __future__ import annotations

import re

from benchwarmers_mcp.errors import (
    AuthOrBilling,
    EmptyAnswer,
    ModelGone,
    ProviderError,
    RateLimited,
    UpstreamTimeout,
)

CLASSES = ("structural", "paywalled", "entitlement", "other", "empty", "signin", "capacity", "timeout")
AT_ONCE = ("structural", "paywalled", "entitlement")  # retire at once, once a second call confirms
NEVER_ALONE = ("capacity", "timeout", "signin")  # never retire a model on their own
DETAIL_MAX = 300

GONE_WORDS = re.compile(
    r"no such model|unknown model|invalid model|model not found|no endpoints found|not a valid model"
    r"|(model|endpoint)\b[^.]{0,80}\b(not found|does not exist|doesn't exist|no longer|deprecated|decommissioned"
    r"|discontinued|retired|removed|is not available|unavailable)", re.I)
PAID_WORDS = re.compile(r"\b(paid|payment|credits?|upgrade|subscription|not free|pricing)\b", re.I)
QUOTA_WORDS = re.compile(r"quota|rate.?limit|too many requests|resource.?exhausted|insufficient.?(balance|funds)",
                         re.I)
KEY_WORDS = re.compile(r"api.?key|invalid.{0,20}(key|token)|unauthori[sz]ed|authenticat|credential|sign.?in",
                       re.I)
CAPACITY_STATUSES = (429, 503, 529)
SECRETS = re.compile(r"\b(sk|pk|rk|gsk|xai|ghp|hf|AIza)[-_A-Za-z0-9]{12,}"
                     r"|\b(?=[A-Za-z0-9_]*\d)(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{32,}\b")


def classify(error: BaseException) -> str:
    """The failure class of a probe's error (a ``ProviderError``; anything else is ``other``)."""
    if isinstance(error, UpstreamTimeout):
        return "timeout"
    if isinstance(error, EmptyAnswer):
        return "empty"
    if not isinstance(error, ProviderError):
        return "other"
    status, message = error.upstream_status, error.message
    if isinstance(error, RateLimited) or status in CAPACITY_STATUSES:
        return "capacity"
    if status is None and isinstance(error, AuthOrBilling):  # not sent: the connection is paused
        return "capacity" if "billing or quota" in message else "signin"
    if message.startswith("not sent"):
        return "capacity"
    if isinstance(error, ModelGone) or status in (404, 410):
        return "structural"
    return _by_status(status, message, isinstance(error, AuthOrBilling))


def _by_status(status: int | None, message: str, account: bool) -> str:
    if status == 402:
        return "capacity" if QUOTA_WORDS.search(message) else "paywalled"
    if status == 401:
        return "signin"
    if status == 403:
        if GONE_WORDS.search(message):
            return "structural"
        if PAID_WORDS.search(message):
            return "paywalled"
        return "signin" if KEY_WORDS.search(message) else "entitlement"
    if account:  # a billing or quota code on another status
        return "capacity"
    if status in (400, 422) and GONE_WORDS.search(message):
        return "structural"
    return "other"


def worst(classes: list[str]) -> str | None:
    """The most telling class among a probe's runs."""
    found = [c for c in CLASSES if c in classes]
    return found[0] if found else None


def safe_detail(text: str, secrets: tuple[str, ...] = ()) -> str:
    """The provider's words, at most 300 characters, with anything shaped like a key (and the
    endpoint's own key, when given) taken out."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[key]")
    text = SECRETS.sub("[redacted]", " ".join(text.split()))
    return text[:DETAIL_MAX]
