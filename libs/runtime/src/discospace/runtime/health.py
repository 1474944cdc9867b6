"""/health: 200 while the service reaches its Kafka broker, no consumer of it is stalled, and
every event it published was confirmed or is still on its way.

The body of a healthy service is `{"service": ..., "status": "ok", "kafka": "connected"}`.
503 otherwise, with a JSON body that says why: `"kafka": "unreachable"`, or
`"status": "stalled"` and `"stalled"`, one entry per stalled partition naming the consumer
group, the topic, the partition, the offset and the reason (see `stalls.py` for the rules):

    {"service": "registry", "status": "stalled", "kafka": "connected",
     "stalled": [{"group": "discospace.registry", "topic": "discospace.space-submissions",
                  "partition": 0, "offset": 12, "reason": "the message at offset 12 failed
                  11 times in 10 s and is still retried (last error: ConnectionError: ...)"}]}

A service one of whose handlers' sends Kafka never confirmed (`confirming.py`) commits nothing
any more and is stopping to be started again: from that moment until its process ends,
`"status": "failed"` with the sentence in `"reason"`, so a probe or a load balancer does not
count it as healthy during its stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from faststream.asgi import AsgiResponse
from faststream.asgi.types import Scope
from faststream.kafka import KafkaBroker
from faststream.kafka.subscriber.usecase import LogicSubscriber
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from discospace.runtime.asgi import ReadHandler
from discospace.runtime.lag import group_of
from discospace.runtime.stalls import StallWatch


def _json(status: int, body: dict[str, Any]) -> AsgiResponse:
    return AsgiResponse(
        json.dumps(body).encode(), status, headers={"content-type": "application/json"}
    )


def health_of(
    service: str,
    kafka_reached: bool,
    watch: StallWatch,
    failure: str | None = None,
    problems: Sequence[str] = (),
) -> tuple[int, dict[str, Any]]:
    """The status code and body of /health, from whether the broker answered, the stalls,
    `failure`: why the service is stopping (a send Kafka never confirmed), None while it is not,
    and `problems`: what keeps it from doing its work for now (a store refusing every write)."""
    stalled = [stall.as_json() for stall in watch.stalls()]
    body: dict[str, Any]
    if failure is not None:
        body = {
            "service": service,
            "status": "failed",
            "kafka": "connected" if kafka_reached else "unreachable",
            "reason": failure,
        }
    elif not kafka_reached:
        body = {"service": service, "status": "unavailable", "kafka": "unreachable"}
    elif problems:
        body = {"service": service, "status": "failing", "kafka": "connected"}
        body["problems"] = list(problems)
    else:
        body = {"service": service, "status": "stalled" if stalled else "ok", "kafka": "connected"}
    if stalled:
        body["stalled"] = stalled
    return (200 if body["status"] == "ok" else 503), body


def make_health(
    broker: KafkaBroker,
    service: str,
    timeout_s: float,
    watch: StallWatch | None = None,
    failure: Callable[[], object | None] = lambda: None,
    problems: Sequence[Callable[[], str | None]] = (),
) -> ReadHandler:
    """The /health handler of `service`; it asks the broker for its cluster description,
    `watch` for stalled consumers, `failure` whether the service failed for good (an
    exception whose sentence says why; None while it has not), and each of `problems` (read
    at each call: a list the service appends to) what keeps it from working for now."""
    watch = watch or StallWatch()

    async def health(scope: Scope) -> AsgiResponse:
        failed = failure()
        reason = None if failed is None else str(failed)
        found = [problem for check in problems if (problem := check()) is not None]
        return _json(*health_of(service, await broker.ping(timeout_s), watch, reason, found))

    return ReadHandler(health, include_in_schema=False)


class StalledConsumers(Collector):
    """`discospace_consumer_stalled{group, topic}`: 1 while a partition of that consumer is
    stalled, else 0; read at each scrape. Every (group, topic) a subscriber of the broker names
    is listed from the start (at 0), so is every topic of `known_topics` (the service's fixed
    topics) a pattern subscriber's pattern matches, and any other topic of a pattern once it
    reads it."""

    NAME = "discospace_consumer_stalled"
    HELP = (
        "1 while a consumer (group, topic) of this process is stalled: it keeps retrying one "
        "message, holds one too long, or does not move on while messages wait; else 0."
    )

    def __init__(
        self,
        broker: KafkaBroker,
        service: str,
        watch: StallWatch,
        known_topics: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.broker = broker
        self.service = service
        self.watch = watch
        self.known_topics = known_topics

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(self.NAME, self.HELP, labels=["group", "topic"])]

    def collect(self) -> list[Metric]:
        values = dict.fromkeys(self._consumers(), 0)
        values.update({(stall.group, stall.topic): 1 for stall in self.watch.stalls()})
        family = GaugeMetricFamily(self.NAME, self.HELP, labels=["group", "topic"])
        for (group, topic), value in sorted(values.items()):
            family.add_metric([group, topic], value)
        return [family]

    def _consumers(self) -> set[tuple[str, str]]:
        named = {
            (group_of(subscriber, self.service), topic)
            for subscriber in self.broker.subscribers
            if isinstance(subscriber, LogicSubscriber)
            for topic in [*subscriber.topic_names_for_subscribe, *self._matched(subscriber)]
        }
        return named | {(group, topic) for group, topic, _ in self.watch.progress}

    def _matched(self, subscriber: LogicSubscriber[Any]) -> list[str]:
        """The known topics a pattern subscriber's pattern matches (none without a pattern;
        FastStream keeps it in `_pattern`: if a later version moves it, the topics appear once
        the subscriber reads them)."""
        pattern = getattr(subscriber, "_pattern", None)
        if not isinstance(pattern, str):
            return []
        return [topic for topic in self.known_topics() if re.fullmatch(pattern, topic)]
