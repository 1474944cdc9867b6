"""`train_to_target`: train a workload to its target metric, replayed from the Zeus traces.

Entity: (`dataset`, `network`, `batch_size`, `power_limit`, `gpu`); optional property `eta`
(default 0.5). One measurement draws one seed run of the train trace for (workload, batch size)
with a generator seeded from (seed, request id, attempt): the same request always sees the same
run, a retry or another operation may see another, as retraining would. The power trace turns it
into time and energy (`discospace.traces.zeus`).

Targets: `target_epoch` (epochs trained), `time_to_accuracy` (s), `energy_to_accuracy` (J),
`average_power` (W), `converged` (1 or 0) and `zeus_cost` (`eta * energy + (1 - eta) *
max_power * time`).

A run that does not reach the target within the job's max epochs is still a *valid*
measurement: `converged = 0`, and it costs `max_epochs` of training (`target_epoch` is then
`max_epochs`, the epochs it ran). Not converging is a finding about that run, which a retrained
job may or may not repeat, not a property of the configuration; an optimizer weighs it through
`converged` and the cost. A configuration the traces do not hold (unknown workload, batch size,
power limit or GPU) is invalid: "no recorded measurement".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from discospace.actuator.replay.config import ZeusReplay, resolve_path
from discospace.actuator.replay.seeding import generator
from discospace.actuator.replay.table import NO_ROW, Replayed
from discospace.core import ExperimentSpec
from discospace.core.canonical import Value, normalise_value
from discospace.core.errors import ExperimentError
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.traces.zeus import RunOutcome, UnknownConfigurationError, ZeusTrace

TARGETS = (
    "target_epoch",
    "time_to_accuracy",
    "energy_to_accuracy",
    "average_power",
    "converged",
    "zeus_cost",
)
WORKLOAD_PROPERTIES = ("dataset", "network", "batch_size", "power_limit")


def outcome_values(outcome: RunOutcome) -> dict[str, Value]:
    """The targets of one simulated run."""
    return {
        "target_epoch": normalise_value(outcome.epochs),
        "time_to_accuracy": outcome.time_s,
        "energy_to_accuracy": outcome.energy_j,
        "average_power": outcome.average_power,
        "converged": int(outcome.converged),
        "zeus_cost": outcome.cost,
    }


class TrainToTarget:
    """The Zeus traces of some GPUs, serving `train_to_target` measurements."""

    def __init__(self, config: ZeusReplay, traces: Mapping[str, ZeusTrace], seed: int = 0) -> None:
        self.config = config
        self.traces = dict(traces)
        self.seed = seed

    @classmethod
    def load(cls, config: ZeusReplay, base: Path, seed: int = 0) -> TrainToTarget:
        folder = resolve_path(config.folder, base, "zeus.folder")
        return cls(config, {gpu: ZeusTrace.load(folder, gpu) for gpu in config.gpus}, seed)

    def catalog(self, actuator: str) -> tuple[ExperimentSpec, ...]:
        return (
            ExperimentSpec(
                actuator=actuator,
                experiment=self.config.experiment,
                description=self.config.description,
                target_properties=TARGETS,
                required_properties=(*WORKLOAD_PROPERTIES, self.config.gpu_property),
                optional_properties={"eta": self.config.eta},
            ),
        )

    def replay(self, properties: Mapping[str, Value], request_id: str, attempt: int) -> Replayed:
        """One run of the entity in `properties`, drawn for (request, attempt)."""
        eta = _eta(properties.get("eta", self.config.eta))
        trace = self.traces.get(str(properties.get(self.config.gpu_property, "")).lower())
        if trace is None:
            return Replayed(InvalidMeasurement(reason=f"{NO_ROW} for this GPU"))
        workload = (str(properties.get("dataset")), str(properties.get("network")))
        knobs = [_whole(properties.get(name)) for name in ("batch_size", "power_limit")]
        if None in knobs:
            return Replayed(InvalidMeasurement(reason=f"{NO_ROW}: knobs must be whole numbers"))
        batch_size, power_limit = (int(k) for k in knobs if k is not None)
        rng = generator(self.seed, "train_to_target", request_id, attempt)
        try:
            outcome = trace.simulate(workload, batch_size, power_limit, rng, eta=eta)
        except UnknownConfigurationError as error:
            reason = str(error)
            return Replayed(InvalidMeasurement(reason=f"{NO_ROW}: {reason[0].lower()}{reason[1:]}"))
        return Replayed(ValidMeasurement(values=outcome_values(outcome)), self._duration(outcome))

    def _duration(self, outcome: RunOutcome) -> float:
        scale = self.config.duration_scale
        return 0.0 if scale is None else outcome.time_s * scale


def _whole(value: object) -> int | None:
    """A batch size or power limit as an int; None when it is not a whole number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if float(value).is_integer() else None


def _eta(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ExperimentError(f"eta must be a number in [0, 1], not {value!r}")
    return float(value)
