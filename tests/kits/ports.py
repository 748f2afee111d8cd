"""Free loopback ports for tests, none handed out twice in one run.

``bind(("127.0.0.1", 0))`` names a port that is free *now*, and the kernel may name it again to
the next caller before the test's server listens on it. With the suite spread over pytest-xdist
workers that caller can be another worker, which would then serve (or expect a refusal) on the
port this one is about to use. So each worker takes ports from a block of its own, in turn from a
random start, skipping any port something already holds; the blocks lie below the kernel's
ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``, 32768 and up), where outgoing
connections take their local ports.
"""

from __future__ import annotations

import os
import random
import socket
import threading

FIRST, LAST = 10_000, 32_000  # above the well-known and usual fixed ports, below the ephemeral range


def _block() -> range:
    """This process's ports: the whole span alone, or its share of it as xdist worker ``gwN``."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    size = (LAST - FIRST) // max(count, 1)
    start = FIRST + (index % max(count, 1)) * size
    return range(start, start + size)


class _Ports:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.block: range | None = None
        self.next = 0

    def take(self) -> int:
        with self.lock:
            if self.block is None:
                self.block = _block()
                self.next = random.randrange(len(self.block))
            for _ in range(len(self.block)):
                port = self.block[self.next % len(self.block)]
                self.next += 1
                if _bindable(port):
                    return port
        raise RuntimeError(f"no free loopback port in {self.block}")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_ports = _Ports()


def free_port() -> int:
    """A loopback port nothing listens on, not handed out before in this run."""
    return _ports.take()
