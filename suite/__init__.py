"""The review suite (installed as ``benchwarmers_mcp.suite``): score models on planted bugs and claims.

``tasks`` (the task format and its checks), ``library`` (the starter pack and the data folder's
tasks), ``scoring`` (the fixed rules, pure) and ``stats`` (tallies and intervals); ``mutate`` and
``plant`` (the ten mutation kinds, bug/control pairs), ``seed`` (planting in the user's
repositories), ``mine`` (claims from verdicts), ``claims`` (claims about code with their truth),
``rebench`` (real bugs from SWE-rebench-V2-style rows); ``plan`` and ``runner`` (runs, paced and
resumable). ``pack/`` is the starter pack; ``scripts/make_starter_pack.py`` regenerates it.
"""
