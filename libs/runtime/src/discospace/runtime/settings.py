"""Settings every service shares; each service subclasses them with its own env prefix.

A service reads `DISCOSPACE_<NAME>_<FIELD>` first. A few settings are the same for the whole
deployment (the Kafka cluster, the topic prefix, the ClickHouse server, the log level), so they
may also be given once, without the service's prefix: `KAFKA_BOOTSTRAP_SERVERS`,
`DISCOSPACE_TOPIC_PREFIX`, `CLICKHOUSE_URL`, `DISCOSPACE_LOG_LEVEL`.

How a process logs in to Kafka (`KafkaSecuritySettings`: `KAFKA_SECURITY_PROTOCOL`,
`KAFKA_SASL_MECHANISM`, `KAFKA_SASL_USERNAME`, `KAFKA_SASL_PASSWORD` or
`KAFKA_SASL_PASSWORD_FILE`, `KAFKA_SSL_CAFILE`)
is read from those variables only, without a service prefix: a process is one principal, and
every Kafka client in it (the service's broker, its folds and replays, the CLI's clients) must
log in the same way. `discospace.runtime.security` checks them and builds the clients' settings.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from discospace.core.urls import redacted_url
from discospace.events import MAX_MESSAGE_BYTES
from discospace.events.topics import DEFAULT_PREFIX, TopicNames
from discospace.runtime.failures import RetryPolicy

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
SecurityProtocol = Literal["PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]
SASL_MECHANISM: SaslMechanism = "SCRAM-SHA-512"
"""The SASL mechanism a login uses unless `KAFKA_SASL_MECHANISM` names another: SCRAM-SHA-512
(Amazon MSK, Strimzi); SCRAM-SHA-256 (Aiven, Redpanda) and PLAIN (Confluent Cloud's API keys;
the password travels inside TLS only) are the others. deploy/local/kafka.sh's broker offers the
three."""

SHARED_ENV: dict[str, str] = {
    "kafka_bootstrap_servers": "KAFKA_BOOTSTRAP_SERVERS",
    "topic_prefix": "DISCOSPACE_TOPIC_PREFIX",
    "log_level": "DISCOSPACE_LOG_LEVEL",
    "clickhouse_url": "CLICKHOUSE_URL",
}
"""Settings that may be given once for every service, and the variable that gives them."""


class SharedEnvSource(PydanticBaseSettingsSource):
    """Reads the deployment-wide variables of `SHARED_ENV` for the fields a service has."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        variable = SHARED_ENV.get(field_name)
        value = os.environ.get(variable) if variable else None
        return value, field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, field in self.settings_cls.model_fields.items():
            value, _, _ = self.get_field_value(field, name)
            if value is not None:
                values[name] = value
        return values


class KafkaSecuritySettings(BaseSettings):
    """How this process's Kafka clients connect and log in; the same variables for every service
    and the CLI. PLAINTEXT (no TLS, no login) by default, for a laptop's or a test's broker;
    `deploy/local/kafka.sh` starts a SASL_SSL broker unless asked for plaintext, and writes
    these variables for each of its principals to `<state>/credentials/<principal>.env`."""

    model_config = SettingsConfigDict(env_prefix="KAFKA_", extra="ignore")

    security_protocol: SecurityProtocol = Field(
        default="PLAINTEXT",
        description="PLAINTEXT, or SASL_SSL: TLS, and a login as `KAFKA_SASL_USERNAME`.",
    )
    sasl_mechanism: SaslMechanism | None = Field(
        default=None,
        description="How a SASL_SSL login proves its password: SCRAM-SHA-512 (when unset), "
        "SCRAM-SHA-256 or PLAIN.",
    )
    sasl_username: str | None = Field(default=None, description="The principal to log in as.")
    sasl_password: SecretStr | None = Field(
        default=None, description="Its password (or give `KAFKA_SASL_PASSWORD_FILE`)."
    )
    sasl_password_file: Path | None = Field(
        default=None,
        description="A file holding the password (a mounted secret); a final newline is not "
        "part of it.",
    )
    ssl_cafile: Path | None = Field(
        default=None,
        description="The CA certificate(s), PEM, that signed the brokers' certificates; the "
        "system's trusted CAs when unset.",
    )

    @field_validator("security_protocol", "sasl_mechanism", mode="before")
    @classmethod
    def _upper_case(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator(
        "sasl_mechanism", "sasl_username", "sasl_password_file", "ssl_cafile", mode="before"
    )
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return blank_is_unset(value)


class ServiceSettings(BaseSettings):
    """The settings of one service; subclasses set `service_name`, the env prefix and the port."""

    # `inf` and `nan` are refused for every number: a timeout of inf would pass `gt=0` and
    # overflow where it is made whole milliseconds.
    model_config = SettingsConfigDict(
        env_prefix="DISCOSPACE_SERVICE_", extra="ignore", allow_inf_nan=False
    )

    service_name: ClassVar[str] = "service"

    kafka_bootstrap_servers: str = Field(
        default="127.0.0.1:9092", description="Kafka bootstrap servers, comma separated."
    )
    topic_prefix: str = Field(
        default=DEFAULT_PREFIX, description="Prefix of every topic name (`<prefix>.<topic>`)."
    )

    @field_validator("fetch_idle_wait_ms", mode="before")
    @classmethod
    def _none_written(cls, value: object) -> object:
        """`None` (as the description offers) or a blank value, from the environment too."""
        if isinstance(value, str) and value.strip().lower() == "none":
            return None
        return blank_is_unset(value)

    @field_validator("kafka_bootstrap_servers")
    @classmethod
    def _addresses(cls, value: str) -> str:
        """Each address `host:port`, a port Kafka can listen on (aiokafka would raise a bare
        ValueError or OverflowError on another, from deep in its start)."""
        addresses = [address.strip() for address in value.split(",") if address.strip()]
        wrong = [address for address in addresses if not is_kafka_address(address)]
        if not addresses or wrong:
            # a password may hold a comma: the whole value masked, not a piece of it
            shown = redacted_url(value) if "@" in value else (wrong[0] if wrong else "")
            what = f"{shown!r} is not host:port (a port from 1 to 65535)" if wrong else "empty"
            raise ValueError(
                f"{what}; give KAFKA_BOOTSTRAP_SERVERS as a comma-separated list of host:port"
            )
        return ",".join(addresses)

    group_id: str | None = Field(
        default=None,
        description="Kafka consumer group; by default `<topic prefix>.<service name>`.",
    )
    http_host: str = Field(default="127.0.0.1", description="Address of /health and /metrics.")
    http_port: int = Field(default=8100, ge=0, le=65535, description="Port of /health, /metrics.")
    log_level: LogLevel = Field(default="INFO", description="Lowest level of log line written.")
    graceful_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="On shutdown, how long an in-flight message may take to finish before it "
        "is handed back uncommitted.",
    )
    retry_backoff_s: float = Field(
        default=0.5,
        ge=0,
        description="Pause before a message whose handler failed is delivered again; it "
        "doubles with each failure in a row of the same message, up to `retry_backoff_max_s`.",
    )
    retry_backoff_max_s: float = Field(
        default=30.0,
        ge=0,
        description="The longest pause before a failed message is delivered again.",
    )
    handler_max_attempts: int = Field(
        default=5,
        ge=1,
        description="Tries of a message whose handler keeps failing with an error that is not "
        "transient (not a dependency that is down: see discospace.runtime.failures); after "
        "the last it is dead-lettered with the reason and the partition moves on. A transient "
        "failure is tried again without bound.",
    )
    topic_partitions: int = Field(
        default=3,
        ge=1,
        le=2**31 - 1,  # Kafka's Int32: beyond it the request could not be written (a traceback)
        description="Partitions of the topics this service creates.",
    )
    topic_replication: int = Field(
        default=1,
        ge=1,
        le=2**15 - 1,  # Kafka's Int16
        description="Replication factor of the topics this service creates.",
    )
    fetch_max_wait_ms: int = Field(
        default=5,
        ge=0,
        le=60_000,
        description="Longest a consumer's fetch waits at the broker for fetch_min_bytes while "
        "records flow (Kafka's fetch.max.wait.ms; its default is 500). A consumer has one fetch "
        "in flight per broker, so a partition whose records were just handled waits for the "
        "fetch of the others to return before it is fetched again: this bounds that wait, and "
        "how long a record waits for others to gather. 500 made every hop of the discovery loop "
        "up to half a second slower; fetch_idle_wait_ms takes a consumer idle for a second to "
        "a longer wait, so a short one costs no fetches while nothing happens. See "
        "fetch_min_bytes for the figures of 5.",
    )
    fetch_min_bytes: int = Field(
        default=4096,
        ge=1,
        le=2**31 - 1,  # Kafka's Int32
        description="Bytes a consumer's fetch asks the broker to gather (about six events), or "
        "fetch_max_wait_ms, while records flow; an idle consumer's fetch asks for one byte, so "
        "the first record after a quiet spell is answered at once (discospace.runtime.fetching). "
        "With 4096 and 5 ms against 1 and 20 ms (benchmarks/bench_loop.py, 3 rounds each, one "
        "run after the other): explorer, sampler and actuator 2.40, 2.78 and 2.55 ms of CPU per "
        "measurement against 2.77, 3.10 and 2.88, the walk 92.5 against 85.3 measurements per "
        "second, the memoised 80-entity walk 0.29 against 0.45 s (medians). 1: every record as "
        "soon as it is there.",
    )
    fetch_idle_wait_ms: int | None = Field(
        default=500,
        ge=0,
        le=60_000,
        description="Longest a consumer's fetch waits at the broker once the consumer has had "
        "no records for a second (an idle consumer's fetch covers every partition it reads, so "
        "the broker answers it as soon as a record arrives); records flowing again bring back "
        "fetch_max_wait_ms. None, or no more than fetch_max_wait_ms: always that. At 500 an "
        "idle loop used 15-18% of one core against 41-45% without it, and the loop under full "
        "load was not slower. See discospace.runtime.fetching.",
    )
    gc_young_threshold: int = Field(
        default=50_000,
        ge=1,
        le=2**31 - 1,  # Python's collector takes a C int
        description="Allocations between two collections of the youngest generation of "
        "Python's cyclic garbage collector (Python's own is 700): at 700 a service that keeps "
        "decoded events a while walks them again and again (the projector ran 1.36x faster at "
        "50,000). Cyclic garbage waits that many allocations before it is freed. See "
        "discospace.runtime.collector.",
    )
    metadata_max_age_s: float = Field(
        default=5.0,
        ge=0.1,
        le=86_400,
        description="How often Kafka metadata is refreshed, so pattern subscriptions see new "
        "topics (a new pool's measure topic) within this time (0.1 s to a day).",
    )
    max_message_bytes: int = Field(
        default=MAX_MESSAGE_BYTES,
        ge=64 * 1024,
        description="Largest message this service sends, key and headers included (the "
        "producer's max.request.size). An event over it is refused where it is produced, with "
        "a sentence; a dead letter cuts its original short to fit. Keep it at most the "
        "broker's message.max.bytes and the topics' max.message.bytes.",
    )
    health_timeout_s: float = Field(
        default=2.0, gt=0, description="How long /health waits for the broker to answer."
    )
    stall_after_s: float = Field(
        default=60.0,
        gt=0,
        description="A consumer is stalled (/health answers 503 naming it) when a message has "
        "kept failing this long, or messages wait and its position has not moved this long, "
        "or a handler has held one message this long (and longer than its max poll interval).",
    )
    stall_failures: int = Field(
        default=10,
        ge=1,
        description="A consumer whose handler failed on the same message more than this many "
        "times in a row is stalled.",
    )
    log_repeat_interval_s: float = Field(
        default=10.0,
        ge=0,
        description="Warnings and errors of one kind (same logger, level and message template) "
        "are written at most once per this many seconds; the next one written says how many "
        "were left out. 0 writes every one.",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The service's own variables win over the deployment-wide ones."""
        shared = SharedEnvSource(settings_cls)
        return init_settings, env_settings, shared, dotenv_settings, file_secret_settings

    @property
    def topics(self) -> TopicNames:
        """The concrete topic names under this deployment's prefix."""
        return TopicNames(self.topic_prefix)

    @property
    def retry_policy(self) -> RetryPolicy:
        """How a message whose handler failed is tried again (`failures.py`)."""
        return RetryPolicy(
            self.handler_max_attempts, self.retry_backoff_s, self.retry_backoff_max_s
        )

    @property
    def consumer_group(self) -> str:
        """The consumer group of this service: one per service (per pool for actuators)."""
        return self.group_id or f"{self.topic_prefix}.{self.service_name}"


_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+")
"""A host name, an IPv4 address, or an IPv6 address in brackets: no scheme, no user info."""


def is_kafka_address(address: str) -> bool:
    """Whether `address` is `host:port` with a port Kafka can listen on (the services' settings
    and the CLI's `--kafka` check it alike). A URL (`SASL_SSL://...`) or user info
    (`user:password@host`) is not one: Kafka takes neither, and a message would show it."""
    host, _, port = address.rpartition(":")
    digits = port.isascii() and port.isdigit()  # "²" and "٨" are digits to str.isdigit
    return bool(_HOST.fullmatch(host)) and digits and 0 < int(port) < 65536


def blank_is_unset(value: object) -> object:
    """A setting's value with a blank string as unset (None): `X_FILE=` in an env file means no
    file, not the current folder."""
    return None if isinstance(value, str) and not value.strip() else value
