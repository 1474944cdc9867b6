"""discospace.client: the projector's views from Python (pandas DataFrames, typed models).

from discospace.client import Client
Client().entities("space-5e1d0c9b7a24", include="all")
Client().pipeline_comparison("op-3f2a9c1d")     # a pipeline's probe-versus-evaluate comparison
"""

from discospace.client.client import (
    DEFAULT_URL,
    Client,
    ClientError,
    ExportFormat,
    Include,
    NotAPipelineError,
    NotKnownError,
    ProjectorUnavailableError,
    UnauthorizedError,
)
from discospace.client.models import (
    JOB_STATUSES,
    OPERATION_STATUSES,
    ActuatorPool,
    BestSoFar,
    ChildProgress,
    OperationCounts,
    OperationProgress,
    OperationResult,
    OperationStatus,
    OperatorChoice,
    PipelineJob,
    SpaceDetail,
    SpaceSummary,
)
from discospace.client.pipelines import (
    JobMeasurements,
    ObjectiveComparison,
    ObjectiveValue,
    PipelineComparison,
    TargetComparison,
    TargetStatistics,
    TrialPoint,
)

__all__ = [
    "DEFAULT_URL",
    "JOB_STATUSES",
    "OPERATION_STATUSES",
    "ActuatorPool",
    "BestSoFar",
    "ChildProgress",
    "Client",
    "ClientError",
    "ExportFormat",
    "Include",
    "JobMeasurements",
    "NotAPipelineError",
    "NotKnownError",
    "ObjectiveComparison",
    "ObjectiveValue",
    "OperationCounts",
    "OperationProgress",
    "OperationResult",
    "OperationStatus",
    "OperatorChoice",
    "PipelineComparison",
    "PipelineJob",
    "ProjectorUnavailableError",
    "SpaceDetail",
    "SpaceSummary",
    "TargetComparison",
    "TargetStatistics",
    "TrialPoint",
    "UnauthorizedError",
]
