"""The `replay` actuator: serves measurements from published tables and the Zeus traces."""

from discospace.actuator.replay.actuator import ACTUATOR_NAME, ReplayActuator
from discospace.actuator.replay.config import (
    ReplayConfig,
    ReplayParameters,
    TableReplay,
    ZeusReplay,
    load_config,
)
from discospace.actuator.replay.table import NO_ROW, ReplayTable
from discospace.actuator.replay.train_to_target import TrainToTarget

__all__ = [
    "ACTUATOR_NAME",
    "NO_ROW",
    "ReplayActuator",
    "ReplayConfig",
    "ReplayParameters",
    "ReplayTable",
    "TableReplay",
    "TrainToTarget",
    "ZeusReplay",
    "load_config",
]
