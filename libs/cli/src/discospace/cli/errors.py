"""Errors a CLI user can meet, and turning any of them into one line."""

from pathlib import Path

from pydantic import ValidationError

from discospace.core.errors import DiscospaceError
from discospace.core.loading import describe_validation_error


class CliError(DiscospaceError):
    """A command could not do what it was asked; ``str(error)`` is one sentence."""


class KafkaUnavailableError(CliError):
    """The Kafka bootstrap servers do not answer."""

    def __init__(self, bootstrap_servers: str) -> None:
        super().__init__(
            f"Kafka at {shown_addresses(bootstrap_servers)} is not answering: start it with "
            "`make up` or set KAFKA_BOOTSTRAP_SERVERS"
        )


class NoAnswerError(CliError):
    """A service did not answer a published request in time."""


def user_error_line(error: Exception) -> str:
    """``error: <one sentence>``; a validation error shows its first problem."""
    if isinstance(error, ValidationError):
        text = describe_validation_error(error, None, error.title)
    else:
        text = str(error)
    from discospace.cli.views import printable

    return "error: " + printable(" ".join(text.split()))


def nearest_existing(path: Path) -> Path:
    """`path`, or the nearest folder above it that exists: where a file in the way of making
    it, or a folder this user cannot write in, is found (mkdir says only "File exists")."""
    existing = path
    while existing != existing.parent:
        try:
            found = existing.exists()
        except OSError:  # a name too long to look up (ENAMETOOLONG): nothing can be there
            found = False
        if found:
            return existing
        existing = existing.parent
    return existing


def shown_addresses(addresses: str) -> str:
    """Kafka addresses as a message shows them: never with a password."""
    from discospace.core.urls import redacted_url

    if "@" in addresses:  # a password may hold a comma: masked whole, not piece by piece
        return redacted_url(addresses)
    return addresses
