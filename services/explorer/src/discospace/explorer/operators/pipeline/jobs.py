"""A pipeline's jobs, run one after another (see `conductor.py` for what each kind does).

Each round walks the jobs in order: a job that ended is passed (its result is kept for the
later jobs' references), the first that has not is started or followed, and the round stops
there. Everything a job needs is worked out again each round from the same facts (references
resolved against the results of the jobs before it, the spaces, the seed), so it comes out
the same, also after a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import JsonValue, TypeAdapter, ValidationError

from discospace.core import DiscospaceError, Objective
from discospace.core.errors import PipelineError
from discospace.core.experiment import parameterized_experiment_id
from discospace.core.hooks import Hook, HookContext, MeasuredRow
from discospace.core.pipelines import (
    RESULT_STAGES,
    JobSpec,
    PipelineSpec,
    nested_options,
    ordered_jobs,
    own_parameters,
    resolve,
)
from discospace.core.spec import Scalar, SpaceSpec
from discospace.events import (
    OperationCompleted,
    OperationParameters,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobStarted,
)
from discospace.events.parameters import parameters_error_text
from discospace.explorer.domain.conducting import ChildView, ConductorView
from discospace.explorer.domain.operation import JobEnd, JobFacts
from discospace.explorer.operators.pipeline.naming import child_operation_id, child_seed
from discospace.explorer.operators.pipeline.results import (
    known_results,
    measure_result,
    measured_rows,
    operation_result,
    warm_started,
)
from discospace.explorer.operators.pipeline.round import Failure, Outcome, Result, Round
from discospace.explorer.operators.pipeline.spaces import measure_space, space_id_of, spec_of

PIPELINE = "pipeline"
ENTITIES: TypeAdapter[list[dict[str, Scalar]]] = TypeAdapter(list[dict[str, Scalar]])


class JobsRound(Round):
    """A round of a pipeline without trials: its stages' jobs."""

    def __init__(
        self, view: ConductorView, spec: PipelineSpec, load_hook: Callable[[str], Hook]
    ) -> None:
        super().__init__(view, spec)
        self.load_hook = load_hook

    def walk(self) -> None:
        self.run_jobs()

    def run_jobs(self) -> None:
        results: dict[str, Result] = {}
        for stage, job in ordered_jobs(self.spec):
            facts = self.view.jobs.get((None, job.name), JobFacts())
            end = facts.ended or self.step(stage, job, facts.started, results)
            if end is None:
                return
            if isinstance(end, PipelineJobCompleted):
                results[job.name] = end.result
            elif not end.optional:
                self.fail(f"job '{job.name}' ({stage}) failed: {end.reason}")
                return
        self.complete(results)

    def step(
        self,
        stage: str,
        job: JobSpec,
        started: PipelineJobStarted | None,
        results: dict[str, Result],
    ) -> JobEnd | None:
        """Start or follow a job; its end, when it ended this round."""
        run = {"operation": self.operation_job, "measure": self.measure_job, "hook": self.hook_job}
        try:
            outcome = run[job.kind](stage, job, started, results)
        except DiscospaceError as error:
            outcome = Failure(str(error))
        return self.end(stage, job.name, None, outcome, job.optional)

    def operation_job(
        self,
        stage: str,
        job: JobSpec,
        started: PipelineJobStarted | None,
        results: dict[str, Result],
    ) -> Outcome:
        child_id = child_operation_id(self.id, job.name)
        space_id = self.space_of(job.space, results)
        assert job.operator is not None  # an operation job's shape
        request = self.child_request(job, child_id, space_id, job.operator, results)
        if started is None:
            self.job_started(stage, job.name, None, child_id, space_id)
        return self.follow(request, operation_result)

    def measure_job(
        self,
        stage: str,
        job: JobSpec,
        started: PipelineJobStarted | None,
        results: dict[str, Result],
    ) -> Outcome:
        assert job.experiment is not None  # a measure job's shape
        base = self.known(self.space_of(job.space, results))
        entities = self.entities_of(job, results)
        spec = measure_space(spec_of(base), job.experiment)
        space_id = space_id_of(spec)
        child_id = child_operation_id(self.id, job.name)
        if started is None:
            self.job_started(stage, job.name, None, child_id, space_id)
        registered = self.register(job.name, spec, space_id)
        if registered is not True:
            return registered
        options: dict[str, JsonValue] = {"points": entities}  # type: ignore[dict-item]
        request = self.child_request(job, child_id, space_id, "points", results, options)
        experiment = parameterized_experiment_id(
            job.experiment.experiment, job.experiment.parameterization
        )

        def result(child: ChildView, completed: OperationCompleted) -> Result | None:
            if child.results is None:
                return None
            return measure_result(child, completed, child.results, experiment)

        return self.follow(request, result)

    def hook_job(
        self,
        stage: str,
        job: JobSpec,
        started: PipelineJobStarted | None,
        results: dict[str, Result],
    ) -> Outcome:
        assert job.hook is not None  # a hook job's shape
        args = resolve(job.args, results)
        assert isinstance(args, dict)
        space_id = self.space_of(args.get("space"), results)
        space = self.known(space_id)
        if started is None:
            self.job_started(stage, job.name, None, None, space_id)
        rows = self.rows_for(args.get("job"), results)
        if rows is None:
            return None
        context = HookContext(
            space=spec_of(space),
            space_id=space_id,
            rows=rows,
            results=dict(results),
            args=args,
            seed=child_seed(self.view.seed, job.name),
        )
        result = self.run_hook(job.hook, context)
        if isinstance(result, Failure) or "space" not in result:
            return result
        return self.with_space(job, result)

    def run_hook(self, name: str, context: HookContext) -> Result | Failure:
        """The hook's result; a hook that fails, or is broken, fails its job (never the
        explorer: a plugin's bug must not stop every other operation)."""
        try:
            result = self.load_hook(name)(context)
        except DiscospaceError as error:
            return Failure(str(error))
        except Exception as error:  # a plugin's own bug: one sentence for the job
            return Failure(f"hook '{name}' failed: {type(error).__name__}: {error}")
        except SystemExit as error:  # it would stop the explorer, again at every restart
            return Failure(f"hook '{name}' called exit ({error.code!r}): a hook returns or raises")
        if not isinstance(result, dict):
            return Failure(f"hook '{name}' returned {type(result).__name__}, not a JSON object")
        return result

    def with_space(self, job: JobSpec, result: Result) -> Outcome:
        """A hook's result with the space it returned registered: `space_id` added."""
        try:
            spec = SpaceSpec.model_validate(result["space"])
        except ValidationError as error:
            detail = error.errors()[0]["msg"]
            return Failure(f"hook '{job.hook}' returned a space that is not valid: {detail}")
        space_id = space_id_of(spec)
        registered = self.register(job.name, spec, space_id)
        if registered is not True:
            return registered
        return {**result, "space_id": space_id}

    def space_of(self, written: JsonValue, results: dict[str, Result]) -> str:
        """The space a job names (a space id or a reference), else the pipeline's."""
        if written is None:
            return self.started.space_id
        value = resolve(written, results)
        if not isinstance(value, str) or not value:
            raise PipelineError(f"the space {written!r} is {value!r}, not a space id")
        return value

    def entities_of(self, job: JobSpec, results: dict[str, Result]) -> list[dict[str, Scalar]]:
        value = resolve(job.entities, results)
        try:
            entities = ENTITIES.validate_python(value)
        except ValidationError:
            entities = []
        if not entities:
            shown = str(value)[:80]
            raise PipelineError(
                f"the entities are {shown}: a list of entities (property values) is needed"
            )
        return entities

    def _measured(self, result: Result) -> bool:
        """Whether a job's result is of a child operation other than a pipeline."""
        operation = result.get("operation_id")
        if not isinstance(operation, str):
            return False
        requested = self.view.child(operation).requested
        return requested is None or requested.operator != PIPELINE

    def rows_for(self, named: JsonValue, results: dict[str, Result]) -> list[MeasuredRow] | None:
        """The measurements of job `named` (of every earlier job with a child operation when
        None, but a nested pipeline, whose measurements are its own jobs'): what its child
        knew (`known_results`); None while some are still to be read."""
        if named is not None and not isinstance(named, str):
            raise PipelineError(f"args.job is {named!r}, not a job name")
        names = [named] if named else [n for n, r in results.items() if self._measured(r)]
        rows: list[MeasuredRow] = []
        for name in names:
            result = results.get(name)
            if result is None:
                raise PipelineError(f"job '{name}' has no result to read (did it fail?)")
            operation = result.get("operation_id")
            if not isinstance(operation, str):
                raise PipelineError(f"job '{name}' measured nothing: it ran no child operation")
            child = self.view.child(operation)
            if child.requested is not None and child.requested.operator == PIPELINE:
                raise PipelineError(f"job '{name}' ran a pipeline: its measurements are its jobs'")
            if child.results is None:
                return None
            prior = self.view.prior(operation) if warm_started(child.requested) else ()
            rows.extend(measured_rows(known_results(child.results, prior)))
        return rows

    def child_request(
        self,
        job: JobSpec,
        child_id: str,
        space_id: str,
        operator: str,
        results: dict[str, Result],
        options: dict[str, JsonValue] | None = None,
    ) -> OperationRequested:
        written = resolve(own_parameters(job), results)  # a nested pipeline resolves its own
        assert isinstance(written, dict)
        data: dict[str, Any] = dict(written)
        nested = nested_options(job)
        if nested is not None:
            data["options"] = nested
        if options is not None:
            data["options"] = options
            data.setdefault("batch_size", len(options.get("points") or ()) or 1)  # type: ignore[arg-type]
        data.setdefault("seed", child_seed(self.view.seed, job.name))
        inherited = self.view.parameters.objective
        unset = "objective" not in data and "objectives" not in data
        if inherited and unset and self.measures(space_id, inherited):
            data["objective"] = inherited.model_dump()
        try:
            parameters = OperationParameters.model_validate(data)
        except ValidationError as error:
            problem = parameters_error_text(error)
            raise PipelineError(f"its parameters are not valid: {problem}") from None
        return self.request(child_id, space_id, operator, parameters)

    def measures(self, space_id: str, objective: Objective) -> bool:
        space = self.view.known_space(space_id)
        return space is None or space.measures(objective.property) is not None

    def complete(self, results: dict[str, Result]) -> None:
        best = _best(self.spec, results)
        self.emit(
            OperationCompleted.caused_by(
                self.started,
                self.now,
                operation_id=self.id,
                space_id=self.started.space_id,
                stop_reason="operator_finished",
                stop_detail=self.summary(),
                best_entity_id=best.get("best_entity_id"),
                best_entity_values=best.get("best_entity_values"),
                best_values=best.get("best_values"),
                counts=self.counts(),
            )
        )


def _best(spec: PipelineSpec, results: Mapping[str, Result]) -> Mapping[str, Any]:
    """The result holding the pipeline's best: the last execute or evaluate job with one."""
    candidates = [job.name for stage, job in ordered_jobs(spec) if stage in RESULT_STAGES]
    for name in reversed(candidates):
        result = results.get(name, {})
        if isinstance(result.get("best_entity_id"), str):
            return result
    return {}
