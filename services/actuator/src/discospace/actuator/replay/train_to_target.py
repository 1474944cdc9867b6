"""`train_to_target`: train a workload to its target metric, replayed from the Zeus traces.

Entity: (`dataset`, `network`, `batch_size`, `power_limit`, `gpu`); optional property `eta`
(default 0.5). One measurement draws one seed run of the train trace for (workload, batch size)
with a generator seeded from (seed, request id, attempt): the same request always sees the same
run, a retry or another operation may see another, as retraining would. The power trace turns it
into time and energy (`discospace.traces.zeus`).

Targets: `target_epoch` (epochs trained), `time_to_accuracy` (s), `energy_to_accuracy` (J),
`average_power` (W), `converged` (1 or 0), `zeus_cost` (`eta * energy + (1 - eta) *
max_power * time`, `max_power` the GPU's highest limit in the trace whatever a request's
`max_power` control was: a stored value does not depend on the price one operation put on
time, and `zeus_bso` prices the runs it reads itself) and `trained_power_limit` (W, the limit
the run trained at).

Run controls (optional properties, usually per-run inputs from the `zeus_bso` operator; the
rules are `discospace.traces.zeus_rules`, the ones the explorer's in-process simulator uses):

- `max_epochs` (0: the job's): epochs after which an unconverged run gives up;
- `cost_limit` (0: none): early stopping; the run stops before the epoch that would take its
  Zeus cost past the limit and reports `converged = 0` with the epochs it ran (none, and zero
  time and energy, when it cannot afford one);
- `profile_power` (0 or 1): the first epoch is split over the job's power limits and the rest
  trains at the cheapest, reported as `trained_power_limit`; the entity's `power_limit` (the
  highest, where profiling starts) then only has to be a limit the trace holds.

A run that does not reach the target within its max epochs is still a *valid* measurement:
`converged = 0`, and it costs every epoch it ran. Not converging is a finding about that run,
which a retrained job may or may not repeat, not a property of the configuration; an optimizer
weighs it through `converged` and the cost. A configuration the traces do not hold (unknown
workload, batch size, power limit or GPU) is invalid: "no recorded measurement".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from discospace.actuator.replay.config import ZeusReplay, resolve_path
from discospace.actuator.replay.controls import CONTROL_DEFAULTS, eta_of, run_controls
from discospace.actuator.replay.seeding import generator
from discospace.actuator.replay.table import NO_ROW, Replayed
from discospace.core import ExperimentSpec
from discospace.core.canonical import Value, normalise_value
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.traces.zeus import UnknownConfigurationError, ZeusTrace, cost
from discospace.traces.zeus_rules import ControlledRun, trace_run

TARGETS = (
    "target_epoch",
    "time_to_accuracy",
    "energy_to_accuracy",
    "average_power",
    "converged",
    "zeus_cost",
    "trained_power_limit",
)
WORKLOAD_PROPERTIES = ("dataset", "network", "batch_size", "power_limit")


def run_values(run: ControlledRun, eta: float, max_power: float) -> dict[str, Value]:
    """The targets of one replayed run."""
    return {
        "target_epoch": normalise_value(run.epochs),
        "time_to_accuracy": run.time_s,
        "energy_to_accuracy": run.energy_j,
        "average_power": run.average_power,
        "converged": int(run.converged),
        "zeus_cost": cost(eta, run.energy_j, run.time_s, max_power),
        "trained_power_limit": run.power_limit,
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
                optional_properties={"eta": self.config.eta, **CONTROL_DEFAULTS},
            ),
        )

    def replay(self, properties: Mapping[str, Value], request_id: str, attempt: int) -> Replayed:
        """One run of the entity in `properties`, drawn for (request, attempt), under the run
        controls among `properties`."""
        eta = eta_of(properties.get("eta", self.config.eta))
        controls = run_controls(properties)
        trace = self.traces.get(str(properties.get(self.config.gpu_property, "")).lower())
        if trace is None:
            return Replayed(InvalidMeasurement(reason=f"{NO_ROW} for this GPU"))
        knobs = [_whole(properties.get(name)) for name in ("batch_size", "power_limit")]
        if None in knobs:
            return Replayed(InvalidMeasurement(reason=f"{NO_ROW}: knobs must be whole numbers"))
        batch_size, power_limit = (int(k) for k in knobs if k is not None)
        workload = (str(properties.get("dataset")), str(properties.get("network")))
        rng = generator(self.seed, "train_to_target", request_id, attempt)
        try:
            if controls.profile_power:  # asked above every limit the trace holds at this
                held = trace.power_limits_at(trace.job(workload).workload, batch_size)
                if held and power_limit > max(held):  # size: from its highest, as Zeus's
                    power_limit = max(held)  # simulator (a row missing there: invalid)
            trace.time_per_epoch(workload, batch_size, power_limit)  # recorded, even if profiled
            target_epoch = trace.sample_run(workload, batch_size, rng)
            run = trace_run(trace, workload, batch_size, power_limit, target_epoch, eta, controls)
        except UnknownConfigurationError as error:
            reason = str(error)
            return Replayed(InvalidMeasurement(reason=f"{NO_ROW}: {reason[0].lower()}{reason[1:]}"))
        values = run_values(run, eta, trace.max_power(workload))
        return Replayed(ValidMeasurement(values=values), self._duration(run))

    def _duration(self, run: ControlledRun) -> float:
        scale = self.config.duration_scale
        return 0.0 if scale is None else run.time_s * scale


def _whole(value: object) -> int | None:
    """A batch size or power limit as an int; None when it is not a whole number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if float(value).is_integer() else None
