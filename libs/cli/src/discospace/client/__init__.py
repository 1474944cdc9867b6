"""discospace.client: the projector's views from Python (pandas DataFrames, typed models).

from discospace.client import Client
Client().entities("space-5e1d0c9b7a24", include="all")
"""

from discospace.client.client import (
    DEFAULT_URL,
    Client,
    ClientError,
    ExportFormat,
    Include,
    NotKnownError,
    ProjectorUnavailableError,
)
from discospace.client.models import (
    OPERATION_STATUSES,
    ActuatorPool,
    BestSoFar,
    OperationCounts,
    OperationProgress,
    OperationResult,
    OperationStatus,
    OperatorChoice,
    SpaceDetail,
    SpaceSummary,
)

__all__ = [
    "DEFAULT_URL",
    "OPERATION_STATUSES",
    "ActuatorPool",
    "BestSoFar",
    "Client",
    "ClientError",
    "ExportFormat",
    "Include",
    "NotKnownError",
    "OperationCounts",
    "OperationProgress",
    "OperationResult",
    "OperationStatus",
    "OperatorChoice",
    "ProjectorUnavailableError",
    "SpaceDetail",
    "SpaceSummary",
]
