"""Claim grouping (issue 30, item 4): how well it groups, and what it costs inside a request.

    python benchmarks/claims.py [--quick] [--repeats 30] [--seats 5] [--tokens 2000]

1. On the fixed set ``tests/data/claims/`` (panels of code-review answers with the claim groups
   labelled by hand): pairwise precision and recall of ``engine.claims.group``, per panel and in
   total, for the panels the thresholds were tuned on and for those written after (held out), and
   how many labelled claims the splitter found.
2. The CPU time (``time.process_time``, the least of ``--repeats`` runs) to split and group one panel
   of ``--seats`` answers of about ``--tokens`` tokens each (``messages.estimate_text_tokens``), made
   deterministically from the set: seat k strings together the answers of panels k, k+3, k+6, ...
   (the k-th answer of each, by seat order). Split and group are timed apart and together.

The machine is shared: beside each time the script times a fixed pure-Python reference loop the same
way, interleaved, and prints the time in reference loops too, a figure that moves far less with the
neighbours than milliseconds do. ``--quick`` (CI) runs 5 repetitions and skips the per-panel table.
Nothing is sent anywhere; no model is called.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchwarmers_mcp.engine import claims  # noqa: E402
from benchwarmers_mcp.messages import estimate_text_tokens  # noqa: E402
from tests.kits import claimset  # noqa: E402


def reference() -> int:
    """A fixed amount of plain Python work: the yardstick for the machine's speed."""
    total = 0
    for _ in range(100):
        total += sum(range(1000))
    return total


def panel_of(panels: list[claimset.Panel], seats: int, tokens: int) -> dict[str, str]:
    out = {}
    for k in range(seats):
        parts: list[str] = []
        i = k
        while estimate_text_tokens("\n\n".join(parts)) < tokens:
            panel = panels[i % len(panels)]
            answers = [panel.answers[s] for s in sorted(panel.answers)]
            parts.append(f"## {panel.name}\n\n{answers[k % len(answers)]}")
            i += 3
        out[f"seat{k + 1}"] = "\n\n".join(parts)
    return out


def least(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """The least CPU time of ``fn`` and of the reference loop, run alternately, in milliseconds."""
    best, yardstick = float("inf"), float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
        start = time.process_time()
        reference()
        yardstick = min(yardstick, time.process_time() - start)
    return best * 1000, yardstick * 1000


def quality(panels: list[claimset.Panel], per_panel: bool) -> None:
    if per_panel:
        print(f"{'panel':30} {'seats':>5} {'claims':>6} {'precision':>9} {'recall':>6}")
        for panel in panels:
            tally = claimset.score(panel, claims.group(panel.answers))
            print(f"{panel.name:30} {len(panel.answers):5} {tally.gold_claims:6} {tally.precision:9.3f} "
                  f"{tally.recall:6.3f}")
        print()
    for name, chosen in (("all", panels), ("tuned on", [p for p in panels if p.split == "tune"]),
                         ("held out", [p for p in panels if p.split == "held-out"])):
        t = claimset.evaluate(chosen)
        print(f"{name:9} {len(chosen):2} panels, {t.gold_claims:3} labelled claims: precision {t.precision:.3f} "
              f"recall {t.recall:.3f} (pairs together: {t.together_both} both, {t.together_found} found, "
              f"{t.together_gold} labelled); splitter found {t.gold_found}/{t.gold_claims} labelled claims, "
              f"{t.split_labelled}/{t.split_claims} of its claims are labelled")


def cost(panels: list[claimset.Panel], seats: int, tokens: int, repeats: int) -> None:
    answers = panel_of(panels, seats, tokens)
    split = {seat: claims.split(text) for seat, text in answers.items()}
    groups = claims.group(answers)
    sizes = ", ".join(f"{estimate_text_tokens(a)}" for a in answers.values())
    print(f"\npanel: {seats} seats of ~{tokens} tokens ({sizes}); {sum(map(len, split.values()))} claims, "
          f"{len(groups)} groups ({sum(len(g.seats) > 1 for g in groups)} shared)")
    for name, fn in (("split", lambda: [claims.split(a) for a in answers.values()]),
                     ("group (claims already split)", lambda: claims.group_claims(split)),
                     ("split and group", lambda: claims.group(answers))):
        ms, ref = least(fn, repeats)
        print(f"{name:30} {ms:7.2f} ms CPU = {ms / ref:5.1f} reference loops (one took {ref:.2f} ms)")
    if hasattr(os, "getloadavg"):
        print("load average: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 repetitions, no per-panel table (CI)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--seats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=2000)
    args = parser.parse_args(argv)
    panels = claimset.load()
    quality(panels, per_panel=not args.quick)
    cost(panels, args.seats, args.tokens, 5 if args.quick else args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
