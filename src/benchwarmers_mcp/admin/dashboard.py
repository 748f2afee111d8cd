"""The admin routes the dashboard added (each also serves any other client of ``/api``): asking
with a live answer, the event stream, verdicts with a login, logs, chart figures, trying an
endpoint before saving it and the default endpoint."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from benchwarmers_mcp.admin import ask, events, logs, stats, trial, verdicts


def routes() -> list[BaseRoute]:
    return [
        Route("/api/ask", ask.ask, methods=["POST"]),
        Route("/api/events", events.stream, methods=["GET"]),
        Route("/api/verdict", verdicts.post_verdict, methods=["POST"]),
        Route("/api/logs", logs.get_logs, methods=["GET"]),
        Route("/api/stats/usage", stats.usage, methods=["GET"]),
        Route("/api/stats/helped", stats.helped, methods=["GET"]),
        Route("/api/endpoint/try", trial.try_endpoint, methods=["POST"]),
        Route("/api/endpoint/default", trial.get_default, methods=["GET"]),
        Route("/api/endpoint/default", trial.set_default, methods=["POST"]),
    ]
