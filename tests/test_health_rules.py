"""Issue 16.2: each auto-retire rule fires exactly when it should, never for rate limits,
timeouts or sign-in failures alone; an answer or a restore resets the clock; the connection guard."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from benchwarmers_mcp.health.rules import Evidence, Outcome, guard, judge, missing_since

DAY = 86400.0
T0 = datetime(2026, 3, 2, 5, 0, tzinfo=UTC).timestamp()  # a Monday, 05:00 UTC


def day_of(t: float) -> date:
    return datetime.fromtimestamp(t, UTC).date()


def fails(cls: str, *days: float, hour: float = 0.0) -> tuple[Outcome, ...]:
    return tuple(Outcome(T0 + d * DAY + hour * 3600, False, cls, f"{cls} words") for d in days)


def ev(outcomes: tuple[Outcome, ...] = (), *, alias: str = "m", connection: str = "c", since: float = T0 - DAY,
       last_answer: float | None = None, missing: float | None = None) -> Evidence:
    return Evidence(alias, connection, since, outcomes, last_answer, missing)


@pytest.mark.parametrize("cls", ["structural", "paywalled", "entitlement"])
def test_a_fresh_structural_failure_asks_for_a_confirming_call(cls: str) -> None:
    d = judge(ev(fails(cls, 0)), T0 + 3600, day_of)
    assert d.action == "confirm" and d.failure is not None and d.failure.failure == cls


def test_a_structural_failure_older_than_a_day_is_left_to_the_slower_rules() -> None:
    d = judge(ev(fails("structural", 0)), T0 + 1.5 * DAY, day_of)
    assert d.action == "watch" and d.retires_at == T0 + 6 * DAY  # the backstop: 7 days from its clock's start


def test_other_failures_on_three_distinct_days_retire_two_do_not() -> None:
    assert judge(ev(fails("other", 0, 1)), T0 + 1.2 * DAY, day_of).action == "watch"
    same_day = fails("other", 0) + fails("other", 0, hour=2) + fails("other", 0, hour=4)
    assert judge(ev(same_day), T0 + 0.5 * DAY, day_of).action == "watch"
    d = judge(ev(fails("other", 0, 1, 2)), T0 + 2.2 * DAY, day_of)
    assert d.action == "retire" and d.rule == "failing"


def test_missing_from_the_listing_for_three_days_retires() -> None:
    assert judge(ev(missing=T0), T0 + 2.9 * DAY, day_of).action == "watch"
    d = judge(ev(missing=T0), T0 + 3 * DAY, day_of)
    assert d.action == "retire" and d.rule == "missing"


def test_missing_but_answering_since_is_not_retired() -> None:
    assert judge(ev(missing=T0, last_answer=T0 + DAY), T0 + 5 * DAY, day_of).action == "keep"


def test_the_backstop_needs_seven_quiet_days_and_three_failure_days() -> None:
    mixed = fails("empty", 0) + fails("structural", 2) + fails("empty", 4)
    assert judge(ev(mixed, since=T0 - 1), T0 + 6.9 * DAY, day_of).action == "watch"
    d = judge(ev(mixed, since=T0 - 1), T0 + 7 * DAY, day_of)
    assert d.action == "retire" and d.rule == "backstop"
    two_days = fails("empty", 0) + fails("empty", 4)
    assert judge(ev(two_days, since=T0 - 1), T0 + 20 * DAY, day_of).action == "watch"


@pytest.mark.parametrize("cls", ["capacity", "timeout", "signin"])
def test_never_for_rate_limits_timeouts_or_sign_in_alone(cls: str) -> None:
    every_day = fails(cls, *range(30))
    assert judge(ev(every_day, since=T0 - 1), T0 + 30 * DAY, day_of).action == "keep"


def test_a_rate_limit_after_a_structural_failure_is_the_latest_word() -> None:
    outcomes = fails("structural", 0) + fails("capacity", 0, hour=2)
    assert judge(ev(outcomes), T0 + 3 * 3600, day_of).action != "confirm"


def test_an_answer_resets_the_clock() -> None:
    outcomes = fails("other", 0, 1, 3)
    assert judge(ev(outcomes, last_answer=T0 + 2 * DAY), T0 + 3.5 * DAY, day_of).action == "watch"
    assert judge(ev(outcomes, last_answer=T0 + 3.5 * DAY), T0 + 3.6 * DAY, day_of).action == "keep"


def test_a_restore_resets_the_clock() -> None:
    outcomes = fails("other", 0, 1, 2)
    assert judge(ev(outcomes, since=T0 + 1.5 * DAY), T0 + 2.5 * DAY, day_of).action == "watch"


def test_the_guard_holds_a_connection_where_every_model_is_down() -> None:
    a, b = ev(fails("other", 0, 1, 2), alias="a"), ev(fails("structural", 2), alias="b")
    decisions = [judge(e, T0 + 2.2 * DAY, day_of) for e in (a, b)]
    assert [d.action for d in decisions] == ["retire", "confirm"]
    held, connections = guard(decisions, {"a": a, "b": b})
    assert [d.action for d in held] == ["held", "held"] and connections == {"c": ["a", "b"]}


def test_the_guard_lets_go_when_another_model_on_the_connection_answers() -> None:
    a = ev(fails("other", 0, 1, 2), alias="a")
    fine = ev((Outcome(T0 + 2 * DAY, True),), alias="fine", last_answer=T0 + 2 * DAY)
    decisions = [judge(e, T0 + 2.2 * DAY, day_of) for e in (a, fine)]
    out, connections = guard(decisions, {"a": a, "fine": fine})
    assert [d.action for d in out] == ["retire", "keep"] and connections == {}


def test_the_guard_needs_two_models_with_evidence() -> None:
    a = ev(fails("other", 0, 1, 2), alias="a")
    silent = ev(alias="new", since=T0 + 10 * DAY)
    decisions = [judge(e, T0 + 2.2 * DAY, day_of) for e in (a, silent)]
    out, _ = guard(decisions, {"a": a, "new": silent})
    assert out[0].action == "retire"


def test_missing_since_reads_only_good_listings_and_tolerates_latest() -> None:
    snaps = [(T0, True, ("x", "llama3:latest")), (T0 + DAY, True, ("x",)), (T0 + 2 * DAY, False, ()),
             (T0 + 3 * DAY, True, ("x",))]
    assert missing_since("llama3", snaps, 0.0) == T0 + DAY
    assert missing_since("llama3", snaps + [(T0 + 4 * DAY, True, ("LLAMA3",))], 0.0) is None
    assert missing_since("x", snaps, 0.0) is None
