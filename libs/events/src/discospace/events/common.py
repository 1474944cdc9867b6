"""Field types and mixins shared by several events."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, model_validator

from discospace.core.spec import Scalar
from discospace.events.envelope import Event
from discospace.events.topics import operation_key

NonEmptyStr = Annotated[str, Field(min_length=1)]
PropertyValues = dict[str, Scalar]
"""Property name -> value (string, whole number, real number or boolean)."""

OperationId = Annotated[
    str,
    Field(
        min_length=1,
        description="The operation this event belongs to; also the correlation id and Kafka key.",
        examples=["op-3f2a9c1d"],
    ),
]
SpaceId = Annotated[
    str,
    Field(
        min_length=1,
        description="Id of the discovery space: a content hash of its canonical form.",
        examples=["space-5e1d0c9b7a24"],
    ),
]


class OperationEvent(Event):
    """An event of one operation: correlated and keyed by `operation_id`.

    Every event of an operation, measurements included, goes to one partition, so a consumer
    sees an operation's history in the order it happened.
    """

    operation_id: OperationId

    @model_validator(mode="after")
    def _correlate_with_operation(self) -> Self:
        return self._correlated_with(self.operation_id)

    def key(self) -> bytes:
        return operation_key(self.operation_id)
