"""The data_recipe actuator: its catalog, the probe's statistics of the raw corpus, a short
real process-and-train run, and the recipes it finds invalid."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from discospace.actuator.data_recipe import DataRecipeActuator, DataRecipeParameters
from discospace.actuator.data_recipe.actuator import (
    PROBE_TARGETS,
    PROCESS_TRAIN_TARGETS,
    raw_statistics,
)
from discospace.actuator.data_recipe.corpus import build_corpus, corpus_name
from discospace.actuator.data_recipe.recipe import RECIPE_DEFAULTS
from discospace.actuator.isolation import ChildProcessRunner
from discospace.actuator.plugin import MeasurementTask, TransientFailure
from discospace.actuator.plugins import ActuatorConfigError, load_actuator
from discospace.core import Entity, Experiment, ExperimentCatalog, load_discovery_space
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

juicer = pytest.importorskip(
    "discospace.actuator.data_recipe.juicer", reason="needs the actuator's data extra"
)
pytest.importorskip("data_juicer", reason="py-data-juicer: make test-setup installs it")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SHORT = {"duration": "5ba", "batch_size": 4, "model_max_length": 32}
"""A run of 6 batches of 4 windows of 33 characters: a second or two."""
CLEAN = {"min_alnum_ratio": 0.7, "max_special_char_ratio": 0.3, "dedup": 1}


def _task(experiment: str, parameterization=None, actuator=None, **recipe) -> MeasurementTask:
    specs = {spec.experiment: spec for spec in (actuator or DataRecipeActuator()).catalog()}
    parameterized = Experiment.from_spec(specs[experiment]).parameterize(parameterization or {})
    return MeasurementTask("req-1", Entity.of(recipe or {"dedup": 0}), parameterized)


def _measure(experiment: str, parameterization=None, **recipe):
    return DataRecipeActuator().measure_blocking(_task(experiment, parameterization, **recipe))


def _reason(experiment: str, parameterization=None, **recipe) -> str:
    outcome = _measure(experiment, parameterization, **recipe)
    assert isinstance(outcome, InvalidMeasurement), outcome
    return outcome.reason


def test_the_catalog_offers_probe_and_process_train_with_the_recipe_as_options():
    probe, process_train = DataRecipeActuator().catalog()

    assert (probe.experiment, process_train.experiment) == ("probe", "process_train")
    assert probe.required_properties == process_train.required_properties == ()
    assert probe.optional_properties == {
        "min_text_len": 0,
        "max_text_len": 0,
        "min_alnum_ratio": 0.0,
        "max_char_rep_ratio": 1.0,
        "max_special_char_ratio": 1.0,
        "min_num_words": 0,
        "dedup": False,
        "corpus": corpus_name(),
    }
    assert process_train.optional_properties == probe.optional_properties | {
        "duration": "400ba",
        "model_size": "tiny",
        "batch_size": 16,
        "model_max_length": 64,
        "number_threads": 1,
        "seed": 0,
    }
    assert {"kept_fraction", "dropped_words_num_filter", "heldout_loss", "tokens_trained"} <= set(
        process_train.target_properties
    )
    assert {"raw_text_len_mean", "raw_alnum_ratio_std", "raw_num_words_p90"} <= set(
        probe.target_properties
    )


def test_the_worker_builds_it_from_its_entry_point():
    actuator = load_actuator("data_recipe", {"duration": "50ba"})

    assert isinstance(actuator, DataRecipeActuator)
    assert actuator.isolated
    assert actuator.catalog()[1].optional_properties["duration"] == "50ba"


def test_the_probe_reports_the_raw_corpus_statistics_per_filter_and_what_the_recipe_keeps():
    outcome = _measure("probe", **CLEAN)

    assert isinstance(outcome, ValidMeasurement)
    values = outcome.values
    assert set(values) == set(PROBE_TARGETS)
    stats = raw_statistics(build_corpus())
    for stat in juicer.STATS:
        column = np.array([document[stat] for document in stats])
        assert values[f"raw_{stat}_mean"] == pytest.approx(column.mean(), rel=1e-5)
        assert values[f"raw_{stat}_std"] == pytest.approx(column.std(ddof=1), rel=1e-5)
        assert values[f"raw_{stat}_p50"] == pytest.approx(np.median(column), rel=1e-5)
        assert values[f"raw_{stat}_p10"] <= values[f"raw_{stat}_p50"] <= values[f"raw_{stat}_p90"]
    dropped = sum(values[f"dropped_{name}"] for name in juicer.OPERATORS)
    assert values["kept_documents"] + dropped == values["documents"] == len(stats)
    assert 0 < values["kept_fraction"] < 1
    assert values["dropped_alphanumeric_filter"] > 0
    assert values["dropped_document_deduplicator"] > 0
    assert values["corpus_name"] == corpus_name()


def test_a_short_real_run_processes_trains_and_evaluates():
    outcome = _measure("process_train", SHORT, **CLEAN)

    assert isinstance(outcome, ValidMeasurement), outcome
    values = outcome.values
    assert set(values) == set(PROCESS_TRAIN_TARGETS)
    assert values["tokens_trained"] == 6 * 4 * 32
    assert math.isfinite(values["heldout_loss"])
    assert 0 < values["heldout_loss"] < math.log(128) + 1
    assert values["heldout_perplexity"] == pytest.approx(math.exp(values["heldout_loss"]), rel=1e-4)
    assert values["train_tokens_per_s"] > 0
    assert values["kept_special_char_ratio_p90"] <= 0.3
    assert values["kept_alnum_ratio_p10"] >= 0.7
    assert values["epochs_trained"] == pytest.approx(6 * 4 * 32 / values["kept_tokens"], rel=1e-4)


def test_the_same_recipe_and_seed_give_the_same_loss_and_another_seed_another():
    first = _measure("process_train", SHORT, **CLEAN)
    again = _measure("process_train", SHORT, **CLEAN)
    other = _measure("process_train", {**SHORT, "seed": 1}, **CLEAN)

    assert isinstance(first, ValidMeasurement)
    assert isinstance(again, ValidMeasurement)
    assert isinstance(other, ValidMeasurement)
    assert first.values["heldout_loss"] == again.values["heldout_loss"]
    assert other.values["heldout_loss"] != first.values["heldout_loss"]


def test_a_recipe_with_a_minimum_above_its_maximum_is_invalid_with_a_reason():
    reason = _reason("process_train", SHORT, min_text_len=500, max_text_len=100)

    assert reason == "min_text_len 500 is above max_text_len 100: no document can pass"


def test_a_recipe_that_filters_everything_out_is_invalid_naming_the_filter_that_dropped_most():
    reason = _reason("process_train", SHORT, min_text_len=10**7)

    assert reason.startswith("the recipe keeps 0 documents (0 characters), too few to train on")
    assert reason.endswith(
        f"text_length_filter dropped the most ({len(build_corpus().documents)} documents)"
    )


def test_a_batch_size_numpy_cannot_address_is_out_of_memory_as_in_cpu_train():
    """numpy refuses such an array with a `ValueError`, which escaped as a failure for good
    (a traceback in the worker's log) where cpu_train finds the entity invalid."""
    reason = _reason("process_train", {"duration": "1ba", "batch_size": 2**62})

    assert reason.startswith("out of memory: numpy cannot make arrays that large")


def test_a_budget_in_seconds_is_refused_since_it_would_train_different_tokens_on_each_machine():
    reason = _reason("process_train", {"duration": "10sec"})

    assert reason.startswith("duration must be counted in ba, tok, sp or ep, not 10sec")


def test_an_unknown_model_size_is_invalid():
    assert _reason("process_train", {"model_size": "huge"}).startswith("model_size 'huge' is not")


def test_a_corpus_this_python_cannot_build_is_a_transient_failure_for_another_worker():
    outcome = _measure("probe", {"corpus": "cpython-2.7.18-stdlib-v1"})

    assert isinstance(outcome, TransientFailure)
    assert outcome.reason == (
        f"this worker's Python builds corpus {corpus_name()}, not cpython-2.7.18-stdlib-v1"
    )


async def test_a_measurement_runs_in_a_child_process_of_the_worker():
    actuator = DataRecipeActuator(DataRecipeParameters(duration="2ba"))
    task = _task("process_train", {"batch_size": 2, "model_max_length": 16}, actuator, **CLEAN)

    outcome = await ChildProcessRunner(actuator)(task)

    assert isinstance(outcome, ValidMeasurement), outcome
    assert outcome.values["tokens_trained"] == 3 * 2 * 16


def test_the_example_space_is_consistent_with_the_catalog_and_holds_the_unrefined_recipe():
    space = load_discovery_space(EXAMPLES / "pipelines" / "data-recipe-space.yaml")
    actuator = DataRecipeActuator()

    assert space.problems(ExperimentCatalog(actuator.catalog())) == []
    assert {ref.experiment for ref in space.experiments} == {"probe", "process_train"}
    assert space.entity_space.why_not(RECIPE_DEFAULTS | {"dedup": 0}) is None


@pytest.mark.parametrize(
    ("parameters", "sentence"),
    [
        ({"duration": "30sec"}, "duration must be counted in ba, tok, sp or ep, not 30sec"),
        ({"duration": "0ba"}, "duration must be above zero, not 0ba"),
        ({"model_size": "nope"}, "model_size 'nope' is not a preset"),
    ],
)
def test_defaults_every_measurement_would_refuse_are_refused_at_start(parameters, sentence):
    """They were accepted, and each entity then got an invalid result for the operator's mistake."""
    with pytest.raises(ActuatorConfigError, match=re.escape(sentence)):
        load_actuator("data_recipe", parameters)
