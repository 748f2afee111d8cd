"""The review suite (installed as ``benchwarmers_mcp.suite``): tasks, runner, scorer and seeding.

Its modules arrive with the suite issue; the package exists now so the layout and the wheel are
the ones DESIGN.md sets out.
"""
