"""How well the suite measures a model: simulated finders with known rates, scored by the real code.

    python benchmarks/suite_recall.py [--trials 1000] [--seed 1] [--quick]

A simulated model with finding rate p answers each of the starter pack's planted bugs with
``FAULT: line <the right line>`` with probability p, else ``NO FAULT`` (a miss) or, one time in
five, another line (a wrong line); its answers go through ``scoring.score_answer`` on the pack's
real tasks and are added up by ``stats`` exactly as a run's are. Printed:

1. per true rate and number of answers: the mean measured recall, the mean 95% Wilson interval,
   and how often that interval holds the true rate (its coverage);
2. how many tasks it takes to tell a 0.8 finder from a 0.5 finder at 95%: the smallest number of
   answers each for which (a) a one-sided two-proportion test at 5% tells them apart in 95% of
   trials, and (b) their two Wilson intervals do not overlap in 95% of trials.
Nothing is sent anywhere; no model is called.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchwarmers_mcp.suite import library, scoring, stats  # noqa: E402
from benchwarmers_mcp.suite.tasks import Task  # noqa: E402

EXPLAIN = "\nThe comparison there lets one value too many through; the callers rely on the bound holding."
Z95 = 1.6448536269514722  # one-sided 5%


def pack_bugs() -> list[Task]:
    catalog = library.catalog_sync(ROOT / "no-such-home", library.PACK_DIR)
    return [t for t in catalog.live() if t.kind == "bug"]


SCORED: dict[tuple[str, str], scoring.Score] = {}


def scored(task: Task, answer: str) -> scoring.Score:
    """The real scoring, once per distinct (task, answer): the same input always gives the same score."""
    key = (task.id, answer)
    if key not in SCORED:
        SCORED[key] = scoring.score_answer(task, answer)
    return SCORED[key]


def answer(task: Task, rate: float, rng: random.Random) -> str:
    line = task.source["line"]
    if rng.random() < rate:
        return f"FAULT: line {line}{EXPLAIN}"
    if rng.random() < 0.2:
        return f"FAULT: line {line + 7}{EXPLAIN}"
    return f"NO FAULT{EXPLAIN}"


def measure(bugs: list[Task], rate: float, n: int, rng: random.Random) -> stats.Tally:
    rows = []
    for i in range(n):
        task = bugs[i % len(bugs)]
        s = scored(task, answer(task, rate, rng))
        rows.append({"alias": "sim", "task": task.id, "scored": s.scored, "outcome": s.outcome, "reason": s.reason,
                     "invented": s.invented, "chances": s.chances, "wrong": s.wrong, "at": 0.0})
    return stats.tally(rows)["sim"]


def recall_of(t: stats.Tally) -> tuple[int, int]:
    return t.counts["found"], t.finding


def one_sided_test(k1: int, k2: int, n: int) -> bool:
    """Is the first rate above the second at 5% (two-proportion z test, pooled)?"""
    pooled = (k1 + k2) / (2 * n)
    if pooled in (0.0, 1.0):
        return False
    z = (k1 / n - k2 / n) / math.sqrt(pooled * (1 - pooled) * 2 / n)
    return z > Z95


def coverage_table(bugs: list[Task], trials: int, rng: random.Random) -> None:
    print(f"1. measured recall against the true rate ({trials} trials each, 95% Wilson interval)")
    print(f"{'true rate':>9}  {'answers':>7}  {'mean recall':>11}  {'mean interval':>15}  {'width':>5}  {'coverage':>8}")
    for rate in (0.2, 0.5, 0.8, 0.95):
        for n in (12, 36, 120):
            recalls, lows, highs, held = [], [], [], 0
            for _ in range(trials):
                k, m = recall_of(measure(bugs, rate, n, rng))
                low, high = stats.wilson(k, m) or (0.0, 1.0)
                recalls.append(k / m)
                lows.append(low)
                highs.append(high)
                held += low <= rate <= high
            print(f"{rate:>9.2f}  {n:>7}  {statistics.mean(recalls):>11.3f}  "
                  f"{statistics.mean(lows):>6.3f} - {statistics.mean(highs):.3f}  "
                  f"{statistics.mean(highs) - statistics.mean(lows):>5.3f}  {held / trials:>8.1%}")


def tell_apart(bugs: list[Task], trials: int, rng: random.Random) -> None:
    print("\n2. telling a 0.8 finder from a 0.5 finder (each answers n tasks)")
    print(f"{'n':>4}  {'test at 5% says 0.8 > 0.5':>26}  {'Wilson intervals apart':>22}")
    found_test = found_apart = None
    for n in range(5, 121, 5):
        test = apart = 0
        for _ in range(trials):
            strong, weak = measure(bugs, 0.8, n, rng), measure(bugs, 0.5, n, rng)
            (k1, _), (k2, _) = recall_of(strong), recall_of(weak)
            test += one_sided_test(k1, k2, n)
            low_strong = (stats.wilson(k1, n) or (0.0, 1.0))[0]
            high_weak = (stats.wilson(k2, n) or (0.0, 1.0))[1]
            apart += low_strong > high_weak
        if n % 10 == 0 or (found_test is None and test / trials >= 0.95) or \
                (found_apart is None and apart / trials >= 0.95):
            print(f"{n:>4}  {test / trials:>26.1%}  {apart / trials:>22.1%}")
        found_test = found_test or (n if test / trials >= 0.95 else None)
        found_apart = found_apart or (n if apart / trials >= 0.95 else None)
        if found_test and found_apart:
            break
    p1, p2, pbar = 0.8, 0.5, 0.65
    analytic = (Z95 * math.sqrt(2 * pbar * (1 - pbar)) + Z95 * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 \
        / (p1 - p2) ** 2
    print(f"\ntasks each to tell 0.8 from 0.5 in 95% of trials: {found_test} by a one-sided test at 5% "
          f"(the normal approximation says {math.ceil(analytic)}), {found_apart} for the 95% intervals not to overlap")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="20 trials: seconds, for CI (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.trials = 20
    bugs = pack_bugs()
    rng = random.Random(args.seed)
    print(f"{len(bugs)} planted bugs from the starter pack, scored by benchwarmers_mcp.suite.scoring\n")
    coverage_table(bugs, args.trials, rng)
    tell_apart(bugs, args.trials, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
