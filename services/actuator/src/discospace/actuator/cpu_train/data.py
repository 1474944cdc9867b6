"""The synthetic token stream the benchmark trains on, generated locally from a seed.

A random sparse Markov chain over the preset's vocabulary: every token has `branching` possible
successors with random (Dirichlet) probabilities. Tokens one at a time look nearly uniform
(the unigram entropy is close to log V), while the next token given the current one has at most
log(branching) nats of entropy, so a model that learns the structure brings its loss well below
the unigram entropy, and a falling loss shows that training really trains.

The stream is endless and deterministic: batch `b` is a pure function of (seed, b). An epoch is
a stated number of samples (`samples_per_epoch`), used only to count `ep` durations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

DEFAULT_BRANCHING = 4


@dataclass(frozen=True)
class MarkovStream:
    """A seeded sparse Markov chain and the batches of token sequences it emits."""

    successors: NDArray[np.int64]
    """(V, branching): the tokens that may follow each token."""
    cumulative: NDArray[np.float64]
    """(V, branching): cumulative probabilities of those successors."""
    seed: int

    @classmethod
    def create(cls, vocab_size: int, seed: int, branching: int = DEFAULT_BRANCHING) -> MarkovStream:
        rng = np.random.default_rng([seed, vocab_size, branching])
        successors = np.stack(
            [rng.choice(vocab_size, size=branching, replace=False) for _ in range(vocab_size)]
        )
        weights = rng.dirichlet(np.ones(branching), size=vocab_size)
        cumulative = np.cumsum(weights, axis=1)
        cumulative[:, -1] = 1.0
        return cls(successors.astype(np.int64), cumulative, seed)

    @property
    def vocab_size(self) -> int:
        return int(self.successors.shape[0])

    def batch(self, index: int, batch_size: int, length: int) -> NDArray[np.int64]:
        """Batch `index`: (batch_size, length) tokens, each row a walk of the chain."""
        rng = np.random.default_rng([self.seed, index])
        tokens = np.empty((batch_size, length), dtype=np.int64)
        tokens[:, 0] = rng.integers(0, self.vocab_size, size=batch_size)
        draws = rng.random((batch_size, length))
        for t in range(1, length):
            current = tokens[:, t - 1]
            choice = (draws[:, t, None] > self.cumulative[current]).sum(axis=1)
            tokens[:, t] = self.successors[
                current, np.minimum(choice, self.successors.shape[1] - 1)
            ]
        return tokens

    def transition_matrix(self) -> NDArray[np.float64]:
        """(V, V): probability of each next token given the current one."""
        size = self.vocab_size
        probabilities = np.diff(self.cumulative, axis=1, prepend=0.0)
        matrix = np.zeros((size, size))
        np.add.at(matrix, (np.arange(size)[:, None], self.successors), probabilities)
        return matrix

    def stationary(self, iterations: int = 2000) -> NDArray[np.float64]:
        """How often each token occurs in a long walk (power iteration from uniform)."""
        matrix = self.transition_matrix()
        distribution = np.full(self.vocab_size, 1.0 / self.vocab_size)
        for _ in range(iterations):
            distribution = 0.5 * (distribution + distribution @ matrix)
        return distribution

    def unigram_entropy(self) -> float:
        """Entropy (nats) of one token drawn from the stream, ignoring its context."""
        return _entropy(self.stationary())

    def conditional_entropy(self) -> float:
        """Entropy (nats) of the next token given the current one: the best loss possible."""
        matrix = self.transition_matrix()
        rows = np.array([_entropy(row) for row in matrix])
        return float(self.stationary() @ rows)


def _entropy(probabilities: NDArray[np.float64]) -> float:
    positive = probabilities[probabilities > 0]
    return float(-(positive * np.log(positive)).sum())
