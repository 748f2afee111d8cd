"""Benchmarks run as a user runs them, quick: each exits 0 and reports what it is there to show;
every script in benchmarks/ is here (issue 31.13).
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


# ---- every other script, quick (issue 31.13: none rots unseen again) ------------------------------
# Each script's --quick, and what its report must say: a line only the finished report prints,
# figures matched by shape (a number), never by value. hotpath, backends and versions keep the
# --quick their documented figures were taken with (benchmarks/README.md); CI gives them smaller
# counts on top. wal.py is the test above.
NUMBER = r"[\d,]+(\.\d+)?"
QUICK: dict[str, tuple[list[str], list[str]]] = {
    "backends.py": (["--quick", "--load", "60", "--warm", "10", "--concurrency", "4"],
                    [r"^c=4, medians over 1 repetition\(s\)", r"^load average at end: "]),
    "claims.py": (["--quick"], [r"held out +\d+ panels, +\d+ labelled claims: precision \d", r"split and group +\d"]),
    "config_reads.py": (["--quick"], [rf"nothing changed: +{NUMBER} µs CPU per turn", r"a change every 10 turns"]),
    "events_cost.py": (["--quick"], [rf"seat write with its event row: -?{NUMBER} µs", rf"tail read, nothing new: {NUMBER}"]),
    "evidence_cost.py": (["--quick"], [rf"a year, first read of a day +{NUMBER} +{NUMBER}"]),
    "fastfake.py": (["--quick"], [r"GET /v1/models : 200,", r'"stream": true}: 200, [\d,]+ bytes',
                                  r'"a long answer"}: 200, [\d,]+ bytes']),
    "hotpath.py": (["--quick", "--no-total", "--requests", "20", "--load", "80", "--concurrency", "4"],
                   [rf"route turns +{NUMBER}", r"cold start to first answer: median", r"RSS: idle"]),
    "instructions.py": (["--requests", "3", "--kinds", "turn"], [r"^M instructions per request +this tree$", rf"^a route turn +{NUMBER}$"]),
    "learning.py": (["--quick"], [rf"this product \(seat_panel \+ ratings \+ review after every panel\) +{NUMBER}"]),
    "masking_cost.py": (["--quick"], [rf"API key, 40 chars: whole answer .* {NUMBER} us", r"nothing to mask \(no key\)"]),
    "outbound.py": (["--quick"], [rf"httpx over LeanTransport +{NUMBER} +{NUMBER}", rf"raw asyncio client +{NUMBER}"]),
    "panel_overhead.py": (["--quick"], [rf"added by the gateway +p50 +-?{NUMBER} ms", r", 0 errors in 20 requests"]),
    "pg_params.py": (["--quick"], [rf"_bound, a route turn's 16 parameters: {NUMBER} ns of CPU"]),
    "sqltrace.py": (["--quick"], [r"^ +\d+\.\d\d +COMMIT", r"off the event loop: "]),
    "stacks.py": (["--quick"], [r"^10 samples$", r"70\.0% +fetchall \(benchwarmers_mcp/store/sqlite\.py:400\)"]),
    "suite_recall.py": (["--quick"], [r"tasks each to tell 0\.8 from 0\.5 in 95% of trials: \d+"]),
    "versions.py": (["--quick", "--before", ".", "--after", ".", "--requests", "20", "--load", "80",
                     "--concurrency", "4"], [r"^figure +direct +before +after +after vs before$", r"^load average at end: "]),
}
SLOW = {"backends.py", "hotpath.py", "instructions.py", "versions.py"}  # real servers, a cluster, valgrind


def test_every_script_has_a_quick_run() -> None:
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    assert scripts == set(QUICK) | {"wal.py"}, "a benchmark without a quick run here rots unseen"


@pytest.mark.parametrize("script", sorted(QUICK))
def test_the_quick_run_reports(script: str) -> None:
    args, wanted = QUICK[script]
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=1500 if script in SLOW else 300, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    for pattern in wanted:
        assert re.search(pattern, run.stdout, re.M), f"{script}: no line matching {pattern!r} in:\n{run.stdout[-3000:]}"
