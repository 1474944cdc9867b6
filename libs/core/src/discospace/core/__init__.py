"""discospace.core: the domain language of discospace, pure (no I/O, clock or global randomness).

See libs/core/README.md for the module map.
"""

from discospace.core.canonical import canonical_json, normalise_value, short_hash
from discospace.core.discovery import DiscoverySpace, SpaceRelation
from discospace.core.entity import Entity, entity_id, entity_label
from discospace.core.errors import (
    DiscospaceError,
    DomainError,
    EntityError,
    EntitySpaceError,
    ExperimentError,
    MeasurementError,
    MeasurementSpaceError,
    PipelineError,
    SpecError,
    TimeConversionError,
    TimeError,
)
from discospace.core.experiment import (
    Experiment,
    ExperimentCatalog,
    ParameterizedExperiment,
    observed_property_id,
    parameterized_experiment_id,
    split_observed_property_id,
)
from discospace.core.loading import (
    load_discovery_space,
    load_experiment_specs,
    load_space_spec,
    parse_space_spec,
)
from discospace.core.measurement import InvalidMeasurement, MeasurementResult, ValidMeasurement
from discospace.core.measurement_space import MeasurementSpace
from discospace.core.permutation import Permutation
from discospace.core.pipelines import (
    JobSpec,
    PipelineSpec,
    Reference,
    hook_names,
    ordered_jobs,
    pipeline_problem,
    references,
    resolve,
)
from discospace.core.properties import ConstitutiveProperty, domain_from_spec
from discospace.core.property_domains import Probability, PropertyDomain
from discospace.core.results import (
    Objective,
    ObjectivePoint,
    ObjectiveSource,
    as_number,
    blocked_objectives,
    gives_up,
    objective_blocks,
    objective_needs,
    objective_points,
    objective_source,
    pareto_front,
    result_value,
    target_of,
)
from discospace.core.sampling import (
    EntitySequence,
    GroupedSampling,
    RandomSampling,
    SequentialSampling,
    sampling,
)
from discospace.core.space import EntitySpace
from discospace.core.spec import (
    ExperimentRef,
    ExperimentSpec,
    ProbabilitySpec,
    PropertySpec,
    Scalar,
    SpaceSpec,
)
from discospace.core.time import Time, TimeUnit
from discospace.core.time_conversion import TimeFacts

__all__ = [
    "ConstitutiveProperty",
    "DiscospaceError",
    "DiscoverySpace",
    "DomainError",
    "Entity",
    "EntityError",
    "EntitySequence",
    "EntitySpace",
    "EntitySpaceError",
    "Experiment",
    "ExperimentCatalog",
    "ExperimentError",
    "ExperimentRef",
    "ExperimentSpec",
    "GroupedSampling",
    "InvalidMeasurement",
    "JobSpec",
    "MeasurementError",
    "MeasurementResult",
    "MeasurementSpace",
    "MeasurementSpaceError",
    "Objective",
    "ObjectivePoint",
    "ObjectiveSource",
    "ParameterizedExperiment",
    "Permutation",
    "PipelineError",
    "PipelineSpec",
    "Probability",
    "ProbabilitySpec",
    "PropertyDomain",
    "PropertySpec",
    "RandomSampling",
    "Reference",
    "Scalar",
    "SequentialSampling",
    "SpaceRelation",
    "SpaceSpec",
    "SpecError",
    "Time",
    "TimeConversionError",
    "TimeError",
    "TimeFacts",
    "TimeUnit",
    "ValidMeasurement",
    "as_number",
    "blocked_objectives",
    "canonical_json",
    "domain_from_spec",
    "entity_id",
    "entity_label",
    "gives_up",
    "hook_names",
    "load_discovery_space",
    "load_experiment_specs",
    "load_space_spec",
    "normalise_value",
    "objective_blocks",
    "objective_needs",
    "objective_points",
    "objective_source",
    "observed_property_id",
    "ordered_jobs",
    "parameterized_experiment_id",
    "pareto_front",
    "parse_space_spec",
    "pipeline_problem",
    "references",
    "resolve",
    "result_value",
    "sampling",
    "short_hash",
    "split_observed_property_id",
    "target_of",
]
