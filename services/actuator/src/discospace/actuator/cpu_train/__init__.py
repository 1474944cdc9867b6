"""The `cpu_train` actuator: a real training benchmark on this machine's CPU (numpy)."""

from discospace.actuator.cpu_train.actuator import CpuTrainActuator, CpuTrainParameters

__all__ = ["CpuTrainActuator", "CpuTrainParameters"]
