"""The embedded store: one SQLite database in WAL mode, one writer per process.

``db.py`` holds the connection and the write lock, ``migrations.py`` the append-only schema, and
one module per concept holds the queries (endpoints, models, collections, calls, verdicts, ledger).
"""

from benchwarmers_mcp.store.db import Database

__all__ = ["Database"]
