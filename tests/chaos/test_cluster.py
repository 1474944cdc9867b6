"""Chaos on a 3-broker KRaft cluster: overlapping walks while services die and a broker is lost.

The cluster is `deploy/local/kafka-cluster.sh` (plaintext on 127.0.0.1, replication factor 3,
`min.insync.replicas` 2, no unclean leader election); every service creates its topics with 3
replicas. While rounds of 2-4 walks run at once on two spaces sharing a store, the seeded
schedule SIGKILLs every service process and SIGKILLs one broker node mid-run, which comes back
on its data some faults later. Then every invariant of the single-broker run must hold, and
nothing may be lost: every operation requested is in the log, every request for samples and
every request to the pool was answered, every walk answered all 40 entities of its space, and
every topic is back to 3 replicas in sync.

The short form (2 SIGKILLs of each of the 6 service processes, 1 broker loss) runs in
`make test`; `make chaos` runs it with the plan its environment names (CHAOS_SEED, CHAOS_KILLS,
CHAOS_BROKER_LOSSES). The counts are printed and written to `chaos-summary.json`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from discospace.testing.chaos import ChaosPlan, chaos_run, check, summary

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(int(os.environ.get("CHAOS_TIMEOUT_S", "420"))),
]


def test_overlapping_walks_lose_nothing_when_a_broker_of_three_dies_amid_killed_services(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = ChaosPlan.cluster_from_env()
    with chaos_run(plan, tmp_path) as run:
        run.run()
        log = run.log()
        broken = check(run, log)
        counts = summary(run, log)
    (tmp_path / "chaos-summary.json").write_text(json.dumps(counts, indent=2))
    (tmp_path / "chaos-timeline.txt").write_text("\n".join(run.tally.timeline) + "\n")
    with capsys.disabled():
        print(f"\nchaos on the 3-broker cluster (seed {plan.seed}): {json.dumps(counts)}")

    assert counts["fault_errors"] == [], counts["fault_errors"]
    assert all(n == plan.kills_per_service for n in counts["kills"].values()), counts
    assert counts["broker_losses"] == plan.broker_losses >= 1
    assert counts["broker_returns"] == plan.broker_losses
    assert counts["operations"] >= 2
    assert broken == [], "\n".join([*broken, f"faults (UTC) in {tmp_path / 'chaos-timeline.txt'}"])
