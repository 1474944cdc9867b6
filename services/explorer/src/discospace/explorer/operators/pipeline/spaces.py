"""The spaces a pipeline derives from registered ones, and their ids.

- A `measure` job's space: its space with the measurement space replaced by the job's
  experiment (the parameterization it gives kept), so the chosen entities are measured with
  that experiment alone (a longer run, say) in the same sample store.
- A trial's space: the pipeline's space with the trials' properties fixed to the trial's
  values (`discospace.core.pipelines.trial_space`).
- A hook's space (`k_sigma`, `prune_invalid`): as the hook returns it.

Every one is registered through the registry like any space; its id is the content hash the
registry gives it, computed here beforehand so a job can wait for it.
"""

from __future__ import annotations

from discospace.core import DiscoverySpace
from discospace.core.spec import ExperimentRef, SpaceSpec
from discospace.explorer.domain.spaces import KnownSpace


def spec_of(space: KnownSpace) -> SpaceSpec:
    """The spec of a registered space (as registered; rebuilt from its parts when absent)."""
    if space.spec is not None:
        return space.spec
    return SpaceSpec(
        sample_store=space.sample_store,
        entity_space=space.entity_space.to_specs(),
        measurement_space=tuple(experiment.to_ref() for experiment in space.experiments),
    )


def measure_space(base: SpaceSpec, experiment: ExperimentRef) -> SpaceSpec:
    """`base` measured with `experiment` alone."""
    return base.model_copy(update={"measurement_space": (experiment,)})


def space_id_of(spec: SpaceSpec) -> str:
    """The id the registry gives `spec`; raises `DiscospaceError` for a malformed spec."""
    return DiscoverySpace.from_spec(spec).id
