"""One history of results, read by the explorer and by the projector: the same answers.

The space measures `tps` with two experiments, `bench` (declared first) and `profile`. The
history has an entity whose best `tps` comes from `profile` (900) while `bench` gives another
entity the best (200), an invalid result, a retried measurement that then succeeds, one that
fails until its retries are spent, one that cannot be retried, and a result reused from the
sample store. The explorer's decide function runs on it (its decisions are part of the
history), and the projector's progress view reads the same events as its rows: both must name
the same best entity, the same counts and the same Pareto front. No broker is needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from discospace.cli.plot import front_of, objectives_of, sources_of
from discospace.client import OperationProgress
from discospace.core import (
    DiscoverySpace,
    Entity,
    ExperimentRef,
    ExperimentSpec,
    Objective,
    PropertySpec,
    SpaceSpec,
    canonical_json,
    pareto_front,
)
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    OperationCompleted,
    OperationParameters,
    OperationRequested,
    OperationStarted,
    SamplesDrawn,
    SamplesRequested,
    SpaceRegistered,
    measurement_request_id,
)
from discospace.events.common import OperationEvent
from discospace.explorer.domain.decide import Engine, Timing
from discospace.explorer.domain.operation import OperationState, evolve
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.explorer.domain.state import ExplorerState, explore, go_live, tick
from discospace.explorer.operators.optuna_search.history import Source, told_points
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.projector.progress import observed_ids, operation_progress
from discospace.projector.queries import MeasurementRow, OperationRow
from discospace.projector.reading import operation_results
from discospace.projector.spaces import SpaceState

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
OPERATION = "op-one-rule"
BENCH = ExperimentSpec(
    actuator="Bench",
    experiment="bench",
    target_properties=("tps", "mem"),
    required_properties=("batch_size",),
)
PROFILE = ExperimentSpec(
    actuator="Bench",
    experiment="profile",
    target_properties=("tps", "joules"),
    required_properties=("batch_size",),
)
SPEC = SpaceSpec(
    sample_store="store-one-rule",
    entity_space=(PropertySpec(name="batch_size", values=(1, 2, 4, 8, 16)),),
    measurement_space=(
        ExperimentRef(actuator="Bench", experiment="bench"),
        ExperimentRef(actuator="Bench", experiment="profile"),
    ),
)
SPACE_ID = DiscoverySpace.from_spec(SPEC).id
TPS = {"property": "tps", "direction": "max"}
JOULES = {"property": "joules", "direction": "min"}


def entity(batch_size: int) -> Entity:
    return Entity.of({"batch_size": batch_size})


A, B, C, D, E = (entity(size) for size in (1, 2, 4, 8, 16))
"""A: bench 200 (the best for `tps`, which bench measures first). B: profile 900. C: bench
invalid, profile failing until its one retry is spent. D: bench retried then measured, profile
not retryable. E: bench reused from the store."""


@dataclass
class History:
    """The explorer's domain with the sampler and the actuators played by hand."""

    parameters: OperationParameters
    now: datetime = T0
    log: list[Event] = field(default_factory=list)
    state: ExplorerState = field(default_factory=ExplorerState)
    engine: Engine = field(
        default_factory=lambda: Engine(OperatorRegistry([RandomWalk()]), Timing(1.0, 8.0, 30.0))
    )
    counter: int = 0
    wake_at: datetime | None = None

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def send(self, event: Event) -> list[Event]:
        self.log.append(event)
        decided = explore(self.state, event, self.engine, self.now)
        self.log.extend(decided.events)
        self.wake_at = decided.wake_at or self.wake_at
        return list(decided.events)

    def start(self) -> SamplesRequested:
        registered = SpaceRegistered(
            event_id="space-one-rule",
            occurred_at=self.now,
            submission_id="sub-one-rule",
            space_id=SPACE_ID,
            spec=SPEC,
            experiments=(BENCH, PROFILE),
        )
        self.send(registered)
        go_live(self.state, self.engine, self.now)
        decided = self.send(
            OperationRequested(
                event_id="request-one-rule",
                occurred_at=self.tick(),
                operation_id=OPERATION,
                space_id=SPACE_ID,
                operator="random_walk",
                parameters=self.parameters,
                requested_by="tester",
            )
        )
        return next(e for e in decided if isinstance(e, SamplesRequested))

    def retry_due(self) -> SamplesRequested:
        """Let the backoff pass: the explorer asks for the failed measurement again."""
        assert self.wake_at is not None
        self.now = max(self.now, self.wake_at)
        self.wake_at = None
        decided = tick(self.state, self.engine, self.now)
        self.log.extend(decided.events)
        return next(e for e in decided.events if isinstance(e, SamplesRequested))

    def drawn(self, request: SamplesRequested, *entities: Entity, exhausted: bool) -> None:
        self.send(
            SamplesDrawn.caused_by(
                request,
                self.tick(),
                operation_id=OPERATION,
                request_index=request.request_index,
                entity_ids=tuple(e.id for e in entities),
                next_position=len(entities) if request.count else 0,
                exhausted=exhausted,
            )
        )

    def _subject(self, thing: Entity, experiment: str) -> dict[str, Any]:
        return {
            "operation_id": OPERATION,
            "request_id": measurement_request_id(OPERATION, thing.id, experiment),
            "space_id": SPACE_ID,
            "sample_store": SPEC.sample_store,
            "entity_id": thing.id,
            "entity_values": thing.as_dict(),
            "experiment_id": experiment,
        }

    def _caused(self, request: SamplesRequested) -> tuple[SamplesRequested, datetime, int]:
        self.counter += 1
        return request, self.tick(), self.counter

    def requested(
        self, request: SamplesRequested, thing: Entity, experiment: str, attempt: int = 1
    ) -> None:
        self.send(
            MeasurementRequested.caused_by(
                *self._caused(request),
                **self._subject(thing, experiment),
                experiment=ExperimentRef(actuator="Bench", experiment=experiment),
                pool="a100",
                attempt=attempt,
            )
        )
        self.send(
            MeasurementStarted.caused_by(
                *self._caused(request),
                **self._subject(thing, experiment),
                worker_id="w0",
                attempt=attempt,
            )
        )

    def completed(
        self,
        request: SamplesRequested,
        thing: Entity,
        experiment: str,
        values: dict[str, Any] | None,
        attempt: int = 1,
    ) -> None:
        self.requested(request, thing, experiment, attempt)
        self.send(
            MeasurementCompleted.caused_by(
                *self._caused(request),
                **self._subject(thing, experiment),
                worker_id="w0",
                attempt=attempt,
                values=values or {},
                is_valid=values is not None,
                invalid_reason=None if values is not None else "CUDA out of memory",
                uncertainty={},
                duration_seconds=10.0,
            )
        )

    def failed(
        self,
        request: SamplesRequested,
        thing: Entity,
        experiment: str,
        retryable: bool,
        attempt: int = 1,
    ) -> None:
        self.requested(request, thing, experiment, attempt)
        self.send(
            MeasurementFailed.caused_by(
                *self._caused(request),
                **self._subject(thing, experiment),
                worker_id="w0",
                attempt=attempt,
                reason="node lost",
                retryable=retryable,
            )
        )

    def reused(
        self, request: SamplesRequested, thing: Entity, experiment: str, values: dict[str, Any]
    ) -> None:
        self.send(
            MeasurementReused.caused_by(
                *self._caused(request),
                **self._subject(thing, experiment),
                reused_event_id="measured-long-ago",
                values=values,
                is_valid=True,
            )
        )


def one_history(parameters: OperationParameters) -> History:
    """The history every test reads (see the module doc)."""
    history = History(parameters)
    draw = history.start()
    history.drawn(draw, A, B, C, D, E, exhausted=True)
    history.completed(draw, A, "bench", {"tps": 200.0, "mem": 30})
    history.completed(draw, B, "profile", {"tps": 900.0, "joules": 20.0})
    history.completed(draw, A, "profile", {"tps": 100.0, "joules": 50.0})
    history.completed(draw, B, "bench", {"tps": 150.0, "mem": 20})
    history.completed(draw, C, "bench", None)
    history.failed(draw, C, "profile", retryable=True)
    retry = history.retry_due()
    history.drawn(retry, C, exhausted=False)
    history.failed(retry, C, "profile", retryable=True, attempt=2)
    history.failed(draw, D, "bench", retryable=True)
    retry = history.retry_due()
    history.drawn(retry, D, exhausted=False)
    history.failed(draw, D, "profile", retryable=False)
    history.reused(draw, E, "bench", {"tps": 180.0, "mem": 40})
    history.completed(draw, E, "profile", {"tps": 300.0, "joules": 10.0})
    history.completed(retry, D, "bench", {"tps": 120.0, "mem": 10}, attempt=2)
    return history


# -- the projector's rows of the same history ---------------------------------------------------

_KINDS = {
    MeasurementRequested: "requested",
    MeasurementStarted: "started",
    MeasurementCompleted: "completed",
    MeasurementFailed: "failed",
    MeasurementReused: "reused",
}
_LIFECYCLE = (OperationRequested, OperationStarted, OperationCompleted)


def lifecycle_rows(log: list[Event]) -> list[OperationRow]:
    return [
        OperationRow(
            operation_id=event.operation_id,
            event_id=event.event_id,
            type=event.type,
            occurred_at=event.occurred_at,
            space_id=event.space_id,
            payload=event.model_dump_json(),
        )
        for event in log
        if isinstance(event, _LIFECYCLE)
    ]


def measurement_rows(log: list[Event]) -> list[MeasurementRow]:
    return [_measurement_row(event) for event in log if type(event) in _KINDS]


def _measurement_row(event: Any) -> MeasurementRow:
    result = isinstance(event, MeasurementCompleted | MeasurementReused)
    return MeasurementRow(
        space_id=event.space_id,
        operation_id=event.operation_id,
        entity_id=event.entity_id,
        experiment_id=event.experiment_id,
        event_id=event.event_id,
        kind=_KINDS[type(event)],
        request_id=event.request_id,
        sample_store=event.sample_store,
        occurred_at=event.occurred_at,
        attempt=getattr(event, "attempt", 1),
        is_valid=event.is_valid if result else None,
        reason=(event.invalid_reason or "") if result else getattr(event, "reason", ""),
        retryable=getattr(event, "retryable", False),
        values=canonical_json(event.values if result else {}),
        entity_values=canonical_json(event.entity_values),
    )


def space_state() -> SpaceState:
    return SpaceState(
        key=SPACE_ID,
        space_id=SPACE_ID,
        status="registered",
        reason="",
        sample_store=SPEC.sample_store,
        size=5,
        submitted_at=T0,
        decided_at=T0,
        spec=SPEC,
        experiments=(BENCH, PROFILE),
        submission_ids=("sub-one-rule",),
    )


def projector_progress(history: History) -> Any:
    return operation_progress(
        OPERATION, lifecycle_rows(history.log), measurement_rows(history.log), space_state()
    )


def completion(history: History) -> OperationCompleted:
    [completed] = [e for e in history.log if isinstance(e, OperationCompleted)]
    return completed


# -- the tests ---------------------------------------------------------------------------------


def test_the_explorer_and_the_projector_name_the_same_best_entity() -> None:
    history = one_history(OperationParameters(batch_size=5, max_retries=1, objective=TPS))

    explorer = completion(history)
    projector = projector_progress(history)

    assert explorer.best_entity_id == A.id
    assert projector.best is not None
    assert (projector.best.entity_id, projector.best.value) == (A.id, 200.0)
    assert projector.best.experiment_id == "bench"


def test_the_explorer_and_the_projector_count_the_same_pairs() -> None:
    history = one_history(OperationParameters(batch_size=5, max_retries=1, objective=TPS))

    explorer = completion(history).counts
    projector = projector_progress(history).counts

    assert explorer is not None
    expected = {"requested": 10, "measured": 7, "reused": 1, "failed": 2, "invalid": 1}
    assert explorer.model_dump() == expected
    assert projector.model_dump() == {**expected, "in_flight": 0, "cancelled": 0}


def explorer_front(history: History, objectives: list[Objective]) -> list[str]:
    """The front of the points the explorer's optimizers are told (optuna_nsga2's history)."""
    space = known_space(next(e for e in history.log if isinstance(e, SpaceRegistered)))
    assert isinstance(space, KnownSpace)
    operation = OperationState(OPERATION)
    for event in history.log:
        if isinstance(event, OperationEvent) and event.operation_id == OPERATION:
            evolve(operation, event)
    sources = [s for s in (Source.of(o, space) for o in objectives) if s is not None]
    told = [t for t in told_points(operation.outcomes, sources, space) if t.values]
    front = pareto_front([t.values for t in told if t.values], objectives)
    return [told[i].entity.id for i in front]


def projector_front(history: History) -> list[str]:
    """The front the CLI draws from the projector's answers (progress, space, results)."""
    progress = OperationProgress.model_validate(projector_progress(history).model_dump())
    objectives = objectives_of(progress)
    sources = sources_of(objectives, observed_ids(space_state()), SPACE_ID)
    results = operation_results(measurement_rows(history.log))
    front = front_of(results, objectives, sources)
    return [front.points[i].entity_id for i in front.front]


def test_the_explorer_and_the_projector_draw_the_same_pareto_front() -> None:
    parameters = OperationParameters(
        batch_size=5, max_retries=1, objective=TPS, objectives=[TPS, JOULES]
    )
    history = one_history(parameters)
    objectives = parameters.objectives_to_optimise()

    assert explorer_front(history, objectives) == [E.id, A.id]
    assert projector_front(history) == [E.id, A.id]


def test_objectives_written_in_the_options_by_older_clients_are_the_same_objectives() -> None:
    old = OperationParameters.model_validate(
        {"batch_size": 5, "objective": TPS, "options": {"objectives": [TPS, JOULES]}}
    )
    history = one_history(old)

    assert old.options == {}
    assert projector_front(history) == [E.id, A.id]
