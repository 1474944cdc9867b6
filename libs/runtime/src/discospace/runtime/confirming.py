"""Events a handler publishes, confirmed by the broker before its message's offset is committed,
not one at a time on the handler's path.

A handler used to await the broker's acknowledgement of each event it published before it
returned, so a consumer handed out its next message a round trip later, and the producer sent
every event in a request of its own. Inside a consumer's handler (`Consumer` wraps each one in
`Unconfirmed.deferring`), `EventPublisher` now hands the event to the producer and goes on; the
producer puts what the handlers of the service publish meanwhile into one request per
partition leader, and the service's `Unconfirmed` keeps each send's future until the broker
answers. Everything else that publishes (HTTP endpoints, start-up and shutdown hooks, timers,
the dead-letter middleware) still awaits each acknowledgement.

At-least-once holds as before: a consumer group commits a message's offset only once every send
made before the commit began is confirmed (`OffsetCommits` awaits `Unconfirmed.settle` after it
took the offsets to commit, so the sends of every handler done with by then are among those it
waits for), and the close of a consumer or a rebalance commits the same way. A crash before
that delivers the message again, and its handler publishes again, under the same
deterministic ids (which the consumers drop as duplicates), exactly as before.

A send the producer gives up on (it retries a broker error for `request_timeout_ms`, 40 s by
default) cannot be made again in its place: later sends of the same key may be in the log
already. It fails the service instead, as a crash would: no offset is committed any more, the
failure is logged once with its reason, and `on_failure` is told (the runner then stops the
process with status 1, so its supervisor starts it again, and it reads on from the last
commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

logger = logging.getLogger("discospace.runtime.confirming")

_DEFERRING: ContextVar[Unconfirmed | None] = ContextVar("discospace_deferring", default=None)


class SendFailedError(Exception):
    """A send the broker never confirmed: nothing is committed by this service any more."""

    def __init__(self, cause: BaseException) -> None:
        reason = str(cause) or type(cause).__name__
        super().__init__(f"an event this service published was not confirmed by Kafka ({reason})")


class Unconfirmed:
    """The sends of one service that the broker has not confirmed yet, and the first failure."""

    def __init__(self, on_failure: Callable[[SendFailedError], None] | None = None) -> None:
        self._pending: set[asyncio.Future[Any]] = set()
        self.failure: SendFailedError | None = None
        """The first send that failed; once set, `settle` raises it for good."""
        self.on_failure = on_failure
        self.confirmed = 0
        """Sends confirmed since the service started."""

    @contextlib.contextmanager
    def deferring(self) -> Iterator[None]:
        """Within this block (a handler's call), publishers leave their sends to this object."""
        token = _DEFERRING.set(self)
        try:
            yield
        finally:
            _DEFERRING.reset(token)

    def track(self, sent: object) -> None:
        """Keep `sent` (the producer's future of one send) until the broker answers it."""
        if not isinstance(sent, asyncio.Future):  # a test broker delivers at once: nothing to wait
            return
        self._pending.add(sent)
        sent.add_done_callback(self._answered)

    @property
    def pending(self) -> int:
        """Sends not confirmed yet."""
        return len(self._pending)

    async def settle(self) -> None:
        """Wait until every send made so far is answered; raise `SendFailedError` if any send
        of this service failed (now or before)."""
        if self.failure is None and self._pending:
            await asyncio.wait(list(self._pending))
        if self.failure is not None:
            raise self.failure

    def _answered(self, sent: asyncio.Future[Any]) -> None:
        self._pending.discard(sent)
        error = (
            asyncio.CancelledError("the producer closed before it sent it")
            if sent.cancelled()
            else sent.exception()
        )
        if error is None:
            self.confirmed += 1
            return
        if self.failure is not None:
            return
        self.failure = SendFailedError(error)
        logger.error(
            "%s: this service commits no offset any more and must be started again (the "
            "messages since its last commit are delivered again)",
            self.failure,
        )
        if self.on_failure is not None:
            self.on_failure(self.failure)


def deferring_to() -> Unconfirmed | None:
    """The `Unconfirmed` a send made now is left to; None outside a consumer's handler."""
    return _DEFERRING.get()
