"""The dashboard's pages: each module here with a ``PAGE`` (``registry.Page``) is one page,
drawn by its template in ``web/templates/``. See docs/USAGE.md, "Adding a page"."""
