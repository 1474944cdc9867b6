"""Hand-made event histories for the projector: spaces, an actuator, operations, measurements.

`History` builds events the way the services would (deterministic caused ids, one clock that
ticks a second per event); `story` is the history most tests read: two overlapping spaces on one
sample store, a rejected submission, and operations with every kind of measurement outcome.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from discospace.core import (
    DiscoverySpace,
    Entity,
    ExperimentRef,
    ExperimentSpec,
    PropertySpec,
    SpaceSpec,
)
from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    Objective,
    OperationCancelRequested,
    OperationCompleted,
    OperationCounts,
    OperationFailed,
    OperationParameters,
    OperationRequested,
    OperationStarted,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
    SamplesRequested,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    measurement_request_id,
)

if TYPE_CHECKING:
    from discospace.store.schema import Row

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
STORE = "fms-test"
FINETUNE = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune",
    target_properties=("train_tokens_per_second", "peak_gpu_memory_mib"),
    required_properties=("model_name", "batch_size", "number_gpus"),
    optional_properties={"max_steps": 5},
)
FINETUNE_REF = ExperimentRef(actuator="SFTTrainer", experiment="finetune")


def space_spec(
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8), store: str = STORE, **extra: Any
) -> SpaceSpec:
    """model_name x batch_size x number_gpus, measured by `finetune` (2 x 4 x 2 = 16 entities)."""
    properties = (
        PropertySpec(name="model_name", values=("llama-7b", "granite-8b")),
        PropertySpec(name="batch_size", values=batch_sizes),
        PropertySpec(name="number_gpus", values=(1, 2)),
    )
    return SpaceSpec(
        sample_store=store,
        entity_space=extra.get("entity_space", properties),
        measurement_space=extra.get("measurement_space", (FINETUNE_REF,)),
    )


def entity_id_of(values: dict[str, Any]) -> str:
    return Entity.of(values).id


@dataclass
class History:
    """Events in the order they happened, with a clock ticking one second per event."""

    events: list[Event] = field(default_factory=list)
    now: datetime = T0
    counter: int = 0

    def add(self, event: Event) -> Any:
        self.events.append(event)
        return event

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def folded(self) -> Folded:
        """The projection rows of every event so far."""
        return fold_events(self.events)

    def read(self, topic: str = "test.events", partition: int = 0, first: int = 0) -> list[Any]:
        """The events as read from one partition, from offset `first` on."""
        from discospace.projector.writing import ReadEvent
        from discospace.store.events import EventRecord

        return [
            ReadEvent(
                event, EventRecord.of(event, topic=topic, partition=partition, offset=first + i)
            )
            for i, event in enumerate(self.events)
        ]

    def fresh_id(self, kind: str) -> str:
        self.counter += 1
        return f"{kind}-{self.counter:04d}"

    # -- spaces and actuators ----------------------------------------------------------------

    def actuator(self, worker: str = "w0", pool: str = "a100") -> ActuatorRegistered:
        return self.add(
            ActuatorRegistered(
                event_id=self.fresh_id("actuator"),
                occurred_at=self.tick(),
                actuator="SFTTrainer",
                pool=pool,
                experiments=(FINETUNE,),
                gpu_model="NVIDIA-A100-80GB-PCIe",
                worker_id=worker,
            )
        )

    def submit(self, spec: SpaceSpec) -> SpaceSubmitted:
        return self.add(
            SpaceSubmitted(
                event_id=self.fresh_id("submitted"),
                occurred_at=self.tick(),
                submission_id=self.fresh_id("sub"),
                spec=spec,
                submitted_by="alice",
            )
        )

    def register(
        self, spec: SpaceSpec, experiments: tuple[ExperimentSpec, ...] = (FINETUNE,)
    ) -> SpaceRegistered:
        submitted = self.submit(spec)
        space_id = DiscoverySpace.from_spec(spec).id
        return self.add(
            SpaceRegistered(
                event_id=f"registered-{space_id}",
                occurred_at=self.tick(),
                submission_id=submitted.submission_id,
                space_id=space_id,
                spec=spec,
                experiments=experiments,
            )
        )

    def reject(self, spec: SpaceSpec, reason: str) -> SpaceRejected:
        submitted = self.submit(spec)
        return self.add(
            SpaceRejected.caused_by(
                submitted,
                self.tick(),
                submission_id=submitted.submission_id,
                space_id=DiscoverySpace.from_spec(spec).id,
                reason=reason,
            )
        )

    # -- operations --------------------------------------------------------------------------

    def start(
        self,
        space: SpaceRegistered,
        operation_id: str,
        operator: str = "random_walk",
        parent: str | None = None,
        **parameters: Any,
    ) -> Operation:
        params = OperationParameters(seed=7, **parameters)
        requested = self.add(
            OperationRequested(
                event_id=self.fresh_id("op-requested"),
                occurred_at=self.tick(),
                operation_id=operation_id,
                space_id=space.space_id,
                operator=operator,
                parameters=params,
                requested_by=f"pipeline {parent}" if parent else "alice",
                parent_operation_id=parent,
            )
        )
        started = self.add(
            OperationStarted.caused_by(
                requested,
                self.tick(),
                operation_id=operation_id,
                space_id=space.space_id,
                operator=operator,
                parameters=params,
            )
        )
        return Operation(self, space, started)

    # -- pipelines ---------------------------------------------------------------------------

    def job_started(
        self,
        pipeline: Operation,
        stage: str,
        job: str,
        child: str | None = None,
        space_id: str | None = None,
        trial: int | None = None,
    ) -> PipelineJobStarted:
        return self.add(
            PipelineJobStarted(
                event_id=self.fresh_id("job-started"),
                occurred_at=self.tick(),
                causation_id=pipeline.started.event_id,
                operation_id=pipeline.operation_id,
                job=job,
                stage=stage,
                trial=trial,
                child_operation_id=child,
                space_id=space_id,
            )
        )

    def job_completed(
        self,
        pipeline: Operation,
        stage: str,
        job: str,
        result: dict[str, Any],
        trial: int | None = None,
    ) -> PipelineJobCompleted:
        return self.add(
            PipelineJobCompleted(
                event_id=self.fresh_id("job-completed"),
                occurred_at=self.tick(),
                causation_id=pipeline.started.event_id,
                operation_id=pipeline.operation_id,
                job=job,
                stage=stage,
                trial=trial,
                result=result,
            )
        )

    def job_failed(
        self,
        pipeline: Operation,
        stage: str,
        job: str,
        reason: str,
        optional: bool = False,
        trial: int | None = None,
    ) -> PipelineJobFailed:
        return self.add(
            PipelineJobFailed(
                event_id=self.fresh_id("job-failed"),
                occurred_at=self.tick(),
                causation_id=pipeline.started.event_id,
                operation_id=pipeline.operation_id,
                job=job,
                stage=stage,
                trial=trial,
                reason=reason,
                optional=optional,
            )
        )

    def fail_operation(self, operation: Operation, reason: str, **counts: int) -> OperationFailed:
        return self.add(
            OperationFailed(
                event_id=self.fresh_id("op-failed"),
                occurred_at=self.tick(),
                causation_id=operation.started.event_id,
                operation_id=operation.operation_id,
                reason=reason,
                counts=OperationCounts(**counts) if counts else None,
            )
        )


@dataclass
class Operation:
    """One operation of a `History`: measurement events caused by its samples requests."""

    history: History
    space: SpaceRegistered
    started: OperationStarted
    requests: int = 0

    @property
    def operation_id(self) -> str:
        return self.started.operation_id

    def _subject(self, values: dict[str, Any]) -> dict[str, Any]:
        experiment_id = "finetune"
        entity_id = entity_id_of(values)
        return {
            "operation_id": self.operation_id,
            "request_id": measurement_request_id(self.operation_id, entity_id, experiment_id),
            "space_id": self.space.space_id,
            "sample_store": self.space.spec.sample_store,
            "entity_id": entity_id,
            "entity_values": values,
            "experiment_id": experiment_id,
        }

    def request(self, values: dict[str, Any], attempt: int = 1) -> MeasurementRequested:
        cause = self.history.add(
            SamplesRequested.caused_by(
                self.started,
                self.history.tick(),
                index=self.requests,
                operation_id=self.operation_id,
                space_id=self.space.space_id,
                request_index=self.requests,
                points=(values,),
                experiments=(FINETUNE_REF,),
                attempt=attempt,
            )
        )
        self.requests += 1
        return self.history.add(
            MeasurementRequested.caused_by(
                cause,
                self.history.tick(),
                **self._subject(values),
                experiment=FINETUNE_REF,
                pool="a100",
                attempt=attempt,
            )
        )

    def begin(self, request: MeasurementRequested) -> MeasurementStarted:
        return self.history.add(
            MeasurementStarted.caused_by(
                request,
                self.history.tick(),
                **self._subject(request.entity_values),
                worker_id="w0",
                attempt=request.attempt,
            )
        )

    def complete(
        self,
        request: MeasurementRequested,
        values: dict[str, Any] | None = None,
        invalid: str | None = None,
    ) -> MeasurementCompleted:
        self.begin(request)
        return self.history.add(
            MeasurementCompleted.caused_by(
                request,
                self.history.tick(),
                **self._subject(request.entity_values),
                worker_id="w0",
                attempt=request.attempt,
                values=values or {},
                is_valid=invalid is None,
                invalid_reason=invalid,
                uncertainty={},
                duration_seconds=12.5,
            )
        )

    def measure(self, values: dict[str, Any], tps: float, memory: int = 60000) -> Any:
        request = self.request(values)
        measured = {"train_tokens_per_second": tps, "peak_gpu_memory_mib": memory}
        return self.complete(request, measured)

    def fail(
        self, request: MeasurementRequested, reason: str, retryable: bool
    ) -> MeasurementFailed:
        self.begin(request)
        return self.history.add(
            MeasurementFailed.caused_by(
                request,
                self.history.tick(),
                **self._subject(request.entity_values),
                worker_id="w0",
                attempt=request.attempt,
                reason=reason,
                retryable=retryable,
            )
        )

    def reuse(self, completed: MeasurementCompleted) -> MeasurementReused:
        return self.history.add(
            MeasurementReused(
                event_id=self.history.fresh_id("reused"),
                occurred_at=self.history.tick(),
                causation_id=self.started.event_id,
                **self._subject(completed.entity_values),
                reused_event_id=completed.event_id,
                values=completed.values,
                is_valid=completed.is_valid,
                invalid_reason=completed.invalid_reason,
            )
        )

    def cancel(self) -> OperationCancelRequested:
        return self.history.add(
            OperationCancelRequested(
                event_id=self.history.fresh_id("cancel"),
                occurred_at=self.history.tick(),
                operation_id=self.operation_id,
                requested_by="alice",
                reason="enough",
            )
        )

    def finish(self, stop_reason: str, counts: dict[str, int], **best: Any) -> OperationCompleted:
        return self.history.add(
            OperationCompleted.caused_by(
                self.started,
                self.history.tick(),
                operation_id=self.operation_id,
                space_id=self.space.space_id,
                stop_reason=stop_reason,
                stop_detail=f"stopped: {stop_reason}",
                counts=OperationCounts(**counts),
                **best,
            )
        )


def point(model: str, batch: int, gpus: int) -> dict[str, Any]:
    return {"model_name": model, "batch_size": batch, "number_gpus": gpus}


@dataclass
class Story:
    """Two overlapping spaces on one store, a rejection, and operations with every outcome.

    Space A (batch 1, 2, 4, 8) through op-a: two valid, one invalid (out of memory), one failed
    for good, one failed then retried (in flight), one only requested. Space B (batch 4, 8, 16)
    through op-b: measures a point of A that A never sampled, reuses A's first result (batch 4,
    in both spaces), and measures a point outside A. Another store measures a point of A: never
    shown in A. Of A's 16 entities, 6 are sampled, 1 is measured elsewhere, 9 never sampled.
    """

    history: History
    space_a: SpaceRegistered
    space_b: SpaceRegistered
    rejected: SpaceRejected
    op_a: Operation
    op_b: Operation
    best: dict[str, Any]
    invalid: dict[str, Any]
    failed: dict[str, Any]
    retrying: dict[str, Any]
    pending: dict[str, Any]
    measured_in_b: dict[str, Any]
    outside_a: dict[str, Any]
    other_store: dict[str, Any]
    valid_in_a: list[dict[str, Any]]

    @property
    def events(self) -> list[Event]:
        return self.history.events


def build_story() -> Story:
    history = History()
    history.actuator("w0")
    history.actuator("w1")
    space_a = history.register(space_spec((1, 2, 4, 8)))
    space_b = history.register(space_spec((4, 8, 16)))
    rejected = history.reject(space_spec((32,), store="nowhere"), "no actuator offers it")
    objective = Objective(property="train_tokens_per_second", direction="max")
    op_a = history.start(space_a, "op-a", number_entities=6, objective=objective)
    first = op_a.measure(point("llama-7b", 4, 1), tps=1000.0)
    best = point("llama-7b", 2, 2)
    op_a.measure(best, tps=3000.5)
    invalid = point("granite-8b", 8, 1)
    op_a.complete(op_a.request(invalid), invalid="CUDA out of memory")
    failed = point("granite-8b", 1, 1)
    op_a.fail(op_a.request(failed), "the image does not exist", retryable=False)
    retrying = point("granite-8b", 2, 1)
    op_a.fail(op_a.request(retrying), "node lost", retryable=True)
    op_a.request(retrying, attempt=2)
    pending = point("granite-8b", 4, 2)
    op_a.request(pending)
    op_b = history.start(space_b, "op-b", number_entities=3)
    measured_in_b = point("llama-7b", 4, 2)
    op_b.measure(measured_in_b, tps=2000.0)
    op_b.reuse(first)
    outside_a = point("llama-7b", 16, 1)
    op_b.measure(outside_a, tps=2500.0)
    op_b.finish(
        "requested_entities_measured",
        {"requested": 3, "measured": 2, "reused": 1, "failed": 0, "invalid": 0},
    )
    other_store = point("granite-8b", 8, 2)
    other = history.register(space_spec((8,), store="another-store"))
    history.start(other, "op-other", number_entities=1).measure(other_store, tps=10.0)
    return Story(
        history=history,
        space_a=space_a,
        space_b=space_b,
        rejected=rejected,
        op_a=op_a,
        op_b=op_b,
        best=best,
        invalid=invalid,
        failed=failed,
        retrying=retrying,
        pending=pending,
        measured_in_b=measured_in_b,
        outside_a=outside_a,
        other_store=other_store,
        valid_in_a=[point("llama-7b", 4, 1), best],
    )


@pytest.fixture
def history() -> History:
    return History()


@pytest.fixture
def story() -> Story:
    return build_story()


@dataclass
class Folded:
    """The projection rows of a history, as the store would return them (no ClickHouse)."""

    rows: dict[str, list[Row]]

    def of(self, table: str) -> list[Any]:
        from discospace.projector.queries import ROW_TYPES

        row_type = next(t for declared, t in ROW_TYPES.items() if declared.name == table)
        return [row_type(**row.values) for row in self.rows.get(table, [])]


def fold_events(events: list[Event]) -> Folded:
    from discospace.projector.fold import rows_of

    rows: dict[str, list[Row]] = {}
    for event in events:
        for row in rows_of(event):
            rows.setdefault(row.table.name, []).append(row)
    return Folded(rows)


@pytest.fixture
def folded(story: Story) -> Folded:
    return fold_events(story.events)


@pytest.fixture
def make_point() -> Any:
    return point


@pytest.fixture
def make_spec() -> Any:
    return space_spec


@pytest.fixture
def fresh_store(chdb_data_dir: Any) -> Any:
    """A factory of settings naming fresh chDB databases (dropped after the test)."""
    import uuid

    from discospace.store.client import StoreSettings, connect

    made: list[StoreSettings] = []

    def make() -> StoreSettings:
        settings = StoreSettings(
            url=None, data_dir=chdb_data_dir, database=f"test_{uuid.uuid4().hex[:12]}"
        )
        made.append(settings)
        return settings

    yield make
    client = connect(StoreSettings(url=None, data_dir=chdb_data_dir, database="default"))
    try:
        for settings in made:
            client.command(
                "DROP DATABASE IF EXISTS {database:Identifier}",
                parameters={"database": settings.database},
            )
    finally:
        client.close()


# -- pipelines -------------------------------------------------------------------------------

TPS = Objective(property="train_tokens_per_second", direction="max")
PIPELINE_OPTIONS: dict[str, Any] = {
    "stages": {
        "probe": [
            {
                "name": "probe_walk",
                "kind": "operation",
                "operator": "random_walk",
                "parameters": {"number_entities": 2},
            }
        ],
        "refine": [
            {"name": "narrow", "kind": "hook", "hook": "k_sigma", "args": {"job": "probe_walk"}}
        ],
        "execute": [
            {
                "name": "search",
                "kind": "operation",
                "space": "${narrow.space_id}",
                "operator": "random_walk",
                "parameters": {"number_entities": 2},
            }
        ],
        "evaluate": [
            {
                "name": "recheck",
                "kind": "measure",
                "optional": True,
                "entities": "${search.entities}",
                "experiment": {
                    "actuator": "SFTTrainer",
                    "experiment": "finetune",
                    "parameterization": {"max_steps": 50},
                },
            }
        ],
    }
}


@dataclass
class PipelineStory:
    """A pipeline `op-p` on space A: its probe (`op-p-probe_walk`, 2 measured) completed, its
    k_sigma hook narrowed A to space B, its search on B (`op-p-search`) measured 1 of 2 and
    waits for the other; the evaluate job has not started. `finish()` ends it: the search
    completes, the optional recheck fails, and the pipeline completes."""

    history: History
    space_a: SpaceRegistered
    space_b: SpaceRegistered
    pipeline: Operation
    probe: Operation
    search: Operation
    waiting: MeasurementRequested

    def finish(self) -> OperationCompleted:
        history, pipe = self.history, self.pipeline
        self.search.complete(
            self.waiting, {"train_tokens_per_second": 1800.0, "peak_gpu_memory_mib": 50000}
        )
        counts = {"requested": 2, "measured": 2, "reused": 0, "failed": 0, "invalid": 0}
        self.search.finish("requested_entities_measured", counts)
        history.job_completed(pipe, "execute", "search", {"operation_id": "op-p-search"})
        history.job_started(pipe, "evaluate", "recheck", "op-p-recheck", self.space_b.space_id)
        recheck = history.start(self.space_b, "op-p-recheck", "points", parent="op-p")
        history.fail_operation(recheck, "no actuator runs max_steps 50")
        history.job_failed(
            pipe,
            "evaluate",
            "recheck",
            "its child operation 'op-p-recheck' failed: no actuator runs max_steps 50",
            optional=True,
        )
        total = {"requested": 4, "measured": 4, "reused": 0, "failed": 0, "invalid": 0}
        return pipe.finish(
            "operator_finished",
            total,
            best_entity_id=entity_id_of(point("llama-7b", 4, 1)),
            best_entity_values=point("llama-7b", 4, 1),
            best_values={"train_tokens_per_second": 2500.0, "peak_gpu_memory_mib": 60000},
        )


def build_pipeline_story() -> PipelineStory:
    history = History()
    history.actuator("w0")
    space_a = history.register(space_spec((1, 2, 4, 8)))
    space_b = history.register(space_spec((2, 4)))
    pipe = history.start(
        space_a, "op-p", "pipeline", number_entities=1, objective=TPS, options=PIPELINE_OPTIONS
    )
    history.job_started(pipe, "probe", "probe_walk", "op-p-probe_walk", space_a.space_id)
    probe = history.start(space_a, "op-p-probe_walk", parent="op-p", number_entities=2)
    probe.measure(point("llama-7b", 1, 1), tps=1000.0)
    probe.measure(point("llama-7b", 2, 1), tps=1500.0)
    counts = {"requested": 2, "measured": 2, "reused": 0, "failed": 0, "invalid": 0}
    probe.finish("requested_entities_measured", counts)
    history.job_completed(pipe, "probe", "probe_walk", {"operation_id": "op-p-probe_walk"})
    history.job_started(pipe, "refine", "narrow", space_id=space_a.space_id)
    narrowed = {"narrowed": {"batch_size": [2, 4]}, "space_id": space_b.space_id}
    history.job_completed(pipe, "refine", "narrow", narrowed)
    history.job_started(pipe, "execute", "search", "op-p-search", space_b.space_id)
    search = history.start(space_b, "op-p-search", parent="op-p", number_entities=2, objective=TPS)
    search.measure(point("llama-7b", 4, 1), tps=2500.0)
    waiting = search.request(point("granite-8b", 2, 1))
    return PipelineStory(history, space_a, space_b, pipe, probe, search, waiting)


@pytest.fixture
def pipeline_story() -> PipelineStory:
    return build_pipeline_story()


@pytest.fixture
def pipeline_options() -> dict[str, Any]:
    """The options (stages) of the pipelines of `PipelineStory`."""
    return copy.deepcopy(PIPELINE_OPTIONS)
