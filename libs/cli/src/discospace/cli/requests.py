"""What the CLI asks of the services through Kafka: submit a space, request or cancel an
operation. Each builds the event, makes sure its topic exists and publishes it."""

import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeAlias

from aiokafka.errors import KafkaConnectionError, KafkaError
from pydantic import Field, JsonValue, model_validator
from pydantic_core import PydanticCustomError

from discospace.cli.errors import CliError, KafkaUnavailableError, NoAnswerError
from discospace.cli.kafka import AnswerReader, ensure_topics, publish, refuse_login
from discospace.cli.settings import CliSettings
from discospace.core import DiscoverySpace, ExperimentCatalog
from discospace.core.errors import DiscospaceError, SpecError
from discospace.core.loading import parse_document, read_document, validate_document
from discospace.core.operation_rules import (
    OPERATORS,
    objectives_problem,
    operator_problem,
    random_walk_problem,
    stopping_problem,
    unmeasured_objective,
    zeus_space_problem,
)
from discospace.core.pipelines import (
    hook_names,
    named_spaces,
    pipeline_problem,
    pipeline_shape_problem,
)
from discospace.core.spec import SpaceSpec
from discospace.events import (
    Event,
    OperationCancelRequested,
    OperationParameters,
    OperationRequested,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    decode,
    new_event,
)
from discospace.events.codec import EventDecodeError
from discospace.events.envelope import Record
from discospace.events.parameters import parameters_problem
from discospace.runtime.replay import Record as KafkaRecord
from discospace.runtime.replay import existing_partitions, read_up_to, reader

SpaceAnswer: TypeAlias = SpaceRegistered | SpaceRejected


PIPELINE = "pipeline"
"""The operator whose file may give `stages:` and `trials:` next to `operator:`."""


class OperationFile(Record):
    """An operation file: which operator to run on which space, with which parameters.

    A pipeline's `stages` and `trials` may be written at the top, next to `operator: pipeline`;
    the request carries them in `parameters.options` (:meth:`request_parameters`).
    """

    space_id: str | None = Field(
        default=None, min_length=1, description="The space; `--space` may give it instead."
    )
    operator: str = Field(min_length=1, examples=["random_walk"])
    parameters: OperationParameters = Field(default_factory=OperationParameters)
    stages: JsonValue = Field(default=None, description="A pipeline's stages (operator pipeline).")
    trials: JsonValue = Field(default=None, description="A pipeline's trials (operator pipeline).")

    @model_validator(mode="after")
    def _pipeline_fields(self) -> "OperationFile":
        written = [name for name in ("stages", "trials") if getattr(self, name) is not None]
        if written and self.operator != PIPELINE:
            raise PydanticCustomError(
                "pipeline_fields",
                f"{' and '.join(written)} are written only with operator: pipeline",
            )
        twice = [name for name in written if name in self.parameters.options]
        if twice:
            raise PydanticCustomError(
                "pipeline_fields",
                f"{twice[0]} is given both at the top and in parameters.options: give it once",
            )
        return self

    def request_parameters(self) -> OperationParameters:
        """The parameters the request carries: a pipeline's `stages` and `trials` in options."""
        moved = {name: getattr(self, name) for name in ("stages", "trials")}
        moved = {name: value for name, value in moved.items() if value is not None}
        if not moved:
            return self.parameters
        options = {**self.parameters.options, **moved}
        return self.parameters.model_copy(update={"options": options})


def new_id(kind: str) -> str:
    """``sub-…`` / ``op-…``: a fresh id for a submission or an operation."""
    return f"{kind}-{uuid.uuid4().hex[:12]}"


def load_operation_file(path: Path) -> OperationFile:
    """An operation file (YAML or JSON), read within core's input limits (size, depth, values,
    identifiers, integers, no duplicate keys); a :class:`SpecError` names the field at fault."""
    text = read_document(path)
    document = parse_document(text, str(path))
    sandbox = _sandbox_keys(document)
    if sandbox:
        raise SpecError(
            f"{path}: reads as a Data-Juicer sandbox config ({', '.join(sandbox)}): discospace "
            "runs a pipeline as an operation, `operator: pipeline` with `stages:` probe, refine, "
            "execute and evaluate (probe_job_configs, refine_recipe_job_configs, "
            "execution_job_configs and evaluation_job_configs), each a list of jobs, and "
            "`trials:` for hpo_config; see examples/pipelines/"
        )
    return validate_document(document, OperationFile, str(path))


_SANDBOX_KEYS = (
    "probe_job_configs",
    "refine_recipe_job_configs",
    "execution_job_configs",
    "evaluation_job_configs",
    "hpo_config",
)
"""The top-level keys of a Data-Juicer sandbox config (data_juicer/config, sandbox)."""


def _sandbox_keys(document: object) -> list[str]:
    """The sandbox config keys `document` has at its top, when it has no `operator`; and
    `pipelines` when it is a list of named pipelines holding them (Data-Juicer's
    `SandBoxExecutor.parse_pipelines` reads both forms)."""
    if not isinstance(document, dict) or "operator" in document:
        return []
    found = [key for key in _SANDBOX_KEYS if key in document]
    named = document.get("pipelines")
    stages = (
        stage
        for entry in (named if isinstance(named, list) else [])
        if isinstance(entry, dict)
        for stage in entry.values()
    )
    if any(isinstance(stage, dict) and _sandbox_keys(stage) for stage in stages):
        found.append("pipelines")
    return found


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
    bootstrap, topics = settings.bootstrap, settings.topics
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
    bootstrap, topics = settings.bootstrap, settings.topics
    await ensure_topics(bootstrap, topics, [topics.operations])
    await publish(bootstrap, topics.operations, request)


def operation_request(
    settings: CliSettings, file: OperationFile, space_id: str | None
) -> OperationRequested:
    """The request an operation file describes; ``space_id`` overrides the file's."""
    if space_id is not None and not space_id.strip():  # `--space "$space"`, $space empty
        raise CliError("--space is empty: give the id of a space (space-...), or leave it out")
    chosen = space_id or file.space_id
    if not chosen:
        raise CliError("the operation names no space: add space_id to the file or give --space")
    return new_event(
        OperationRequested,
        operation_id=new_id("op"),
        space_id=chosen,
        operator=file.operator,
        parameters=file.request_parameters(),
        requested_by=settings.user,
    )


DOOR_OPERATORS: tuple[str, ...] = tuple(sorted({*OPERATORS, PIPELINE}))
"""The operators a request may name: the explorer's, and pipeline (its jobs run the others)."""


Registration: TypeAlias = Callable[[str], Awaitable[SpaceRegistered]]
"""The registration of a space id; raises a :class:`CliError` when it is not registered."""


async def check_request(request: OperationRequested, registration: Registration) -> None:
    """Refuse, with the explorer's sentence, a request the explorer would refuse: an unknown
    operator, invalid stopping rules, an unregistered space, an objective the space does not
    measure, parameters `random_walk` cannot run with (the rules of
    :mod:`discospace.core.operation_rules`), a pipeline that is malformed or does not fit the
    space (:func:`discospace.core.pipelines.pipeline_problem`) or whose jobs name a space that
    is not registered. The checks that need no broker come first."""
    parameters = request.parameters
    problem = (
        operator_problem(request.operator, DOOR_OPERATORS)
        or stopping_problem(parameters.stopping)
        or objectives_problem(
            request.operator,
            len(parameters.objectives_to_optimise()),
            parameters.options,
            parameters.objective,
            parameters.objectives or (),
        )
        or _pipeline_shape(request)
    )
    if problem is None:
        problem = registered_problem(request, await registration(request.space_id))
    if problem is not None:
        raise CliError(problem)
    if request.operator == PIPELINE:  # a space a job names: refused now, not after the probe
        for other in named_spaces(request.parameters.options, request.space_id):
            await registration(other)


def _pipeline_shape(request: OperationRequested) -> str | None:
    if request.operator != PIPELINE:
        return None
    return pipeline_shape_problem(
        request.parameters.options, hook_names(), OPERATORS, parameters_problem
    )


def registered_problem(request: OperationRequested, registered: SpaceRegistered) -> str | None:
    """Why the request cannot run on its registered space, or None: core's rules, then the
    explorer's own start check (an optimizer's or Zeus's options, the extras a sampler needs)."""
    return _core_problem(request, registered) or explorer_problem(request, registered)


def explorer_problem(request: OperationRequested, registered: SpaceRegistered) -> str | None:
    """The explorer's start check (`discospace.explorer.door`) where the explorer is installed
    beside the CLI, as in every install of this repository; a CLI installed alone leaves these
    checks to the explorer, which refuses the request with the same sentence (OperationFailed).
    Imported here, not at the top, so the CLI starts without loading Optuna."""
    try:
        from discospace.explorer.door import start_problem
    except ImportError:
        return None
    return start_problem(request, registered)


def _core_problem(request: OperationRequested, registered: SpaceRegistered) -> str | None:
    space_id, parameters = registered.space_id, request.parameters
    try:
        space = DiscoverySpace.from_spec(registered.spec)
        measured = space.measurement_space(ExperimentCatalog(registered.experiments))
    except DiscospaceError as error:
        return f"space '{space_id}' cannot be explored: {error}"
    objectives = (parameters.objective, *parameters.objectives_to_optimise())
    names = (objective.property if objective is not None else None for objective in objectives)
    problem = unmeasured_objective(names, measured.observed_property_ids, space_id)
    if problem is None and request.operator == "random_walk":
        problem = random_walk_problem(parameters, space.entity_space, space_id)
    if problem is None and request.operator == "zeus_bso":
        problem = zeus_space_problem(space.entity_space)
    if problem is None and request.operator == PIPELINE:
        catalog = ExperimentCatalog(registered.experiments)
        problem = pipeline_problem(
            parameters.options,
            space,
            hook_names(),
            catalog=catalog,
            operators=OPERATORS,
            parameters=parameters_problem,
            objective=parameters.objective,
        )
    return problem


MAX_OPERATION_ID_CHARS = 256
"""Longer ids name no operation (the CLI's are ``op-`` and 12 hex digits): refused unread."""


async def operation_requested(settings: CliSettings, operation_id: str) -> bool:
    """Whether the operations topic holds an ``OperationRequested`` for ``operation_id`` (the
    log, not the projector, so it holds without the projector running)."""
    if not operation_id or len(operation_id) > MAX_OPERATION_ID_CHARS:
        return False
    bootstrap, topic = settings.bootstrap, settings.topics.operations
    # as events are written (UTF-8 as it is), and as a client escaping to ASCII writes it
    needles = {
        json.dumps(operation_id, ensure_ascii=False).encode(),
        json.dumps(operation_id).encode(),
    }
    found = False

    async def take(record: KafkaRecord) -> None:
        nonlocal found
        value = record.value or b""
        if found or b'"OperationRequested"' not in value:
            return
        if not any(needle in value for needle in needles):
            return
        try:
            event = decode(value)
        except EventDecodeError:
            return
        found = isinstance(event, OperationRequested) and event.operation_id == operation_id

    try:
        partitions = await existing_partitions(bootstrap, [topic])
        if not partitions:
            return False
        async with reader(bootstrap, "discospace-cli") as consumer:
            await read_up_to(consumer, await consumer.end_offsets(partitions), take)
    except KafkaConnectionError:
        await refuse_login(bootstrap)
        raise KafkaUnavailableError(bootstrap) from None
    except KafkaError as error:
        raise CliError(f"Kafka at {bootstrap} could not be read ({error})") from None
    return found


async def request_cancel(settings: CliSettings, operation_id: str, reason: str) -> None:
    """Publish an ``OperationCancelRequested``; the explorer stops the operation. An id no
    operation was requested under is refused, publishing nothing."""
    bootstrap, topics = settings.bootstrap, settings.topics
    if not await operation_requested(settings, operation_id):
        shown = operation_id if len(operation_id) <= 40 else f"{operation_id[:40]}..."
        raise CliError(
            f"operation '{shown}' is not known: list the operations with "
            "`discospace operation list`"
        )
    cancel = new_event(
        OperationCancelRequested,
        operation_id=operation_id,
        requested_by=settings.user,
        reason=reason,
    )
    await ensure_topics(bootstrap, topics, [topics.operations])
    await publish(bootstrap, topics.operations, cancel)
