"""What the server tells a monitoring system: every metric, defined here and nowhere else, in one
``prometheus_client`` registry per app (so per process: each replica, each worker process, serves
its own series at its own ``GET /metrics``; Prometheus scrapes each and labels it by target).

The few seams that report call one method each:

- the guard, for every request it answers (``request``: the route table's path, so ``/v1/models/...``
  is one series whatever the model; a path no route matches is ``unmatched``);
- the panel engine, when a seat is recorded (``seat``) and when a panel ends (``panel``);
- the upstream caller, when a call is settled (``upstream``: its connection and outcome, and the
  rest or pause the answer caused);
- the pacer, when a call it held for a rate window goes or is refused (``pacer_wait``);
- the learning hook every written verdict passes (``verdict``); the scheduler, when a run ends
  (``scheduler_run``); the store's own failures are counted by the store (``Database.error_count``)
  and read here at each scrape (``watch_store``).

Nothing here holds a prompt, an answer, a key or a caller's name: labels are routes, statuses,
connection names, job names and outcomes, all bounded by the configuration.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    Info,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from benchwarmers_mcp import __version__, routes

UNMATCHED = "unmatched"
# seconds: a panel and a seat take from a fraction of a second to the seat timeout (7 minutes)
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
WAIT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class _StoreErrors(Collector):
    """The store's failures (``StoreUnavailable`` at its error boundary), read when scraped."""

    def __init__(self, count: Callable[[], int]) -> None:
        self.count = count

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("benchwarmers_store_errors", "Failures of the store itself (unreachable, "
                                  "a dropped connection, a full disk, a refused write)", value=self.count())


class Metrics:
    """One app's metrics. ``exposition()`` is the text ``GET /metrics`` answers."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.info = Info("benchwarmers", "This server process", registry=registry)
        self.info.info({"version": __version__, "pid": str(os.getpid()), "replica": ""})
        self.requests = Counter("benchwarmers_requests", "HTTP requests answered, by route and status",
                                ["route", "method", "status"], registry=registry)
        self.panels = Histogram("benchwarmers_panel_seconds", "Panels, from seating to the last seat (and "
                                "merge) recorded", ["reply"], buckets=LATENCY_BUCKETS, registry=registry)
        self.seats = Histogram("benchwarmers_seat_seconds", "Panel seats (the merger's too), by status",
                               ["status"], buckets=LATENCY_BUCKETS, registry=registry)
        self.upstream_calls = Counter("benchwarmers_upstream_calls", "Upstream model calls settled, by "
                                      "connection and outcome", ["connection", "outcome"], registry=registry)
        self.rests = Counter("benchwarmers_rests", "Models rested after an upstream's answer or by the pacer",
                             ["connection"], registry=registry)
        self.pauses = Counter("benchwarmers_pauses", "Connections paused (a refused key, billing)",
                              ["connection"], registry=registry)
        self.pacer_waits = Histogram("benchwarmers_pacer_wait_seconds", "Calls the pacer held for a rate "
                                     "window or a short rest, by how long", ["connection"],
                                     buckets=WAIT_BUCKETS, registry=registry)
        self.verdicts = Counter("benchwarmers_verdicts", "Verdicts recorded (a repeat that changes nothing "
                                "is not counted)", registry=registry)
        self.scheduler_runs = Counter("benchwarmers_scheduler_runs", "Scheduled and asked-for job runs ended, "
                                      "by job and status", ["job", "status"], registry=registry)
        self._store: Callable[[], int] | None = None
        registry.register(_StoreErrors(lambda: self._store() if self._store else 0))

    # -- the seams --

    def identify(self, replica: str) -> None:
        """This process's name among the replicas on its store (``store/replicas.py``)."""
        self.info.info({"version": __version__, "pid": str(os.getpid()), "replica": replica})

    def watch_store(self, count: Callable[[], int]) -> None:
        self._store = count

    def request(self, path: str, method: str, status: int) -> None:
        entry = routes.find(path)
        route = entry.path if entry is not None else UNMATCHED
        verb = method if method.isalpha() and len(method) <= 10 else "?"
        self.requests.labels(route, verb, str(status)).inc()

    def seat(self, status: str, seconds: float) -> None:
        self.seats.labels(status).observe(seconds)

    def panel(self, reply: str, seconds: float) -> None:
        self.panels.labels(reply).observe(seconds)

    def upstream(self, connection: str, outcome: str, *, rested: bool, paused: bool) -> None:
        self.upstream_calls.labels(connection, outcome).inc()
        if rested:
            self.rests.labels(connection).inc()
        if paused:
            self.pauses.labels(connection).inc()

    def pacer_wait(self, connection: str, seconds: float) -> None:
        self.pacer_waits.labels(connection).observe(max(0.0, seconds))

    def verdict(self) -> None:
        self.verdicts.inc()

    def scheduler_run(self, job: str, status: str) -> None:
        self.scheduler_runs.labels(job, status).inc()

    # -- the answer --

    def exposition(self) -> tuple[bytes, str]:
        """The registry in Prometheus' text format, and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


__all__ = ["Metrics", "UNMATCHED"]
