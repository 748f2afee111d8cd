"""``GET /metrics``: this process's metrics (``metrics.py``) in Prometheus' text format. Its access
class is ``metrics`` (``routes.py``): the admin's login or token, or the metrics token."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import admin, ctx_of


@admin
async def get_metrics(request: Request) -> Response:
    body, content_type = ctx_of(request).metrics.exposition()
    return Response(body, media_type=content_type)
