"""The dashboard (installed as ``benchwarmers_mcp.web``): pages on the server's own port, over
the engine and the admin API.

``registry`` finds the pages (a module in ``pages/`` and a template in ``templates/`` each),
``render`` draws them with Jinja2, ``assets`` serves ``static/`` (vendored uPlot included: no
CDN), ``security`` sets the Content-Security-Policy, and ``routes`` hands the application its
routes and the refusal renderer that sends a browser without a login to ``/login``.
"""

from benchwarmers_mcp.web.routes import refusals, routes

__all__ = ["refusals", "routes"]
