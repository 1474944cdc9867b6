"""A pipeline's trials: child pipelines, each on a space with the trials' properties fixed.

Trial `i` (job `trial-<i>`, stage `trials`) starts once the trials up to `i - window` ended
(`window` is the pipeline's `batch_size`), with values `trials.py` chooses from them: its
space (the pipeline's, each property of `over` fixed to the trial's value) is registered, then
its child pipeline (`<pipeline>-trial-<i>`: the stages with `${trial.<p>}` replaced, the seed
derived, the trials' objective as its objective) runs. Its objective value is read from the
result of the job the objective names. A trial that fails is recorded (as an optional job)
and the trials go on; the pipeline ends with the best trial, or fails when none gave a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from discospace.core import DiscospaceError
from discospace.core.pipelines import PipelineSpec, TrialsSpec, trial_space
from discospace.core.spec import Scalar
from discospace.events import (
    OperationCompleted,
    OperationParameters,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
)
from discospace.explorer.domain.conducting import ChildView, ConductorView
from discospace.explorer.domain.operation import JobEnd, JobFacts
from discospace.explorer.operators.pipeline.naming import (
    TRIALS_STAGE,
    child_operation_id,
    child_seed,
    trial_job,
)
from discospace.explorer.operators.pipeline.results import objective_value
from discospace.explorer.operators.pipeline.round import Failure, Outcome, Result, Round
from discospace.explorer.operators.pipeline.spaces import space_id_of, spec_of
from discospace.explorer.operators.pipeline.substitution import with_trial
from discospace.explorer.operators.pipeline.trials import TrialOutcome, best_trial, first_unsettled

PIPELINE = "pipeline"
Chooser = Callable[[ConductorView, TrialsSpec, int, list[TrialOutcome]], dict[str, Scalar]]
"""Chooses a trial's values: (view, trials, trial number, the trials it is chosen after)."""


class TrialsRound(Round):
    """A round of a pipeline with trials: its child pipelines."""

    def __init__(self, view: ConductorView, spec: PipelineSpec, choose: Chooser) -> None:
        super().__init__(view, spec)
        self.choose = choose

    def walk(self) -> None:
        assert self.spec.trials is not None
        self.run_trials(self.spec.trials)

    def run_trials(self, trials: TrialsSpec) -> None:
        window = self.view.parameters.batch_size
        ended: dict[int, TrialOutcome] = {}
        reasons: list[str] = []
        for number in range(trials.count):
            job = trial_job(number)
            facts = self.view.jobs.get((number, job), JobFacts())
            end = facts.ended
            if end is None and facts.started is None and not _may_start(number, window, ended):
                break
            end = end or self.end(
                TRIALS_STAGE, job, number, self.trial(trials, number, facts.started, ended), True
            )
            if end is not None:
                ended[number] = self.outcome(trials, number, end, ended)
                if isinstance(end, PipelineJobFailed):
                    reasons.append(end.reason)
        if len(ended) == trials.count:
            self.complete_trials(trials, ended, reasons)

    def trial(
        self,
        trials: TrialsSpec,
        number: int,
        started: PipelineJobStarted | None,
        ended: dict[int, TrialOutcome],
    ) -> Outcome:
        job = trial_job(number)
        child_id = child_operation_id(self.id, job)
        values = self.values(trials, number, ended)
        try:
            spec = trial_space(spec_of(self.known(self.started.space_id)), values)
            space_id = space_id_of(spec)
        except DiscospaceError as error:
            return Failure(str(error))
        if started is None:
            self.job_started(TRIALS_STAGE, job, number, child_id, space_id)
        registered = self.register(job, spec, space_id)
        if registered is not True:
            return registered
        request = self.request(
            child_id, space_id, PIPELINE, self.trial_parameters(trials, values, job)
        )

        def result(child: ChildView, completed: OperationCompleted) -> Result | Failure:
            return _trial_result(trials, number, values, child, completed)

        return self.follow(request, result)

    def values(
        self, trials: TrialsSpec, number: int, ended: dict[int, TrialOutcome]
    ) -> dict[str, Scalar]:
        """Trial `number`'s values, chosen after the trials that ended before it started."""
        window = self.view.parameters.batch_size
        told = [ended[j] for j in range(first_unsettled(number, window))]
        return self.choose(self.view, trials, number, told)

    def outcome(
        self, trials: TrialsSpec, number: int, end: JobEnd, ended: dict[int, TrialOutcome]
    ) -> TrialOutcome:
        """An ended trial: its values as its result recorded them (choosing them again would
        cost an optimizer's round for every ended trial in every round), else chosen again."""
        if isinstance(end, PipelineJobFailed):
            return TrialOutcome(number, self.values(trials, number, ended), None)
        recorded = end.result.get("values")
        values = (
            dict(recorded)
            if isinstance(recorded, dict) and set(recorded) == set(trials.over)
            else self.values(trials, number, ended)
        )
        objective = end.result.get("objective")
        return TrialOutcome(
            number, values, float(objective) if isinstance(objective, int | float) else None
        )

    def trial_parameters(
        self, trials: TrialsSpec, values: Mapping[str, Scalar], job: str
    ) -> OperationParameters:
        """The child pipeline's parameters: its stages with the trial's values, its own seed,
        and the trials' objective as its objective when the space measures it (its jobs
        inherit it: their best is the trials' best, whatever the pipeline's own objective)."""
        stages = with_trial(self.view.parameters.options["stages"], values)
        objective = self.view.parameters.objective
        wanted = trials.objective.objective()
        if self.known(self.started.space_id).measures(wanted.property):
            objective = wanted
        return self.view.parameters.model_copy(
            update={
                "options": {"stages": stages},
                "seed": child_seed(self.view.seed, job),
                "objective": objective,
                "batch_size": 1,
            }
        )

    def complete_trials(
        self, trials: TrialsSpec, ended: dict[int, TrialOutcome], reasons: list[str]
    ) -> None:
        best = best_trial([ended[number] for number in sorted(ended)], trials)
        prop = trials.objective.property
        if best is None:
            last = f": the last failed: {reasons[-1]}" if reasons else ""
            self.fail(f"none of the {trials.count} trials gave a value of '{prop}'{last}")
            return
        child = self.view.child(child_operation_id(self.id, trial_job(best.trial)))
        finished = child.finished
        assert isinstance(finished, OperationCompleted)
        assert best.objective is not None
        shown = ", ".join(f"{name}={value}" for name, value in sorted(best.values.items()))
        failed = f"; {len(reasons)} failed" if reasons else ""
        self.emit(
            OperationCompleted.caused_by(
                self.started,
                self.now,
                operation_id=self.id,
                space_id=self.started.space_id,
                stop_reason="operator_finished",
                stop_detail=(
                    f"best of {trials.count} trials: trial {best.trial} ({shown}) with {prop} "
                    f"{best.objective:g}{failed}"
                ),
                best_entity_id=finished.best_entity_id,
                best_entity_values=finished.best_entity_values,
                best_values={**best.values, prop: best.objective},
                counts=self.counts(),
            )
        )


def _may_start(number: int, window: int, ended: Mapping[int, TrialOutcome]) -> bool:
    return all(j in ended for j in range(first_unsettled(number, window)))


def _trial_result(
    trials: TrialsSpec,
    number: int,
    values: Mapping[str, Scalar],
    child: ChildView,
    completed: OperationCompleted,
) -> Result | Failure:
    named = trials.objective.job
    facts = child.jobs.get((None, named))
    end = facts.ended if facts else None
    if not isinstance(end, PipelineJobCompleted):
        return Failure(f"trial {number} has no result of job '{named}' to read its objective from")
    value = objective_value(end.result, trials.objective.objective())
    if value is None:
        prop = trials.objective.property
        return Failure(f"trial {number}: job '{named}' gave no value of '{prop}'")
    return {
        "trial": number,
        "values": dict(values),
        "objective": value,
        "property": trials.objective.property,
        "operation_id": child.operation_id,
        "space_id": completed.space_id,
        "best_entity_id": completed.best_entity_id,
        "best_entity_values": completed.best_entity_values,
        "best_values": completed.best_values,
    }
