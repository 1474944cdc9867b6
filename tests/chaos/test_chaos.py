"""Chaos as a test: overlapping walks through every service while services and the broker die.

The short form (the default plan: 2 SIGKILLs of each of the 6 service processes, 1 broker stop)
runs in `make test`; `make chaos` runs the same test with the plan its environment names
(CHAOS_SEED, CHAOS_KILLS, CHAOS_BROKER_STOPS, CHAOS_BROKER_KILLS, CHAOS_REPEAT) and a longer
timeout. With CHAOS_REPEAT=1 a second run of the same seed on a fresh broker must draw the same
entities in the same order for every operation. The counts are printed and written to
`chaos-summary.json` in the run's folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from discospace.testing.chaos import ChaosPlan, chaos_run, check, decisions, summary

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(int(os.environ.get("CHAOS_TIMEOUT_S", "420"))),
]


def one_run(plan: ChaosPlan, workdir: Path) -> tuple[dict[str, Any], list[str], Any]:
    """Run the plan, then read the log: (counts, broken invariants, decisions)."""
    with chaos_run(plan, workdir) as run:
        run.run()
        log = run.log()
        broken = check(run, log)
        counts = summary(run, log)
        drawn = decisions(run, log)
    (workdir / "chaos-summary.json").write_text(json.dumps(counts, indent=2))
    (workdir / "chaos-timeline.txt").write_text("\n".join(run.tally.timeline) + "\n")
    if broken:
        broken.append(f"faults (UTC) in {workdir / 'chaos-timeline.txt'}")
    return counts, broken, drawn


def test_overlapping_walks_survive_killed_services_and_broker_with_every_invariant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = ChaosPlan.from_env()
    counts, broken, drawn = one_run(plan, tmp_path / "first")
    with capsys.disabled():
        print(f"\nchaos run 1 (seed {plan.seed}): {json.dumps(counts)}")

    assert counts["fault_errors"] == [], counts["fault_errors"]
    assert all(n == plan.kills_per_service for n in counts["kills"].values()), counts
    assert counts["broker_stops"] == plan.broker_stops
    assert counts["broker_kills"] == plan.broker_kills
    assert counts["operations"] >= 2
    assert broken == [], "\n".join(broken)

    if os.environ.get("CHAOS_REPEAT", "0") != "1":
        return
    again, broken_again, drawn_again = one_run(plan, tmp_path / "second")
    with capsys.disabled():
        print(f"chaos run 2 (seed {plan.seed}): {json.dumps(again)}")
    assert broken_again == [], "\n".join(broken_again)
    rounds = min(len(drawn), len(drawn_again))
    assert rounds >= 1
    assert drawn[:rounds] == drawn_again[:rounds], "the same seed drew differently"
