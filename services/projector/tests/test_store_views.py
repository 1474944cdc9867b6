"""The projection in a real store (chDB, and a ClickHouse server where one answers)."""

from __future__ import annotations

import gc

import pytest

from discospace.core import Entity
from discospace.projector import reading
from discospace.projector.errors import NotKnownError, ViewError
from discospace.projector.reading import StoreViews
from discospace.projector.writing import Projection, ReadPast, insert_rows
from discospace.store.events import count_events, read_offsets

from .conftest import point

pytestmark = pytest.mark.integration

CONSUMER = "projector"
HOSTILE = ["x'; DROP TABLE measurements; --", "space {space:String}", "é 漢字 🙂\n"]


@pytest.fixture
def views(store_client, story) -> StoreViews:
    Projection(store_client, CONSUMER).write(story.history.read())
    return StoreViews(store_client)


def _count(client, table: str) -> int:
    return int(client.command(f"SELECT count() FROM {table} FINAL"))


def test_a_space_view_from_the_store_has_every_view_of_the_space(views, story) -> None:
    table = views.entities(story.space_a.space_id)
    assert len(table) == 16
    assert table["status"].value_counts().to_dict() == {
        "unsampled": 9,
        "unmeasured": 4,
        "measured": 2,
        "elsewhere": 1,
    }
    measured = table[table["status"] == "measured"]
    assert sorted(measured["train_tokens_per_second"]) == [1000.0, 3000.5]


def test_a_large_space_finds_results_elsewhere_by_membership_instead_of_ids(
    store_client, story
) -> None:
    Projection(store_client, CONSUMER).write(story.history.read())
    by_membership = StoreViews(store_client, id_lookup_limit=0)
    by_ids = StoreViews(store_client)
    space = story.space_a.space_id
    for views in (by_membership, by_ids):
        elsewhere = views.entities(space, ("elsewhere",))
        assert list(elsewhere["entity_id"]) == [Entity.of(story.measured_in_b).id]
    assert by_membership.entities(space).equals(by_ids.entities(space))


def test_another_spaces_entity_of_text_values_is_not_found_elsewhere_by_membership(
    store_client,
) -> None:
    """A space listing batch sizes as text measured "4": another entity (another id) than
    this space's number 4. By membership (large spaces) it was shown as this space's, and the
    space's own entity 4, counted as sampled, was in no view."""
    from discospace.core import PropertySpec

    from .conftest import History, space_spec

    history = History()
    history.actuator("w0")
    numbers = history.register(
        space_spec(entity_space=(PropertySpec(name="batch_size", values=(4, 8)),))
    )
    texts = history.register(
        space_spec(entity_space=(PropertySpec(name="batch_size", values=("4",)),))
    )
    history.start(numbers, "op-a", number_entities=1).measure({"batch_size": 8}, tps=1.0)
    history.start(texts, "op-b", number_entities=1).measure({"batch_size": "4"}, tps=2.0)
    Projection(store_client, CONSUMER).write(history.read())
    by_ids = StoreViews(store_client).entities(numbers.space_id)
    by_membership = StoreViews(store_client, id_lookup_limit=0).entities(numbers.space_id)
    assert by_membership[["batch_size", "status"]].to_dict("records") == [
        {"batch_size": 8, "status": "measured"},
        {"batch_size": 4, "status": "unsampled"},
    ]
    assert by_membership.equals(by_ids)


def test_a_failure_the_operation_will_not_retry_is_not_said_to_be_retried(store_client) -> None:
    """The reason said "may be retried" for every retryable failure: one on the operation's
    last attempt (its counts say failed for good), and one of an operation that has ended."""
    from .conftest import History, space_spec

    history = History()
    history.actuator("w0")
    space = history.register(space_spec())
    last = history.start(space, "op-last", number_entities=1, max_retries=1)
    values = point("llama-7b", 1, 1)
    last.fail(last.request(values), "node lost", retryable=True)
    Projection(store_client, CONSUMER).write(history.read())
    reasons = StoreViews(store_client).entities(space.space_id, ("unmeasured",))["reason"]
    assert reasons.tolist() == ["failed (attempt 1, may be retried): node lost"]

    last.fail(last.request(values, attempt=2), "node lost", retryable=True)
    ended = history.start(space, "op-ended", number_entities=1, max_retries=5)
    ended.fail(ended.request(point("llama-7b", 2, 1)), "node lost", retryable=True)
    counts = {"requested": 1, "measured": 0, "reused": 0, "failed": 1, "invalid": 0}
    ended.finish("requested_entities_measured", counts)
    Projection(store_client, CONSUMER).write(history.read())
    reasons = StoreViews(store_client).entities(space.space_id, ("unmeasured",))["reason"]
    assert reasons.tolist() == ["failed (attempt 2): node lost", "failed (attempt 1): node lost"]


def test_the_store_serves_each_view_alone(views, story) -> None:
    space = story.space_a.space_id
    elsewhere = views.entities(space, ("elsewhere",))
    assert elsewhere[["model_name", "batch_size", "number_gpus"]].to_dict("records") == [
        story.measured_in_b
    ]
    unmeasured = views.entities(space, ("unmeasured",))
    assert "invalid: CUDA out of memory" in set(unmeasured["reason"])
    assert len(views.entities(space, ("measured",))) == 2


def test_a_replayed_batch_writes_nothing_even_after_a_restart(store_client, story) -> None:
    batch = story.history.read()
    first = Projection(store_client, CONSUMER)
    first.write(batch)
    before = {t: _count(store_client, t) for t in ("measurements", "results", "spaces")}
    assert first.write(batch) == 0
    assert Projection(store_client, CONSUMER).write(batch) == 0
    assert {t: _count(store_client, t) for t in before} == before
    assert count_events(store_client) == len(batch)
    assert read_offsets(store_client, CONSUMER) == {("test.events", 0): len(batch)}


def test_a_record_set_aside_at_the_end_of_a_partition_counts_as_read(store_client, story) -> None:
    """Offsets were recorded only through the events written: a dead-lettered record at a
    partition's end was read, and dead-lettered, again at every restart or rebalance."""
    batch = story.history.read()
    projection = Projection(store_client, CONSUMER)

    projection.write([*batch, ReadPast("test.events", 0, len(batch))])
    projection.write([ReadPast("test.other", 1, 7)])  # a partition holding only bad records

    assert read_offsets(store_client, CONSUMER) == {
        ("test.events", 0): len(batch) + 1,
        ("test.other", 1): 8,
    }
    assert count_events(store_client) == len(batch)
    assert Projection(store_client, CONSUMER).unseen([ReadPast("test.other", 1, 7)]) == []


def test_copies_written_past_the_offsets_still_read_once(views, store_client, story) -> None:
    insert_rows(store_client, story.events)
    table = views.entities(story.space_a.space_id)
    assert len(table) == 16
    assert views.operation("op-a").counts.requested == 6


def test_a_batch_read_partly_before_writes_only_its_new_events(store_client, story) -> None:
    batch = story.history.read()
    projection = Projection(store_client, CONSUMER)
    assert projection.write(batch[:10]) == 10
    assert projection.write(batch[5:]) == len(batch) - 10
    assert count_events(store_client) == len(batch)


def test_the_list_of_spaces_says_which_are_registered_and_why_one_was_rejected(
    views, story
) -> None:
    spaces = {space.space_id: space for space in views.spaces()}
    space_a = spaces[story.space_a.space_id]
    assert (space_a.status, space_a.sample_store, space_a.size) == ("registered", "fms-test", 16)
    assert space_a.registered_at is not None
    assert space_a.submitted_at < space_a.registered_at
    rejected = spaces[story.rejected.space_id]
    assert (rejected.status, rejected.reason) == ("rejected", "no actuator offers it")
    assert (rejected.sample_store, rejected.size) == ("nowhere", 4)


def test_one_space_comes_with_its_spec_and_view_columns(views, story) -> None:
    detail = views.space(story.space_a.space_id)
    assert detail.spec == story.space_a.spec
    assert detail.constitutive_properties == ["model_name", "batch_size", "number_gpus"]
    assert detail.observed_properties == {
        "train_tokens_per_second": "finetune.train_tokens_per_second",
        "peak_gpu_memory_mib": "finetune.peak_gpu_memory_mib",
    }


@pytest.mark.parametrize("space_id", ["space-000000000000", *HOSTILE])
def test_an_unknown_space_is_named_in_one_sentence(views, store_client, space_id) -> None:
    with pytest.raises(NotKnownError, match="is not known to the projector"):
        views.space(space_id)
    with pytest.raises(NotKnownError):
        views.entities(space_id)
    assert _count(store_client, "measurements") > 0


def test_a_rejected_space_has_no_views(views, story) -> None:
    with pytest.raises(ViewError, match="is rejected, not registered"):
        views.entities(story.rejected.space_id)


def test_every_operation_is_listed_with_its_progress(views) -> None:
    operations = {op.operation_id: op for op in views.operations()}
    assert set(operations) == {"op-a", "op-b", "op-other"}
    assert operations["op-b"].status == "completed"
    assert operations["op-a"].counts.in_flight == 2
    assert operations["op-a"].best is not None


def test_an_ended_operation_is_shown_as_reported_in_the_list_and_on_its_own(
    store_client, story
) -> None:
    """One operation was computed from its results by time, the list showed the explorer's
    counts: results stamped in one order by two workers and read in the other made the two
    disagree on the counts and the best of one finished operation."""
    claimed = {"requested": 3, "measured": 1, "reused": 0, "failed": 0, "invalid": 0}
    story.op_a.finish("cancelled", claimed)
    Projection(store_client, CONSUMER).write(story.history.read())
    views = StoreViews(store_client)
    listed = {op.operation_id: op for op in views.operations()}["op-a"]
    assert (listed.status, listed.counts.requested, listed.counts.measured) == ("completed", 3, 1)
    alone = views.operation("op-a")
    assert alone == listed


def test_one_operation_shows_its_counts_and_best_so_far(views, story) -> None:
    progress = views.operation("op-a")
    assert (progress.space_id, progress.operator) == (story.space_a.space_id, "random_walk")
    assert (progress.done, progress.total, progress.counts.failed) == (4, 6, 1)
    assert progress.best is not None
    assert progress.best.entity_values == story.best


@pytest.mark.parametrize("operation_id", ["op-unknown", *HOSTILE])
def test_an_unknown_operation_is_named_in_one_sentence(views, operation_id) -> None:
    with pytest.raises(NotKnownError, match=r"operation .* is not known to the projector"):
        views.operation(operation_id)


def test_actuators_are_listed_per_pool_with_their_workers_and_catalog(views) -> None:
    (pool,) = views.actuators()
    assert (pool.actuator, pool.pool, pool.workers) == ("SFTTrainer", "a100", ["w0", "w1"])
    assert [e.experiment for e in pool.experiments] == ["finetune"]
    assert pool.gpu_model == "NVIDIA-A100-80GB-PCIe"


def test_an_ended_operation_keeps_what_it_received_before_its_end(store_client, story) -> None:
    """A result landing after the operation stopped is in the store, not in the operation."""
    story.op_a.finish(
        "max_measurements", {"requested": 6, "measured": 3, "reused": 0, "failed": 1, "invalid": 1}
    )
    story.op_a.measure(story.pending, tps=9999.0)
    Projection(store_client, CONSUMER).write(story.history.read())
    views = StoreViews(store_client)

    progress = views.operation("op-a")
    results = views.operation_results("op-a")

    assert (progress.counts.measured, progress.counts.cancelled, progress.done) == (3, 2, 4)
    assert [r.entity_values for r in results if r.is_valid] == story.valid_in_a


@pytest.mark.parametrize("batches", [1, 2], ids=["in one batch", "in a later batch"])
def test_an_answer_given_twice_keeps_its_first_copy(store_client, story, batches) -> None:
    """A request measured again (redelivered after a crash or a rebalance) is answered with the
    same event ids, its own time and values: the store keeps the copy the explorer counted, even
    when the other lands after the operation's end."""
    op = story.op_a
    answered = point("llama-7b", 1, 1)
    first = op.measure(answered, tps=5000.0)
    op.finish(
        "max_measurements", {"requested": 7, "measured": 4, "reused": 0, "failed": 1, "invalid": 1}
    )
    later = {**first.values, "train_tokens_per_second": 1.0}
    again = first.model_copy(update={"occurred_at": story.history.tick(), "values": later})
    story.history.add(again)
    batch = story.history.read()
    projection = Projection(store_client, CONSUMER)

    if batches == 1:
        assert projection.write(batch) == len(batch) - 1
    else:
        assert projection.write(batch[:-1]) == len(batch) - 1
        assert projection.write(batch[-1:]) == 0

    views = StoreViews(store_client)
    progress = views.operation("op-a")
    result = next(r for r in views.operation_results("op-a") if r.entity_values == answered)
    assert (result.occurred_at, result.values) == (first.occurred_at, first.values)
    assert (progress.counts.measured, progress.counts.cancelled) == (4, 2)
    assert count_events(store_client) == len(batch) - 1
    assert read_offsets(store_client, CONSUMER) == {("test.events", 0): len(batch)}


def test_every_view_reads_the_same_while_copies_of_replayed_events_are_not_merged_yet(
    store_client, story
) -> None:
    once = StoreViews(store_client)
    Projection(store_client, CONSUMER).write(story.history.read())
    space, operation = story.space_a.space_id, "op-a"
    before = (
        once.entities(space),
        once.operation(operation),
        once.operations(),
        once.operation_results(operation),
        once.spaces(),
        once.actuators(),
    )
    store_client.command("SYSTEM STOP MERGES")
    try:
        insert_rows(store_client, story.events)  # every row twice, as a replayed batch writes
        twice = StoreViews(store_client)
        assert _count(store_client, "measurements") * 2 == int(
            store_client.command("SELECT count() FROM measurements")
        )
        assert twice.entities(space).equals(before[0])
        assert twice.operation(operation) == before[1]
        assert twice.operations() == before[2]
        assert twice.operation_results(operation) == before[3]
        assert twice.spaces() == before[4]
        assert twice.actuators() == before[5]
    finally:
        store_client.command("SYSTEM START MERGES")


def test_an_operations_progress_reads_its_registered_space_once(store_client, story) -> None:
    Projection(store_client, CONSUMER).write(story.history.read())
    reads: list[str] = []

    class Counting:
        def query(self, sql: str, **kwargs: object) -> object:
            reads.append(sql.split(" FROM ")[1].split()[0])
            return store_client.query(sql, **kwargs)

    views = StoreViews(Counting())  # type: ignore[arg-type]
    first = views.operation("op-a")
    reads.clear()

    assert views.operation("op-a") == first
    assert reads == ["operations", "measurements"]


def test_the_space_view_reads_and_folds_its_rows_with_the_collector_paused(
    views, story, monkeypatch
) -> None:
    seen: list[bool] = []
    table = reading.entity_table

    def noting(*args, **kwargs):
        seen.append(gc.isenabled())
        return table(*args, **kwargs)

    monkeypatch.setattr(reading, "entity_table", noting)
    assert gc.isenabled()
    assert len(views.entities(story.space_a.space_id)) == 16
    assert seen == [False]
    assert gc.isenabled()


def test_an_entity_measured_by_two_operations_shows_the_value_the_store_keeps(
    store_client,
) -> None:
    """The earliest result, which the sampler's memo keeps and hands every later operation
    (the view showed the latest: another value than those operations were handed), whatever
    order the operations began in."""
    from .conftest import History, space_spec

    history = History()
    history.actuator()
    space = history.register(space_spec())
    first = history.start(space, "op-1", number_entities=2)
    second = history.start(space, "op-2", number_entities=2)
    entity = point("llama-7b", 1, 1)
    asked = first.request(entity)
    second.measure(entity, tps=7.0)  # earlier
    first.complete(asked, {"train_tokens_per_second": 5.0, "peak_gpu_memory_mib": 1})  # later
    Projection(store_client, CONSUMER).write(history.read())

    [row] = StoreViews(store_client).entities(space.space_id, ("measured",)).to_dict("records")
    assert row["train_tokens_per_second"] == 7.0


def test_a_retry_completing_before_its_redelivered_first_attempt_is_the_value_shown(
    store_client,
) -> None:
    """Attempt 1 failed (retryably), attempt 2 completed, then attempt 1's redelivered request
    completed too, later: the view ordered the rows attempt by attempt and showed attempt 1's
    later value, where the store, the operation's best and every other space keep the
    earliest."""
    from .conftest import History, space_spec

    history = History()
    history.actuator()
    space = history.register(space_spec())
    operation = history.start(space, "op", number_entities=1, max_retries=3)
    entity = point("llama-7b", 1, 1)
    first = operation.request(entity)
    operation.fail(first, "worker lost", retryable=True)
    operation.complete(
        operation.request(entity, attempt=2),
        {"train_tokens_per_second": 2000.0, "peak_gpu_memory_mib": 1},
    )
    operation.complete(first, {"train_tokens_per_second": 9999.0, "peak_gpu_memory_mib": 1})
    Projection(store_client, CONSUMER).write(history.read())

    [row] = StoreViews(store_client).entities(space.space_id, ("measured",)).to_dict("records")
    assert (row["train_tokens_per_second"], row["reason"]) == (2000.0, "")


def test_a_pair_measured_twice_elsewhere_shows_the_result_the_sampler_reuses(store_client):
    """Two other spaces of the store measured a pair (1000, then 9000 tokens/s) and this
    space's operation reused the first, as the sampler's memo does: the row showed the latest,
    another value than the operation was handed."""
    from .conftest import History, space_spec

    history = History()
    history.actuator("w0")
    here, first_space, second_space = (
        history.register(space_spec(sizes)) for sizes in ((1, 2), (1, 4), (1, 8))
    )
    values = point("llama-7b", 1, 1)
    first = history.start(first_space, "op-first", number_entities=1).measure(values, tps=1000.0)
    history.start(second_space, "op-second", number_entities=1).measure(values, tps=9000.0)
    Projection(store_client, "projector").write(history.read())
    views = StoreViews(store_client)
    table = views.entities(here.space_id, ("elsewhere",))
    assert table["train_tokens_per_second"].tolist() == [1000.0]  # the earliest, as reused

    history.start(here, "op-here", number_entities=1).reuse(first)
    Projection(store_client, "projector").write(history.read())
    table = StoreViews(store_client).entities(here.space_id, ("elsewhere",))
    assert table["train_tokens_per_second"].tolist() == [1000.0]


@pytest.mark.parametrize("requested_first", ["op-a", "op-b"])
def test_two_results_of_a_pair_in_one_millisecond_show_the_one_the_memo_keeps(
    store_client, requested_first
) -> None:
    """Tied in time, the sampler's memo and the explorer keep the smaller event id: the view
    kept the result of the operation that had requested first."""
    from datetime import timedelta

    from .conftest import History, space_spec

    history = History()
    history.actuator("w0")
    space = history.register(space_spec((1, 2)))
    entity = point("llama-7b", 1, 1)
    operations = {op: history.start(space, op, number_entities=1) for op in ("op-a", "op-b")}
    order = [requested_first, *(op for op in operations if op != requested_first)]
    asked = {op: operations[op].request(entity) for op in order}
    at = history.now + timedelta(seconds=10)
    completed = []
    for tps, op in enumerate(order, start=1):
        history.now = at
        values = {"train_tokens_per_second": float(tps), "peak_gpu_memory_mib": 1}
        completed.append(operations[op].complete(asked[op], values))
    assert completed[0].occurred_at == completed[1].occurred_at
    kept = min(completed, key=lambda event: event.event_id)
    Projection(store_client, "projector").write(history.read())

    [row] = StoreViews(store_client).entities(space.space_id, ("measured",)).to_dict("records")
    assert row["train_tokens_per_second"] == kept.values["train_tokens_per_second"]
