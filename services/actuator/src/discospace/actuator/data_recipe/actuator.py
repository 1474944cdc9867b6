"""The `data_recipe` actuator: processes a real text corpus with a recipe (Data-Juicer's
filters and deduplicator), trains `cpu_train`'s model on what survives, and evaluates it.

Experiments (see `README.md`, "The data_recipe actuator"):

- `probe`: the raw corpus's statistics per filter (`raw_<stat>_{mean,std,p10,p50,p90}`), and
  what the recipe would keep of it (`kept_*`, `dropped_<operator>`), without training;
- `process_train`: the same processing, then a training run on the kept documents for
  `duration` (a counted time: `400ba`, `400000tok`, `2ep`; one `ep` is one pass over the kept
  text) and the held-out loss on clean prose, with the statistics of the kept documents. The
  duration counts the timed batches: one untimed warm-up batch (cpu_train's traced step, which
  trains too) comes before them, so `400ba` is 401 optimizer steps, as `tokens_trained` and
  `epochs_trained` report.

Neither requires a property: the recipe's properties (`recipe.RECIPE_DEFAULTS`) and the
training's (`TRAINING_DEFAULTS`) are optional, and a value the entity space holds wins over
the experiment's, so a space explores the recipe values it declares. A recipe that is not one
(a ratio above 1, a minimum above its maximum) or keeps too little to train on is an invalid
measurement; a machine whose standard library or Data-Juicer install cannot build the corpus,
or whose corpus is not the one asked for, is a transient failure (another worker may have it).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from threadpoolctl import threadpool_limits

from discospace.actuator.cpu_train.memory import (
    beyond_numpy,
    beyond_numpy_reason,
    estimated_peak_mb,
)
from discospace.actuator.cpu_train.plan import PlanError, TrainConfig, stop_after, whole_number
from discospace.actuator.cpu_train.presets import PRESETS, preset_named
from discospace.actuator.cpu_train.training import TrainResult, train
from discospace.actuator.data_recipe import juicer, text
from discospace.actuator.data_recipe.corpus import Corpus, CorpusError, build_corpus, corpus_name
from discospace.actuator.data_recipe.juicer import DataJuicerMissingError, Processed
from discospace.actuator.data_recipe.recipe import RECIPE_DEFAULTS, recipe_of
from discospace.actuator.data_recipe.summary import describe, described_names, rounded
from discospace.actuator.plugin import MeasurementTask, Outcome, TransientFailure
from discospace.core import ExperimentSpec, Time, TimeUnit
from discospace.core.canonical import Value
from discospace.core.errors import TimeError
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

ACTUATOR_NAME = "data_recipe"
PROBE = "probe"
PROCESS_TRAIN = "process_train"
CORPUS_TARGETS = ("corpus_name", "corpus_digest", "documents")
PROCESSING_TARGETS = (
    "kept_documents",
    "kept_fraction",
    "kept_tokens",
    *(f"dropped_{name}" for name in juicer.OPERATORS),
)
TRAINING_TARGETS = (
    "tokens_trained",
    "epochs_trained",
    "train_tokens_per_s",
    "train_runtime",
    "train_loss",
    "heldout_loss",
    "heldout_perplexity",
)
PROBE_TARGETS = (*CORPUS_TARGETS, *described_names("raw", juicer.STATS), *PROCESSING_TARGETS)
PROCESS_TRAIN_TARGETS = (
    *CORPUS_TARGETS,
    *PROCESSING_TARGETS,
    *TRAINING_TARGETS,
    *described_names("kept", juicer.STATS),
)
COUNTED_UNITS = (TimeUnit.BATCH, TimeUnit.TOKEN, TimeUnit.SAMPLE, TimeUnit.EPOCH)

_in_process = threading.Lock()
"""Thread limits are process-wide: in-process runs go one at a time."""


class DataRecipeParameters(BaseModel):
    """What `DISCOSPACE_ACTUATOR_PARAMETERS` may set: the defaults of the training options."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    duration: Time = Field(
        default=Time(400, "ba"), description="How long process_train trains unless the space says."
    )
    model_size: str = Field(default="tiny", description="The cpu_train preset trained.")

    @field_validator("duration")
    @classmethod
    def _counted_above_zero(cls, duration: Time) -> Time:
        """Defaults every measurement would fail on are refused at start, not recorded as an
        invalid result of each entity (the rules of `training_of`)."""
        problem = _uncounted(duration)
        if problem is not None:
            raise ValueError(problem)
        if duration.value <= 0:
            raise ValueError(f"duration must be above zero, not {duration}")
        return duration

    @field_validator("model_size")
    @classmethod
    def _a_preset(cls, name: str) -> str:
        problem = preset_named(name)
        if isinstance(problem, str):
            raise ValueError(problem)
        return name


@dataclass(frozen=True)
class Training:
    """How `process_train` trains: the run's shape, its budget and its threads."""

    preset_name: str
    batch_size: int
    max_length: int
    duration: str
    seed: int
    threads: int


class DataRecipeActuator:
    """Measures what a data recipe does to a corpus and to a model trained on it."""

    name = ACTUATOR_NAME
    Parameters = DataRecipeParameters
    isolated: ClassVar[bool] = True

    def __init__(self, parameters: DataRecipeParameters | None = None) -> None:
        self.parameters = parameters or DataRecipeParameters()

    def training_defaults(self) -> dict[str, Value]:
        return {
            "duration": str(self.parameters.duration),
            "model_size": self.parameters.model_size,
            "batch_size": 16,
            "model_max_length": 64,
            "number_threads": 1,
            "seed": 0,
        }

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        corpus = {"corpus": corpus_name()}
        return (
            ExperimentSpec(
                actuator=ACTUATOR_NAME,
                experiment=PROBE,
                description="Statistics of the raw standard-library corpus per Data-Juicer filter "
                "(mean, std, p10, p50, p90) and what the recipe keeps of it; no training.",
                target_properties=PROBE_TARGETS,
                optional_properties={**RECIPE_DEFAULTS, **corpus},
            ),
            ExperimentSpec(
                actuator=ACTUATOR_NAME,
                experiment=PROCESS_TRAIN,
                description="Process the standard-library corpus with the recipe (Data-Juicer "
                "filters, dedup), train cpu_train's model on the kept text for `duration`, and "
                "report the held-out loss (nats per character) on clean prose.",
                target_properties=PROCESS_TRAIN_TARGETS,
                optional_properties={**RECIPE_DEFAULTS, **self.training_defaults(), **corpus},
            ),
        )

    def measure_blocking(self, task: MeasurementTask) -> Outcome:
        """Processes (and for `process_train`, trains) in this process: the worker's child."""
        properties = {**task.options, **task.entity.as_dict()}
        try:
            recipe = recipe_of(properties)
            training = training_of(properties) if _trains(task) else None
        except PlanError as error:
            return InvalidMeasurement(reason=str(error))
        try:
            corpus = _corpus(properties.get("corpus"))
            stats = raw_statistics(corpus)
            processed = juicer.process(corpus.texts, stats, recipe)
        except (CorpusError, DataJuicerMissingError) as error:
            return TransientFailure(reason=str(error))
        if training is None:
            return ValidMeasurement(values=probe_values(corpus, stats, processed))
        return _process_train(corpus, stats, processed, training)

    async def measure(self, task: MeasurementTask) -> Outcome:
        """In-process fallback: `measure_blocking` in a thread, one run at a time."""
        return await asyncio.to_thread(_one_at_a_time, self.measure_blocking, task)


def _one_at_a_time(measure: Callable[[MeasurementTask], Outcome], task: MeasurementTask) -> Outcome:
    with _in_process:
        return measure(task)


def _trains(task: MeasurementTask) -> bool:
    return task.experiment.experiment.identifier == PROCESS_TRAIN


def _uncounted(duration: Time, written: object = None) -> str | None:
    """Why `duration` (as `written`, when given) is no budget of a recipe (a time in seconds),
    or None."""
    if duration.unit in COUNTED_UNITS:
        return None
    return (
        f"duration must be counted in ba, tok, sp or ep, not {written or duration}: "
        "the same recipe must train on the same tokens on every machine"
    )


def training_of(properties: Mapping[str, Value]) -> Training:
    """The training run `properties` describe, or a `PlanError`."""
    preset = preset_named(properties.get("model_size"))
    if isinstance(preset, str):
        raise PlanError(preset)
    duration = properties.get("duration")
    try:
        problem = _uncounted(Time.parse(str(duration)), duration)
    except TimeError as error:
        raise PlanError(f"duration {duration}: {error}") from None
    if problem is not None:
        raise PlanError(problem)
    return Training(
        preset_name=preset.name,
        batch_size=whole_number(properties, "batch_size"),
        max_length=whole_number(properties, "model_max_length"),
        duration=str(duration),
        seed=whole_number(properties, "seed", minimum=0),
        threads=whole_number(properties, "number_threads"),
    )


def _corpus(asked: Value | None) -> Corpus:
    name = corpus_name()
    if asked is not None and asked != name:
        raise CorpusError(f"this worker's Python builds corpus {name}, not {asked}")
    return build_corpus()


@cache
def raw_statistics(corpus: Corpus) -> list[dict[str, float]]:
    """Each document's statistics: computed once per process, for every recipe."""
    return juicer.statistics(corpus.texts)


def probe_values(
    corpus: Corpus, stats: list[dict[str, float]], processed: Processed
) -> dict[str, Value]:
    values = _corpus_values(corpus)
    for stat in juicer.STATS:
        values |= describe("raw", stat, [document[stat] for document in stats])
    return values | _processing_values(corpus, processed)


def _corpus_values(corpus: Corpus) -> dict[str, Value]:
    return {
        "corpus_name": corpus.name,
        "corpus_digest": corpus.digest,
        "documents": len(corpus.documents),
    }


def _processing_values(corpus: Corpus, processed: Processed) -> dict[str, Value]:
    kept_chars = sum(len(corpus.documents[i].text) + len(text.SEPARATOR) for i in processed.kept)
    values: dict[str, Value] = {
        "kept_documents": len(processed.kept),
        "kept_fraction": rounded(len(processed.kept) / len(corpus.documents)),
        "kept_tokens": kept_chars,
    }
    return values | {f"dropped_{name}": count for name, count in processed.dropped.items()}


def _process_train(
    corpus: Corpus, stats: list[dict[str, float]], processed: Processed, training: Training
) -> Outcome:
    kept = [corpus.documents[i].text for i in processed.kept]
    preset = PRESETS[training.preset_name]
    tokens = text.training_tokens(kept, preset.vocab_size)
    if len(tokens) < training.max_length + 1:
        return InvalidMeasurement(reason=_too_little(processed, len(tokens), training.max_length))
    try:
        config = _train_config(training, len(tokens))
    except PlanError as error:
        return InvalidMeasurement(reason=str(error))
    with threadpool_limits(limits=training.threads):
        try:
            result = train(config, batches=text.window_batches(tokens, training.seed))
        except ValueError as error:  # beyond what numpy can address at all, as in cpu_train
            if not beyond_numpy(error):
                raise
            estimate = estimated_peak_mb(
                config.preset, config.batch_size, config.max_length, config.dtype
            )
            return InvalidMeasurement(reason=beyond_numpy_reason(estimate))
        windows = text.evaluation_windows(
            corpus.evaluation, preset.vocab_size, training.max_length + 1
        )
        loss = text.heldout_loss(result.parameters, preset, windows)
    if result.diverged or not math.isfinite(loss):
        return InvalidMeasurement(reason="diverged: the training loss is not a finite number")
    values = _processing_values(corpus, processed) | _training_values(result, loss, len(tokens))
    for stat in juicer.STATS:
        values |= describe("kept", stat, [stats[i][stat] for i in processed.kept])
    return ValidMeasurement(values=_corpus_values(corpus) | values)


def _train_config(training: Training, kept_tokens: int) -> TrainConfig:
    """The run; one epoch is one pass over the kept tokens (`kept_tokens // max_length` samples)."""
    max_batches, _ = stop_after(
        training.duration,
        batch_size=training.batch_size,
        max_length=training.max_length,
        samples_per_epoch=max(1, kept_tokens // training.max_length),
    )
    return TrainConfig(
        preset=PRESETS[training.preset_name],
        batch_size=training.batch_size,
        max_length=training.max_length,
        seed=training.seed,
        max_batches=max_batches,
    )


def _training_values(result: TrainResult, heldout: float, kept_tokens: int) -> dict[str, Value]:
    trained = (result.steps + 1) * result.tokens_per_batch
    return {
        "tokens_trained": trained,
        "epochs_trained": rounded(trained / kept_tokens),
        "train_tokens_per_s": round(result.tokens_per_second, 1),
        "train_runtime": round(result.runtime_s, 3),
        "train_loss": round(result.final_loss, 6),
        "heldout_loss": round(heldout, 6),
        "heldout_perplexity": round(math.exp(heldout), 4),
    }


def _too_little(processed: Processed, tokens: int, max_length: int) -> str:
    top = max(processed.dropped, key=lambda name: processed.dropped[name])
    return (
        f"the recipe keeps {len(processed.kept)} documents ({tokens} characters), too few to "
        f"train on windows of {max_length + 1}: {top} dropped the most "
        f"({processed.dropped[top]} documents)"
    )
