"""The synthetic stream and training runs: the loss really falls, runs stop when told, the
memory estimate agrees with the measured peak."""

from __future__ import annotations

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from discospace.actuator.cpu_train.data import DEFAULT_BRANCHING, MarkovStream
from discospace.actuator.cpu_train.memory import estimated_peak_bytes
from discospace.actuator.cpu_train.plan import TrainConfig
from discospace.actuator.cpu_train.presets import PRESETS
from discospace.actuator.cpu_train.training import train


def _train(**config):
    with threadpool_limits(limits=1):
        return train(TrainConfig(**config))


def test_the_stream_is_a_pure_function_of_its_seed_and_the_batch_index():
    stream = MarkovStream.create(vocab_size=64, seed=3)

    first = stream.batch(5, batch_size=4, length=20)

    np.testing.assert_array_equal(first, MarkovStream.create(64, 3).batch(5, 4, 20))
    assert not np.array_equal(first, stream.batch(6, 4, 20))
    assert not np.array_equal(first, MarkovStream.create(64, 4).batch(5, 4, 20))
    assert first.shape == (4, 20)
    assert first.min() >= 0
    assert first.max() < 64


def test_every_step_of_the_stream_follows_the_chain():
    stream = MarkovStream.create(vocab_size=32, seed=0)
    tokens = stream.batch(0, batch_size=8, length=50)
    allowed = stream.transition_matrix() > 0

    assert allowed[tokens[:, :-1], tokens[:, 1:]].all()
    assert (allowed.sum(axis=1) == DEFAULT_BRANCHING).all()


def test_the_next_token_is_far_more_predictable_than_a_token_alone():
    stream = MarkovStream.create(vocab_size=128, seed=0)

    assert stream.unigram_entropy() > 0.9 * math.log(128)
    assert stream.conditional_entropy() <= math.log(DEFAULT_BRANCHING) + 1e-9


def test_the_loss_falls_well_below_the_unigram_entropy_over_200_batches():
    preset = PRESETS["tiny"]
    stream = MarkovStream.create(preset.vocab_size, seed=0)

    result = _train(preset=preset, batch_size=8, max_length=64, max_batches=200)

    assert result.steps == 200
    assert result.initial_loss == pytest.approx(math.log(preset.vocab_size), abs=0.3)
    assert result.final_loss < stream.unigram_entropy() - 2.0
    assert result.final_loss < result.initial_loss / 2
    assert result.final_loss > 0.9 * stream.conditional_entropy()


def test_a_run_given_seconds_trains_until_they_have_passed():
    result = _train(preset=PRESETS["tiny"], batch_size=2, max_length=16, max_seconds=0.3)

    assert result.runtime_s >= 0.3
    assert result.steps >= 1
    assert result.tokens_per_second == pytest.approx(result.steps * 32 / result.runtime_s)


def test_the_same_seed_gives_the_same_losses():
    config = {"preset": PRESETS["tiny"], "batch_size": 2, "max_length": 16, "max_batches": 5}

    assert _train(**config).losses == _train(**config).losses
    assert _train(**config).losses != _train(**config, seed=1).losses


@pytest.mark.parametrize(
    ("size", "batch_size", "max_length", "dtype"),
    [
        ("tiny", 8, 64, "float32"),
        ("tiny", 16, 256, "float32"),
        ("small", 4, 128, "float64"),
        ("medium", 4, 128, "float32"),
    ],
)
def test_the_memory_estimate_is_within_half_of_the_measured_peak(
    size, batch_size, max_length, dtype
):
    preset = PRESETS[size]
    result = _train(
        preset=preset, batch_size=batch_size, max_length=max_length, dtype=dtype, max_batches=1
    )

    estimate = estimated_peak_bytes(preset, batch_size, max_length, dtype)
    assert result.peak_memory_bytes / 1.5 < estimate < result.peak_memory_bytes * 1.5


def test_float64_needs_about_twice_the_memory_of_float32():
    config = {"preset": PRESETS["small"], "batch_size": 8, "max_length": 128, "max_batches": 1}

    ratio = (
        _train(**config, dtype="float64").peak_memory_bytes
        / _train(**config, dtype="float32").peak_memory_bytes
    )

    assert 1.7 < ratio < 2.1


def test_a_run_stops_after_batches_or_seconds_never_both():
    with pytest.raises(ValueError, match="exactly one"):
        TrainConfig(PRESETS["tiny"], 1, 8, max_batches=1, max_seconds=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        TrainConfig(PRESETS["tiny"], 1, 8)
