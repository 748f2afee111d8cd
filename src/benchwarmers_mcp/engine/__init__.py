"""The engine: what every face asks of it, and never a wire format.

``panel``        seat a panel and run it; the run keeps its own outcome (seats, usage, merge)
``route``        route mode: the sticky member, failover, the turn's outcome and its row
``seating``      who sits on a panel: members, then explorers
``ranking``      who may take a route turn, and in which order
``merge``        merged mode: who merges, and what the merger is asked
``report``       a panel's markdown and the ``bench`` object of panels and route turns
``collections``  collections as callers name and list them, and the reply mode, resolved once
``verdicts``     a verdict as a caller sends it, checked
``claims``       answers split into claims and the same claim grouped across seats (pure)
``claim_words`` the words claims are compared by (pure; ``claims`` reads it)
``code_refs``    the code a text points at: files, lines, symbols (pure; ``claims`` reads it)
"""

__all__ = ["claim_words", "claims", "code_refs", "collections", "merge", "panel", "ranking", "report", "route", "seating", "verdicts"]
