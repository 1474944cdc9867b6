"""Which partition holds an operation: the one the Kafka producers put its events in.

Every event of an operation is keyed by its id (`operation_key`) and published by aiokafka,
whose default partitioner (like the Java client's) takes murmur2 of the key modulo the number of
partitions. So partition p of the operations topic holds the decisions about exactly the
operations `partition_of` places in p, and partition p of the measurements topic their results
(when both topics have as many partitions).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from aiokafka.partitioner import murmur2

from discospace.events.topics import operation_key


def partition_of(operation_id: str, partitions: int) -> int:
    """The partition, of a topic with `partitions` partitions, of the operation's events."""
    return (murmur2(operation_key(operation_id)) & 0x7FFFFFFF) % partitions


def owner_of(owned: Iterable[int], partitions: int) -> Callable[[str], bool]:
    """Whether an operation lies in one of the `owned` partitions (of `partitions` in all)."""
    chosen = frozenset(owned)
    return lambda operation_id: partition_of(operation_id, partitions) in chosen


def spread_ids(prefix: str, per_partition: int, partitions: int) -> list[str]:
    """Operation ids `op-<prefix>-<n>`, `per_partition` of them in each of the `partitions`
    partitions, sorted (to put operations on every partition, e.g. to share them among
    replicas in a test or a benchmark)."""
    chosen: dict[int, list[str]] = {partition: [] for partition in range(partitions)}
    for number in itertools.count():
        operation_id = f"op-{prefix}-{number}"
        placed = chosen[partition_of(operation_id, partitions)]
        if len(placed) < per_partition:
            placed.append(operation_id)
        if sum(map(len, chosen.values())) == per_partition * partitions:
            return sorted(itertools.chain(*chosen.values()))
    raise AssertionError("unreachable")
