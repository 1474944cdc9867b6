"""A large operation's progress is summed up by the store (`queries.pair_summaries`,
`queries.best_result`, `progress.summed_progress`): the same progress as folding its rows."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest

from discospace.core import Objective
from discospace.projector.reading import StoreViews
from discospace.projector.writing import Projection

from .conftest import History, Operation, point, space_spec

pytestmark = pytest.mark.integration

ROWS = 10**9
"""A rows limit no test reaches: progress from the rows."""
SUMMED = 0
"""A rows limit every operation passes: progress summed up by the store."""
TPS = (1000.0, 2000.0, 3000.5, 3000.5)
"""Tokens per second drawn for a valid result: equal bests, so the earliest must win."""
SCENARIOS = (
    "requested",
    "started",
    "valid",
    "valid",
    "invalid",
    "failed for good",
    "failed, may be retried",
    "retried, then valid",
    "retried twice, failed",
    "reused",
    "valid, without the objective's target",
    "completed twice",
)


def _pair(operation: Operation, rng: random.Random, values: dict[str, Any], donor: Any) -> None:
    scenario = rng.choice(SCENARIOS)
    if scenario == "reused":
        operation.reuse(donor)
        return
    request = operation.request(values)
    if scenario == "started":
        operation.begin(request)
    elif scenario == "valid":
        tps = rng.choice(TPS)
        operation.complete(request, {"train_tokens_per_second": tps, "peak_gpu_memory_mib": 1})
    elif scenario == "valid, without the objective's target":
        operation.complete(request, {"peak_gpu_memory_mib": 1})
    elif scenario == "invalid":
        operation.complete(request, invalid="CUDA out of memory")
    elif scenario == "failed for good":
        operation.fail(request, "no such image", retryable=False)
    elif scenario == "failed, may be retried":
        operation.fail(request, "node lost", retryable=True)
    elif scenario == "completed twice":  # a redelivered attempt completes beside its retry
        operation.fail(request, "node lost", retryable=True)
        again = operation.request(values, attempt=2)
        operation.complete(request, invalid="CUDA out of memory")
        operation.complete(again, {"train_tokens_per_second": rng.choice(TPS)})
    elif scenario.startswith("retried"):
        operation.fail(request, "node lost", retryable=True)
        again = operation.request(values, attempt=2)
        if scenario == "retried, then valid":
            operation.complete(again, {"train_tokens_per_second": rng.choice(TPS)})
        else:
            operation.fail(again, "node lost", retryable=True)
            operation.fail(operation.request(values, attempt=3), "node lost", retryable=True)


def _random_history(seed: int) -> tuple[History, list[str]]:
    """Operations of random pairs (every scenario above), some ended part way through, with
    objectives to maximise, to minimise, or none."""
    rng = random.Random(seed)
    history = History()
    history.actuator("w0")
    space = history.register(space_spec((1, 2, 4, 8)))
    donor_op = history.start(space, "op-donor", number_entities=1)
    donor = donor_op.measure(point("llama-7b", 1, 1), tps=1500.0)
    operations = []
    for number in range(12):
        objective = rng.choice(("max", "min", None))
        parameters: dict[str, Any] = {"max_retries": rng.choice((0, 1, 2))}
        if objective is not None:
            parameters["objective"] = Objective(
                property="train_tokens_per_second", direction=objective
            )
        operation = history.start(space, f"op-{seed}-{number}", number_entities=50, **parameters)
        pairs = rng.randrange(0, 25)
        end = rng.choice((None, rng.randrange(0, pairs + 1)))
        for index in range(pairs):
            if index == end:
                counts = dict.fromkeys(("measured", "reused", "failed", "invalid"), 0)
                operation.finish("max_measurements", {**counts, "requested": index})
            _pair(operation, rng, point("granite-8b", 1000 * number + index, 1), donor)
        operations.append(operation.operation_id)
    return history, operations


@pytest.mark.parametrize("seed", range(6))
def test_the_store_sums_up_the_same_progress_as_the_rows_give(store_client, seed) -> None:
    history, operations = _random_history(seed)
    Projection(store_client, "projector").write(history.read())
    by_rows = StoreViews(store_client, progress_rows_limit=ROWS)
    summed = StoreViews(store_client, progress_rows_limit=SUMMED)
    for operation_id in operations:
        expected = by_rows.operation(operation_id)
        assert summed.operation(operation_id) == expected, operation_id
    listed = {p.operation_id: p for p in summed.operations()}
    assert all(listed[o] == by_rows.operation(o) for o in operations if listed[o].ended_at is None)


def test_random_histories_cover_every_count_and_a_best_either_way(store_client) -> None:
    """The comparison above is not empty: its operations have every kind of count, ended and
    running ones, and bests to maximise and to minimise."""
    history, operations = _random_history(0)
    Projection(store_client, "projector").write(history.read())
    progress = [StoreViews(store_client).operation(o) for o in operations]
    for count in ("measured", "reused", "failed", "invalid", "in_flight", "cancelled"):
        assert any(getattr(p.counts, count) > 0 for p in progress), count
    directions = {p.best.direction for p in progress if p.best is not None}
    assert directions == {"max", "min"}
    assert any(p.ended_at is not None for p in progress)
    assert any(p.ended_at is None for p in progress)


@pytest.mark.parametrize("limit", [ROWS, SUMMED])
def test_one_operation_counts_and_best_either_way(store_client, story, limit) -> None:
    Projection(store_client, "projector").write(story.history.read())
    progress = StoreViews(store_client, progress_rows_limit=limit).operation("op-a")
    assert (progress.done, progress.total, progress.counts.failed) == (4, 6, 1)
    assert progress.best is not None
    assert progress.best.entity_values == story.best
    assert progress.best.value == 3000.5


def test_the_earliest_of_equal_bests_is_the_best(store_client) -> None:
    history = History()
    history.actuator("w0")
    space = history.register(space_spec((1, 2, 4, 8)))
    objective = Objective(property="train_tokens_per_second", direction="max")
    operation = history.start(space, "op-ties", number_entities=9, objective=objective)
    for batch in (3, 1, 2):
        operation.measure(point("llama-7b", batch, 1), tps=2000.0)
    Projection(store_client, "projector").write(history.read())
    for limit in (ROWS, SUMMED):
        best = StoreViews(store_client, progress_rows_limit=limit).operation("op-ties").best
        assert best is not None
        assert best.entity_values == point("llama-7b", 3, 1), limit


def test_a_pair_completed_twice_counts_and_names_its_best_by_its_first_result(store_client):
    """The explorer keeps a pair's first result: the view counted the pair valid when either
    result was, and took the best from both (a best the explorer never reported, until the
    operation's end replaced it)."""
    history = History()
    history.actuator("w0")
    space = history.register(space_spec((1, 2, 4, 8)))
    objective = Objective(property="train_tokens_per_second", direction="max")
    operation = history.start(space, "op-twice", number_entities=9, objective=objective)
    operation.measure(point("llama-7b", 1, 1), tps=2000.0)
    values = point("llama-7b", 2, 1)
    first = operation.request(values)
    operation.fail(first, "node lost", retryable=True)
    again = operation.request(values, attempt=2)
    operation.complete(first, invalid="CUDA out of memory")
    operation.complete(again, {"train_tokens_per_second": 9000.0, "peak_gpu_memory_mib": 1})
    Projection(store_client, "projector").write(history.read())

    for limit in (ROWS, SUMMED):
        progress = StoreViews(store_client, progress_rows_limit=limit).operation("op-twice")
        assert (progress.counts.measured, progress.counts.invalid) == (2, 1), limit
        assert progress.best is not None
        assert progress.best.value == 2000.0, limit


def test_a_failure_stamped_before_its_request_by_a_clock_behind_ends_the_pair(store_client):
    """A worker's clock behind the sampler's stamps its answer before the request: read by
    time, the request was the pair's latest row, and a pair failed for good stayed in flight
    (the explorer counts it failed)."""
    history = History()
    history.actuator("w0")
    space = history.register(space_spec((1, 2, 4, 8)))
    operation = history.start(space, "op-skew", number_entities=9, max_retries=2)
    operation.measure(point("llama-7b", 1, 1), tps=2000.0)
    request = operation.request(point("llama-7b", 2, 1))
    history.now -= timedelta(seconds=3)  # the worker's clock
    operation.fail(request, "no such image", retryable=False)
    Projection(store_client, "projector").write(history.read())

    for limit in (ROWS, SUMMED):
        counts = StoreViews(store_client, progress_rows_limit=limit).operation("op-skew").counts
        assert (counts.failed, counts.in_flight) == (1, 0), limit


def test_a_whole_number_beyond_64_bits_is_no_best_either_way(store_client):
    """The store's JSON reads 2^64 as text, so the summed-up progress left it out, where the
    rows' progress read it as a number and named it the best."""
    history = History()
    history.actuator("w0")
    space = history.register(space_spec((1, 2, 4, 8)))
    objective = Objective(property="train_tokens_per_second", direction="max")
    operation = history.start(space, "op-big", number_entities=9, objective=objective)
    operation.measure(point("llama-7b", 1, 1), tps=2000.0)
    operation.measure(point("llama-7b", 2, 1), tps=2**64)
    Projection(store_client, "projector").write(history.read())

    for limit in (ROWS, SUMMED):
        best = StoreViews(store_client, progress_rows_limit=limit).operation("op-big").best
        assert best is not None
        assert best.entity_values == point("llama-7b", 1, 1), limit
