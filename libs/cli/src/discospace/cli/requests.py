"""What the CLI asks of the services through Kafka: submit a space, request or cancel an
operation. Each builds the event, makes sure its topic exists and publishes it."""

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from pydantic import Field

from discospace.cli.errors import CliError, NoAnswerError
from discospace.cli.kafka import AnswerReader, ensure_topics, publish
from discospace.cli.settings import CliSettings
from discospace.core.loading import parse_document, read_document, validate_document
from discospace.core.spec import SpaceSpec
from discospace.events import (
    Event,
    OperationCancelRequested,
    OperationParameters,
    OperationRequested,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    new_event,
)
from discospace.events.envelope import Record

SpaceAnswer: TypeAlias = SpaceRegistered | SpaceRejected


class OperationFile(Record):
    """An operation file: which operator to run on which space, with which parameters."""

    space_id: str | None = Field(
        default=None, min_length=1, description="The space; `--space` may give it instead."
    )
    operator: str = Field(min_length=1, examples=["random_walk"])
    parameters: OperationParameters = Field(default_factory=OperationParameters)


def new_id(kind: str) -> str:
    """``sub-…`` / ``op-…``: a fresh id for a submission or an operation."""
    return f"{kind}-{uuid.uuid4().hex[:12]}"


def load_operation_file(path: Path) -> OperationFile:
    """An operation file (YAML or JSON), read within core's input limits (size, depth, values,
    identifiers, integers, no duplicate keys); a :class:`SpecError` names the field at fault."""
    text = read_document(path)
    return validate_document(parse_document(text, str(path)), OperationFile, str(path))


def answer_to(submission: SpaceSubmitted, space_id: str) -> Callable[[Event], SpaceAnswer | None]:
    """Picks the registry's answer to ``submission`` among the events on the spaces topic.

    A registration of the same space answers too: submitting a registered space again gets
    the original registration back, which carries the first submission's id.
    """

    def match(event: Event) -> SpaceAnswer | None:
        if isinstance(event, SpaceRegistered) and (
            event.space_id == space_id or event.submission_id == submission.submission_id
        ):
            return event
        if isinstance(event, SpaceRejected) and event.submission_id == submission.submission_id:
            return event
        return None

    return match


async def submit_space(
    settings: CliSettings, spec: SpaceSpec, space_id: str, timeout_s: float
) -> SpaceAnswer:
    """Publish a ``SpaceSubmitted`` and wait for the registry's answer."""
    bootstrap, topics = settings.kafka_bootstrap_servers, settings.topics
    await ensure_topics(bootstrap, topics, [topics.space_submissions, topics.spaces])
    submission = new_event(
        SpaceSubmitted, submission_id=new_id("sub"), spec=spec, submitted_by=settings.user
    )
    async with AnswerReader.opened(bootstrap, topics.spaces) as reader:
        await reader.publish(topics.space_submissions, submission)
        answer = await reader.first(answer_to(submission, space_id), timeout_s)
    if answer is None:
        raise NoAnswerError(
            f"the registry did not answer within {timeout_s:g}s: is it running "
            f"(python -m discospace.registry) on Kafka at {bootstrap} "
            f"with topic prefix '{topics.prefix}'?"
        )
    return answer


async def request_operation(settings: CliSettings, request: OperationRequested) -> None:
    """Publish an ``OperationRequested`` for the explorer."""
    bootstrap, topics = settings.kafka_bootstrap_servers, settings.topics
    await ensure_topics(bootstrap, topics, [topics.operations])
    await publish(bootstrap, topics.operations, request)


def operation_request(
    settings: CliSettings, file: OperationFile, space_id: str | None
) -> OperationRequested:
    """The request an operation file describes; ``space_id`` overrides the file's."""
    chosen = space_id or file.space_id
    if not chosen:
        raise CliError("the operation names no space: add space_id to the file or give --space")
    return new_event(
        OperationRequested,
        operation_id=new_id("op"),
        space_id=chosen,
        operator=file.operator,
        parameters=file.parameters,
        requested_by=settings.user,
    )


async def request_cancel(settings: CliSettings, operation_id: str, reason: str) -> None:
    """Publish an ``OperationCancelRequested``; the explorer stops the operation."""
    bootstrap, topics = settings.kafka_bootstrap_servers, settings.topics
    cancel = new_event(
        OperationCancelRequested,
        operation_id=operation_id,
        requested_by=settings.user,
        reason=reason,
    )
    await ensure_topics(bootstrap, topics, [topics.operations])
    await publish(bootstrap, topics.operations, cancel)
