"""Benchmarks run as a user runs them, quick: each exits 0 and reports what it is there to show.
A benchmark prints figures and asserts nothing; what is checked here is its report's verdict,
never a figure of time."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_wal_quick_reports_a_bounded_wal_at_each_rate() -> None:
    """Issue 29, item 2: ``benchmarks/wal.py --quick`` drives real servers with steady panels at 10
    and 100 a second and finds the WAL under 64 MB at both."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "wal.py"), "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = {" ".join(line.split()[:3]): line.split()[3:] for line in run.stdout.splitlines()
            if re.match(r"this tree \d+/s +\d", line)}  # the summary's rows: a run's name, then its figures
    assert set(rows) == {"this tree 10/s", "this tree 100/s"}, run.stdout
    for name, (largest, _first, _second, _db, panels, _rate, *_latency, _errors, _cpu, bounded) in rows.items():
        assert float(largest) < 64 and bounded == "yes", f"{name}: {rows[name]}"
        assert int(panels) > 0, f"{name} answered no panel"
    assert "this tree's WAL bounded under 64 MB at every rate: yes" in run.stdout, run.stdout
