"""Hand-built histories for the explorer's pure domain, and a simulated loop around it.

`Loop` plays the sampler and the actuators in memory (a fake of the rest of the system, for
unit tests only): it answers each `SamplesRequested` with the entities the real sampling
sequence gives, then measures them with a `behaviour` the test chooses. The explorer under
test is the real domain (`explore`, `go_live`, `tick`) with a real operator registry.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from discospace.core import (
    DiscoverySpace,
    Entity,
    EntitySpace,
    ExperimentRef,
    ExperimentSpec,
    PropertySpec,
    SpaceSpec,
    parameterized_experiment_id,
    sampling,
)
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementReused,
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationParameters,
    OperationRequested,
    OperationStarted,
    SamplesDrawn,
    SamplesRequested,
    SpaceRegistered,
    measurement_request_id,
)
from discospace.explorer.domain.decide import Decided, Engine, Timing
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.domain.state import ExplorerState, explore, go_live, tick
from discospace.explorer.operators.random_walk import RandomWalk

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
ACTUATOR = "Bench"
BENCH = ExperimentSpec(
    actuator=ACTUATOR,
    experiment="bench",
    target_properties=("tps", "mem"),
    required_properties=("batch_size", "number_gpus"),
)
ENERGY = ExperimentSpec(
    actuator=ACTUATOR,
    experiment="energy",
    target_properties=("joules",),
    required_properties=("number_gpus", "bench.tps"),
)


def space_registered(
    properties: tuple[PropertySpec, ...], experiments: tuple[ExperimentSpec, ...] = (BENCH,)
) -> SpaceRegistered:
    spec = SpaceSpec(
        sample_store="store-a",
        entity_space=properties,
        measurement_space=tuple(
            ExperimentRef(actuator=e.actuator, experiment=e.experiment) for e in experiments
        ),
    )
    space_id = DiscoverySpace.from_spec(spec).id
    return SpaceRegistered(
        event_id=f"space-event-{space_id}",
        occurred_at=T0,
        submission_id="sub-1",
        space_id=space_id,
        spec=spec,
        experiments=experiments,
    )


SMALL = (
    PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
    PropertySpec(name="number_gpus", values=(1, 2)),
)
EIGHTY = (
    PropertySpec(name="batch_size", values=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)),
    PropertySpec(name="number_gpus", values=(1, 2, 4, 8)),
    PropertySpec(name="model", values=("small", "large")),
)


def request(space: SpaceRegistered, op: str = "op-1", **parameters: Any) -> OperationRequested:
    return OperationRequested(
        event_id=f"request-{op}",
        occurred_at=T0,
        operation_id=op,
        space_id=space.space_id,
        operator=parameters.pop("operator", "random_walk"),
        parameters=OperationParameters(**parameters),
        requested_by="tester",
    )


Result = tuple[str, Any]
"""("valid", values) | ("invalid", reason) | ("fail", retryable)."""
Behaviour = Callable[[dict[str, Any], str, int], Result]


def throughput(values: dict[str, Any], experiment: str, attempt: int) -> Result:
    """Every measurement valid: tps grows with batch size and GPUs; energy from its input."""
    if experiment == "energy":
        return ("valid", {"joules": 10.0 * values["number_gpus"]})
    return ("valid", {"tps": float(values["batch_size"] * values["number_gpus"]), "mem": 1})


@dataclass
class Pending:
    """A measurement the fake actuators have been asked for."""

    cause: SamplesRequested
    entity: dict[str, Any]
    experiment: str
    attempt: int
    inputs: dict[str, Any]


@dataclass
class Fakes:
    """A fake sampler and fake actuators: answers to requests, whoever carries them."""

    space: SpaceRegistered
    behaviour: Behaviour = throughput
    counter: int = 0

    def __post_init__(self) -> None:
        self.entity_space = EntitySpace.from_specs(self.space.spec.entity_space)

    def draw(self, request: SamplesRequested, at: datetime) -> tuple[SamplesDrawn, list[Pending]]:
        """The sampler's answer to `request`, and the measurements it asks for."""
        entities, exhausted, position = self._draw(request)
        drawn = SamplesDrawn.caused_by(
            request,
            at,
            operation_id=request.operation_id,
            request_index=request.request_index,
            entity_ids=tuple(e.id for e in entities),
            next_position=position,
            exhausted=exhausted,
        )
        pending = []
        for number, entity in enumerate(entities):
            inputs = request.inputs[number] if request.inputs else {}
            for ref in request.experiments:
                experiment = parameterized_experiment_id(ref.experiment, ref.parameterization)
                pending.append(
                    Pending(request, entity.as_dict(), experiment, request.attempt, inputs)
                )
        return drawn, pending

    def _draw(self, request: SamplesRequested) -> tuple[list[Entity], bool, int]:
        if request.points is not None:
            return [self.entity_space.normalise(p) for p in request.points], False, 0
        assert request.strategy is not None
        assert request.count is not None
        order = sampling(self.entity_space, request.strategy, request.seed or 0, request.group_by)
        end = min(request.position + request.count, int(self.entity_space.size))
        entities = [order.at(k) for k in range(request.position, end)]
        return entities, end >= self.entity_space.size, end

    def measure(self, pending: Pending, at: datetime) -> Event:
        """The actuator's answer, as `behaviour` says."""
        kind, detail = self.behaviour(pending.entity, pending.experiment, pending.attempt)
        return self.result_of(pending, kind, detail, at)

    def result_of(self, pending: Pending, kind: str, detail: Any, at: datetime) -> Event:
        self.counter += 1
        common = measurement_fields(pending, self.space)
        cause, index = pending.cause, self.counter
        if kind == "fail":
            return MeasurementFailed.caused_by(
                cause, at, index, **common, reason="node lost", retryable=detail
            )
        if kind == "reused":
            subject = {k: v for k, v in common.items() if k not in ("worker_id", "attempt")}
            return MeasurementReused.caused_by(
                cause, at, index, **subject, reused_event_id="old", values=detail, is_valid=True
            )
        valid = kind == "valid"
        return MeasurementCompleted.caused_by(
            cause,
            at,
            index,
            **common,
            values=detail if valid else {},
            is_valid=valid,
            invalid_reason=None if valid else detail,
            uncertainty={},
            duration_seconds=1.0,
        )


@dataclass
class Loop:
    """The explorer's domain, with a fake sampler and fake actuators around it."""

    space: SpaceRegistered
    behaviour: Behaviour = throughput
    timing: Timing = field(default_factory=lambda: Timing(1.0, 8.0, 30.0))
    now: datetime = T0
    state: ExplorerState = field(default_factory=ExplorerState)
    log: list[Event] = field(default_factory=list)
    draws: list[SamplesRequested] = field(default_factory=list)
    measuring: list[Pending] = field(default_factory=list)
    most_in_flight: int = 0
    wake_at: datetime | None = None

    def __post_init__(self) -> None:
        self.engine = Engine(OperatorRegistry([RandomWalk()]), self.timing)
        self.fakes = Fakes(self.space, self.behaviour)
        self.send(self.space)
        self.record(go_live(self.state, self.engine, self.now))

    # -- the explorer ------------------------------------------------------------------------

    def send(self, event: Event) -> list[Event]:
        self.log.append(event)
        return self.record(explore(self.state, event, self.engine, self.now))  # type: ignore[arg-type]

    def record(self, decided: Decided) -> list[Event]:
        self.wake_at = decided.wake_at
        for event in decided.events:
            self.log.append(event)
            if isinstance(event, SamplesRequested):
                self.draws.append(event)
        return list(decided.events)

    def tick_at(self, when: datetime) -> list[Event]:
        self.now = max(self.now, when)
        return self.record(tick(self.state, self.engine, self.now))

    def decisions(self, kind: type[Event] | None = None) -> list[Event]:
        """The explorer's decisions so far, in order (of one type when `kind` is given)."""
        return [e for e in self.log if isinstance(e, kind or DECISIONS)]

    # -- the fake sampler --------------------------------------------------------------------

    def answer_draws(self) -> list[Event]:
        decided: list[Event] = []
        while self.draws:
            decided += self.answer(self.draws.pop(0))
        return decided

    def answer(self, request: SamplesRequested) -> list[Event]:
        drawn, pending = self.fakes.draw(request, self.now)
        decided = self.send(drawn)
        self.measuring += pending
        self.most_in_flight = max(self.most_in_flight, self.entities_in_flight())
        return decided

    def entities_in_flight(self) -> int:
        return len({tuple(sorted(p.entity.items())) for p in self.measuring})

    # -- the fake actuators ------------------------------------------------------------------

    def measure_next(self) -> list[Event]:
        return self.send(self.fakes.measure(self.measuring.pop(0), self.now))

    def result_of(self, pending: Pending, kind: str, detail: Any) -> Event:
        return self.fakes.result_of(pending, kind, detail, self.now)

    def step(self) -> list[Event] | None:
        """Answer the draws, then one result or one timer; the decisions (None: all quiet)."""
        decided = self.answer_draws()
        if self.measuring:
            return decided + self.measure_next()
        if self.wake_at is not None:
            return decided + self.tick_at(self.wake_at)
        return decided or None

    def run(self, limit: int = 10_000) -> None:
        """Answer and measure until the explorer has nothing more to do."""
        for _ in range(limit):
            if self.step() is None:
                return
        raise AssertionError("the loop did not settle")

    def crash(self, unpublished: int = 0) -> None:
        """The explorer dies; its last `unpublished` decisions never reached the topics."""
        for _ in range(unpublished):
            lost = self.log.pop()
            assert isinstance(lost, DECISIONS), "only the explorer's last decisions can be lost"
            if lost in self.draws:
                self.draws.remove(lost)
        self.state = ExplorerState()

    def restart(self, order: str = "as_logged") -> list[Event]:
        """A new explorer replays the topics, then goes live; its first decisions.

        `order` interleaves the topics as they were logged, or replays one topic entirely
        before the other (`measurements_first`, `operations_first`): nothing orders them.
        """
        self.state = ExplorerState()
        for event in _replay_order(self.log, order):
            explore(self.state, event, self.engine, self.now)  # type: ignore[arg-type]
        return self.record(go_live(self.state, self.engine, self.now))

    def cancel(self, op: str = "op-1") -> list[Event]:
        return self.send(self.cancel_event(op))

    def cancel_event(self, op: str = "op-1") -> OperationCancelRequested:
        return OperationCancelRequested(
            event_id=f"cancel-{op}",
            occurred_at=self.now,
            operation_id=op,
            requested_by="alice",
            reason="enough",
        )


MEASUREMENT_EVENTS = (MeasurementCompleted, MeasurementFailed, MeasurementReused)


def _replay_order(log: list[Event], order: str) -> list[Event]:
    spaces = [e for e in log if isinstance(e, SpaceRegistered)]
    measurements = [e for e in log if isinstance(e, MEASUREMENT_EVENTS)]
    operations = [e for e in log if e not in spaces and e not in measurements]
    if order == "measurements_first":
        return spaces + measurements + operations
    if order == "operations_first":
        return spaces + operations + measurements
    return list(log)


DECISIONS = (OperationStarted, SamplesRequested, OperationCompleted, OperationFailed)


def measurement_fields(pending: Pending, space: SpaceRegistered) -> dict[str, Any]:
    entity = Entity.of(pending.entity)
    operation = pending.cause.operation_id
    return {
        "operation_id": operation,
        "request_id": measurement_request_id(operation, entity.id, pending.experiment),
        "space_id": space.space_id,
        "sample_store": space.spec.sample_store,
        "entity_id": entity.id,
        "entity_values": pending.entity,
        "experiment_id": pending.experiment,
        "worker_id": "w0",
        "attempt": pending.attempt,
    }


def flaky(rate: float, seed: int = 1) -> Behaviour:
    """Fails `rate` of the measurements transiently (seeded), measures the rest."""
    draw = random.Random(seed)

    def behaviour(values: dict[str, Any], experiment: str, attempt: int) -> Result:
        if draw.random() < rate:
            return ("fail", True)
        return throughput(values, experiment, attempt)

    return behaviour


@pytest.fixture
def small_space() -> SpaceRegistered:
    return space_registered(SMALL)


@pytest.fixture
def eighty_space() -> SpaceRegistered:
    return space_registered(EIGHTY)


@pytest.fixture
def dependent_space() -> SpaceRegistered:
    return space_registered(SMALL, (BENCH, ENERGY))


@pytest.fixture
def loop() -> Callable[..., Loop]:
    return Loop


@pytest.fixture
def make_fakes() -> Callable[..., Fakes]:
    return Fakes


@pytest.fixture
def make_request() -> Callable[..., OperationRequested]:
    return request


@pytest.fixture
def make_space() -> Callable[..., SpaceRegistered]:
    return space_registered


@pytest.fixture
def flaky_behaviour() -> Callable[..., Behaviour]:
    return flaky


@pytest.fixture
def at() -> Callable[[float], datetime]:
    return lambda seconds: T0 + timedelta(seconds=seconds)
