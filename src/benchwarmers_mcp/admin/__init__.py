"""The admin API (``/api/*``): JSON on the server's own port, used by the ``bench`` CLI and the
dashboard: endpoints, models, collections, limits, gateway keys and the login."""
