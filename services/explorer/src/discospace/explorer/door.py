"""The explorer's own start checks, for a client to apply before it publishes a request.

`operation create` refuses at the door what the explorer would refuse at start: the CLI applies
core's rules (operator names, stopping rules, objectives, Zeus's space) and, where the explorer
is installed beside it, this function too, so an optimizer's or Zeus's options, the extras a
sampler needs and everything else an operator checks are refused with the explorer's own
sentence, before anything is published. It is the same `check` the explorer runs when the
request arrives (`domain/starting.py`), on the space as the registry registered it.
"""

from __future__ import annotations

from discospace.events import OperationRequested, SpaceRegistered
from discospace.explorer.domain.spaces import known_space
from discospace.explorer.domain.starting import check, with_seed
from discospace.explorer.operators.known import known_operators


def start_problem(request: OperationRequested, registered: SpaceRegistered) -> str | None:
    """Why the explorer would refuse `request` on the `registered` space, or None."""
    operators = known_operators()
    operator = operators.get(request.operator)
    if operator is None:
        return f"operator '{request.operator}' is not known: use {', '.join(operators.names)}"
    space = known_space(registered)
    if isinstance(space, str):
        return space
    return check(with_seed(request), space, operator)
