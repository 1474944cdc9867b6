"""A conductor that fails stops its children: they would go on measuring for nobody."""

from __future__ import annotations

from typing import ClassVar

from discospace.events import (
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationParameters,
    OperationRequested,
)
from discospace.explorer.domain.conducting import Conduct, ConductorView
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.domain.spaces import KnownSpace
from discospace.explorer.operators.random_walk import RandomWalk

CHILD = "op-1-child"


class FailsWhileItsChildRuns:
    """Asks for a child walk of one entity at a time, then fails (a bug) once it started."""

    name: ClassVar[str] = "fails-while-its-child-runs"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def conduct(self, view: ConductorView) -> Conduct:
        child = view.child(CHILD)
        if child.requested is None:
            request = OperationRequested.caused_by(
                view.started,
                view.now,
                operation_id=CHILD,
                space_id=view.started.space_id,
                operator="random_walk",
                parameters=OperationParameters(number_entities="all", batch_size=1),
                requested_by=f"conductor {view.operation_id}",
                parent_operation_id=view.operation_id,
            )
            return Conduct([request])
        if child.started is not None:
            raise RuntimeError("a bug in the conductor")
        return Conduct([])


def test_a_conductor_that_fails_cancels_its_running_children(loop, eighty_space, make_request):
    sim = loop(eighty_space)
    sim.engine = Engine(OperatorRegistry([RandomWalk(), FailsWhileItsChildRuns()]), sim.timing)
    sim.send(make_request(eighty_space, operator=FailsWhileItsChildRuns.name))
    sim.run()

    [failed] = sim.decisions(OperationFailed)
    assert failed.operation_id == "op-1"
    assert "a bug in the conductor" in failed.reason
    [cancel] = [e for e in sim.log if isinstance(e, OperationCancelRequested)]
    assert cancel.operation_id == CHILD
    assert cancel.requested_by == "operation op-1"
    assert cancel.reason.startswith("its parent operation 'op-1' failed: operator ")
    [child_end] = [e for e in sim.decisions(OperationCompleted) if e.operation_id == CHILD]
    assert child_end.stop_reason == "cancelled"
    assert child_end.counts.measured < 80  # stopped, not walked to the end of its space

    again = sim.restart()  # the same log decides nothing more
    assert [e for e in again if isinstance(e, OperationCancelRequested)] == []
