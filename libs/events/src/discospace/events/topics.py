"""Topic names and keys: the one place that says where every event is published.

Every topic name is `<prefix>.<topic>`; the prefix is `discospace` in production and a
fresh, unique one in tests (the whole test suite shares one broker, so each test builds
its own `TopicNames.unique()`). Measurement requests go to one topic per GPU pool,
`<prefix>.measure.<pool>`, consumed by that pool's workers in one consumer group.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from enum import StrEnum


class InvalidTopicNameError(ValueError):
    """A topic prefix or pool name that cannot be part of a Kafka topic name."""


class Topic(StrEnum):
    """The logical topics; `TopicNames` turns them into concrete names."""

    SPACE_SUBMISSIONS = "space-submissions"
    SPACES = "spaces"
    ACTUATORS = "actuators"
    OPERATIONS = "operations"
    MEASUREMENTS = "measurements"
    MEASURE = "measure"
    DEAD_LETTER = "dead-letter"


DEFAULT_PREFIX = "discospace"
COMPACTED = frozenset({Topic.SPACES, Topic.ACTUATORS})
"""Topics that hold the latest fact per key (log compaction): spaces and actuator catalogs."""

_PREFIX = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
POOL_PATTERN = "^[A-Za-z0-9_-]+$"
"""A pool name, as the JSON Schema of the events in `proto/` states it to other producers."""
_POOL = re.compile(POOL_PATTERN)
_MAX_TOPIC_LENGTH = 249
_LONGEST_SUFFIX = len(".space-submissions")


def validate_pool(pool: str) -> str:
    """Return `pool` when it can name a measure topic; raise `InvalidTopicNameError` otherwise.

    A dot is refused so that `<prefix>.measure.<pool>` can always be split back into its pool.
    """
    if not _POOL.fullmatch(pool):
        raise InvalidTopicNameError(
            f"Pool name {pool!r} must be letters, digits, '-' or '_' (at least one character)."
        )
    return pool


def _validate_prefix(prefix: str) -> str:
    if not _PREFIX.fullmatch(prefix):
        raise InvalidTopicNameError(
            f"Topic prefix {prefix!r} must be dot-separated words of letters, digits, '-' or '_'."
        )
    if len(prefix) + _LONGEST_SUFFIX > _MAX_TOPIC_LENGTH:
        raise InvalidTopicNameError(f"Topic prefix {prefix!r} is too long for a Kafka topic name.")
    return prefix


@dataclass(frozen=True)
class TopicNames:
    """Concrete topic names built from a prefix (`discospace` unless a test says otherwise)."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        _validate_prefix(self.prefix)

    @classmethod
    def unique(cls, base: str = "test") -> TopicNames:
        """A fresh prefix nobody else uses, for tests that share a broker."""
        return cls(f"{_validate_prefix(base)}-{uuid.uuid4().hex[:12]}.{DEFAULT_PREFIX}")

    def name(self, topic: Topic) -> str:
        """The concrete name of a fixed topic (not `Topic.MEASURE`, which needs a pool)."""
        if topic is Topic.MEASURE:
            raise InvalidTopicNameError("The measure topic needs a pool: use measure(pool).")
        return f"{self.prefix}.{topic.value}"

    @property
    def space_submissions(self) -> str:
        return self.name(Topic.SPACE_SUBMISSIONS)

    @property
    def spaces(self) -> str:
        return self.name(Topic.SPACES)

    @property
    def actuators(self) -> str:
        return self.name(Topic.ACTUATORS)

    @property
    def operations(self) -> str:
        return self.name(Topic.OPERATIONS)

    @property
    def measurements(self) -> str:
        return self.name(Topic.MEASUREMENTS)

    @property
    def dead_letter(self) -> str:
        return self.name(Topic.DEAD_LETTER)

    def measure(self, pool: str) -> str:
        """The topic a GPU pool's workers consume measurement requests from."""
        name = f"{self.prefix}.{Topic.MEASURE.value}.{validate_pool(pool)}"
        if len(name) > _MAX_TOPIC_LENGTH:
            raise InvalidTopicNameError(
                f"Pool name {pool!r} makes its topic {len(name)} characters long; Kafka takes "
                f"{_MAX_TOPIC_LENGTH} at most."
            )
        return name

    @property
    def measure_pattern(self) -> str:
        """A regular expression matching every pool's measure topic (pattern subscription)."""
        return rf"^{re.escape(self.prefix)}\.{Topic.MEASURE.value}\.[A-Za-z0-9_-]+$"

    def pool_of(self, topic_name: str) -> str:
        """The pool a measure topic belongs to; raise `InvalidTopicNameError` for other topics."""
        head = f"{self.prefix}.{Topic.MEASURE.value}."
        if not topic_name.startswith(head):
            raise InvalidTopicNameError(f"Topic {topic_name!r} is not a measure topic.")
        return validate_pool(topic_name[len(head) :])

    def fixed(self) -> list[str]:
        """Every topic whose name does not depend on a pool, in a stable order."""
        return [self.name(topic) for topic in Topic if topic is not Topic.MEASURE]

    def is_compacted(self, topic_name: str) -> bool:
        """Whether the topic must be created with `cleanup.policy=compact`."""
        return any(topic_name == self.name(topic) for topic in COMPACTED)


DEFAULT_TOPICS = TopicNames()
SPACE_SUBMISSIONS = DEFAULT_TOPICS.space_submissions
SPACES = DEFAULT_TOPICS.spaces
ACTUATORS = DEFAULT_TOPICS.actuators
OPERATIONS = DEFAULT_TOPICS.operations
MEASUREMENTS = DEFAULT_TOPICS.measurements
DEAD_LETTER = DEFAULT_TOPICS.dead_letter


def measure_topic(pool: str) -> str:
    """`discospace.measure.<pool>`: where measurement requests for `pool` go."""
    return DEFAULT_TOPICS.measure(pool)


def topics(prefix: str = DEFAULT_PREFIX) -> TopicNames:
    """The topic names under `prefix`."""
    return TopicNames(prefix)


# Keys. Kafka keeps order within a partition, and a key picks the partition: each topic is keyed
# by the aggregate whose history must stay in order.


def submission_key(submission_id: str) -> bytes:
    """space-submissions: a submission."""
    return submission_id.encode()


REJECTION_KEY_PREFIX = "submission:"


def rejection_key(submission_id: str) -> bytes:
    """spaces (compacted): a rejection, by its submission, never the key of a registration (a
    submission id is the submitter's text: keyed by it alone, a rejected submission named like
    a registered space replaced that space's registration when the topic was compacted)."""
    return f"{REJECTION_KEY_PREFIX}{submission_id}".encode()


def space_key(space_id: str) -> bytes:
    """spaces (compacted): the space id, so the topic keeps each registered space."""
    return space_id.encode()


def actuator_key(actuator: str, pool: str) -> bytes:
    """actuators (compacted): one catalog per actuator and pool; every worker announces the same."""
    return f"{actuator}@{pool}".encode()


def operation_key(operation_id: str) -> bytes:
    """operations and measurements: an operation's whole history stays ordered in one partition."""
    return operation_id.encode()


def measure_key(entity_id: str) -> bytes:
    """measure.<pool>: the entity, so requests spread over all the pool's workers.

    Keying by operation would put one operation's requests on one partition, hence one worker,
    and leave the rest of the pool idle; requests carry no order the workers need.
    """
    return entity_id.encode()


def dead_letter_key(source_topic: str, partition: int, offset: int) -> bytes:
    """dead-letter: where the bad message was read, so a redelivered one lands in the same place."""
    return f"{source_topic}/{partition}/{offset}".encode()
