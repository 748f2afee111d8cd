"""How long a test waits for an answer that is not its to time: a real server's reply, a page in
Chromium. One figure each, far above what any answer takes on a loaded 2-core machine, so that no
test passes or fails with the machine's speed (a test that checks a timeout sets its own, short,
against a fake it controls, or moves a clock).

- ``ANSWER``: seconds, an httpx client's timeout for a real server's (or the loopback's) reply; httpx's
  own default is 5 s, which a server process that is starting, or a panel, on a busy machine
  outlasts.
- ``START``: seconds a server (a process, or uvicorn in a thread) may take to start answering, or
  to stop: a Python process importing the package on a loaded machine takes many seconds.
- ``PAGE``: milliseconds, Playwright's default for every action, navigation and ``expect`` (its
  own defaults are 30 s and 5 s); ``tests/kits/browser.py`` sets it on every context and on
  ``expect``.
"""

from __future__ import annotations

ANSWER = 60.0
START = 120.0
PAGE = 60_000
