"""scripts/mutants.py in its quick mode: the first break of each family, applied to a copy of the
tree, is caught by the tests that guard it (and those tests pass on the unbroken copy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_quick_break_is_caught() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "mutants.py"), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "breaks caught" in done.stdout and "missed" not in done.stdout, done.stdout
