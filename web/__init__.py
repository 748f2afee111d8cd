"""The dashboard (installed as ``benchwarmers_mcp.web``): pages over the same admin API the CLI uses.

Its pages arrive with the dashboard issue; the package exists now so the layout and the wheel
are the ones DESIGN.md sets out.
"""
