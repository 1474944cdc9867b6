"""`zeus_bso`: the Zeus batch-size optimizer (NSDI'23) as an explorer operator.

Each measurement is one run of a recurring training job (`train_to_target`): an entity
(`batch_size`, `power_limit`, `recurrence`, and the job's fixed properties) whose outcome gives
`time_to_accuracy` (s), `energy_to_accuracy` (J) and `converged` (1/0). The operator reads the
outcomes in arrival order as attempts, asks the pure policy (`policy.py`) for the next runs, and
finishes once `recurrences` runs have converged. Options and space: `options.py`.

Run controls travel as per-point inputs of the measurement request (`Measure.inputs`), which
an actuator reads among its task's properties:

- `cost_limit` (J-equivalent, absent: none): early stopping. The run stops before the epoch that
  would take its cost past the limit (`epochs = min(cost_limit // epoch_cost, max_epochs)`) and
  reports `converged = 0`; when not one epoch fits it reports zero time and energy;
- `profile_power` (1): just-in-time power profiling. The first epoch is split evenly over the
  power limits, the cheapest by `(eta * power + (1 - eta) * max_power) * time_per_epoch` is
  kept for the rest of the run, and the run reports it as `trained_power_limit`. The request's
  `power_limit` is then the highest limit (where the profiling starts);
- `max_epochs`, when the option is set.

An actuator that ignores them still works: runs are then neither stopped early nor profiled,
and each batch size keeps the power limit its first run reported (the highest, unprofiled).
Invalid outcomes (the configuration cannot run) count as runs that never started.

Warm start (`warm.py`, option `warm_start`, on by default): the sample store's results of the
same workload elsewhere (`OperationView.store_elsewhere`: entities outside the space that agree
with its fixed values except on the properties named in `shared_across`, `gpu_model` by
default) give the epochs each batch size needed there; time and power per epoch are measured
here.

Decisions are a function of the view: the Thompson draws come from a generator seeded with
(operation seed, number of runs requested so far), so a restarted explorer decides the same.

When the operation completes, `choice` tells what the optimizer chose (`policy.summary`): the
batch size and its power limit, the expected cost of a run of it, the cost so far, and each
recurrence's cost and phase; the engine puts it in `OperationCompleted.choice`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, TypeVar

from pydantic import ValidationError

from discospace.core import DiscospaceError, as_number
from discospace.core.canonical import Value
from discospace.events import OperationParameters
from discospace.events.common import PropertyValues
from discospace.events.operations import OperatorChoice
from discospace.explorer.domain.operator import (
    Finish,
    Measure,
    OperationView,
    Proposal,
    Wait,
    give_up_when_failing,
)
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace
from discospace.explorer.operators.zeus.options import (
    BATCH_SIZE,
    POWER_LIMIT,
    RECURRENCE,
    ZeusOptions,
    ZeusSpace,
    zeus_space,
)
from discospace.explorer.operators.zeus.policy import (
    Attempt,
    History,
    HistoryFold,
    Plan,
    ZeusSettings,
    decision_rng,
    next_plan,
    read_history,
    summary,
)
from discospace.explorer.operators.zeus.warm import NOWHERE, Elsewhere, ElsewhereRun, elsewhere_of

TIME, ENERGY, CONVERGED, TRAINED_LIMIT, EPOCHS = (
    "time_to_accuracy",
    "energy_to_accuracy",
    "converged",
    "trained_power_limit",
    "target_epoch",
)
PROFILE = "profile_power"
"""The run control asking a run to profile its power limits during its first epoch."""


def _experiment_problem(space: KnownSpace) -> str | None:
    """A space zeus_bso reads every result of as a run: one experiment, reporting a run's
    time and energy to the target and whether it converged."""
    if len(space.experiments) != 1:
        ids = ", ".join(experiment.id for experiment in space.experiments)
        return f"zeus_bso reads every result as a run of one experiment: the space measures {ids}"
    [experiment] = space.experiments
    targets = experiment.experiment.target_properties
    missing = [t for t in (TIME, ENERGY, CONVERGED) if t not in targets]
    if missing:
        return (
            f"zeus_bso needs runs that report {TIME}, {ENERGY} and {CONVERGED}: experiment "
            f"'{experiment.id}' does not measure {', '.join(missing)}"
        )
    return None


def _eta_problem(space: KnownSpace, options: ZeusOptions) -> str | None:
    """An `eta` other than the one the experiment prices its runs with: the operator's early
    stopping limit (`beta` x its cheapest cost) and the runs' stops would be counted in two
    currencies, so runs that should converge stop short (and are retried)."""
    [experiment] = space.experiments
    priced = experiment.option_values.get("eta")
    if "eta" in space.entity_space.names:  # an entity's value wins over the experiment's
        explicit = space.entity_space.get_property("eta").domain.explicit_values
        if explicit and len(explicit) == 1:  # one value only: `zeus_space` refuses others
            priced = explicit[0]
    if isinstance(priced, int | float) and not isinstance(priced, bool) and priced != options.eta:
        return (
            f"zeus_bso's eta {options.eta:g} is not the {priced:g} experiment "
            f"'{experiment.id}' prices its runs with: give the option eta: {priced:g}, or "
            f"parameterize the experiment with eta: {options.eta:g}"
        )
    return None


class ZeusBso:
    """The Zeus batch-size optimizer over a recurring job's batch sizes and power limits."""

    name: ClassVar[str] = "zeus_bso"

    def __init__(self) -> None:
        self._read: dict[str, _Read] = {}
        self._elsewhere: dict[str, tuple[Sequence[PairResult], Elsewhere]] = {}
        """By operation: the store's results elsewhere it was read from, and what they tell."""

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        try:
            options = ZeusOptions.parse(parameters.options)
            zeus_space(space.entity_space, options)
        except DiscospaceError as error:
            return str(error)
        problem = (
            _experiment_problem(space)
            or _eta_problem(space, options)
            or _shared_across_problem(space, options)
        )
        if problem is not None:
            return problem
        if parameters.single_measurement:
            return (
                "zeus_bso measures repeated runs of one job: set single_measurement to false so "
                "no run is reused from the sample store"
            )
        return None

    def propose(self, view: OperationView) -> Proposal:
        options = ZeusOptions.parse(view.parameters.options)
        knobs = self._knobs(view, options)
        settings = options.settings
        history = self._history(view, settings, knobs)
        if history.recurrences >= knobs.recurrences:
            self._read.pop(view.operation_id, None)
            self._elsewhere.pop(view.operation_id, None)
            return Finish("operator_finished", f"{history.recurrences} recurrences converged")
        give_up_when_failing(view)  # a failure tells the policy nothing
        plans = _plans(view, settings, knobs, history)
        plans = _with_recurrence_left(view, plans, history.recurrences, knobs.recurrences)
        return _measure(plans, knobs, options, len(view.entities)) if plans else Wait()

    def choice(self, view: OperationView) -> OperatorChoice | None:
        """What the optimizer chose by now, with its costs; None when a result cannot be read
        (the operation completes all the same)."""
        try:
            options = ZeusOptions.parse(view.parameters.options)
            job = self._knobs(view, options).job
            attempts = [attempt_of(outcome, _controls(view, outcome)) for outcome in view.outcomes]
            told = summary(options.settings, job, read_history(attempts, options.settings, job))
            chosen = told.choice
            return OperatorChoice(
                values={BATCH_SIZE: chosen.batch_size, POWER_LIMIT: chosen.power_limit}
                if chosen
                else {},
                expected_cost=told.expected_cost,
                cost_so_far=told.cost_so_far,
                recurrence_costs=told.recurrence_costs,
                recurrence_phases=told.recurrence_phases,
            )
        except (DiscospaceError, ValidationError):
            return None

    def _knobs(self, view: OperationView, options: ZeusOptions) -> ZeusSpace:
        """The space's job, warm with the runs of its workload elsewhere: read again whenever
        the view's results elsewhere changed (a result measured before the operation started
        may be read after it: kept as first read, an explorer that stayed up decided cold
        where a restarted one, reading it at once, decided warm)."""
        knobs = zeus_space(view.space.entity_space, options)
        if not options.warm_start:
            return knobs
        read = self._elsewhere.get(view.operation_id)
        if read is None or read[0] is not view.store_elsewhere:
            runs = _runs_elsewhere(view.store_elsewhere, knobs, options)
            read = (view.store_elsewhere, elsewhere_of(runs))
            _keep(self._elsewhere, view.operation_id, read)
        elsewhere = read[1]
        if elsewhere is NOWHERE or not elsewhere.usable:
            return knobs
        arms = elsewhere.arms(knobs.job.batch_sizes)
        if not arms:  # none of its sizes fits what was seen there: the job starts cold (warm,
            return knobs  # the bandit had no arm at all)
        if _all_failed_first(view, arms):  # every size it offers failed here before it ever
            return knobs  # converged (out of memory on this GPU): the cold walk (warm, the
        return replace(knobs, job=replace(knobs.job, elsewhere=elsewhere))  # bandit kept them)

    def _history(self, view: OperationView, settings: ZeusSettings, knobs: ZeusSpace) -> History:
        """The outcomes folded into a history, reading only those not read before (outcomes
        only ever grow; a view that does not extend what was read, or a job that changed with
        what was read elsewhere, starts the fold afresh)."""
        read = self._read.get(view.operation_id)
        if read is None or read.fold.job != knobs.job or not read.prefix_of(view.outcomes):
            read = _Read(HistoryFold(settings, knobs.job))
            _keep(self._read, view.operation_id, read)
        read.extend(view)
        return read.fold.history()


OPERATIONS_KEPT = 64
"""Operations whose fold and runs elsewhere are kept between rounds: an operation that ended
without this operator finishing it (a stopping rule, a cancel) is dropped once 64 newer ones
came; one dropped while it runs is folded afresh from its view."""

V = TypeVar("V")


def _keep(cache: dict[str, V], operation_id: str, value: V) -> None:
    if operation_id not in cache and len(cache) >= OPERATIONS_KEPT:
        del cache[next(iter(cache))]  # the oldest
    cache[operation_id] = value


@dataclass
class _Read:
    """What one operation's outcomes told so far (a cache of the fold)."""

    fold: HistoryFold
    entity_ids: list[str] = field(default_factory=list)

    def prefix_of(self, outcomes: Sequence[PairResult]) -> bool:
        count = len(self.entity_ids)
        return count <= len(outcomes) and (
            count == 0 or outcomes[count - 1].entity_id == self.entity_ids[-1]
        )

    def extend(self, view: OperationView) -> None:
        for outcome in view.outcomes[len(self.entity_ids) :]:
            self.entity_ids.append(outcome.entity_id)
            self.fold.read(attempt_of(outcome, _controls(view, outcome)))


def _plans(
    view: OperationView, settings: ZeusSettings, knobs: ZeusSpace, history: History
) -> list[Plan]:
    """A run for each free slot, each planned with the ones before it in flight; fewer when
    a slot must wait (or enough runs are in flight to finish the recurrences)."""
    in_flight = _in_flight(view)
    seed = view.parameters.seed or 0
    plans: list[Plan] = []
    room = min(view.free_slots, knobs.recurrences - history.recurrences - len(in_flight))
    for _ in range(max(0, room)):
        decision = len(view.entities) + len(plans)
        busy = in_flight + [p.batch_size for p in plans]
        plan = next_plan(settings, knobs.job, history, busy, decision_rng(seed, decision))
        if plan is None:
            break
        plans.append(plan)
    return plans


def _runs_elsewhere(
    results: Sequence[PairResult], knobs: ZeusSpace, options: ZeusOptions
) -> list[ElsewhereRun]:
    """The valid results of the same workload (fixed values equal but for `shared_across`, and
    no property the job does not have but those) that say how many epochs they trained: a
    run whose entity names another network in a property this space lacks is another
    workload's, not this one's on another GPU."""
    compared = {k: v for k, v in knobs.fixed.items() if k not in options.shared_across}
    known = {*knobs.fixed, BATCH_SIZE, POWER_LIMIT, RECURRENCE, *options.shared_across}
    runs = []
    for result in results:
        values, entity = result.values, result.entity_values
        if not result.is_valid or any(entity.get(k) != v for k, v in compared.items()):
            continue
        if not known.issuperset(entity):
            continue
        epochs, converged = as_number(values.get(EPOCHS)), as_number(values.get(CONVERGED))
        batch_size = entity.get(BATCH_SIZE)
        if epochs is None or converged is None or not isinstance(batch_size, int | float):
            continue
        time_s, energy_j = as_number(values.get(TIME)), as_number(values.get(ENERGY))
        cost = 0.0
        if time_s is not None and energy_j is not None:
            cost = options.settings.cost(energy_j, time_s, knobs.job.max_power)
        runs.append(ElsewhereRun(int(batch_size), epochs, bool(converged), cost))
    return runs


def _all_failed_first(view: OperationView, arms: Sequence[int]) -> bool:
    """Whether the first run here of each of `arms` did not converge (invalid, or not
    converged), as the policy's `_failed_first` reads a history."""
    first: dict[int, bool] = {}
    for outcome in view.outcomes:
        attempt = attempt_of(outcome, _controls(view, outcome))
        first.setdefault(attempt.batch_size, attempt.converged)
        if first.get(attempt.batch_size) and attempt.batch_size in arms:
            return False  # one converged first: no need to read on
        if all(arm in first for arm in arms):
            break
    return all(arm in first and not first[arm] for arm in arms)


def _controls(view: OperationView, outcome: PairResult) -> PropertyValues | None:
    return view.request_controls(outcome.entity_id, outcome.experiment_id)


def attempt_of(outcome: PairResult, controls: PropertyValues | None = None) -> Attempt:
    """One finished run as the policy reads it. It profiled when its request asked it to
    (`controls`, the run controls it was requested with); without them, when its result names
    the limit it trained at (the replay actuator names it on every run: every run read as
    profiled, and a warm job through the services decided otherwise than in process)."""
    batch_size = _whole(outcome.entity_values, BATCH_SIZE, "entity")
    requested_limit = _whole(outcome.entity_values, POWER_LIMIT, "entity")
    if not outcome.is_valid:
        return Attempt(batch_size, requested_limit, 0.0, 0.0, False)
    values = outcome.values
    limit = _whole(values, TRAINED_LIMIT, "result") if TRAINED_LIMIT in values else None
    return Attempt(
        batch_size=batch_size,
        power_limit=requested_limit if limit is None else limit,
        time_s=_number(values, TIME),
        energy_j=_number(values, ENERGY),
        converged=bool(_number(values, CONVERGED)),
        profiled=limit is not None if controls is None else controls.get(PROFILE) == 1,
        epochs=as_number(values.get(EPOCHS)),
    )


def _with_recurrence_left(
    view: OperationView, plans: list[Plan], converged: int, recurrences: int
) -> list[Plan]:
    """The plans that have a value of the recurrence property left (run i is recurrence i);
    none left and nothing in flight: the job cannot go on, said in a sentence."""
    domain = view.space.entity_space.get_property(RECURRENCE).domain
    first = len(view.entities)
    kept = [plan for i, plan in enumerate(plans) if domain.normalise(first + i) is not None]
    if plans and not kept and view.in_flight == 0:
        raise DiscospaceError(
            f"'{RECURRENCE}' holds no value for run {first}: {converged} of {recurrences} "
            f"recurrences converged in {first} runs, and the runs that do not converge need "
            f"values beyond {recurrences - 1}; widen its range"
        )
    return kept


def _measure(plans: list[Plan], knobs: ZeusSpace, options: ZeusOptions, requested: int) -> Measure:
    highest = max(knobs.job.power_limits)
    points, inputs = [], []
    for index, plan in enumerate(plans):
        limit = highest if plan.power_limit is None else plan.power_limit
        points.append(knobs.point(plan.batch_size, limit, requested + index))
        inputs.append(run_inputs(plan, options, knobs.job.max_power))
    return Measure(tuple(points), tuple(inputs))


def run_inputs(plan: Plan, options: ZeusOptions, max_power: float) -> PropertyValues:
    """The run controls of one planned run. With a cost limit or profiling, the `max_power`
    the operator prices time with goes too, so the run stops, and profiling picks its limit,
    by the operator's cost (the actuator's own is the GPU's highest limit: a space of lower
    limits had its runs stopped short)."""
    controls: PropertyValues = {}
    if plan.cost_limit is not None:
        controls["cost_limit"] = plan.cost_limit
    if plan.cost_limit is not None or plan.power_limit is None:
        controls["max_power"] = max_power
    if plan.power_limit is None:
        controls[PROFILE] = 1
    if options.max_epochs is not None:
        controls["max_epochs"] = options.max_epochs
    return controls


def _in_flight(view: OperationView) -> list[int]:
    """Batch sizes of the runs requested and not settled: a run that failed for good never
    answers, and counted in flight it held the walk at its batch size while anything else
    ran (with more than one run at a time, for good)."""
    if view.in_flight == 0:
        return []
    answered = {outcome.entity_id for outcome in view.outcomes}
    return [
        _whole(values, BATCH_SIZE, "entity")
        for entity, values in view.entities.items()
        if entity in view.unsettled and entity not in answered and values is not None
    ]


def _number(values: Mapping[str, Value], name: str) -> float:
    """The result's value `name`, a finite number by `discospace.core.results.as_number`."""
    number = as_number(values.get(name))
    if number is None:
        raise DiscospaceError(
            f"zeus_bso needs a finite number '{name}' in every result, got {values.get(name)!r}"
        )
    return number


def _whole(values: Mapping[str, Value], name: str, where: str) -> int:
    raw = values.get(name)
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not float(raw).is_integer():
        raise DiscospaceError(f"zeus_bso needs a whole number '{name}' in every {where}")
    return int(raw)


def _shared_across_problem(space: KnownSpace, options: ZeusOptions) -> str | None:
    """A property named in `shared_across` that the space lacks: only the space's own fixed
    properties are compared with other jobs' runs, so the name changed nothing (a misspelt
    `gpu_modle` left `gpu_model` compared, and no run of another GPU was used)."""
    if "shared_across" not in options.model_fields_set:
        return None
    names = space.entity_space.names
    unknown = [name for name in options.shared_across if name not in names]
    if not unknown:
        return None
    return (
        f"zeus_bso option 'shared_across' names {', '.join(repr(n) for n in unknown)}, which "
        f"space '{space.space_id}' does not have (its properties: {', '.join(names)})"
    )
