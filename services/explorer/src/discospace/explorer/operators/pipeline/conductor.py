"""`pipeline`: the Data-Juicer sandbox's stages as an operation that runs other operations.

A pipeline's options are a `PipelineSpec` (`discospace.core.pipelines`): stages `probe`,
`refine`, `execute`, `evaluate` of named jobs, run one after another in that order. Each round
(`Pipeline.conduct`) walks the jobs in order from the pipeline's own events: a job that ended
is passed (its result is kept for the jobs after it), the first job not ended is started or
followed, and the round stops there until something changes.

- `operation` job: `PipelineJobStarted`, then the child's `OperationRequested` (id
  `<pipeline>-<job>`, `parent_operation_id` set, parameters with references resolved, the
  seed derived from the pipeline's and the job's name, the pipeline's objective when the job
  gives none); once the child ended, `PipelineJobCompleted` with its outcome
  (`results.operation_result`), or `PipelineJobFailed`.
- `measure` job: its space with the measurement space replaced by the job's experiment is
  registered (`SpaceSubmitted`, then the registry's `SpaceRegistered`), then a child of
  operator `points` measures exactly the job's entities there.
- `hook` job: the hook (a pure function, `discospace.core.hooks`) runs on the measurements of
  the job its `args.job` names (every earlier job's when absent), once all of them are read; a
  `space` it returns is registered, and the job's result gains its `space_id`.
- A job that fails fails the pipeline with its reason (`OperationFailed`), unless it is
  `optional`; once every job ended, `OperationCompleted` with the best of the last
  execute/evaluate job that has one, and every child's counts added up.
- Cancelling the pipeline cancels its running children and ends it cancelled once they ended
  (at once, as a child does when cancelled), with their counts.

With `trials`, the pipeline runs no job itself: it runs `count` child pipelines (`trials.py`
chooses each one's values), each on the pipeline's space with the trials' properties fixed to
its values, with `${trial.<property>}` replaced by them, and ends with the best trial.

Every decision derives from the log (`naming.py`), so a restarted explorer decides the same
events with the same ids, and never reruns a job that ended. The rounds: `round.py` (what
every round does), `jobs.py` (stages of jobs), `trial_runs.py` (trials).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, ClassVar

from discospace.core import ExperimentCatalog
from discospace.core.hooks import Hook, load_hook
from discospace.core.pipelines import TrialsSpec, hook_names, parse_pipeline, pipeline_problem
from discospace.core.spec import Scalar
from discospace.events import OperationParameters, StoppingRules
from discospace.events.parameters import parameters_problem
from discospace.explorer.domain.conducting import Conduct, ConductorView
from discospace.explorer.domain.spaces import KnownSpace
from discospace.explorer.operators.pipeline.jobs import JobsRound
from discospace.explorer.operators.pipeline.spaces import spec_of
from discospace.explorer.operators.pipeline.trial_runs import PIPELINE, TrialsRound
from discospace.explorer.operators.pipeline.trials import TrialOutcome, trial_values

CHOSEN_KEPT = 10_000
"""Trial values kept chosen (a cache: choosing again gives the same values)."""


class Pipeline:
    """The `pipeline` operator (a `Conductor`): stages of jobs, or trials of them."""

    name: ClassVar[str] = PIPELINE

    def __init__(
        self,
        operators: Collection[str] = (),
        hooks: Callable[[str], Hook] = load_hook,
        installed: Callable[[], Collection[str]] = hook_names,
    ) -> None:
        """`operators`: what operation jobs may run (any name when empty); `hooks` loads a
        hook by name, `installed` names the hooks installed."""
        self.operators = tuple(operators)
        self.load_hook = hooks
        self.installed = installed
        self.chosen: dict[tuple[Any, ...], dict[str, Scalar]] = {}

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        if parameters.stopping != StoppingRules():
            return "a pipeline takes no stopping rules: give them to its jobs' parameters"
        catalog = ExperimentCatalog(experiment.experiment for experiment in space.experiments)
        return pipeline_problem(
            parameters.options,
            spec_of(space),
            self.installed(),
            catalog,
            self.operators or None,
            parameters_problem,
            parameters.objective,
        )

    def conduct(self, view: ConductorView) -> Conduct:
        spec = parse_pipeline(view.parameters.options)
        if spec.trials is None:
            return JobsRound(view, spec, self.load_hook).run()
        return TrialsRound(view, spec, self.choose).run()

    def choose(
        self, view: ConductorView, trials: TrialsSpec, number: int, told: list[TrialOutcome]
    ) -> dict[str, Scalar]:
        """Trial `number`'s values (kept, by the pipeline's start, the trial and what they
        were chosen after: choosing again gives the same)."""
        key = (view.started.event_id, number, tuple((o.trial, o.objective) for o in told))
        if key not in self.chosen:
            if len(self.chosen) >= CHOSEN_KEPT:
                self.chosen.clear()
            self.chosen[key] = trial_values(trials, view.seed, number, told)
        return self.chosen[key]
