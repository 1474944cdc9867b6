"""The options an Optuna operator reads from `parameters.options`, checked once at start.

The objectives are not options: they are the operation's `objective` or `objectives`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PositiveInt, ValidationError

from discospace.core.spec import Scalar


class SearchOptions(BaseModel):
    """Settings of a model-based search; every one has a default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    warm_start: bool = Field(
        default=True,
        description="Tell the study every result of the space's sample store measured before "
        "the operation started, so nothing measured before is paid for again.",
    )
    n_startup_trials: PositiveInt | None = Field(
        default=None,
        description="Results (warm-start ones included) before TPE, GP or CMA-ES use their "
        "model; until then they sample at random without replacement (or, with `transfer`, "
        "take the points other spaces' results rank best). Default: adapted to the space, "
        "the square root of its number of points, between 2 and 10.",
    )
    transfer: bool = Field(
        default=True,
        description="Learn from the sample store's results outside the space (the same "
        "experiment on other values, e.g. another model): they choose the start-up points of "
        "TPE and GP on a space whose points can be listed (finite, at most 50,000, or given as "
        "candidates); CMA-ES, NSGA-II and larger or continuous spaces start at random.",
    )
    multivariate: bool = Field(
        default=True, description="TPE models the parameters jointly rather than one by one."
    )
    population_size: int = Field(
        default=20, ge=2, description="NSGA-II's population: points per generation."
    )
    candidates: list[dict[str, Scalar]] | None = Field(
        default=None,
        min_length=1,
        description="Restrict the search to these points of the space (for example the "
        "configurations a published table covers); default: every point of the space.",
    )


ONLY_FOR = {
    "multivariate": ("optuna_tpe",),
    "population_size": ("optuna_nsga2",),
    "n_startup_trials": ("optuna_tpe", "optuna_gp", "optuna_cmaes"),
}
"""Options only some operators read: given to another, they would be ignored in silence."""


def parse_options(options: Mapping[str, JsonValue], operator: str) -> SearchOptions | str:
    """The options, or one sentence saying what is wrong with them (an option this operator
    does not read included)."""
    try:
        parsed = SearchOptions.model_validate(dict(options))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "options"
        if first["type"] == "extra_forbidden":
            known = ", ".join(SearchOptions.model_fields)
            return f"{operator} has no option '{where}' (its options: {known})"
        return f"option '{where}' of {operator} is not valid: {first['msg']}"
    for name in sorted(parsed.model_fields_set):
        readers = ONLY_FOR.get(name, (operator,))
        if operator not in readers:
            verb = "uses" if len(readers) == 1 else "use"
            return f"{operator} does not use option '{name}' (only {', '.join(readers)} {verb} it)"
    return parsed
