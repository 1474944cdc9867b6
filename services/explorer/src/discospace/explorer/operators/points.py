"""`points`: measure exactly the entities listed in `options.points`, then finish.

A pipeline's `measure` job runs it (re-measuring chosen entities with another parameterized
experiment), and anyone may: it is an ordinary operator. Every point must belong to the space;
duplicates (the same entity written twice) are measured once. The window (`batch_size`) holds
as many points in flight as it allows; the engine requests each point once.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from discospace.core.spec import Scalar
from discospace.events import OperationParameters
from discospace.events.common import PropertyValues
from discospace.explorer.domain.operator import Finish, Measure, OperationView, Proposal
from discospace.explorer.domain.spaces import KnownSpace

NAME = "points"


class PointsOptions(BaseModel):
    """The options of `points`: the entities, as property values of the space."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    points: tuple[dict[str, Scalar], ...] = Field(min_length=1)


class Points:
    """Requests the listed entities (as the window allows), then finishes."""

    name: ClassVar[str] = NAME

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        try:
            options = PointsOptions.model_validate(parameters.options)
        except ValidationError as error:
            return f"points needs options {{points: [entities]}}: {_first(error)}"
        for number, point in enumerate(options.points, start=1):
            problem = space.entity_space.why_not(point)
            if problem is not None:
                return f"point {number} of points is not in space '{space.space_id}': {problem}"
        return None

    def propose(self, view: OperationView) -> Proposal:
        remaining = _not_requested(view)
        if remaining:
            return Measure(remaining)
        count = len(view.entities)
        return Finish("requested_entities_measured", f"all {count} listed points requested")


def _not_requested(view: OperationView) -> tuple[PropertyValues, ...]:
    """The listed points the operation has not asked for yet, in their order."""
    options = PointsOptions.model_validate(view.parameters.options)
    entity_space = view.space.entity_space
    return tuple(
        dict(point)
        for point in options.points
        if entity_space.normalise(point).id not in view.entities
    )


def _first(error: ValidationError) -> str:
    detail = error.errors()[0]
    where = ".".join(str(part) for part in detail["loc"]) or "options"
    return f"{where}: {detail['msg']}"
