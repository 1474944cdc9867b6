"""A space registered with no experiment (before the registry refused them) fails an operation
on it with a sentence, rather than leaving it requested forever (issue 13, item 4)."""

from __future__ import annotations

from discospace.events import OperationFailed
from discospace.explorer.domain.spaces import known_space

from .conftest import SMALL, request, space_registered


def test_a_space_without_experiment_cannot_be_explored_and_says_why() -> None:
    entry = known_space(space_registered(SMALL, ()))
    assert isinstance(entry, str)
    assert entry.endswith("the measurement space has no experiment: a space needs at least one")


def test_an_operation_on_a_space_without_experiment_fails_with_that_sentence(loop) -> None:
    empty = space_registered(SMALL, ())
    decisions = loop(empty).send(request(empty))
    assert [type(decision) for decision in decisions] == [OperationFailed]
    assert "has no experiment" in decisions[0].reason
