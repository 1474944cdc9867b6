"""The app factory: from settings, a wired service (broker, HTTP endpoints, metrics, contracts).

A service's `app.py` calls `create_service(settings, description=...)`, declares its
consumers and publishers on the returned `Service`, and hands it to `run`:

    service = create_service(settings, description="Validates and registers spaces.")
    to_spaces = service.publisher(service.topics.spaces, SpaceRegistered, SpaceRejected)

    @service.consumer(service.topics.space_submissions)
    async def on_space_submitted(event: SpaceSubmitted) -> None: ...

A service whose state is a fold of topics declares the consumers that fold them with
`service.follow(...)`: at start, before the broker consumes, `folding.fold_then_follow` hands
their handlers every event up to where the topics end, then they read on from exactly there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from faststream.asgi import AsgiFastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.prometheus import KafkaPrometheusMiddleware
from faststream.specification import AsyncAPI
from prometheus_client import Gauge

from discospace.events import DeadLettered, Event
from discospace.events.factory import Clock, utc_now
from discospace.events.topics import TopicNames
from discospace.runtime.asgi import ServiceApp, read_only
from discospace.runtime.confirming import Unconfirmed
from discospace.runtime.consuming import Consumer
from discospace.runtime.deadletter import DeadLetterPolicy, ReportedHere
from discospace.runtime.failures import Attempts
from discospace.runtime.folding import FoldReport, fold_then_follow
from discospace.runtime.health import StalledConsumers, make_health
from discospace.runtime.lag import ConsumerLag
from discospace.runtime.metrics import RuntimeMetrics
from discospace.runtime.provisioning import provision_topics
from discospace.runtime.publishing import EventPublisher
from discospace.runtime.security import kafka_security
from discospace.runtime.settings import ServiceSettings
from discospace.runtime.stalls import StallRules, StallWatch

CONTRACTS_VERSION = "1.0.0"
"""Version written in every AsyncAPI document; bump it with the event contracts."""

START_WAIT_S = 10.0
"""How long a stop waits for a start still under way to end (`Service.wait_until_started`):
with `graceful_timeout_s` (10 s) for the stop itself, within the 30 s a Kubernetes pod or a
compose service is given between SIGTERM and SIGKILL."""

Hook = Callable[[], Awaitable[Any]]
logger = logging.getLogger("discospace.runtime.service")


@dataclass
class Service:
    """One running service: its settings, broker, ASGI app, metrics and declared topics."""

    settings: ServiceSettings
    broker: KafkaBroker
    app: AsgiFastStream
    metrics: RuntimeMetrics
    clock: Clock
    prometheus: KafkaPrometheusMiddleware | None = None
    topics_used: set[str] = field(default_factory=set)
    state: Any = None
    """The service's folded state, if it keeps one (for its handlers, views and tests)."""
    followers: list[Consumer] = field(default_factory=list)
    fold_report: FoldReport | None = None
    """What the start-up fold of the followers read (None before it ran)."""
    lag: ConsumerLag | None = None
    """Sets `discospace_consumer_lag` while the service runs."""
    stalls: StallWatch = field(default_factory=StallWatch)
    """Which consumer is stalled, for /health and `discospace_consumer_stalled`."""
    unconfirmed: Unconfirmed = field(default_factory=Unconfirmed)
    """What its handlers published that the broker has not confirmed yet (`confirming.py`)."""
    passed_over: list[Callable[[str, int, int], None]] = field(default_factory=list)
    """Told (topic, partition, offset) of every event a consumer passes over before FastStream's
    pipeline (no handler takes it: `Consumer._passed_over`), which broker middlewares never see
    (`ReadPositions.saw` registers here)."""
    health_problems: list[Callable[[], str | None]] = field(default_factory=list)
    """Each says what keeps the service from doing its work for now (one sentence), or None:
    /health answers 503 `failing` with them (the projector's store refusing every write)."""
    done_with: list[Callable[[str, int, int], None]] = field(default_factory=list)
    """Told (topic, partition, offset) of every message a consumer is done with: handled, set
    aside on the dead-letter topic, or folded already; not one handed back to be delivered
    again (`ReadPositions.saw` registers here)."""
    _start: asyncio.Task[Any] | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.settings.service_name

    @property
    def topics(self) -> TopicNames:
        return self.settings.topics

    def consumer(
        self,
        *topics: str,
        pattern: str | None = None,
        replay: bool = False,
        group_suffix: str = "",
        description: str | None = None,
        max_poll_interval_ms: int | None = None,
        deduplicate: bool = True,
    ) -> Consumer:
        """A subscription of this service's consumer group to `topics` (or a pattern).

        `replay=True`: no group; every start reads the topics from the beginning (`follow` is
        the way to fold the state the service needs: it also folds them once before the broker
        consumes, and has the consumer go on from there). `group_suffix` gives a
        subscription its own group (`<group>.<suffix>`), e.g. a pattern next to fixed topics.
        `max_poll_interval_ms`: how long one message may take to handle before the consumer
        is deemed stuck and leaves the group (Kafka's default, 5 minutes, when None); a
        handler that runs longer loses its partitions to another member. `deduplicate=False`:
        the handlers also get events whose id they were given before.
        """
        self.topics_used.update(topics)
        for topic in topics:
            self.metrics.show_consumed(self.prometheus, self.name, topic)
        group = self.settings.consumer_group + (f".{group_suffix}" if group_suffix else "")
        consumer = Consumer(
            self.broker,
            *topics,
            pattern=pattern,
            group_id=None if replay else group,
            metrics=self.metrics,
            description=description,
            max_poll_interval_ms=max_poll_interval_ms,
            fetch_max_wait_ms=self.settings.fetch_max_wait_ms,
            fetch_min_bytes=self.settings.fetch_min_bytes,
            fetch_idle_wait_ms=self.settings.fetch_idle_wait_ms,
            deduplicate=deduplicate,
            retries=self.settings.retry_policy,
            unconfirmed=self.unconfirmed,
            passed_over=self.passed_over,
        )
        if consumer.commits is not None:  # its commit task ends once the broker has stopped
            self.on_shutdown(consumer.commits.stop)
        return consumer

    def follow(
        self, *topics: str, description: str | None = None, deduplicate: bool = True
    ) -> Consumer:
        """A consumer without a group whose handlers fold `topics`: at start, before the broker
        consumes, they are handed every event the topics hold (`fold_then_follow`, one for
        every follower of the service); then the consumer reads on from exactly there."""
        follower = self.consumer(
            *topics, replay=True, description=description, deduplicate=deduplicate
        )
        if not self.followers:
            self.on_startup(self.fold_followed)
        self.followers.append(follower)
        return follower

    async def fold_followed(self) -> None:
        """Fold the followers' topics up to their end; the followers go on from there."""
        self.fold_report = await fold_then_follow(
            self.settings.kafka_bootstrap_servers,
            *self.followers,
            client_id=f"discospace-{self.name}-fold",
        )
        logger.info("%s: %s", self.name, self.fold_report)

    def publisher(
        self,
        topic: str,
        *event_types: type[Event],
        description: str | None = None,
        route: Callable[[Event], str] | None = None,
    ) -> EventPublisher:
        """`to_<topic>`: publishes events of `event_types` to `topic` (or where `route` says)."""
        if route is None:
            self.topics_used.add(topic)
        logical = topic.removeprefix(f"{self.topics.prefix}.").split(".")[0]
        return EventPublisher(
            self.broker,
            topic,
            *event_types,
            title=f"{topic}:to_{logical.replace('-', '_')}",
            description=description,
            route=route,
            max_message_bytes=self.settings.max_message_bytes,
        )

    def on_startup(self, hook: Hook) -> Hook:
        """Run `hook` before the broker connects (build clients, replay state)."""
        self.app.on_startup(hook)
        return hook

    def after_startup(self, hook: Hook) -> Hook:
        """Run `hook` once the broker is connected (announce, publish)."""
        self.app.after_startup(hook)
        return hook

    def before_shutdown(self, hook: Hook) -> Hook:
        """Run `hook` when shutdown begins, while the broker still consumes and publishes."""
        self.app.on_shutdown(hook)
        return hook

    def on_shutdown(self, hook: Hook) -> Hook:
        """Run `hook` after the broker stopped consuming (close clients)."""
        self.app.after_shutdown(hook)
        return hook

    async def begin_start(self) -> None:
        """The first startup hook: note the task that starts the service (FastStream's start
        task, which runs every startup hook, starts the broker, runs every `after_startup`
        hook, and ends)."""
        self._start = asyncio.current_task()

    async def wait_until_started(self) -> None:
        """The first shutdown hook: let a start still under way end before anything stops.

        FastStream's lifespan (what uvicorn and `start_lifespan_context` run) hands over once
        the startup hooks ran, and starts the broker and the `after_startup` hooks after that.
        A stop that came meanwhile (a SIGTERM during start, a caller that leaves at once) found
        the subscribers' Kafka consumers not built yet and stopped nothing; the start then
        built and opened them, and started the lag task, after their stop. The wait ends when
        the start ends, however it ends, or after `START_WAIT_S` with a warning (the stop then
        goes on, and the start is cancelled after it).
        """
        start = self._start
        if start is None or start.done() or start is asyncio.current_task():
            return
        await asyncio.wait({start}, timeout=START_WAIT_S)
        if not start.done():
            logger.warning(
                "stopping %s before its start ended (waited %.0f s)", self.name, START_WAIT_S
            )

    async def provision_topics(self) -> None:
        """Create the fixed topics this service reads or writes, if missing."""
        await provision_topics(
            self.settings.kafka_bootstrap_servers,
            self.topics_used,
            self.topics,
            partitions=self.settings.topic_partitions,
            replication=self.settings.topic_replication,
            max_message_bytes=self.settings.max_message_bytes,
        )


def bootstrap_addresses(servers: str) -> list[str]:
    """`"a:9092, b:9092"` as `["a:9092", "b:9092"]` (aiokafka's own clients split it alike)."""
    return [address.strip() for address in servers.split(",") if address.strip()]


def _broker(settings: ServiceSettings, description: str) -> KafkaBroker:
    """The service's FastStream broker, logged in as this process's principal (`security.py`:
    bad security settings stop the service here, with a sentence)."""
    name = settings.service_name
    return KafkaBroker(
        # FastStream takes one string as one address: a cluster's list is split here.
        bootstrap_addresses(settings.kafka_bootstrap_servers),
        security=kafka_security().faststream(),
        client_id=f"discospace-{name}",
        graceful_timeout=settings.graceful_timeout_s,
        max_request_size=settings.max_message_bytes,
        # Every in-sync replica has a message before it counts as sent (a cluster that loses
        # its leader loses nothing acknowledged), and a send retried after a lost answer is not
        # written twice.
        acks="all",
        enable_idempotence=True,
        # Pattern subscriptions (measure.<pool>) see a new pool's topic at the next refresh.
        metadata_max_age_ms=int(settings.metadata_max_age_s * 1000),
        logger=_broker_logger(name),
        log_level=logging.DEBUG,
        description=description,
    )


def _broker_logger(name: str) -> logging.Logger:
    """FastStream's logger for the service `name`, without the handler errors the dead-letter
    middleware logged already (`ReportedHere`)."""
    broker_logger = logging.getLogger(f"discospace.{name}.broker")
    if not any(isinstance(f, ReportedHere) for f in broker_logger.filters):
        broker_logger.addFilter(ReportedHere())
    return broker_logger


def create_service(
    settings: ServiceSettings, *, description: str, clock: Clock = utc_now
) -> Service:
    """A service with its broker, /metrics, /health, dead-letter policy and AsyncAPI document."""
    name = settings.service_name
    metrics = RuntimeMetrics.create(name)
    broker = _broker(settings, description)
    stalls = StallWatch(StallRules(settings.stall_after_s, settings.stall_failures))
    unconfirmed = Unconfirmed()
    health_problems: list[Callable[[], str | None]] = []
    topics_used: set[str] = set()
    metrics.register(StalledConsumers(broker, name, stalls, lambda: sorted(topics_used)))
    app = ServiceApp(
        broker,
        asgi_routes=[
            ("/metrics", read_only(metrics.asgi_app())),
            (
                "/health",
                make_health(
                    broker,
                    name,
                    settings.health_timeout_s,
                    stalls,
                    lambda: unconfirmed.failure,
                    health_problems,
                ),
            ),
        ],
        logger=logging.getLogger(f"discospace.{name}"),
        specification=AsyncAPI(
            broker,
            title=f"discospace {name}",
            version=CONTRACTS_VERSION,
            description=description,
        ),
    )
    prometheus = KafkaPrometheusMiddleware(registry=metrics.registry, app_name=name)
    service = Service(
        settings,
        broker,
        app,
        metrics,
        clock,
        prometheus,
        topics_used=topics_used,
        stalls=stalls,
        unconfirmed=unconfirmed,
        health_problems=health_problems,
    )
    Gauge(
        "discospace_sends_unconfirmed",
        "Events this process's handlers published that Kafka has not confirmed yet: their "
        "messages' offsets are committed once it has (confirming.py).",
        registry=metrics.registry,
    ).set_function(lambda: service.unconfirmed.pending)
    to_dead_letter = service.publisher(
        settings.topics.dead_letter,
        DeadLettered,
        description="Messages this service could not read, with the reason.",
    )
    broker.add_middleware(prometheus)
    broker.add_middleware(
        DeadLetterPolicy(
            publish=to_dead_letter,
            consumer=name,
            metrics=metrics,
            clock=clock,
            attempts=Attempts(settings.retry_policy),
            max_message_bytes=settings.max_message_bytes,
            watch=stalls,
            done=service.done_with,
        )
    )
    app.on_startup(service.begin_start)
    service.before_shutdown(service.wait_until_started)
    app.on_startup(service.provision_topics)
    service.lag = ConsumerLag(broker, metrics.consumer_lag, name, watch=stalls)
    service.after_startup(service.lag.start)
    service.before_shutdown(service.lag.stop)
    return service
