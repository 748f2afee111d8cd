"""The dashboard (installed as ``benchwarmers_mcp.web``): pages on the server's own port, over
the engine and the admin API.

``registry`` finds the pages (a module in ``pages/`` and a template in ``templates/`` each),
``site`` answers the route table's page, login-page and static-file entries, ``render`` draws
pages with Jinja2, ``assets`` serves ``static/`` (vendored uPlot included: no CDN), ``security``
sets the Content-Security-Policy, and ``refusal`` renders the ``page`` shape's errors (a browser
without a login goes to ``/login``). This package imports nothing at its top, so the error
renderer loads without the pages.
"""
