"""Run an operation in process: the explorer's real engine, the sampler and actuators as functions.

The explorer's domain (`explore`, `go_live`, `tick`, the operators) runs exactly as in the
service; what the sampler and the actuator workers would do is played here: a `SamplesRequested`
is answered with `SamplesDrawn`, each of its (entity, experiment) pairs is measured by a
`measure` function (first requested, first measured) and answered with `MeasurementCompleted`,
or with `MeasurementReused` when the sample store already holds it. No broker is needed, and an
operation decides here what it decides in the services for the same seed and the same results
(with `batch_size` 1, where the order results arrive in cannot differ).

`prior` results are in the sample store before the operation starts, measured by an earlier
operation: what a warm start reads. A prior entity outside the operation's space (another
model, another GPU: other values or other properties) is stored as it is, measured through
another space sharing the store: what `OperationView.store_elsewhere` shows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from discospace.core import (
    DiscoverySpace,
    Entity,
    EntitySpace,
    ExperimentRef,
    ExperimentSpec,
    InvalidMeasurement,
    ParameterizedExperiment,
    SpaceSpec,
    ValidMeasurement,
    parameterized_experiment_id,
    sampling,
)
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementReused,
    OperationCompleted,
    OperationFailed,
    OperationParameters,
    OperationRequested,
    SamplesDrawn,
    SamplesRequested,
    SpaceRegistered,
    measurement_request_id,
)
from discospace.events.common import OperationEvent
from discospace.explorer.domain.decide import Decided, Engine
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.explorer.domain.state import ExplorerState, explore, go_live, tick
from discospace.explorer.operators.known import known_operators

T0 = datetime(2026, 1, 1, tzinfo=UTC)
"""When in-process operations start (their clock advances one second per event)."""


@dataclass(frozen=True)
class Measured:
    """What measuring one entity with one experiment gave, and how long it took."""

    result: ValidMeasurement | InvalidMeasurement
    duration_seconds: float = 1.0


MeasureFunction = Callable[[Entity, ParameterizedExperiment], Measured]


@dataclass(frozen=True)
class Prior:
    """A result already in the sample store (measured by someone else before)."""

    entity: Mapping[str, object]
    experiment_id: str
    measured: Measured


@dataclass
class RunRecord:
    """What happened to one in-process operation."""

    events: list[Event] = field(default_factory=list)
    """Every event, in the order the explorer read or decided it."""

    @property
    def ended(self) -> OperationCompleted | OperationFailed | None:
        ends = [e for e in self.events if isinstance(e, OperationCompleted | OperationFailed)]
        return ends[0] if ends else None

    @property
    def outcomes(self) -> list[PairResult]:
        """Results the operation received (measured or reused), in order."""
        kinds = MeasurementCompleted | MeasurementReused
        return [PairResult.of(e) for e in self.events if isinstance(e, kinds)]

    @property
    def requested(self) -> list[dict[str, object]]:
        """Every point requested with explicit points, in order."""
        requests = [e for e in self.events if isinstance(e, SamplesRequested) and e.points]
        return [dict(point) for request in requests for point in request.points or ()]


def space_event(spec: SpaceSpec, experiments: Sequence[ExperimentSpec]) -> SpaceRegistered:
    """The registration of a space whose experiments the registry resolved to `experiments`."""
    space_id = DiscoverySpace.from_spec(spec).id
    return SpaceRegistered(
        event_id=f"space-{space_id}",
        occurred_at=T0 - timedelta(days=1),
        submission_id=f"submission-{space_id}",
        space_id=space_id,
        spec=spec,
        experiments=tuple(experiments),
    )


def run_operation(
    space: SpaceRegistered,
    operator: str,
    parameters: OperationParameters,
    measure: MeasureFunction,
    *,
    prior: Sequence[Prior] = (),
    engine: Engine | None = None,
    operation_id: str = "op-in-process",
) -> RunRecord:
    """Run one operation to its end; what happened."""
    return _Run(space, measure, engine or Engine(known_operators())).run(
        operator, parameters, prior, operation_id
    )


class _Run:
    def __init__(self, space: SpaceRegistered, measure: MeasureFunction, engine: Engine) -> None:
        known = known_space(space)
        if isinstance(known, str):
            raise ValueError(known)
        self.event, self.space, self.measure, self.engine = space, known, measure, engine
        self.state, self.record = ExplorerState(), RunRecord()
        self.now, self.counter = T0, 0
        self.store: dict[tuple[str, str], MeasurementCompleted] = {}
        self.pending: deque[tuple[SamplesRequested, Entity, ParameterizedExperiment]] = deque()

    def run(
        self, operator: str, parameters: OperationParameters, prior: Sequence[Prior], op: str
    ) -> RunRecord:
        explore(self.state, self.event, self.engine, self.now)
        self._fold_prior(prior)
        self._decided(go_live(self.state, self.engine, self.now))
        request = OperationRequested(
            event_id=f"request-{op}",
            occurred_at=self.now,
            operation_id=op,
            space_id=self.space.space_id,
            operator=operator,
            parameters=parameters,
            requested_by="bench",
        )
        self._send(request)
        while self.record.ended is None and self._step():
            pass
        return self.record

    def _fold_prior(self, prior: Sequence[Prior]) -> None:
        cause = OperationRequested(
            event_id="request-prior",
            occurred_at=T0 - timedelta(hours=1),
            operation_id="op-prior",
            space_id=self.space.space_id,
            operator="prior",
            requested_by="bench",
        )
        for number, known in enumerate(prior):
            entity = self._stored_entity(known.entity)
            at = T0 - timedelta(seconds=len(prior) - number)
            event = self._completed(cause, entity, known.experiment_id, known.measured, at)
            self.store[(entity.id, known.experiment_id)] = event
            explore(self.state, event, self.engine, self.now)

    def _stored_entity(self, values: Mapping[str, object]) -> Entity:
        """The entity of a prior result: normalised when in the space, else as it is."""
        if values in self.space.entity_space:
            return self.space.entity_space.normalise(values)
        return Entity.of(values)

    def _step(self) -> bool:
        """One result, or one timer when nothing is in flight; False when all is quiet."""
        if self.pending:
            cause, entity, experiment = self.pending.popleft()
            self._send(self._answer(cause, entity, experiment))
            return True
        self.now += timedelta(hours=1)
        return bool(self._decided(tick(self.state, self.engine, self.now)))

    def _send(self, event: Event) -> None:
        self.record.events.append(event)
        self.now += timedelta(seconds=1)
        self._decided(explore(self.state, event, self.engine, self.now))

    def _decided(self, decided: Decided) -> list[Event]:
        for decision in decided.events:
            self.record.events.append(decision)
            if isinstance(decision, SamplesRequested):
                self._draw(decision)
        return list(decided.events)

    def _draw(self, request: SamplesRequested) -> None:
        entities = self._entities(request)
        self._send(
            SamplesDrawn.caused_by(
                request,
                self.now,
                operation_id=request.operation_id,
                request_index=request.request_index,
                entity_ids=tuple(e.id for e in entities),
                next_position=request.position + len(entities),
                exhausted=request.count is not None and len(entities) < request.count,
            )
        )
        for entity in entities:
            for ref in request.experiments:
                self.pending.append((request, entity, self._experiment(ref)))

    def _entities(self, request: SamplesRequested) -> list[Entity]:
        entity_space: EntitySpace = self.space.entity_space
        if request.points is not None:
            return [entity_space.normalise(point) for point in request.points]
        order = sampling(entity_space, request.strategy or "random", request.seed or 0)
        end = min(request.position + (request.count or 0), int(entity_space.size))
        return [order.at(k) for k in range(request.position, end)]

    def _experiment(self, ref: ExperimentRef) -> ParameterizedExperiment:
        experiment_id = parameterized_experiment_id(ref.experiment, ref.parameterization)
        found = self.space.experiment(experiment_id)
        assert found is not None, "the explorer requests experiments of its space"
        return found

    def _answer(
        self, cause: SamplesRequested, entity: Entity, experiment: ParameterizedExperiment
    ) -> Event:
        known = self.store.get((entity.id, experiment.id))
        if known is not None and cause.single_measurement:
            return self._reused(cause, known)
        event = self._completed(cause, entity, experiment.id, self.measure(entity, experiment))
        self.store.setdefault((entity.id, experiment.id), event)
        return event

    def _completed(
        self,
        cause: OperationEvent,
        entity: Entity,
        experiment_id: str,
        measured: Measured,
        at: datetime | None = None,
    ) -> MeasurementCompleted:
        result = measured.result
        valid = isinstance(result, ValidMeasurement)
        return MeasurementCompleted.caused_by(
            cause,
            at or self.now,
            self._next(),
            **self._subject(cause, entity, experiment_id),
            worker_id="in-process",
            values=dict(result.values) if isinstance(result, ValidMeasurement) else {},
            is_valid=valid,
            invalid_reason=None if isinstance(result, ValidMeasurement) else result.reason,
            uncertainty={},
            duration_seconds=measured.duration_seconds,
        )

    def _reused(self, cause: SamplesRequested, known: MeasurementCompleted) -> MeasurementReused:
        entity = Entity.of(known.entity_values)
        return MeasurementReused.caused_by(
            cause,
            self.now,
            self._next(),
            **self._subject(cause, entity, known.experiment_id),
            reused_event_id=known.event_id,
            values=dict(known.values),
            is_valid=known.is_valid,
            invalid_reason=known.invalid_reason,
        )

    def _subject(
        self, cause: OperationEvent, entity: Entity, experiment_id: str
    ) -> dict[str, object]:
        operation = cause.operation_id
        return {
            "operation_id": operation,
            "request_id": measurement_request_id(operation, entity.id, experiment_id),
            "space_id": self.space.space_id,
            "sample_store": self.space.sample_store,
            "entity_id": entity.id,
            "entity_values": entity.as_dict(),
            "experiment_id": experiment_id,
        }

    def _next(self) -> int:
        self.counter += 1
        return self.counter


def space_of(event: SpaceRegistered) -> KnownSpace:
    """The space as the explorer knows it (raises ValueError when it cannot be explored)."""
    known = known_space(event)
    if isinstance(known, str):
        raise ValueError(known)
    return known
