"""benchmarks/learning.py's scoring (issue 31.13): a panel's regret compares its members with the
best as many models, whatever ``--members`` is, and the in-memory path picks its explorers from
``seating.ranked_pool`` (a generator) as the store path does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def learning() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_learning", ROOT / "benchmarks" / "learning.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_learning"] = module
    spec.loader.exec_module(module)
    return module


P = np.array([0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.6, 0.05])  # the best four: slots 0, 2, 4, 6


@pytest.mark.parametrize("members", [1, 2, 3, 4, 5])
def test_the_best_members_have_no_regret_however_many_there_are(learning: ModuleType, members: int) -> None:
    best = sorted(range(len(P)), key=lambda s: -P[s])[:members]
    assert learning.best_slots(P, members) == set(best)
    assert learning.panel_regret(P, best) == pytest.approx(0.0)


def test_four_members_are_compared_with_the_best_four_not_three_scaled(learning: ModuleType) -> None:
    # members 0, 2, 4 and 1 (0.1 instead of the fourth best, 0.6): 0.5 short of the best four
    assert learning.panel_regret(P, [0, 2, 4, 1]) == pytest.approx(0.5)


def test_the_in_memory_run_takes_its_explorers_from_the_ranked_pool(learning: ModuleType) -> None:
    args = learning.parse(["--quick", "--in-memory", "--members", "4", "--seeds", "1", "--panels", "30"])
    result = learning.anyio.run(learning.run_seed_in_memory, 0, args)
    assert result.explorer_seats == 30 * args.explorers  # every panel seated its explorers
    assert result.regret >= 0.0  # never below the best four: the regret counts against them
