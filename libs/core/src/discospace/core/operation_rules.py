"""The rules an operation request must meet that need only the parameters and the space's
registered spec: one sentence for the first one broken, or None.

The explorer applies them when it starts an operation (`domain/starting.py`), and the CLI before
it publishes one (`operation create`), so a bad request is refused at the door with the same
sentence the explorer would give. Rules that need an operator's own code (an optimizer's
options, Zeus's knobs) or the explorer's training arithmetic stay in the explorer.

The parameters are read structurally (:class:`RulesLike`, :class:`WalkLike`): core does not
depend on the events package that defines them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from discospace.core.canonical import Value
from discospace.core.errors import DiscospaceError
from discospace.core.results import Objective, objective_source
from discospace.core.sampling import sampling
from discospace.core.space import EntitySpace
from discospace.core.time import Time, TimeUnit

OPERATORS: tuple[str, ...] = (
    "optuna_cmaes",
    "optuna_gp",
    "optuna_nsga2",
    "optuna_tpe",
    "pipeline",
    "points",
    "random_walk",
    "zeus_bso",
)
"""The operators the explorer runs (its registry holds exactly these; a test checks it)."""


OPTIMIZERS: dict[str, int] = {
    "optuna_cmaes": 1,
    "optuna_gp": 2,
    "optuna_nsga2": 2,
    "optuna_tpe": 2,
}
"""The operators that optimise objectives, with how many objectives each can take at most
(CMA-ES optimises one); each needs at least one."""


class RulesLike(Protocol):
    """Stopping rules as `discospace.events.StoppingRules` holds them."""

    @property
    def max_duration(self) -> Time | None: ...
    @property
    def max_measurement_time(self) -> Time | None: ...
    @property
    def max_training(self) -> Time | None: ...


class WalkLike(Protocol):
    """What `random_walk` reads of `discospace.events.OperationParameters`."""

    @property
    def number_entities(self) -> int | str: ...
    @property
    def options(self) -> Mapping[str, Any]: ...
    @property
    def sampler(self) -> Any: ...
    @property
    def group_by(self) -> Sequence[str]: ...


def operator_problem(name: str, known: Sequence[str] = OPERATORS) -> str | None:
    """Why ``name`` is not an operator that can run, or None."""
    if name in known:
        return None
    return f"operator '{name}' is not known: use {', '.join(known)}"


def objectives_problem(
    operator: str,
    count: int,
    options: Mapping[str, object] | None = None,
    objective: Objective | None = None,
    objectives: Sequence[Objective] = (),
) -> str | None:
    """Why an optimizer cannot take ``count`` objectives, or None (and None for an operator
    that optimises none: it ignores them). Objectives left in ``options`` are ones the
    `objectives` parameter could not take (an old request's place for them: they are moved
    when they fit), said as such rather than as no objective at all. An `objective` (what the
    operation reports best and stops on) that `objectives` (what the optimizer searches for)
    name in the other direction is refused: the search would look for the worst."""
    most = OPTIMIZERS.get(operator)
    if most is None:
        return None
    for other in objectives:
        if objective is None or other.property != objective.property:
            continue
        if other.direction != objective.direction:
            return (
                f"the objective '{objective.property}' is to {objective.direction}imise, "
                f"but objectives {other.direction}imise it: give one direction"
            )
    if options is not None and "objectives" in options:
        return (
            f"{operator} takes its objectives as parameters.objectives (one or two, each "
            "{property, direction}), not as options.objectives, which holds something else"
        )
    if count == 0:
        return (
            f"{operator} needs an objective: set parameters.objective "
            "(or parameters.objectives for two)"
        )
    if count > 1 and most == 1:
        return f"{operator} optimises one objective, but {count} were given"
    return None


MAX_DURATION_S = 100 * 365 * 86_400
"""The longest `max_duration`: the explorer adds it to the start as a date, which must exist."""


def stopping_problem(rules: RulesLike) -> str | None:
    """Why the stopping rules cannot be applied, in one sentence, or None when they can."""
    duration = rules.max_duration
    if duration is not None and duration.unit is not TimeUnit.SECOND:
        return (
            f"max_duration must be a wall-clock time such as 2h or 90sec, not {duration}: "
            "the explorer measures it with a clock"
        )
    if duration is not None and duration.value <= 0:
        return f"max_duration must be above zero, not {duration}"
    if duration is not None and duration.value > MAX_DURATION_S:
        shown = duration if duration.value < 10**15 else "over 10^15 seconds"
        return (
            f"max_duration must be at most 100 years (36500d), not {shown}: "
            "for no limit, leave it out"
        )
    return _measurement_time_problem(rules) or _training_problem(rules)


def _measurement_time_problem(rules: RulesLike) -> str | None:
    spent = rules.max_measurement_time
    if spent is None:
        return None
    if spent.unit is TimeUnit.DURATION and rules.max_duration is None:
        return (
            f"max_measurement_time {spent} is a fraction of max_duration, which is not set: "
            "give max_duration or a time in seconds"
        )
    if spent.unit not in (TimeUnit.SECOND, TimeUnit.DURATION) or spent.value <= 0:
        return (
            f"max_measurement_time must be a positive time in seconds such as 2h or 90sec, not "
            f"{spent}: it is compared with the durations the actuators report"
        )
    return None


def _training_problem(rules: RulesLike) -> str | None:
    budget = rules.max_training
    if budget is not None and budget.value <= 0:
        return f"max_training must be above zero, not {budget}"
    return None


def unmeasured_objective(
    objectives: Iterable[str | None], observed_ids: Sequence[str], space_id: str
) -> str | None:
    """The first objective no experiment of the space measures, in one sentence; None when every
    one is measured (the rule is `discospace.core.results.objective_source`)."""
    for objective in objectives:
        if objective is not None and objective_source(objective, observed_ids) is None:
            return (
                f"the objective '{objective}' is not measured by any experiment of "
                f"space '{space_id}'"
            )
    return None


def random_walk_problem(
    parameters: WalkLike, entity_space: EntitySpace, space_id: str
) -> str | None:
    """Why `random_walk` cannot run with these parameters on this space, or None."""
    if parameters.number_entities == "all" and math.isinf(entity_space.size):
        return (
            f"number_entities 'all' needs a finite space, but space '{space_id}' "
            "has continuous properties: give a number"
        )
    problem = random_walk_options_problem(parameters.options)
    if problem is not None:
        return problem
    try:
        sampling(entity_space, parameters.sampler, 0, parameters.group_by)
    except DiscospaceError as error:
        return f"the {parameters.sampler} sampler cannot run on space '{space_id}': {error}"
    return None


def random_walk_options_problem(options: Mapping[str, object] | None) -> str | None:
    """Why `random_walk` cannot take these options (it takes none), or None."""
    if not options:
        return None
    return f"random_walk takes no options, but was given {', '.join(sorted(options))}"


ZEUS_BATCH_SIZE, ZEUS_POWER_LIMIT, ZEUS_RECURRENCE = "batch_size", "power_limit", "recurrence"
"""The knobs `zeus_bso` needs in its space."""


def zeus_whole_numbers(space: EntitySpace, name: str) -> tuple[int, ...]:
    """The values of knob ``name`` (a finite set of whole numbers), sorted; raises
    :class:`DiscospaceError` saying why the space does not have them."""
    if name not in space.names:
        raise DiscospaceError(f"zeus_bso needs a '{name}' property in the entity space")
    domain = space.get_property(name).domain
    values = domain.values if domain.is_finite else ()
    if not values or not all(_is_whole(v) for v in values):
        raise DiscospaceError(f"zeus_bso needs '{name}' to take a finite set of whole numbers")
    return tuple(sorted(int(float(v)) for v in values))


def zeus_check_recurrence(space: EntitySpace) -> None:
    if ZEUS_RECURRENCE not in space.names:
        raise DiscospaceError(
            f"zeus_bso needs a '{ZEUS_RECURRENCE}' property (0, 1, 2, ...): each run is its own "
            "entity"
        )


def zeus_fixed_values(space: EntitySpace) -> dict[str, Value]:
    """The workload: every property but the knobs, each with exactly one value."""
    fixed: dict[str, Value] = {}
    for prop in space.properties:
        if prop.name in (ZEUS_BATCH_SIZE, ZEUS_POWER_LIMIT, ZEUS_RECURRENCE):
            continue
        domain = prop.domain
        if not domain.is_finite or domain.size != 1:
            raise DiscospaceError(
                f"zeus_bso optimises one job: property '{prop.name}' must have exactly one value"
            )
        fixed[prop.name] = domain.values[0]
    return fixed


def zeus_space_problem(space: EntitySpace) -> str | None:
    """Why `zeus_bso` cannot run on this entity space whatever its options, or None."""
    try:
        zeus_whole_numbers(space, ZEUS_BATCH_SIZE)
        zeus_whole_numbers(space, ZEUS_POWER_LIMIT)
        zeus_check_recurrence(space)
        zeus_fixed_values(space)
    except DiscospaceError as error:
        return str(error)
    return None


def _is_whole(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value).is_integer()
