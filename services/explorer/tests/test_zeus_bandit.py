"""The Gaussian Thompson-sampling bandit: conjugate update, exploration, seeded draws."""

from __future__ import annotations

import math

import numpy as np
import pytest

from discospace.core import DiscospaceError
from discospace.explorer.operators.zeus.bandit import (
    Bandit,
    Posterior,
    Prior,
    pooled_cv2,
    posterior,
    windowed,
)


def test_the_update_matches_the_closed_form_posterior_with_a_learned_precision():
    rewards = [-10.0, -12.0, -14.0]
    # Variance (population) 8/3, so the reward precision is 3/8.
    # Posterior precision 0.5 + 3 * 3/8 = 1.625; mean (0.5 * -5 + 3/8 * -36) / 1.625.
    result = posterior(rewards, Prior(mean=-5.0, precision=0.5))
    assert result.precision == pytest.approx(1.625)
    assert result.mean == pytest.approx(-16.0 / 1.625)
    assert result.observations == 3


def test_a_flat_prior_gives_the_sample_mean_and_n_over_the_variance():
    result = posterior([-4.0, -6.0])
    assert result.mean == pytest.approx(-5.0)
    assert result.precision == pytest.approx(2.0 / 1.0)


def test_one_reward_gives_an_exact_posterior_at_that_reward():
    result = posterior([-7.5], Prior(mean=3.0, precision=10.0))
    assert result == Posterior(-7.5, math.inf, 1)
    assert result.sample(np.random.default_rng(0)) == -7.5


def test_identical_rewards_also_give_an_exact_posterior():
    assert posterior([-2.0, -2.0, -2.0]).precision == math.inf


def test_rewards_too_close_for_their_variance_to_invert_give_an_exact_posterior():
    """A variance below what a float's inverse holds made the precision infinite and the mean
    inf / inf: NaN, which every comparison then lost."""
    assert posterior([-1e-160, -2e-160]) == Posterior(-1.5e-160, math.inf, 2)


def test_no_reward_leaves_the_prior():
    assert posterior([], Prior(1.0, 2.0)) == Posterior(1.0, 2.0, 0)


def test_an_arm_with_an_infinitely_bad_reward_is_never_drawn():
    bandit = Bandit(num_explorations=1)
    rewards = {8: [-math.inf, -1.0], 16: [-100.0, -120.0]}
    assert all(bandit.choose(rewards, np.random.default_rng(k)) == 16 for k in range(20))


def test_an_arm_nothing_is_known_about_samples_as_best_so_it_is_tried():
    assert Posterior(0.0, 0.0, 0).sample(np.random.default_rng(0)) == math.inf


def test_a_window_keeps_the_most_recent_rewards():
    assert windowed([1.0, 2.0, 3.0, 4.0], 2) == (3.0, 4.0)
    assert windowed([1.0, 2.0, 3.0], 0) == (1.0, 2.0, 3.0)


def test_a_negative_window_is_refused():
    with pytest.raises(DiscospaceError, match="window_size"):
        windowed([1.0], -1)


def test_the_bandit_posterior_uses_only_the_window():
    bandit = Bandit(window_size=2, kind="zeus")
    assert bandit.posteriors({1: [-100.0, -4.0, -6.0]})[1].mean == pytest.approx(-5.0)


def test_arms_with_too_few_observations_are_pulled_first():
    bandit = Bandit(num_explorations=2)
    rewards = {8: [-1.0, -1.1], 16: [-50.0], 32: [-0.5, -0.6]}
    assert bandit.choose(rewards, np.random.default_rng(3)) == 16


def test_pulls_in_flight_count_for_the_exploration_phase():
    bandit = Bandit(num_explorations=2)
    rewards = {8: [-1.0, -1.1], 16: [-50.0], 32: [-0.5, -0.6]}
    chosen = bandit.choose(rewards, np.random.default_rng(3), pending={16: 1})
    assert chosen in (8, 32)


def test_exact_posteriors_make_the_best_mean_win():
    bandit = Bandit(num_explorations=1)
    rewards = {8: [-3.0], 16: [-1.0], 32: [-2.0]}
    assert bandit.choose(rewards, np.random.default_rng(0)) == 16


def test_the_same_generator_seed_gives_the_same_choice():
    bandit = Bandit()
    rewards = {8: [-1.0, -1.4], 16: [-1.1, -1.2], 32: [-0.9, -1.6]}
    picks = [bandit.choose(rewards, np.random.default_rng([7, k])) for k in range(20)]
    again = [bandit.choose(rewards, np.random.default_rng([7, k])) for k in range(20)]
    assert picks == again
    assert len(set(picks)) > 1, "Thompson sampling explores among uncertain arms"


@pytest.mark.parametrize("kind", ["zeus", "robust"])
def test_thompson_picks_an_arm_as_often_as_its_posterior_is_the_larger(kind):
    bandit = Bandit(kind=kind)
    rewards = {1: [-10.0, -12.0], 2: [-11.0, -14.0]}
    beliefs = bandit.posteriors(rewards)
    a, b = beliefs[1], beliefs[2]
    gap = (a.mean - b.mean) / math.sqrt(1 / a.precision + 1 / b.precision)
    expected = 0.5 * (1 + math.erf(gap / math.sqrt(2)))
    draws = 4000
    wins = sum(bandit.choose(rewards, np.random.default_rng([1, k])) == 1 for k in range(draws))
    assert wins / draws == pytest.approx(expected, abs=0.03)


def test_with_the_zeus_posterior_two_nearly_equal_rewards_pin_an_arm_below_a_better_one():
    # As Zeus's GaussianTS: the learned precision of rewards 6034 and 6027 is 1 / 12.25, so the
    # posterior standard deviation is 3.5 / sqrt(2), whatever the arm's true spread. It is drawn
    # above an arm of posterior N(-4999, 404) only in that arm's far tail (0.5% of draws), and
    # never once the better-looking arm's posterior narrows with more pulls.
    bandit = Bandit(kind="zeus")
    rewards = {16384: [-6034.0, -6027.0], 8192: [-5570.0, -4428.0]}
    pinned = bandit.posteriors(rewards)[16384]
    assert 1 / math.sqrt(pinned.precision) == pytest.approx(3.5 / math.sqrt(2))
    draws = 4000
    wins = sum(bandit.choose(rewards, np.random.default_rng([3, k])) == 16384 for k in range(draws))
    assert wins / draws == pytest.approx(0.0053, abs=0.003)
    rewards[8192] = [-5570.0, -4428.0] * 10
    assert {bandit.choose(rewards, np.random.default_rng([3, k])) for k in range(draws)} == {8192}


def test_a_bandit_without_arms_is_an_error():
    with pytest.raises(DiscospaceError, match="no arm"):
        Bandit().choose({}, np.random.default_rng(0))


def test_the_robust_posterior_keeps_two_nearly_equal_rewards_as_uncertain_as_the_job():
    # Pooled squared coefficient of variation: (24.5 / 6030.5^2 + 2 * 571^2 / 4999^2) / 2, so
    # the arm's variance is (2 * cv2 * 6030.5^2 + 24.5) / 4: 16384 is drawn above 8192 about
    # five times as often as under Zeus's posterior (0.53%), and is tried again.
    bandit = Bandit()
    rewards = {16384: [-6034.0, -6027.0], 8192: [-5570.0, -4428.0]}
    cv2 = (24.5 / 6030.5**2 + 2 * 571.0**2 / 4999.0**2) / 2
    assert pooled_cv2(rewards) == pytest.approx(cv2)
    variance = (2 * cv2 * 6030.5**2 + 24.5) / 4
    assert bandit.posteriors(rewards)[16384].precision == pytest.approx(2 / variance)
    draws = 2000
    wins = sum(bandit.choose(rewards, np.random.default_rng([3, k])) == 16384 for k in range(draws))
    assert wins / draws == pytest.approx(0.027, abs=0.008)


def test_a_robust_posterior_without_pseudo_counts_is_zeus_own():
    rewards = {1: [-10.0, -12.0, -14.0], 2: [-4.0, -6.0]}
    robust = Bandit(pseudo_count=0.0).posteriors(rewards)
    assert robust == Bandit(kind="zeus").posteriors(rewards)


def test_one_reward_is_not_exact_under_the_robust_posterior():
    rewards = {1: [-10.0], 2: [-4.0, -6.0]}
    one = Bandit().posteriors(rewards)[1]
    assert one.mean == -10.0
    assert 0.0 < one.precision < math.inf


def test_an_arm_with_an_infinitely_bad_reward_is_left_out_of_the_pool():
    assert pooled_cv2({1: [-math.inf, -2.0], 2: [-4.0, -6.0]}) == pytest.approx(2 / 25)
