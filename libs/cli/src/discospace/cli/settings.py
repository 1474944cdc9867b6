"""Where the CLI finds the system: Kafka, the topic prefix and the projector.

Each comes from a root option (``discospace --kafka ... space create ...``) or its environment
variable, with defaults that work on a laptop running ``make up``. The projector's API token,
when it asks for one, comes from ``DISCOSPACE_API_TOKEN`` only (an option would show it in the
process list and the shell's history).
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from discospace.events.topics import TopicNames

DEFAULT_TOPIC_PREFIX = "discospace"
"""`discospace.events.topics.DEFAULT_PREFIX`, spelled here so that reading the settings (every
command, and every help page, does) does not import the event contracts; a test keeps the two
equal."""
DEFAULT_KAFKA = "127.0.0.1:9092"
DEFAULT_PROJECTOR = "http://127.0.0.1:8105"
API_TOKEN_ENV = "DISCOSPACE_API_TOKEN"


def api_token_from_env() -> str | None:
    """The projector's API token from ``DISCOSPACE_API_TOKEN``; None when unset or blank."""
    return os.environ.get(API_TOKEN_ENV, "").strip() or None


@dataclass(frozen=True)
class CliSettings:
    """The connection settings every command reads from the root context."""

    kafka_bootstrap_servers: str = DEFAULT_KAFKA
    topic_prefix: str = DEFAULT_TOPIC_PREFIX
    projector_url: str = DEFAULT_PROJECTOR
    user: str = "cli"
    api_token: str | None = field(default_factory=api_token_from_env, repr=False)

    @property
    def bootstrap(self) -> str:
        """The Kafka addresses, each `host:port`; a malformed one is a user error."""
        from discospace.cli.errors import CliError, shown_addresses
        from discospace.runtime.settings import is_kafka_address

        addresses = [a.strip() for a in self.kafka_bootstrap_servers.split(",")]
        if not all(is_kafka_address(address) for address in addresses):
            shown = shown_addresses(self.kafka_bootstrap_servers)
            raise CliError(
                f"the Kafka address {shown!r} (--kafka or KAFKA_BOOTSTRAP_SERVERS) is not a "
                "comma-separated list of host:port (no scheme, no user name or password: "
                "those go in KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_USERNAME, ...)"
            )
        return self.kafka_bootstrap_servers

    @property
    def topics(self) -> TopicNames:
        """Topic names under the prefix; a prefix Kafka cannot use is a user error."""
        from discospace.cli.errors import CliError
        from discospace.events.topics import InvalidTopicNameError, TopicNames

        try:
            return TopicNames(self.topic_prefix)
        except InvalidTopicNameError as error:
            raise CliError(str(error)) from None


def current_user() -> str:
    """Who runs the command, as the ``submitted_by`` / ``requested_by`` of events."""
    try:
        return getpass.getuser() or "cli"
    except (KeyError, OSError):
        return "cli"


def settings_of(ctx: typer.Context) -> CliSettings:
    """The settings the root callback stored (defaults when a command runs on its own)."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, CliSettings) else CliSettings(user=current_user())
