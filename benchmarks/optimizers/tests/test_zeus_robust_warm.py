"""The cross-GPU figures of `zeus-robust`: the store a warm job starts from holds another job's
runs, never the warm job's own future ones."""

from __future__ import annotations

from typing import Any

from discospace.bench import zeus_robust


def test_a_warm_job_starts_from_a_source_job_of_another_seed(zeus_folder, monkeypatch) -> None:
    """A training run is drawn from (seed, attempt) and both GPUs replay one train trace: a
    source of the warm job's own seed had run, at every attempt they shared, the very run the
    warm job was about to draw (its figures were those of a store that knew the future)."""
    real, calls = zeus_robust.simulate_job, []

    def recorded(sim, seed, recurrences, draw=None, elsewhere=()) -> Any:
        job = real(sim, seed, recurrences, draw, elsewhere=elsewhere)
        calls.append((sim.trace.gpu, seed, tuple(elsewhere), job))
        return job

    monkeypatch.setattr(zeus_robust, "simulate_job", recorded)
    zeus_robust.bench_workload((zeus_folder, "movielens-1m", "ncf", (3,)))

    warm = [(gpu, seed, given) for gpu, seed, given, _ in calls if given]
    assert sorted(gpu for gpu, _, _ in warm) == ["a40", "v100"]
    for gpu, seed, given in warm:
        [source] = [c for c in calls if c[3].results == list(given) and c[0] != gpu]
        assert seed == 3
        assert source[1] == 3 + zeus_robust.SOURCE_SEED
