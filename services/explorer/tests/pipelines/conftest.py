"""A small world around the explorer's domain for pipelines: a fake registry, sampler and
actuators, and one or more explorer replicas sharing one log.

`World` delivers every event of its log, in order, to every replica (the real domain:
`explore`, `go_live`), and answers what the explorers decide as the other services would: the
registry registers a submitted space whose experiments its catalog has (`SpaceRegistered`,
with the id the real registry gives), else rejects it; the sampler draws entities (the real
sampling sequence) or takes explicit points, and reuses what the sample store holds; the
actuators measure with a `behaviour`. Measurements can be held back (`hold`) to stop a
pipeline mid-stage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import JsonValue

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
from discospace.core.hooks import Hook, HookContext
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementReused,
    OperationCancelRequested,
    OperationParameters,
    OperationRequested,
    SamplesDrawn,
    SamplesRequested,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    caused_event_id,
    measurement_request_id,
)
from discospace.events.common import OperationEvent
from discospace.explorer.domain.decide import Decided, Engine, Timing
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.domain.state import ExplorerState, explore, go_live, tick
from discospace.explorer.operators.optuna_search import optuna_operators
from discospace.explorer.operators.pipeline import Pipeline
from discospace.explorer.operators.points import Points
from discospace.explorer.operators.random_walk import RandomWalk

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
BENCH = ExperimentSpec(
    actuator="Bench",
    experiment="bench",
    target_properties=("tps", "loss"),
    required_properties=("batch_size", "lr"),
    optional_properties={"steps": 10},
)
SPACE = SpaceSpec(
    sample_store="store-p",
    entity_space=(
        PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
        PropertySpec(name="lr", values=(0.1, 0.2, 0.3)),
    ),
    measurement_space=(ExperimentRef(actuator="Bench", experiment="bench"),),
)
Behaviour = Callable[[dict[str, Any], str], tuple[bool, dict[str, Any]]]
"""(entity values, parameterized experiment id) -> (valid, values)."""


def bench(values: dict[str, Any], experiment: str) -> tuple[bool, dict[str, Any]]:
    """Valid unless batch size 1; tps grows with batch size, loss falls with lr and the steps."""
    if values["batch_size"] == 1:
        return False, {}
    steps = 50 if "steps.50" in experiment else 10
    loss = round(2.0 - values["lr"] - values["batch_size"] / 100 - steps / 1000, 6)
    return True, {"tps": float(values["batch_size"] * 10), "loss": loss}


@dataclass
class Replica:
    """One explorer: its state, and the operations it decides for."""

    state: ExplorerState
    engine: Engine


@dataclass
class World:
    """Explorer replicas, a fake registry, sampler and actuators, and the log they share."""

    hooks: Mapping[str, Hook] | None = field(default_factory=lambda: dict(HOOKS))
    behaviour: Behaviour = bench
    catalog: tuple[ExperimentSpec, ...] = (BENCH,)
    owners: tuple[Callable[[str], bool], ...] = (lambda operation_id: True,)
    now: datetime = T0
    log: list[Event] = field(default_factory=list)
    queue: list[Event] = field(default_factory=list)
    held: list[Event] = field(default_factory=list)
    hold: bool = False
    registry_down: bool = False
    advance_s: float = 0.0
    """How far the clock moves with each event delivered (0: everything at once)."""
    measured: dict[tuple[str, str, str], MeasurementCompleted] = field(default_factory=dict)
    actuator_calls: int = 0
    submissions: list[SpaceSubmitted] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replicas = [self._replica(owns) for owns in self.owners]

    def _replica(self, owns: Callable[[str], bool]) -> Replica:
        replica = Replica(ExplorerState(owns=owns), self._engine())
        self._record(go_live(replica.state, replica.engine, self.now))
        return replica

    def _engine(self) -> Engine:
        """The real operators, the pipeline with this world's hooks (a fresh one each time;
        the hooks installed, core's, when `hooks` is None)."""
        hooks = dict(self.hooks) if self.hooks is not None else None
        pipeline = (
            Pipeline(hooks=hooks.__getitem__, installed=lambda: tuple(hooks))
            if hooks is not None
            else Pipeline()
        )
        operators = [RandomWalk(), Points(), *optuna_operators(), pipeline]
        return Engine(OperatorRegistry(operators), Timing(1.0, 8.0, 30.0))

    @property
    def state(self) -> ExplorerState:
        return self.replicas[0].state

    # -- delivering ------------------------------------------------------------------------

    def send(self, event: Event) -> None:
        """Put `event` in the log and deliver it (and everything it leads to)."""
        self.queue.append(event)
        self.run()

    def run(self, limit: int = 5_000) -> None:
        for _ in range(limit):
            if not self.queue:
                return
            self.deliver(self.queue.pop(0))
        raise AssertionError("the world did not settle")

    def deliver(self, event: Event) -> None:
        self.now += timedelta(seconds=self.advance_s)
        self.log.append(event)
        self._answer(event)
        if not isinstance(event, OperationEvent | SpaceRegistered | SpaceRejected):
            return
        for replica in self.replicas:
            self._record(explore(replica.state, event, replica.engine, self.now))

    def _record(self, decided: Decided) -> None:
        self.queue.extend(decided.events)

    def release(self, keep_holding: bool = False) -> None:
        """Deliver the measurements held back, and what follows (holding back those that
        follow too with `keep_holding`)."""
        self.hold = keep_holding
        self.queue.extend(self.held)
        self.held.clear()
        self.run()

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        for replica in self.replicas:
            self._record(tick(replica.state, replica.engine, self.now))
        self.run()

    # -- the other services ----------------------------------------------------------------

    def _answer(self, event: Event) -> None:
        if isinstance(event, SpaceSubmitted):
            self.submissions.append(event)
            if not self.registry_down:
                self.queue.append(self.registry_answer(event))
        elif isinstance(event, SamplesRequested):
            self._sample(event)

    def registry_answer(self, event: SpaceSubmitted) -> SpaceRegistered | SpaceRejected:
        space = DiscoverySpace.from_spec(event.spec)
        known = {(e.actuator, e.experiment): e for e in self.catalog}
        missing = [ref for ref in space.experiments if (ref.actuator, ref.experiment) not in known]
        if missing:
            reason = f"experiment '{missing[0].experiment}' is not in the catalog"
            return SpaceRejected.caused_by(
                event, self.now, submission_id=event.submission_id, reason=reason
            )
        return registration(space, event.submission_id, known, self.now)

    def register(self, spec: SpaceSpec = SPACE) -> str:
        """Register `spec` as someone else would; its id."""
        space = DiscoverySpace.from_spec(spec)
        known = {(e.actuator, e.experiment): e for e in self.catalog}
        self.send(registration(space, "sub-user", known, self.now))
        return space.id

    def _sample(self, request: SamplesRequested) -> None:
        entry = self.state.spaces[request.space_id]
        assert not isinstance(entry, str)
        entities = _draw(entry.entity_space, request)
        self.queue.append(
            SamplesDrawn.caused_by(
                request,
                self.now,
                operation_id=request.operation_id,
                request_index=request.request_index,
                entity_ids=tuple(e.id for e in entities),
                next_position=request.position + len(entities),
                exhausted=len(entities) < (request.count or len(request.points or ())),
            )
        )
        for entity in entities:
            for ref in request.experiments:
                experiment = parameterized_experiment_id(ref.experiment, ref.parameterization)
                result = self._measure(request, entity.as_dict(), experiment, entry.sample_store)
                (self.held if self.hold else self.queue).append(result)

    def _measure(
        self, request: SamplesRequested, values: dict[str, Any], experiment: str, store: str
    ) -> Event:
        key = (store, _entity_id(values), experiment)
        subject = {
            "operation_id": request.operation_id,
            "request_id": measurement_request_id(request.operation_id, key[1], experiment),
            "space_id": request.space_id,
            "sample_store": store,
            "entity_id": key[1],
            "entity_values": values,
            "experiment_id": experiment,
        }
        index = len(self.log) + len(self.queue) + len(self.held)
        known = self.measured.get(key)
        if known is not None and request.single_measurement:
            return MeasurementReused.caused_by(
                request,
                self.now,
                index,
                **subject,
                reused_event_id=known.event_id,
                values=known.values,
                is_valid=known.is_valid,
                invalid_reason=known.invalid_reason,
            )
        self.actuator_calls += 1
        valid, measured = self.behaviour(values, experiment)
        result = MeasurementCompleted.caused_by(
            request,
            self.now,
            index,
            **subject,
            worker_id="w0",
            attempt=request.attempt,
            values=measured,
            is_valid=valid,
            invalid_reason=None if valid else "out of memory",
            uncertainty={},
            duration_seconds=1.0,
        )
        self.measured.setdefault(key, result)
        return result

    # -- reading the log -------------------------------------------------------------------

    def of(self, kind: type[Event], operation_id: str | None = None) -> list[Any]:
        return [
            e
            for e in self.log
            if isinstance(e, kind)
            and (operation_id is None or getattr(e, "operation_id", None) == operation_id)
        ]

    def request(self, op: str, space_id: str, options: dict[str, Any], **parameters: Any) -> None:
        self.send(
            OperationRequested(
                event_id=f"request-{op}",
                occurred_at=self.now,
                operation_id=op,
                space_id=space_id,
                operator="pipeline",
                parameters=OperationParameters(options=options, **parameters),
                requested_by="alice",
            )
        )

    def cancel(self, op: str) -> None:
        self.send(
            OperationCancelRequested(
                event_id=f"cancel-{op}",
                occurred_at=self.now,
                operation_id=op,
                requested_by="alice",
                reason="enough",
            )
        )

    def restart(self, first: Callable[[Event], bool] = lambda event: False) -> list[Event]:
        """A new explorer (one replica) folds the log, then goes live: its decisions (put in
        the queue, not delivered). The events `first` picks are folded before the others,
        as a start-up fold may read some partitions before others."""
        replica = Replica(ExplorerState(), self._engine())
        ordered = [e for e in self.log if first(e)] + [e for e in self.log if not first(e)]
        for event in ordered:
            if isinstance(event, OperationEvent | SpaceRegistered | SpaceRejected):
                explore(replica.state, event, replica.engine, self.now)
        decided = go_live(replica.state, replica.engine, self.now)
        self.replicas = [replica]
        self.queue.extend(decided.events)
        return list(decided.events)


def registration(
    space: DiscoverySpace,
    submission: str,
    known: Mapping[tuple[str, str], ExperimentSpec],
    now: datetime,
) -> SpaceRegistered:
    """The registration the registry publishes for `space` (its event id from the space id)."""
    return SpaceRegistered(
        event_id=caused_event_id(space.id, 0, "SpaceRegistered"),
        occurred_at=now,
        submission_id=submission,
        space_id=space.id,
        spec=space.to_spec(),
        experiments=tuple(known[(ref.actuator, ref.experiment)] for ref in space.experiments),
    )


def _draw(entity_space: EntitySpace, request: SamplesRequested) -> list[Any]:
    if request.points is not None:
        return [entity_space.normalise(point) for point in request.points]
    assert request.strategy is not None
    assert request.count is not None
    order = sampling(entity_space, request.strategy, request.seed or 0, request.group_by)
    end = min(request.position + request.count, int(entity_space.size))
    return [order.at(k) for k in range(request.position, end)]


def _entity_id(values: dict[str, Any]) -> str:
    return Entity.of(values).id


# -- hooks and a sandbox pipeline the tests share ----------------------------------------------


def narrow(context: HookContext) -> dict[str, JsonValue]:
    """Keep the batch sizes of the valid rows (a stand-in for k_sigma)."""
    kept = sorted({row.values["batch_size"] for row in context.rows if row.valid})
    properties = [
        PropertySpec(name=p.name, values=tuple(kept)) if p.name == "batch_size" else p
        for p in context.space.entity_space
    ]
    space = context.space.model_copy(update={"entity_space": tuple(properties)})
    return {"space": space.model_dump(mode="json"), "kept": kept}  # type: ignore[dict-item]


def best(context: HookContext) -> dict[str, JsonValue]:
    """The k entities of lowest loss (a stand-in for top_k)."""
    k = int(context.args["k"])  # type: ignore[arg-type]
    valid = [row for row in context.rows if row.valid]
    chosen = sorted(valid, key=lambda row: (row.results["loss"], row.entity_id))[:k]
    return {
        "entities": [dict(row.values) for row in chosen],
        "entity_ids": [row.entity_id for row in chosen],
        "rows_read": len(context.rows),
    }


HOOKS = {"narrow": narrow, "best": best}
LONGER = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}


def sandbox(probe: int = 6) -> dict[str, Any]:
    """probe (random walk) -> refine (narrow) -> execute (walk the narrowed space, pick the
    best 2) -> evaluate (measure them with a 5x longer run)."""
    return {
        "stages": {
            "probe": [
                {
                    "name": "probe",
                    "kind": "operation",
                    "operator": "random_walk",
                    "parameters": {"number_entities": probe, "batch_size": 2},
                }
            ],
            "refine": [
                {"name": "narrowed", "kind": "hook", "hook": "narrow", "args": {"job": "probe"}}
            ],
            "execute": [
                {
                    "name": "search",
                    "kind": "operation",
                    "space": "${narrowed.space_id}",
                    "operator": "random_walk",
                    "parameters": {"number_entities": 4},
                },
                {"name": "top", "kind": "hook", "hook": "best", "args": {"job": "search", "k": 2}},
            ],
            "evaluate": [
                {
                    "name": "remeasure",
                    "kind": "measure",
                    "entities": "${top.entities}",
                    "experiment": LONGER,
                }
            ],
        }
    }


@pytest.fixture
def world() -> Callable[..., World]:
    return World


@pytest.fixture
def base_space() -> SpaceSpec:
    """The space pipelines run on: batch_size in 1, 2, 4, 8 and lr in 0.1, 0.2, 0.3."""
    return SPACE


@pytest.fixture
def hooks() -> dict[str, Hook]:
    return dict(HOOKS)


@pytest.fixture
def sandbox_options() -> Callable[..., dict[str, Any]]:
    return sandbox
