"""The headers on every dashboard response: this origin only, no inline script, no framing.

``style-src 'self'`` still lets scripts set element styles through the DOM (uPlot sizes its
canvas that way); only ``style`` attributes in markup and ``<style>`` blocks are refused, and
the templates have none. Images may be ``data:`` or ``blob:`` URLs (a preview of an attached
image), never another host.
"""

from __future__ import annotations

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")

HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
