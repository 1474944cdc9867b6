"""What a job's child operation gave, as the job's JSON result; the rows hooks read.

- An `operation` job's result: `operation_id`, `space_id`, `operator`, `stop_reason`,
  `best_entity_id`, `best_entity_values`, `best_values` (for its objective), `counts`.
- A `measure` job's result: the same, with the `experiment` (parameterized id), the
  `entities` and `entity_ids` it measured, and `rows`: each measurement
  (`entity_id`, `values`, `experiment`, `results`, `valid`), so later jobs, the trials'
  objective and the views read every value, not only the best.
- `known_results`: what a child knew: its own results, and for an optimizer that warm-started
  from the sample store (`warm_started`), the store's earlier results of its space too, so a
  hook reading an optimizer's job sees what it searched from (an optimizer on a refined space
  the probe covered may measure nothing itself).
- `objective_value`: a trial's value for its objective from its job's result: the best of
  its rows, else its `best_values`, else a number under the property's name (a hook's result).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import JsonValue

from discospace.core import Objective, as_number
from discospace.core.hooks import MeasuredRow
from discospace.core.results import target_of
from discospace.events import OperationCompleted, OperationCounts, OperationRequested
from discospace.explorer.domain.conducting import ChildView
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.operators.optuna_search import optuna_operators

NO_COUNTS = OperationCounts(requested=0, measured=0, reused=0, failed=0, invalid=0)
WARM_STARTING = frozenset(operator.name for operator in optuna_operators())
"""Operators that are told the store's earlier results of their space (option `warm_start`)."""


def operation_result(child: ChildView, completed: OperationCompleted) -> dict[str, JsonValue]:
    """The result of a job whose child operation completed."""
    requested = child.requested
    return {
        "operation_id": child.operation_id,
        "space_id": completed.space_id,
        "operator": requested.operator if requested else None,
        "stop_reason": completed.stop_reason,
        "best_entity_id": completed.best_entity_id,
        "best_entity_values": _json(completed.best_entity_values),
        "best_values": _json(completed.best_values),
        "counts": completed.counts.model_dump(mode="json"),
    }


def measure_result(
    child: ChildView,
    completed: OperationCompleted,
    results: Sequence[PairResult],
    experiment_id: str,
) -> dict[str, JsonValue]:
    """The result of a `measure` job: its child's outcome and every measurement it got."""
    rows = [row for row in results if row.experiment_id == experiment_id]
    return {
        **operation_result(child, completed),
        "experiment": experiment_id,
        "entities": [_json(row.entity_values) for row in rows],
        "entity_ids": [row.entity_id for row in rows],
        "rows": [_row_json(row) for row in rows],
    }


def measured_rows(results: Iterable[PairResult]) -> list[MeasuredRow]:
    """A child's results as the rows a hook reads."""
    return [
        MeasuredRow(
            entity_id=result.entity_id,
            values=dict(result.entity_values),
            experiment=result.experiment_id,
            results=dict(result.values),
            valid=result.is_valid,
        )
        for result in results
    ]


def warm_started(request: OperationRequested | None) -> bool:
    """Whether a child was told the store's earlier results (an optimizer's warm start)."""
    if request is None or request.operator not in WARM_STARTING:
        return False
    return request.parameters.options.get("warm_start", True) is not False


def known_results(own: Sequence[PairResult], prior: Sequence[PairResult]) -> tuple[PairResult, ...]:
    """A child's own results, then the earlier results it was told of other pairs."""
    mine = {(result.entity_id, result.experiment_id) for result in own}
    told = [r for r in prior if (r.entity_id, r.experiment_id) not in mine]
    return (*own, *told)


def total_counts(ends: Iterable[OperationCounts | None]) -> OperationCounts:
    """The counts of several children added up (a child that failed at once counts 0)."""
    total = NO_COUNTS.model_dump()
    for counts in ends:
        for name, value in (counts or NO_COUNTS).model_dump().items():
            total[name] += value
    return OperationCounts(**total)


def objective_value(result: Mapping[str, JsonValue], objective: Objective) -> float | None:
    """A job result's value for `objective`: the best valid row, else its best values, else a
    number under the property's name; None when it has none."""
    target = target_of(objective.property)
    best: float | None = None
    for row in _rows(result):
        value = as_number(row.get("results", {}).get(target)) if row.get("valid") else None  # type: ignore[union-attr]
        if objective.improves(value, best):
            best = value
    if best is not None:
        return best
    values = result.get("best_values")
    if isinstance(values, Mapping):
        found = as_number(values.get(target, values.get(objective.property)))
        if found is not None:
            return found
    return as_number(result.get(objective.property))


def _rows(result: Mapping[str, JsonValue]) -> list[Mapping[str, JsonValue]]:
    rows = result.get("rows")
    if not isinstance(rows, list):
        return []
    return [
        row for row in rows if isinstance(row, Mapping) and isinstance(row.get("results"), Mapping)
    ]


def _row_json(result: PairResult) -> dict[str, JsonValue]:
    return {
        "entity_id": result.entity_id,
        "values": _json(result.entity_values),
        "experiment": result.experiment_id,
        "results": _json(result.values),
        "valid": result.is_valid,
    }


def _json(values: Mapping[str, object] | None) -> JsonValue:
    """Property values as JSON (they are scalars already)."""
    return None if values is None else dict(values)  # type: ignore[arg-type]
