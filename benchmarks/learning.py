"""How fast verdicts lead to panels of the best models: the learning benchmark.

    python benchmarks/learning.py [--seeds 200] [--judge-p 0.5] [--json] ...

Drives the product's own code through the simulated bench of ``learning-world.md``: the real
store in a temporary folder, models registered through ``store.models``, panels seated by
``engine.seating.seat_panel`` (explorers by rating), seats and verdicts written through
``store.calls`` and ``store.verdicts``, ratings from ``engine.learning.ratings_for`` and a review
by ``engine.learning.review`` after every panel. A membership change is what the product does:
with ``--mode accept`` (the default) every suggestion the review raises is accepted at once, as a
user clicking Accept; with ``--mode auto`` automatic mode is on and only its changes happen.

The world (numpy's ``default_rng(seed)``, drawn once per seed, common to every policy): hidden
usefulness p ~ Beta(2, 2) per model; ``judged[t][s]`` and ``useful_draw[t][s]`` per panel and
model slot; the churn order and the newcomers' p. Prints the mean and the 5th-95th percentile over
seeds, beside the reference rows; ``--json`` prints one JSON object instead.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any

import anyio
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from benchwarmers_mcp.context import Access  # noqa: E402
from benchwarmers_mcp.engine import learning  # noqa: E402
from benchwarmers_mcp.engine.ratings import DAY, Evidence, LearningPolicy, RatingPolicy, rate_all, review  # noqa: E402
from benchwarmers_mcp.engine.seating import Explore, ranked_pool, seat_panel  # noqa: E402
from benchwarmers_mcp.messages import Ask, user  # noqa: E402
from benchwarmers_mcp.store import Database, calls, endpoints, verdicts  # noqa: E402
from benchwarmers_mcp.store import collections as collection_store  # noqa: E402
from benchwarmers_mcp.store import models as model_store  # noqa: E402
from benchwarmers_mcp.store import ratings as rating_store  # noqa: E402
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord  # noqa: E402
from benchwarmers_mcp.store.collections import Collection, GatewaySettings  # noqa: E402
from benchwarmers_mcp.store.endpoints import Endpoint  # noqa: E402
from benchwarmers_mcp.store.models import ModelRecord  # noqa: E402
from benchwarmers_mcp.store.verdicts import Verdict  # noqa: E402

T0 = 1_800_000_000.0
LOCAL = Access.unscoped()
REFERENCE = [
    ("explorers by staleness, members fixed by hand", 566, 0.509, 0.50),
    ("explorers by staleness, a person swapping fewest/most useful every 50 panels", 494, 0.554, 0.51),
    ("explorers by staleness, the 3 best useful ratios (>= 5 verdicts) every 50 panels", 121, 0.821, 0.58),
    ("Thompson explorers, challenger swap when P(better) > 0.8, every 50 panels", 84, 0.826, 0.18),
    ("upper-90%-bound explorers, the same swaps", 86, 0.825, 0.08),
    ("Thompson explorers, the same swap rule after every panel", 44.5, 0.828, 0.19),
    ("upper-90%-bound explorers, the same swap rule after every panel", 44.6, 0.826, 0.10),
]
REFERENCE_SPARSE = {"seed's rule": 457, "upper bound every 50 panels": 120, "upper bound after every panel": 78.5}


@dataclass
class World:
    p: np.ndarray
    members: list[int]
    judged: np.ndarray
    useful: np.ndarray
    churn_order: list[int]
    newcomer_p: list[float]


def make_world(seed: int, a: argparse.Namespace) -> World:
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, a.models)
    members = [int(s) for s in rng.choice(a.models, a.members, replace=False)]
    judged = rng.random((a.panels, a.models)) < a.judge_p
    useful = rng.random((a.panels, a.models))
    churn_order = [int(s) for s in rng.permutation(a.models)]
    churns = len(range(a.churn_every, a.panels, a.churn_every)) if a.churn_every > 0 else 0
    newcomer_p = [float(x) for x in rng.beta(2, 2, churns)]
    return World(p, members, judged, useful, churn_order, newcomer_p)


@dataclass
class SeedResult:
    regret: float = 0.0
    late_member_p: float = 0.0
    late_best_p: float = 0.0
    explorer_seats: int = 0
    explorer_bottom: int = 0
    newcomer_panels: list[int] = field(default_factory=list)
    newcomer_never: int = 0
    newcomer_top: int = 0  # strong newcomers that arrived among the best ``--members`` models
    changes: int = 0


def alias_of(slot: int, generation: int) -> str:
    return f"m{slot:02d}" if generation == 0 else f"m{slot:02d}-new{generation}"


async def register(db: Database, slot: int, generation: int) -> str:
    alias = alias_of(slot, generation)
    await model_store.register(db, ModelRecord(alias, f"lab{slot}g{generation}/model{slot}x{generation}", "sim",
                                               f"fam{slot}x{generation}"))
    return alias


@dataclass
class Bench:
    """One seed's bench: the store, the slot each alias holds, the policies."""

    db: Database
    world: World
    args: argparse.Namespace
    slot: dict[str, int] = field(default_factory=dict)
    alias: dict[int, str] = field(default_factory=dict)
    generation: dict[int, int] = field(default_factory=dict)
    arrivals: dict[int, tuple[int, float, bool]] = field(default_factory=dict)  # slot: (panel, p, top 3)
    became: dict[int, int] = field(default_factory=dict)

    async def churn(self, t: int, k: int, members: set[str]) -> None:
        slot = next(s for s in self.world.churn_order if self.alias[s] not in members)
        await model_store.retire(self.db, self.alias[slot], "replaced in the benchmark's churn")
        self.generation[slot] = self.generation.get(slot, 0) + 1
        self.alias[slot] = await register(self.db, slot, self.generation[slot])
        self.slot[self.alias[slot]] = slot
        self.world.p[slot] = self.world.newcomer_p[k]
        self.arrivals[slot] = (t, self.world.newcomer_p[k], slot in best_slots(self.world.p, self.args.members))
        self.became.pop(slot, None)


async def run_seed(seed: int, a: argparse.Namespace) -> SeedResult:
    world = make_world(seed, a)
    out = SeedResult()
    rating_policy = RatingPolicy(prior=(a.prior, a.prior), half_life_days=a.half_life_days)
    policy = LearningPolicy(promote_p=a.promote_p, min_weight=a.min_weight, auto_p=a.auto_p,
                            auto_min_weight=a.auto_min_weight)
    explore = Explore(a.explore, a.z, random.Random(seed))
    settings = rating_store.LearningSettings(auto=a.mode == "auto", explore=a.explore)
    gateway = GatewaySettings(max_calls=a.members + a.explorers, max_explorers=a.explorers)
    with tempfile.TemporaryDirectory(dir=a.folder) as folder:
        async with Database(Path(folder) / "bench.db") as db:
            await endpoints.add(db, Endpoint("sim", "http://127.0.0.1:9/v1", api="simulated"))
            bench = Bench(db, world, a)
            for s in range(a.models):
                bench.alias[s] = await register(db, s, 0)
                bench.slot[bench.alias[s]] = s
            await collection_store.save_gateway_settings(db, gateway)
            coll = await collection_store.save(db, Collection("core", tuple(bench.alias[s] for s in world.members)))
            ask = Ask("core", (user("review this"),))
            evidence: list[Any] = []
            k, last = 0, a.panels - 100
            for t in range(a.panels):
                now = T0 + t * a.seconds_per_panel
                if a.churn_every > 0 and t > 0 and t % a.churn_every == 0 and k < len(world.newcomer_p):
                    await bench.churn(t, k, set(coll.members))
                    k += 1
                active = [bench.alias[s] for s in range(a.models)]
                ratings = rate_all(active, evidence, collection=coll.qualified, shape="general", policy=rating_policy)
                seating = await seat_panel(db, coll, ask, gateway, ratings=ratings, explore=explore)
                _score(out, bench, coll, seating.seats, t, last)
                await _record(db, bench, seating.seats, t, now)
                evidence = await learning.load_evidence(db, now, policy=rating_policy) if a.all_sources else \
                    learning._map_evidence(await rating_store.evidence(
                        db, now, sources=("panel", "health"), half_life=rating_policy.half_life_days * DAY))
                ratings = rate_all(active, evidence, collection=coll.qualified, shape="general", policy=rating_policy)
                result = await learning.review(db, coll, now=now, ratings=ratings, policy=policy, settings=settings)
                if a.mode == "accept":
                    for row in sorted(result.open, key=lambda r: -r.strength):
                        try:
                            await learning.accept(db, row.id)
                        except Exception:  # stale after an earlier accept this round
                            continue
                before = coll.members
                coll = await collection_store.get(db, "core")
                if set(coll.members) != set(before):
                    out.changes += 1
            _newcomers(out, bench, set(coll.members))
    return out


async def run_seed_in_memory(seed: int, a: argparse.Namespace) -> SeedResult:
    """The same world and the same pure decisions (``seating.ranked_pool``, ``ratings.rate_all``,
    ``ratings.review``) without the store: for sweeping parameters quickly. The figures to quote
    come from the store path."""
    world = make_world(seed, a)
    out = SeedResult()
    rating_policy = RatingPolicy(prior=(a.prior, a.prior), half_life_days=a.half_life_days)
    policy = LearningPolicy(promote_p=a.promote_p, min_weight=a.min_weight, auto_p=a.auto_p,
                            auto_min_weight=a.auto_min_weight)
    explore = Explore(a.explore, a.z, random.Random(seed))
    bench = Bench(None, world, a)  # type: ignore[arg-type]
    records: dict[str, ModelRecord] = {}
    for s in range(a.models):
        bench.alias[s] = alias_of(s, 0)
        bench.slot[bench.alias[s]] = s
        records[bench.alias[s]] = ModelRecord(bench.alias[s], bench.alias[s], "sim", f"fam{s}")
    members = [bench.alias[s] for s in world.members]
    counts: dict[str, list[int]] = {}
    seated: Counter[str] = Counter()
    k, last = 0, a.panels - 100
    for t in range(a.panels):
        if a.churn_every > 0 and t > 0 and t % a.churn_every == 0 and k < len(world.newcomer_p):
            slot = next(s for s in world.churn_order if bench.alias[s] not in members)
            bench.generation[slot] = bench.generation.get(slot, 0) + 1
            alias = alias_of(slot, bench.generation[slot])
            del records[bench.alias[slot]]
            bench.alias[slot], bench.slot[alias] = alias, slot
            records[alias] = ModelRecord(alias, alias, "sim", f"fam{slot}x{bench.generation[slot]}")
            world.p[slot] = world.newcomer_p[k]
            bench.arrivals[slot] = (t, world.newcomer_p[k], slot in best_slots(world.p, a.members))
            bench.became.pop(slot, None)
            k += 1
        evidence = [Evidence(al, "panel", "bench/core", "general", c[0], c[1]) for al, c in counts.items()] + [
            Evidence(al, "health", good=n) for al, n in seated.items()]
        ratings = rate_all(list(records), evidence, collection="bench/core", shape="general", policy=rating_policy)
        pool = [m for al, m in records.items() if al not in members]
        chosen = [m for m, _ in islice(ranked_pool(pool, ratings, explore), a.explorers)]
        seats = [_Seat(al, "member") for al in members] + [_Seat(m.alias, "explorer") for m in chosen]
        _score(out, bench, Collection("core", tuple(members)), seats, t, last)
        for seat in seats:
            records[seat.alias] = replace(records[seat.alias], last_used=T0 + t)
            seated[seat.alias] += 1
            s = bench.slot[seat.alias]
            if world.judged[t][s]:
                c = counts.setdefault(seat.alias, [0, 0])
                c[0 if world.useful[t][s] < world.p[s] else 1] += 1
        evidence = [Evidence(al, "panel", "bench/core", "general", c[0], c[1]) for al, c in counts.items()] + [
            Evidence(al, "health", good=n) for al, n in seated.items()]
        ratings = rate_all(list(records), evidence, collection="bench/core", shape="general", policy=rating_policy)
        raised = review("core", members, sorted(al for al in records if al not in members), ratings, policy)
        before = list(members)
        for sug in sorted(raised, key=lambda r: -r.strength):
            if a.mode == "auto" and not sug.auto:
                continue
            if sug.kind == "promote" and sug.replaces in members and sug.alias not in members:
                members = [sug.alias if m == sug.replaces else m for m in members]
        if set(members) != set(before):
            out.changes += 1
    _newcomers(out, bench, set(members))
    return out


@dataclass(frozen=True)
class _Seat:
    alias: str
    label: str


def best_slots(p: np.ndarray, n: int) -> set[int]:
    """The slots of the ``n`` most useful models: the panel members a perfect judge would keep."""
    return {int(s) for s in np.argsort(-p)[:n]}


def panel_regret(p: np.ndarray, member_slots: list[int]) -> float:
    """What one panel's members fall short of the best as many models: the sum of the best
    ``len(member_slots)`` usefulness values, less the members' own (0 when they are the best)."""
    best = float(np.sort(p)[len(p) - len(member_slots):].sum()) if member_slots else 0.0
    return best - float(sum(p[s] for s in member_slots))


def _score(out: SeedResult, bench: Bench, coll: Collection, seats: list[Any], t: int, last: int) -> None:
    p = bench.world.p
    member_slots = [bench.slot[a] for a in coll.members]
    out.regret += panel_regret(p, member_slots)
    if t >= last:
        out.late_member_p += float(np.mean([p[s] for s in member_slots])) / 100
        out.late_best_p += float(np.sort(p)[len(p) - len(member_slots):].mean()) / 100
    median = float(np.median(p))
    for seat in seats:
        if seat.label != "member":
            out.explorer_seats += 1
            out.explorer_bottom += int(p[bench.slot[seat.alias]] <= median)
    for s in member_slots:
        if s in bench.arrivals and s not in bench.became:
            bench.became[s] = t - bench.arrivals[s][0]


async def _record(db: Database, bench: Bench, seats: list[Any], t: int, now: float) -> None:
    panel = PanelRecord(f"p{t:04d}", now, "bench/core", "general", "collection", "all", "local", None, "q", [])
    await calls.create_panel(db, panel)
    for seat in seats:
        call = f"{panel.id}.{seat.key}"
        await calls.record_seat(db, SeatRecord(call, panel.id, seat.key, seat.label, seat.alias, "ok", 1.0, "answer",
                                               at=now))
        s = bench.slot[seat.alias]
        if bench.world.judged[t][s]:
            useful = bool(bench.world.useful[t][s] < bench.world.p[s])
            await verdicts.record(db, Verdict(call, useful, at=now), access=LOCAL)


def _newcomers(out: SeedResult, bench: Bench, members: set[str]) -> None:
    for slot, (_, p, top) in bench.arrivals.items():
        if p <= 0.8:
            continue
        if slot in bench.became:
            out.newcomer_panels.append(bench.became[slot])
        elif top:
            out.newcomer_never += 1
        out.newcomer_top += int(top)


def _spread(values: list[float]) -> tuple[float, float, float]:
    arr = np.array(values, dtype=float)
    return float(arr.mean()), float(np.percentile(arr, 5)), float(np.percentile(arr, 95))


def summarise(results: list[SeedResult]) -> dict[str, Any]:
    regret = _spread([r.regret for r in results])
    late = _spread([r.late_member_p for r in results])
    share = [r.explorer_bottom / r.explorer_seats for r in results if r.explorer_seats]
    bottom = _spread(share) if share else (0.0, 0.0, 0.0)
    panels = [n for r in results for n in r.newcomer_panels]
    top = sum(r.newcomer_top for r in results)
    return {
        "regret": round(regret[0], 1), "regret_p5_p95": [round(regret[1], 1), round(regret[2], 1)],
        "late_member_p": round(late[0], 3), "late_member_p_p5_p95": [round(late[1], 3), round(late[2], 3)],
        "late_best_p": round(statistics.fmean(r.late_best_p for r in results), 3),
        "explorer_bottom_share": round(bottom[0], 3),
        "explorer_bottom_share_p5_p95": [round(bottom[1], 3), round(bottom[2], 3)],
        "newcomer_median_panels": statistics.median(panels) if panels else None,
        "newcomers_strong": len(panels) + sum(r.newcomer_never for r in results),
        "newcomer_never_share": round(sum(r.newcomer_never for r in results) / top, 3) if top else None,
        "member_changes": round(statistics.fmean(r.changes for r in results), 1),
        "seeds": len(results),
    }


def show(figures: dict[str, Any], a: argparse.Namespace, seconds: float) -> None:
    print(f"learning benchmark: {figures['seeds']} seeds x {a.panels} panels, {a.models} models, {a.members} members"
          f" + {a.explorers} explorers, judge-p {a.judge_p}, churn every {a.churn_every}; explorers {a.explore}"
          f" (z {a.z:g}), mode {a.mode} (promote at P > {a.promote_p:g}, >= {a.min_weight:g} verdicts), "
          f"{seconds:.0f} s")
    print(f"{'policy':<84} {'regret':>8} {'member p':>9} {'bottom':>7}")
    if a.members != 3 or a.models != 20 or a.panels != 600:
        print("  (the reference rows are 3 members of 20 models over 600 panels: not comparable with this run)")
    for name, regret, late, bottom in REFERENCE:
        print(f"{name:<84} {regret:>8} {late:>9.3f} {bottom:>7.0%}")
    ours = "this product (seat_panel + ratings + review after every panel)"
    print(f"{ours:<84} {figures['regret']:>8} {figures['late_member_p']:>9.3f} {figures['explorer_bottom_share']:>7.0%}")
    print(f"  regret 5-95%: {figures['regret_p5_p95']}, member p 5-95%: {figures['late_member_p_p5_p95']} "
          f"(best {a.members}: {figures['late_best_p']}), bottom share 5-95%: {figures['explorer_bottom_share_p5_p95']}")
    print(f"  strong newcomer (p > 0.8) to member: median {figures['newcomer_median_panels']} panels "
          f"({figures['newcomers_strong']} newcomers); never, of those in the top {a.members}: {figures['newcomer_never_share']}")
    print(f"  member changes per seed: {figures['member_changes']}")
    if a.judge_p != 0.5:
        print(f"  reference with --judge-p 0.2: {REFERENCE_SPARSE}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=int, default=20)
    p.add_argument("--members", type=int, default=3)
    p.add_argument("--explorers", type=int, default=2)
    p.add_argument("--judge-p", type=float, default=0.5)
    p.add_argument("--churn-every", type=int, default=150)
    p.add_argument("--panels", type=int, default=600)
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--explore", choices=("ucb", "thompson"), default="ucb")
    p.add_argument("--z", type=float, default=Explore().z, help="the upper bound's standard deviations")
    p.add_argument("--mode", choices=("accept", "auto"), default="accept")
    p.add_argument("--promote-p", type=float, default=LearningPolicy().promote_p)
    p.add_argument("--min-weight", type=float, default=LearningPolicy().min_weight)
    p.add_argument("--auto-p", type=float, default=LearningPolicy().auto_p)
    p.add_argument("--auto-min-weight", type=float, default=LearningPolicy().auto_min_weight)
    p.add_argument("--prior", type=float, default=RatingPolicy().prior[0], help="the Beta(prior, prior) prior")
    p.add_argument("--half-life-days", type=float, default=RatingPolicy().half_life_days)
    p.add_argument("--seconds-per-panel", type=float, default=60.0)
    p.add_argument("--all-sources", action="store_true", help="read every evidence source each panel (slower)")
    p.add_argument("--folder", default="/dev/shm" if Path("/dev/shm").is_dir() else None,
                   help="where the temporary store goes (default: /dev/shm when there is one)")
    p.add_argument("--concurrent", type=int, default=4, help="seeds run at once (each on its own store)")
    p.add_argument("--in-memory", action="store_true",
                   help="the same decisions without the store, to sweep parameters fast (quote the store's figures)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true",
                   help="a short run that proves the script works: 2 seeds x 80 panels of 10 models, churn every"
                        " 30 (each still settable)")
    a = p.parse_args(argv)
    if a.quick:  # other defaults; what the command line gives still wins
        p.set_defaults(seeds=2, panels=80, models=10, churn_every=30)
        a = p.parse_args(argv)
    if a.members < 1 or a.models < a.members + a.explorers:
        p.error("--members is at least 1, and --models at least --members + --explorers")
    return a


async def main_async(a: argparse.Namespace) -> None:
    started = time.monotonic()
    seeds = list(range(a.first_seed, a.first_seed + a.seeds))
    results: dict[int, SeedResult] = {}
    limit = anyio.Semaphore(max(1, a.concurrent))

    async def one(seed: int) -> None:
        async with limit:
            results[seed] = await (run_seed_in_memory(seed, a) if a.in_memory else run_seed(seed, a))

    async with anyio.create_task_group() as tg:  # each seed its own store: their waits on the store overlap
        for seed in seeds:
            tg.start_soon(one, seed)
    figures = summarise([results[s] for s in seeds])
    if a.json:
        print(json.dumps(figures))
    else:
        show(figures, a, time.monotonic() - started)


if __name__ == "__main__":
    anyio.run(main_async, parse())
