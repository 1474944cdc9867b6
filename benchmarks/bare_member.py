"""Bare aiokafka processes: the baselines of `bench_replicas.py`.

`member`: one consumer group member. It joins `group` on `topic` with the explorer's session
timeout and heartbeat, and writes a line `<wall time> <partitions>` to `out` at every
assignment; SIGTERM makes it leave the group (`consumer.stop()`), as a replica stopped with
SIGTERM does. Nothing else: no handler, no decision, no state, so a takeover through it is the
broker's and the client's floor.

`read`: a process that reads every record of the given partitions from the start up to the given
end offsets (`getmany`, nothing decoded) and exits: an explorer's start-up fold without the
explorer, timed like it from the process's launch.

Run (by the benchmark): python benchmarks/bare_member.py member BOOTSTRAP TOPIC GROUP SESSION_MS
OUT, or python benchmarks/bare_member.py read BOOTSTRAP ENDS_JSON ([[topic, partition, end]...])
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition


class Written(ConsumerRebalanceListener):
    def __init__(self, out: Path) -> None:
        self.out = out

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        return None

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        partitions = ",".join(str(tp.partition) for tp in sorted(assigned))
        with self.out.open("a") as out:
            out.write(f"{time.time()} {partitions}\n")


async def member(bootstrap: str, topic: str, group: str, session_ms: int, out: Path) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="latest",
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(100, session_ms // 3),  # as the explorer's membership
    )
    consumer.subscribe([topic], listener=Written(out))
    await consumer.start()
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    try:
        while not stopping.is_set():
            await consumer.getmany(timeout_ms=100)
    finally:
        await consumer.stop()  # leaves the group


async def read(bootstrap: str, ends: list[tuple[str, int, int]]) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        last = {TopicPartition(topic, partition): end for topic, partition, end in ends}
        consumer.assign(list(last))
        await consumer.seek_to_beginning(*last)
        left = {tp for tp, end in last.items() if end > 0}
        while left:
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                if records and records[-1].offset + 1 >= last[tp]:
                    left.discard(tp)
    finally:
        await consumer.stop()


if __name__ == "__main__":
    if sys.argv[1] == "read":
        asyncio.run(read(sys.argv[2], [tuple(end) for end in json.loads(sys.argv[3])]))
    else:
        bootstrap, topic, group, session_ms, out = sys.argv[2:7]
        asyncio.run(member(bootstrap, topic, group, int(session_ms), Path(out)))
