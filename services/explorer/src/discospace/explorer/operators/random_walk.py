"""`random_walk`: measure `number_entities` entities (or all) in the sampler's order.

The order is the operation's sampling strategy (random, sequential or grouped) from its seed;
the walk keeps the window full until it has asked for its budget or the space is exhausted.
"""

from __future__ import annotations

import math
from typing import ClassVar

from discospace.core.operation_rules import random_walk_problem
from discospace.events import OperationParameters
from discospace.explorer.domain.operator import Draw, Finish, OperationView, Proposal
from discospace.explorer.domain.spaces import KnownSpace


class RandomWalk:
    """Draws entities by strategy until the budget is asked for or the space runs out."""

    name: ClassVar[str] = "random_walk"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return random_walk_problem(parameters, space.entity_space, space.space_id)

    def propose(self, view: OperationView) -> Proposal:
        budget = _budget(view)
        if view.exhausted and view.entities_drawn < budget:
            return Finish("space_exhausted", _exhausted_detail(view))
        if view.drawn_by_strategy >= budget:
            return _finished(view, budget)
        return Draw(min(view.free_slots, budget - view.drawn_by_strategy))


def _budget(view: OperationView) -> int:
    """Entities to ask for: the number requested, at most the size of the space."""
    wanted = view.parameters.number_entities
    size = view.space.size
    if wanted == "all":
        return int(size)
    return wanted if math.isinf(size) else min(wanted, int(size))


def _finished(view: OperationView, budget: int) -> Finish:
    wanted = view.parameters.number_entities
    if wanted == "all" or wanted > budget:
        return Finish("space_exhausted", f"all {budget} entities of the space were drawn")
    return Finish("requested_entities_measured", f"{budget} of {budget} requested entities drawn")


def _exhausted_detail(view: OperationView) -> str:
    return f"the space ran out after {view.entities_drawn} entities were drawn"
