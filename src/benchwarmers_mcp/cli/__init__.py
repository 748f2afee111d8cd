"""``benchwarmers`` / ``bench``: server commands (serve, demo, init, mcp) and a thin HTTP client."""
