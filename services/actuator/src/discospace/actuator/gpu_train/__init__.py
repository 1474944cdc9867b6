"""The `gpu_train` actuator: the `cpu_train` workload in torch on a CUDA GPU, with NVML energy.

Importing it needs no torch: torch (and NVML) are imported inside a measurement only.
"""

from discospace.actuator.gpu_train.actuator import GpuTrainActuator, GpuTrainParameters

__all__ = ["GpuTrainActuator", "GpuTrainParameters"]
