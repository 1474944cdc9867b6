"""Pipelines, the pure part: the spec of `operator: pipeline`, its references, and its rules.

- `PipelineSpec` (`stages` of `JobSpec`s, optional `trials`): the shape of
  `parameters.options` of a pipeline operation; `parse_pipeline` reads it with one sentence.
- `ordered_jobs`: the jobs in the order they run (stage after stage, as written in each).
- `references` / `resolve`: `${<job>.<key>...}` and `${trial.<property>}` in a JSON value, and
  the value with every reference replaced by the result it names.
- `pipeline_problem`: every rule a pipeline must meet before it is stored (shape, names,
  hooks, references to earlier jobs only, experiments and trial properties the space has), as
  one sentence, so the CLI refuses at the door what the explorer would refuse;
  `pipeline_shape_problem` the rules that need no space.
- `hook_names`: the hooks installed (entry points of group `discospace.hooks`).

A reference's first segment is a job name, never a stage name: `${narrowed.space_id}`.
A string that is exactly one reference takes the referenced JSON value (a list stays a list);
references inside a longer string are formatted into it (strings as they are, other values
as compact JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PositiveInt,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from discospace.core.discovery import DiscoverySpace
from discospace.core.errors import DiscospaceError, PipelineError
from discospace.core.experiment import ExperimentCatalog
from discospace.core.loading import problem_text
from discospace.core.operation_rules import operator_problem
from discospace.core.properties import domain_from_spec
from discospace.core.results import Objective, target_of
from discospace.core.spec import ExperimentRef, ProbabilitySpec, PropertySpec, Scalar, SpaceSpec

HOOK_GROUP = "discospace.hooks"
"""The entry-point group hooks are installed under."""

JobKind = Literal["operation", "measure", "hook"]
StageName = Literal["probe", "refine", "execute", "evaluate"]
STAGES: tuple[StageName, ...] = ("probe", "refine", "execute", "evaluate")
RESULT_STAGES: tuple[StageName, ...] = ("execute", "evaluate")
"""The stages whose jobs hold a pipeline's best: the last of their jobs (in the spec's order)
with a best, never a probe's (its entity may lie outside the refined space)."""
"""The stages, in the order they run."""

TRIAL = "trial"
"""The reserved first segment of a reference to the current trial's values."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_RESERVED = re.compile(r"trial(-[0-9]+)?")
_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _direction(value: object) -> object:
    """`min`/`max` (the spelling of operation objectives) read as `minimize`/`maximize`."""
    return (
        {"min": "minimize", "max": "maximize"}.get(value, value)
        if isinstance(value, str)
        else value
    )


Direction = Annotated[Literal["minimize", "maximize"], BeforeValidator(_direction)]


def as_objective(prop: str, direction: str) -> Objective:
    """The core objective (`discospace.core.results`) for a pipeline's property and direction."""
    return Objective(
        property=prop, direction="max" if _direction(direction) == "maximize" else "min"
    )


class JobSpec(_Frozen):
    """One job of a stage: a child operation, a measure of explicit entities, or a hook."""

    name: str = Field(description="Unique in the pipeline; later jobs read its result by it.")
    kind: JobKind
    optional: bool = Field(
        default=False, description="A failure is recorded; the pipeline goes on."
    )
    space: str | None = Field(default=None, description="A space id or a reference.")
    operator: str | None = None
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    entities: list[dict[str, Scalar]] | str | None = None
    experiment: ExperimentRef | None = None
    hook: str | None = None
    args: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shape(self) -> JobSpec:
        problem = _name_problem(self.name) or _shape_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self


_NEEDS: dict[str, tuple[str, ...]] = {
    "operation": ("operator",),
    "measure": ("entities", "experiment"),
    "hook": ("hook",),
}
_TAKES: dict[str, tuple[str, ...]] = {
    "operation": ("space", "operator", "parameters"),
    "measure": ("space", "entities", "experiment", "parameters"),
    "hook": ("hook", "args"),
}
_FIELDS = ("space", "operator", "parameters", "entities", "experiment", "hook", "args")


def _name_problem(name: str) -> str | None:
    if not _NAME.fullmatch(name):
        return (
            f"job name {name!r} must start with a letter or '_' and hold only letters, digits, "
            "'_' and '-' (at most 64 characters)"
        )
    if _RESERVED.fullmatch(name):
        return f"job name '{name}' is reserved for trials: choose another"
    return None


def _shape_problem(job: JobSpec) -> str | None:
    """Why the job's fields do not fit its kind (a field it needs, or one it cannot use)."""
    for needed in _NEEDS[job.kind]:
        if getattr(job, needed) is None:
            return f"{job.kind} job '{job.name}' needs {needed}"
    for name in _FIELDS:
        if name not in _TAKES[job.kind] and getattr(job, name) not in (None, {}):
            where = " (give the space as args.space)" if name == "space" else ""
            return f"{job.kind} job '{job.name}' takes no {name}{where}"
    if isinstance(job.entities, str) and not _is_one_reference(job.entities):
        return (
            f"measure job '{job.name}' gives entities as {job.entities!r}: "
            "give a list of entities or one reference"
        )
    return None


class StagesSpec(_Frozen):
    """The jobs of each stage, run stage after stage, each stage's jobs in the order written."""

    probe: tuple[JobSpec, ...] = ()
    refine: tuple[JobSpec, ...] = ()
    execute: tuple[JobSpec, ...] = ()
    evaluate: tuple[JobSpec, ...] = ()


class TrialObjective(_Frozen):
    """Which job's result ranks the trials, and in which direction."""

    job: str
    property: str = Field(min_length=1)
    direction: Direction = "minimize"

    def objective(self) -> Objective:
        return as_objective(self.property, self.direction)


class TrialDomain(_Frozen):
    """The values a trial may give a property, written as a space file's property is."""

    type: Literal["categorical", "discrete", "continuous"] | None = None
    values: tuple[Scalar, ...] | None = None
    range: tuple[int | float, int | float] | None = None
    interval: int | float | None = None
    probability: ProbabilitySpec | None = None

    def property_spec(self, name: str) -> PropertySpec:
        return PropertySpec(name=name, **self.model_dump(exclude_none=True))


MAX_TRIALS = 1000
"""The most trials a pipeline runs: each is a child pipeline the views list, and each choice
reads every ended trial again (a search of thousands of recipes wants a model-based operator
over a recipe space, not trials)."""


class TrialsSpec(_Frozen):
    """Run the pipeline `count` times, each with recipe values the optimizer chooses."""

    count: PositiveInt = Field(le=MAX_TRIALS)
    optimizer: Literal["optuna_tpe", "random"] = "optuna_tpe"
    over: dict[str, TrialDomain] = Field(min_length=1)
    objective: TrialObjective


class PipelineSpec(_Frozen):
    """`parameters.options` of a pipeline operation."""

    stages: StagesSpec
    trials: TrialsSpec | None = None

    @model_validator(mode="after")
    def _jobs(self) -> PipelineSpec:
        names = [job.name for _, job in ordered_jobs(self)]
        if not names:
            raise ValueError("the pipeline has no job: give at least one in stages")
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"job name '{twice[0]}' is used twice: job names must be unique")
        return self


def ordered_jobs(spec: PipelineSpec) -> list[tuple[str, JobSpec]]:
    """(stage, job) for every job, in the order they run."""
    return [(stage, job) for stage in STAGES for job in getattr(spec.stages, stage)]


def parse_pipeline(options: Mapping[str, Any]) -> PipelineSpec:
    """The pipeline `options` describe; a :class:`PipelineError` says what is wrong."""
    try:
        return PipelineSpec.model_validate(dict(options))
    except ValidationError as error:
        raise PipelineError(first_problem(error, options, "pipeline")) from None


def first_problem(error: ValidationError, data: Any, source: str) -> str:
    """The first problem of `data` read as a pipeline model, in one sentence: a rule's own
    sentence, or `<source>: <where>: <what is wrong>`."""
    return first_of(error.errors(), data, source)


def first_of(errors: Sequence[ErrorDetails], data: Any, source: str) -> str:
    """`first_problem` of some of a validation's errors (at least one)."""
    first = errors[0]
    if first["type"] == "value_error":
        return str(first["ctx"]["error"])
    message = problem_text([dict(first)])
    more = len(errors) - 1
    return f"{source}: {_where(first['loc'], data)}: {message}" + (
        f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    )


def _where(loc: tuple[int | str, ...], data: Any) -> str:
    """`stages.probe[0] (job 'search').operator`: list items named after the job they hold."""
    text, node = "", data
    for key in loc:
        node = _child(node, key)
        if isinstance(key, int):
            name = node.get("name") if isinstance(node, Mapping) else None
            text += f"[{key}]" + (f" (job {name!r})" if isinstance(name, str) else "")
        else:
            text += f".{key}" if text else str(key)
    return text or "the options"


def _child(node: Any, key: int | str) -> Any:
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return node.get(key) if isinstance(node, Mapping) else None


# -- references -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """`${job.key.key}`: a job's name and the path of keys (or list indexes) in its result."""

    job: str
    path: tuple[str, ...]

    @property
    def text(self) -> str:
        return "${" + ".".join((self.job, *self.path)) + "}"


def _parse_reference(inner: str) -> Reference:
    segments = inner.split(".")
    if len(segments) < 2 or not all(_SEGMENT.fullmatch(s) for s in segments):
        raise PipelineError(
            f"reference ${{{inner}}} is not of the form ${{<job>.<key>}} (or ${{trial.<property>}})"
        )
    return Reference(segments[0], tuple(segments[1:]))


def _strings(value: JsonValue) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def references(value: JsonValue) -> list[Reference]:
    """Every reference in a JSON value (strings in mappings and lists, however deep), in order.

    Raises :class:`PipelineError` for a `${...}` that is not a reference.
    """
    return [
        _parse_reference(m.group(1)) for text in _strings(value) for m in _REFERENCE.finditer(text)
    ]


def _is_one_reference(text: str) -> bool:
    match = _REFERENCE.fullmatch(text)
    return match is not None and _SEGMENT.fullmatch(match.group(1).split(".")[0]) is not None


def resolve(
    value: JsonValue,
    results: Mapping[str, Mapping[str, JsonValue]],
    trial: Mapping[str, Scalar] | None = None,
) -> JsonValue:
    """`value` with every reference replaced by what it names in `results` (by job name) or in
    the current `trial`'s values; a :class:`PipelineError` names a reference that has nothing."""
    if isinstance(value, str):
        return _resolve_text(value, results, trial)
    if isinstance(value, Mapping):
        return {key: resolve(item, results, trial) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [resolve(item, results, trial) for item in value]
    return value


def _resolve_text(
    text: str, results: Mapping[str, Mapping[str, JsonValue]], trial: Mapping[str, Scalar] | None
) -> JsonValue:
    whole = _REFERENCE.fullmatch(text)
    if whole is not None:
        return _lookup(_parse_reference(whole.group(1)), results, trial)

    def formatted(match: re.Match[str]) -> str:
        found = _lookup(_parse_reference(match.group(1)), results, trial)
        return found if isinstance(found, str) else json.dumps(found, separators=(",", ":"))

    return _REFERENCE.sub(formatted, text)


def _lookup(
    ref: Reference,
    results: Mapping[str, Mapping[str, JsonValue]],
    trial: Mapping[str, Scalar] | None,
) -> JsonValue:
    if ref.job == TRIAL:
        return _trial_value(ref, trial)
    if ref.job not in results:
        raise PipelineError(f"reference {ref.text} names job '{ref.job}', which has no result yet")
    node: JsonValue = dict(results[ref.job])
    for depth, key in enumerate(ref.path):
        node = _step(node, key)
        if node is _MISSING:
            where = ".".join(ref.path[: depth + 1])
            raise PipelineError(
                f"reference {ref.text}: the result of job '{ref.job}' has no '{where}'"
            )
    return node


_MISSING: Any = object()


def _step(node: JsonValue, key: str) -> JsonValue:
    """`node[key]` (a list is indexed by a whole number), or `_MISSING`."""
    if isinstance(node, Mapping):
        return node.get(key, _MISSING)
    if isinstance(node, list | tuple) and key.isdigit() and int(key) < len(node):
        return node[int(key)]
    return _MISSING


def _trial_value(ref: Reference, trial: Mapping[str, Scalar] | None) -> JsonValue:
    if trial is None:
        raise PipelineError(f"reference {ref.text} reads a trial's value outside trials")
    if len(ref.path) != 1 or ref.path[0] not in trial:
        known = ", ".join(sorted(trial)) or "none"
        raise PipelineError(f"reference {ref.text} names no property of the trial (it has {known})")
    return trial[ref.path[0]]


def job_references(job: JobSpec) -> list[Reference]:
    """The references a job makes: in its space, parameters, entities and args. Those inside
    the pipeline a pipeline job runs (its `options`) are that pipeline's own, to its jobs: not
    this pipeline's (a `${trial...}` there is replaced before it runs, as everywhere, unless
    that pipeline has trials of its own)."""
    own = [job.space, own_parameters(job), job.entities, job.args]
    found = references(own)  # type: ignore[arg-type]
    nested = nested_options(job)
    if nested is not None:
        found += nested_trial_references(nested)
    return found


def nested_trial_references(options: dict[str, JsonValue]) -> list[Reference]:
    """The `${trial...}` references a nested pipeline's `options` read from the pipeline that
    runs it: none when it has trials of its own."""
    return [] if has_own_trials(options) else outer_trial_references(options)


def has_own_trials(options: Mapping[str, JsonValue]) -> bool:
    """Whether a nested pipeline's options declare trials: its `${trial...}` are its own
    trials', not read from (nor replaced by) the pipeline that runs it."""
    return options.get("trials") is not None


def runs_own_trials(value: Mapping[str, JsonValue]) -> bool:
    """Whether `value` (a job as written) is a pipeline job whose pipeline has trials of its
    own."""
    parameters = value.get("parameters")
    if value.get("operator") != "pipeline" or not isinstance(parameters, Mapping):
        return False
    options = parameters.get("options")
    return isinstance(options, Mapping) and has_own_trials(options)


def outer_trial_references(value: JsonValue) -> list[Reference]:
    """The `${trial...}` references in `value` (a pipeline's options, at any depth) that the
    running pipeline's trials give: none inside a pipeline job's options whose pipeline has
    trials of its own, however deep."""
    if isinstance(value, str):
        return [ref for ref in references(value) if ref.job == TRIAL]
    if isinstance(value, Mapping):
        found = []
        for key, item in value.items():
            if key == "parameters" and isinstance(item, Mapping) and runs_own_trials(value):
                item = {name: part for name, part in item.items() if name != "options"}
            found += outer_trial_references(item)
        return found
    if isinstance(value, list):
        return [ref for item in value for ref in outer_trial_references(item)]
    return []


def own_parameters(job: JobSpec) -> dict[str, JsonValue]:
    """A job's parameters that this pipeline resolves: all of them, but for a job running a
    pipeline, whose `options` (that pipeline) resolve their references to their own jobs (one
    named like a job of this pipeline read this pipeline's result in silence)."""
    if nested_options(job) is not None:
        return {name: value for name, value in job.parameters.items() if name != "options"}
    return job.parameters


def nested_options(job: JobSpec) -> dict[str, JsonValue] | None:
    """The options of the pipeline a pipeline job runs (its spec), or None for another job."""
    options = job.parameters.get("options") if job.operator == "pipeline" else None
    return options if isinstance(options, dict) else None


def read_jobs(job: JobSpec) -> list[str]:
    """The earlier jobs whose results `job` reads: its references, and a hook's `args.job`."""
    named = [ref.job for ref in job_references(job) if ref.job != TRIAL]
    if job.kind == "hook" and isinstance(job.args.get("job"), str):
        named.append(str(job.args["job"]))
    return list(dict.fromkeys(named))


class ParametersCheck(Protocol):
    """Why data are no operation's parameters, or no parameters `operator` (when given) can
    run with whatever its space (`discospace.events.parameters_problem`); None when they are."""

    def __call__(self, data: Mapping[str, Any], operator: str | None = None) -> str | None: ...


# -- the rules --------------------------------------------------------------------------------


def hook_names() -> tuple[str, ...]:
    """The names of the installed hooks (entry points of group `discospace.hooks`), sorted."""
    return tuple(sorted({point.name for point in entry_points(group=HOOK_GROUP)}))


def pipeline_problem(
    spec_options: Mapping[str, Any],
    space: SpaceSpec | DiscoverySpace,
    hooks: Collection[str],
    catalog: ExperimentCatalog | None = None,
    operators: Collection[str] | None = None,
    parameters: ParametersCheck | None = None,
    objective: Objective | None = None,
) -> str | None:
    """Why the pipeline cannot run on `space`, in one sentence; None when it can.

    `hooks` are the installed hooks' names (:func:`hook_names`); with a `catalog` (the space's
    registered experiments) a measure job's parameterization is checked too, with
    `operators` the operators of operation jobs, and with `parameters` the parameters of every
    job that names no other job's result. The rules that need no space come first
    (:func:`pipeline_shape_problem`).
    """
    problem = pipeline_shape_problem(spec_options, hooks, operators, parameters, objective)
    if problem is not None:
        return problem
    try:
        spec = parse_pipeline(spec_options)
        space = space if isinstance(space, DiscoverySpace) else DiscoverySpace.from_spec(space)
        return (
            _measure_problem(spec, space, catalog)
            or _hook_space_problem(spec, space, catalog)
            or _trials_problem(spec, space)
            or _trial_entities_problem(spec)
            or _trials_objective_problem(spec, space, catalog)
        )
    except DiscospaceError as error:
        return str(error)


def pipeline_shape_problem(
    spec_options: Mapping[str, Any],
    hooks: Collection[str],
    operators: Collection[str] | None = None,
    parameters: ParametersCheck | None = None,
    objective: Objective | None = None,
) -> str | None:
    """Why the pipeline is malformed whatever its space, in one sentence, or None: its shape,
    unknown hooks (and operators, when given), references to no job, itself or a later job,
    args a shipped hook would refuse, a job ranking the other way from what reads its best
    (the pipeline's `objective`, when given, or its trials'), and (with `parameters`, the
    operation parameters' own check) a job's parameters no operation could run with."""
    try:
        spec = parse_pipeline(spec_options)
        return (
            _hooks_problem(spec, hooks)
            or _operators_problem(spec, operators)
            or _order_problem(spec)
            or _hook_args_problem(spec)
            or _child_id_problem(spec)
            or _directions_problem(spec, objective)
            or (_job_parameters_problem(spec, parameters) if parameters else None)
            or _nested_problem(spec, hooks, operators, parameters, objective)
        )
    except DiscospaceError as error:
        return str(error)


def named_spaces(spec_options: Mapping[str, Any], own: str) -> list[str]:
    """The spaces a pipeline's jobs name by id (a job's `space`, a hook's `args.space`), other
    than its own space `own`, in order: a door that can read registrations checks them, since
    the explorer finds one unregistered only when its job's turn comes (after the probe)."""
    found: list[str] = []
    for _, job in ordered_jobs(parse_pipeline(spec_options)):
        for named in (job.space, job.args.get("space") if job.kind == "hook" else None):
            if isinstance(named, str) and named != own and not references(named):
                found.append(named)
    return list(dict.fromkeys(found))


def _nested_problem(
    spec: PipelineSpec,
    hooks: Collection[str],
    operators: Collection[str] | None,
    parameters: ParametersCheck | None,
    objective: Objective | None = None,
) -> str | None:
    """The first problem of a pipeline a job runs (written out, without references): it was
    said when that job's turn came, after the jobs before it had spent their measurements. Its
    objective is its own, else the one it inherits (the trials', else `objective`)."""
    inherited = spec.trials.objective.objective() if spec.trials else objective
    for _, job in ordered_jobs(spec):
        nested = nested_options(job)
        written = job.parameters.get("options") if job.operator == "pipeline" else None
        if job.operator == "pipeline" and nested is None and not references(written):
            # no options, or options that are no mapping: refused when its turn came
            return f"pipeline job '{job.name}': {_unreadable_pipeline(written)}"
        outer = nested is not None and bool(nested_trial_references(nested))
        if nested is not None and not outer:  # a trial's values come first: checked then
            own = written_objective(job.parameters.get("objective"))
            sets = "objective" in job.parameters or "objectives" in job.parameters
            given = own if sets else inherited
            problem = pipeline_shape_problem(nested, hooks, operators, parameters, given)
            if problem is not None:
                return f"pipeline job '{job.name}': {problem}"
    return None


def written_objective(written: object) -> Objective | None:
    """The objective `{property, direction}` a job's parameters or a hook's args write out;
    None when absent, a reference (known when the job runs) or malformed (said elsewhere)."""
    if not isinstance(written, dict) or references(written):
        return None
    prop, direction = written.get("property"), written.get("direction")
    if not isinstance(prop, str) or not prop or direction not in _DIRECTIONS:
        return None
    return as_objective(prop, str(direction))


_DIRECTIONS = ("min", "max", "minimize", "maximize")


def _directions_problem(spec: PipelineSpec, objective: Objective | None) -> str | None:
    """A job whose best is read as the best of what ranks the other way on the same property:
    an execute or evaluate job's (the pipeline's best; with trials, each trial's) against the
    pipeline's objective, and the job the trials read (a search's best, a top_k job's ranking)
    against the trials': the worst value measured was reported as the best."""
    judged = spec.trials.objective.objective() if spec.trials else objective
    reads = spec.trials.objective.job if spec.trials else None
    for stage, job in ordered_jobs(spec):
        if job.kind == "operation":
            own = written_objective(job.parameters.get("objective"))
        elif job.kind == "hook" and job.hook == "top_k":
            own = written_objective(job.args.get("objective"))
        else:
            continue
        read = job.name == reads or (stage in RESULT_STAGES and job.kind == "operation")
        if own is None or judged is None or not read or not _opposite(own, judged):
            continue
        whose = "the trials'" if spec.trials else "the pipeline's"
        return (
            f"{job.kind} job '{job.name}' ranks '{own.property}' {_WORDS[own.direction]}, "
            f"{whose} objective {_WORDS[judged.direction]}: its best would be read as "
            f"{whose} best, the worst value for it; give both one direction"
        )
    return None


_WORDS = {"min": "lowest first", "max": "highest first"}


def _opposite(one: Objective, other: Objective) -> bool:
    return target_of(one.property) == target_of(other.property) and (
        one.direction != other.direction
    )


def _unreadable_pipeline(written: JsonValue) -> str:
    """Why a pipeline job's `options`, absent or no mapping, are no pipeline."""
    if written is None:
        return "pipeline: stages: is required"
    return f"pipeline: its options are {type(written).__name__}, not a mapping of stages"


def _job_parameters_problem(spec: PipelineSpec, check: ParametersCheck) -> str | None:
    """The first job whose parameters `check` refuses, an operation job's with the rules of its
    operator that need no space (stopping rules in wall-clock time, how many objectives):
    they were refused only when the job's turn came, after the jobs before it had run. A job
    whose parameters name another job's result (`${...}`) is checked when it runs, with the
    result written in."""
    for _, job in ordered_jobs(spec):
        if job.kind not in ("operation", "measure") or references(job.parameters):
            continue
        data = dict(job.parameters)
        if job.kind == "measure":
            data["options"] = {"points": []}  # the job's entities, given when it runs
        problem = check(data, job.operator if job.kind == "operation" else None)
        if problem is not None:
            return f"{job.kind} job '{job.name}': its parameters are not valid: {problem}"
    return None


def _hooks_problem(spec: PipelineSpec, hooks: Collection[str]) -> str | None:
    for _, job in ordered_jobs(spec):
        if job.kind == "hook" and job.hook not in hooks:
            known = ", ".join(sorted(hooks)) or "none is installed"
            return f"hook job '{job.name}' uses hook '{job.hook}', which is not known: use {known}"
    return None


def _child_id_problem(spec: PipelineSpec) -> str | None:
    """Two jobs, one of them in a nested pipeline, whose child operations would have one id:
    a child's id is its pipeline's and its job's name joined by '-', so job 'x-y' and job 'y'
    of a pipeline job 'x' both ask for '<pipeline>-x-y', and the second would take the first's
    result as its own."""
    seen: dict[str, str] = {}
    for suffix, who in _child_suffixes(spec):
        earlier = seen.setdefault(suffix, who)
        if earlier != who:
            return (
                f"{earlier} and {who} would both run as child operation '<pipeline>-{suffix}': "
                "rename one"
            )
    return None


def _child_suffixes(spec: PipelineSpec, within: str = "") -> Iterator[tuple[str, str]]:
    """(id suffix, which job) of every child operation the pipeline's jobs and the jobs of
    the pipelines they run (written out, without references) would ask for."""
    of = f" of job '{within}'" if within else ""
    if spec.trials is not None:
        for trial in range(spec.trials.count):
            yield f"trial-{trial}", f"trial {trial}{of}"
            yield from _prefixed(f"trial-{trial}", _child_suffixes(_untried(spec), within))
        return
    for _, job in ordered_jobs(spec):
        yield job.name, f"job '{job.name}'{of}"
        nested = nested_options(job)
        if nested is not None:
            try:
                inner = parse_pipeline(nested)
            except DiscospaceError:  # said when the nested pipeline starts
                continue
            yield from _prefixed(job.name, _child_suffixes(inner, job.name))


def _prefixed(prefix: str, suffixes: Iterator[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    return ((f"{prefix}-{suffix}", who) for suffix, who in suffixes)


def _untried(spec: PipelineSpec) -> PipelineSpec:
    return spec.model_copy(update={"trials": None})


def _hook_args_problem(spec: PipelineSpec) -> str | None:
    """Args a shipped hook would refuse, found before the pipeline spends its probe."""
    from discospace.core.hooks import args_problem  # hooks reads this module

    for _, job in ordered_jobs(spec):
        problem = job.kind == "hook" and job.hook and args_problem(job.hook, job.args or {})
        if problem:
            return f"hook job '{job.name}': {problem}"
    return None


def _operators_problem(spec: PipelineSpec, operators: Collection[str] | None) -> str | None:
    if operators is None:
        return None
    for _, job in ordered_jobs(spec):
        problem = job.operator and operator_problem(job.operator, sorted(operators))
        if problem:
            return f"operation job '{job.name}': {problem}"
    return None


OPERATION_RESULT = (
    "operation_id",
    "space_id",
    "operator",
    "stop_reason",
    "best_entity_id",
    "best_entity_values",
    "best_values",
    "counts",
)
"""The keys of an `operation` job's result (the explorer's `results.operation_result`)."""
COUNT_KEYS = ("requested", "measured", "reused", "failed", "invalid")
"""The keys of a result's `counts` (the events' `OperationCounts`)."""
MEASURE_RESULT = (*OPERATION_RESULT, "experiment", "entities", "entity_ids", "rows")
"""The keys of a `measure` job's result (the explorer's `results.measure_result`)."""
SHIPPED_HOOK_RESULTS: dict[str, tuple[str, ...]] = {
    "k_sigma": ("space", "narrowed", "space_id"),
    "prune_invalid": ("space", "pruned", "space_id"),
    "top_k": ("entities", "entity_ids", "values", "best_values"),
}
"""The keys of a shipped hook's result (`space_id` is the registered `space`'s)."""


def result_keys(job: JobSpec) -> tuple[str, ...] | None:
    """The keys `job`'s result will have; None when only running it tells (a plugin hook). A
    nested pipeline's job is an `operation` job: its result has an operation's keys."""
    if job.kind == "measure":
        return MEASURE_RESULT
    if job.kind == "operation":
        return OPERATION_RESULT
    return SHIPPED_HOOK_RESULTS.get(job.hook or "")


def _key_problem(reader: str, reference: Reference, jobs: Mapping[str, JobSpec]) -> str | None:
    """A reference to a key its job's result will not have (`${narrowed.spaceid}`, and a
    count its `counts` do not hold: `${probe.counts.nope}`)."""
    job = jobs.get(reference.job)
    keys = None if job is None or not reference.path else result_keys(job)
    if keys is None:
        return None
    path = reference.path
    if path[0] not in keys:
        return (
            f"job '{reader}' reads {reference.text}, but the result of job '{job.name}' "  # type: ignore[union-attr]
            f"has no '{path[0]}': it has {', '.join(keys)}"
        )
    if path[0] == "counts" and len(path) > 1 and (path[1] not in COUNT_KEYS or len(path) > 2):
        return (
            f"job '{reader}' reads {reference.text}, but the counts of job '{job.name}' "  # type: ignore[union-attr]
            f"are numbers named {', '.join(COUNT_KEYS)}"
        )
    return None


def _order_problem(spec: PipelineSpec) -> str | None:
    """A job that reads a job that does not exist, itself, or one that runs after it; and a
    `${trial...}` outside trials or naming a property trials are not over."""
    jobs = ordered_jobs(spec)
    position = {job.name: index for index, (_, job) in enumerate(jobs)}
    reads = {job.name: read_jobs(job) for _, job in jobs}
    by_name = {job.name: job for _, job in jobs}
    for index, (_, job) in enumerate(jobs):
        problem = _trial_reference_problem(job, spec.trials)
        for name in reads[job.name]:
            problem = problem or _read_problem(job.name, name, index, position, reads)
        for reference in job_references(job):
            problem = problem or _key_problem(job.name, reference, by_name)
        if problem:
            return problem
    if spec.trials is not None and spec.trials.objective.job not in position:
        return (
            f"the trials' objective reads job '{spec.trials.objective.job}', which does not exist"
        )
    return None


def _read_problem(
    reader: str, name: str, index: int, position: Mapping[str, int], reads: Mapping[str, list[str]]
) -> str | None:
    target = position.get(name)
    if target is None:
        return f"job '{reader}' reads job '{name}', which does not exist"
    if target == index:
        return f"job '{reader}' reads its own result: a cycle"
    if target < index:
        return None
    if _reaches(name, reader, reads):
        return f"job '{reader}' reads job '{name}', which reads '{reader}' back: a cycle"
    return f"job '{reader}' reads job '{name}', which runs after it: a job reads earlier jobs only"


def _reaches(start: str, goal: str, reads: Mapping[str, list[str]]) -> bool:
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name == goal:
            return True
        if name not in seen:
            seen.add(name)
            todo.extend(reads.get(name, ()))
    return False


def _trial_reference_problem(job: JobSpec, trials: TrialsSpec | None) -> str | None:
    for ref in job_references(job):
        if ref.job != TRIAL:
            continue
        if trials is None:
            return f"job '{job.name}' reads {ref.text}, but the pipeline has no trials"
        if len(ref.path) != 1 or ref.path[0] not in trials.over:
            over = ", ".join(sorted(trials.over))
            return f"job '{job.name}' reads {ref.text}, but the trials are over {over} only"
    return None


def _measure_problem(
    spec: PipelineSpec, space: DiscoverySpace, catalog: ExperimentCatalog | None
) -> str | None:
    """A measure job on the pipeline's space (or a space refined from it, which keeps its
    measurement space) must use an experiment that space measures, with entities inside it."""
    offered = {(ref.actuator, ref.experiment) for ref in space.experiments}
    for _, job in ordered_jobs(spec):
        if job.kind != "measure" or not _on_pipeline_space(job, space):
            continue
        ref = job.experiment
        assert ref is not None  # a measure job's shape
        if (ref.actuator, ref.experiment) not in offered:
            known = ", ".join(f"{e} ({a})" for a, e in sorted(offered))
            return (
                f"measure job '{job.name}' uses experiment '{ref.experiment}' of actuator "
                f"'{ref.actuator}', which space '{space.id}' does not measure: use {known}"
            )
        problem = _experiment_problem(job.name, ref, catalog) or _entities_problem(job, space)
        if problem:
            return problem
    return None


def _on_pipeline_space(job: JobSpec, space: DiscoverySpace) -> bool:
    return job.space is None or job.space == space.id or _is_one_reference(job.space)


def _experiment_problem(
    name: str, ref: ExperimentRef, catalog: ExperimentCatalog | None
) -> str | None:
    if catalog is None:
        return None
    try:
        experiment = catalog.resolve(ref)
    except DiscospaceError as error:
        return f"measure job '{name}': {error}"
    if experiment.is_dependent:  # its space measures it alone: what it reads is never measured
        reads = ", ".join(experiment.required_observed)
        return (
            f"measure job '{name}' uses experiment '{ref.experiment}', which reads {reads} "
            "from other experiments, and a measure job measures its experiment alone: measure "
            "the space with an operation job (every experiment of the space, in dependency "
            "order)"
        )
    return None


def _entities_problem(job: JobSpec, space: DiscoverySpace) -> str | None:
    if not isinstance(job.entities, list):
        return None
    if not job.entities:
        return f"measure job '{job.name}' lists no entity"
    for number, point in enumerate(job.entities, start=1):
        if references(point):  # `${trial.lr}`, `${probe...}`: checked once replaced
            continue
        why = space.entity_space.why_not(point)
        if why is not None:
            return f"measure job '{job.name}': entity {number} is not in space '{space.id}': {why}"
    return None


def _trials_problem(spec: PipelineSpec, space: DiscoverySpace) -> str | None:
    """Trials must be over properties the space has, with values inside its domains."""
    if spec.trials is None:
        return None
    properties = {prop.name: prop for prop in space.entity_space.properties}
    for name, written in spec.trials.over.items():
        prop = properties.get(name)
        if prop is None:
            known = ", ".join(properties)
            return (
                f"trials are over '{name}', which space '{space.id}' does not have: it has {known}"
            )
        try:
            domain = domain_from_spec(written.property_spec(name))
        except DiscospaceError as error:
            return f"trials over '{name}': {error}"
        if not domain.is_subdomain_of(prop.domain):
            return (
                f"trials over '{name}' give {domain.describe()}, which is not within its domain "
                f"{prop.domain.describe()} in space '{space.id}'"
            )
    return None


def _trials_objective_problem(
    spec: PipelineSpec, space: DiscoverySpace, catalog: ExperimentCatalog | None
) -> str | None:
    """The trials' objective must be a target its job measures (an operation or measure job
    on the pipeline's space; a hook's result or another space's is known only when it runs):
    a misspelt one would run every trial and then fail for want of a value."""
    if spec.trials is None:
        return None
    objective = spec.trials.objective
    job = next((job for _, job in ordered_jobs(spec) if job.name == objective.job), None)
    if job is not None and job.kind == "hook" and job.hook == "top_k":
        return _ranked_by_problem(objective.property, job)
    if catalog is None or job is None or job.kind == "hook" or job.operator == "pipeline":
        return None
    if not _on_pipeline_space(job, space):
        return None
    refs = [job.experiment] if job.kind == "measure" and job.experiment else space.experiments
    targets = _targets(refs, catalog)
    if targets is None or target_of(objective.property) in targets:
        return None
    return (
        f"the trials' objective '{objective.property}' is no target job '{job.name}' measures: "
        f"its targets are {', '.join(sorted(targets))}"
    )


def _targets(refs: Sequence[ExperimentRef], catalog: ExperimentCatalog) -> set[str] | None:
    """The targets the experiments `refs` measure; None when one is not in the catalog (said
    by the measure job's own check, or the registry's)."""
    targets: set[str] = set()
    for ref in refs:
        try:
            targets.update(catalog.resolve(ref).experiment.target_properties)
        except DiscospaceError:
            return None
    return targets


def _ranked_by_problem(wanted: str, job: JobSpec) -> str | None:
    """A trials' objective reading a `top_k` job reads the value of its best, of the property
    the job ranks by: another property is never there, found after every trial ran."""
    ranked = job.args.get("objective")
    ranks_by = ranked.get("property") if isinstance(ranked, dict) else None
    if not isinstance(ranks_by, str) or references(ranks_by):
        return None
    if target_of(ranks_by) == target_of(wanted):
        return None
    return (
        f"the trials' objective '{wanted}' is not what top_k job '{job.name}' ranks by "
        f"('{ranks_by}'): its result has the best's value of '{ranks_by}' only"
    )


def _trial_entities_problem(spec: PipelineSpec) -> str | None:
    """A measure job on its trial's space (no `space` given) with an entity that sets a
    property the trials vary to a value of its own: each trial's space holds only its own
    value, so every other trial would fail at its start."""
    if spec.trials is None:
        return None
    for _, job in ordered_jobs(spec):
        if job.kind != "measure" or job.space is not None or not isinstance(job.entities, list):
            continue
        for number, point in enumerate(job.entities, start=1):
            for name in spec.trials.over:
                if name in point and not references(point[name]):
                    return (
                        f"measure job '{job.name}': entity {number} sets '{name}', which the "
                        f"trials vary: write {name}: '${{trial.{name}}}'"
                    )
    return None


def _runs_a_pipeline(job: JobSpec) -> bool:
    return job.kind == "operation" and job.operator == "pipeline"


def _hook_space_problem(
    spec: PipelineSpec, space: DiscoverySpace, catalog: ExperimentCatalog | None
) -> str | None:
    """A shipped hook's args naming what its job cannot have: the measurements of a hook job
    (it measures nothing), a property to narrow the space lacks or cannot narrow, an objective
    no experiment of the space measures (with `catalog`). Found when the hook ran, after the
    probe had spent its measurements."""
    from discospace.core.hooks import NARROWING, numeric_problem  # hooks reads this module

    jobs = {job.name: job for _, job in ordered_jobs(spec)}
    for _, job in ordered_jobs(spec):
        if job.kind != "hook":
            continue
        args = job.args
        read = args.get("job")
        if isinstance(read, str) and read in jobs and jobs[read].kind == "hook":
            return (
                f"hook job '{job.name}' reads the measurements of job '{read}', a hook job, "
                "which measures nothing: name an operation or measure job"
            )
        if isinstance(read, str) and read in jobs and _runs_a_pipeline(jobs[read]):
            return (
                f"hook job '{job.name}' reads the measurements of job '{read}', a pipeline "
                "job, whose measurements are its own jobs': name an operation or measure job"
            )
        if not _from_pipeline_space(args.get("space"), jobs, space.id):
            continue  # another space: known when the hook runs
        named = args.get("properties")
        if job.hook in NARROWING and isinstance(named, list) and not references(named):
            problem = numeric_problem(space, [str(name) for name in named])
            if problem is not None:
                return f"hook job '{job.name}': {problem}"
        problem = _hook_objective_problem(job, space, catalog)
        if problem is not None:
            return problem
    return None


def _from_pipeline_space(
    written: object, jobs: Mapping[str, JobSpec], space_id: str, seen: frozenset[str] = frozenset()
) -> bool:
    """Whether the space `written` names is the pipeline's, or one refined from it (which
    keeps its properties and experiments): none written, its id, or a reference to a job whose
    own space is so. A literal other space, or a job on one, is known only when it runs."""
    if written is None or written == space_id:
        return True
    if not isinstance(written, str) or not _is_one_reference(written):
        return False
    [reference] = references(written)
    job = jobs.get(reference.job)
    if job is None or job.name in seen:
        return False
    own = job.args.get("space") if job.kind == "hook" else job.space
    return _from_pipeline_space(own, jobs, space_id, seen | {job.name})


def _hook_objective_problem(
    job: JobSpec, space: DiscoverySpace, catalog: ExperimentCatalog | None
) -> str | None:
    objective = job.args.get("objective")
    wanted = objective.get("property") if isinstance(objective, dict) else None
    if catalog is None or not isinstance(wanted, str) or references(wanted):
        return None
    targets = _targets(space.experiments, catalog)
    if targets is None or target_of(wanted) in targets:
        return None
    return (
        f"hook job '{job.name}' ranks by '{wanted}', which no experiment of space "
        f"'{space.id}' measures: its targets are {', '.join(sorted(targets))}"
    )


def ranking_objective(options: Mapping[str, Any], objective: Objective | None) -> Objective | None:
    """The objective a pipeline's trials are ranked by (its trials', as the explorer ranks them
    and gives each trial's child pipeline); without trials, or options that are no pipeline,
    `objective` (the pipeline's own)."""
    try:
        spec = parse_pipeline(options)
    except DiscospaceError:
        return objective
    return spec.trials.objective.objective() if spec.trials else objective


def trial_space(space: SpaceSpec, values: Mapping[str, Scalar]) -> SpaceSpec:
    """`space` with each property of `values` fixed to that one value (a trial's space)."""
    fixed = [
        PropertySpec(name=prop.name, values=(values[prop.name],)) if prop.name in values else prop
        for prop in space.entity_space
    ]
    return space.model_copy(update={"entity_space": tuple(fixed)})
