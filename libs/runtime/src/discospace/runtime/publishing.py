"""Publishing events: `to_<topic>(event)` sends the event's JSON under the event's key.

A publisher is declared with the event types it sends, so the service's AsyncAPI document
lists them; sending another type is a wiring bug and raises at once. An event whose message
would exceed the service's size limit (`max_message_bytes`) is refused before it is sent, with
`EventTooLargeError` and its sentence, rather than by the producer after it.

Inside a consumer's handler the send is not awaited: the broker's acknowledgement is waited for
before the message's offset is committed (`confirming.py`); anywhere else it is awaited.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import reduce
from operator import or_
from typing import Any

from faststream.kafka import KafkaBroker
from faststream.kafka.publisher.usecase import DefaultPublisher

from discospace.events import MAX_MESSAGE_BYTES, Event, encode_within
from discospace.runtime.confirming import deferring_to


def event_headers(event: Event) -> dict[str, str]:
    """Headers every event carries, for consumers that route without decoding."""
    return {"content-type": "application/json", "event-type": event.type}


class EventPublisher:
    """Sends events of the declared types to one topic.

    `route` picks the topic per event where one publisher stands for a family of topics (the
    per-pool measure topics): `topic` is then the template the AsyncAPI document shows.
    """

    def __init__(
        self,
        broker: KafkaBroker,
        topic: str,
        *event_types: type[Event],
        title: str | None = None,
        description: str | None = None,
        route: Callable[[Event], str] | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        if not event_types:
            raise TypeError(f"The publisher of {topic} must name the event types it sends.")
        self.topic = topic
        self.event_types = event_types
        self.route = route
        self.max_message_bytes = max_message_bytes
        schema: Any = reduce(or_, event_types) if len(event_types) > 1 else event_types[0]
        self.publisher: DefaultPublisher = broker.publisher(
            topic, schema=schema, title=title, description=description
        )

    async def __call__(self, event: Event) -> None:
        """Publish `event` to the declared topic, or to the one `route` picks for it.

        Raises `EventTooLargeError` when its message would not fit `max_message_bytes`. Within
        a consumer's handler it returns once the producer took the event (`confirming.py`),
        elsewhere once the broker acknowledged it.
        """
        if not isinstance(event, self.event_types):
            expected = " or ".join(t.type_name() for t in self.event_types)
            raise TypeError(f"{self.topic} takes {expected}, not {event.type}.")
        unconfirmed = deferring_to()
        sent = await self.publisher.publish(
            encode_within(event, self.max_message_bytes),
            topic=self.route(event) if self.route else self.topic,
            key=event.key(),
            headers=event_headers(event),
            correlation_id=event.correlation_id or event.event_id,
            no_confirm=unconfirmed is not None,
        )
        if unconfirmed is not None:
            unconfirmed.track(sent)

    async def all(self, events: Iterable[Event]) -> None:
        """Publish `events` in order (what a decide function returned)."""
        for event in events:
            await self(event)
