"""The claim maps of the fixed set, pinned: the same answers must keep giving the same groups, ids, texts,
spans and references, so a change made for speed that moves a single claim is seen here before it is
seen in precision and recall (which a moved pair can leave unchanged).

``tests/data/claims-pinned.json`` holds, for each panel of ``tests/data/claims`` and for the benchmark's
five-seat panel (``claimset.panel_of``), each group as ``[id, seats, members, refs]`` (a member is
``seat@start-end``) and a digest of the whole wire form (``ClaimMap.as_dict``, texts included). A change
that is meant to move claims rewrites it on purpose:

    python -m tests.test_claims_pinned --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from benchwarmers_mcp.engine.claims import ClaimMap
from tests.kits import claimset

PINNED = Path(__file__).resolve().parent / "data" / "claims-pinned.json"


def _panels() -> dict[str, dict[str, str]]:
    panels = claimset.load()
    return {**{p.name: p.answers for p in panels}, "benchmark panel": claimset.panel_of(panels)}


def _pin(answers: dict[str, str]) -> dict[str, Any]:
    wire = ClaimMap.of(answers).as_dict()
    digest = hashlib.sha256(json.dumps(wire, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    groups = [[g["id"], " ".join(g["seats"]), [f"{m['seat']}@{m['span'][0]}-{m['span'][1]}" for m in g["members"]],
               g["refs"]] for g in wire]
    return {"digest": digest, "groups": groups}


def _pinned() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(PINNED.read_text(encoding="utf-8"))
    return loaded


def test_every_panel_is_pinned() -> None:
    assert sorted(_pinned()) == sorted(_panels())


@pytest.mark.parametrize("name", sorted(_panels()))
def test_the_claim_map_is_the_pinned_one(name: str) -> None:
    pinned, now = _pinned()[name], _pin(_panels()[name])
    assert now["groups"] == pinned["groups"]
    assert now["digest"] == pinned["digest"], "the same groups, but a text changed"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    panels = []  # one group a line, so that a diff shows the claims that moved
    for name, answers in sorted(_panels().items()):
        pin = _pin(answers)
        groups = ",\n".join(f"   {dumps(g)}" for g in pin["groups"])
        panels.append(f' {dumps(name)}: {{\n  "digest": {dumps(pin["digest"])},\n  "groups": [\n{groups}\n  ]\n }}')
    PINNED.write_text("{\n" + ",\n".join(panels) + "\n}\n", encoding="utf-8")
