"""A seeded bijection of ``range(size)``: random order without replacement, O(1) per position.

A balanced Feistel network on the smallest even number of bits that covers ``size`` is a
permutation of that power-of-two range; cycle walking (re-applying it until the result falls
below ``size``) restricts it to ``range(size)``. Since the bit range is less than four times
``size``, a position costs a few rounds on average, whatever the size, and nothing is stored:
the first position of a 10^12-point space is as cheap as the last.

Round keys come from BLAKE2b of the seed, and rounds use fixed-width integer mixing, so the same
seed gives the same order on every machine and Python version.
"""

import hashlib
from collections.abc import Iterator

ROUNDS = 6
_MASK64 = (1 << 64) - 1


def seed_bytes(seed: int | str | bytes) -> bytes:
    """The bytes of a seed; ints and strings are distinct (``1`` and ``"1"`` differ)."""
    if isinstance(seed, bytes):
        return b"b:" + seed
    if isinstance(seed, bool) or not isinstance(seed, int | str):
        raise TypeError(f"a seed is an int, a str or bytes, not {type(seed).__name__}")
    prefix = b"i:" if isinstance(seed, int) else b"s:"
    return prefix + str(seed).encode("utf-8")


def derive_seed(seed: int | str | bytes, *parts: object) -> bytes:
    """A sub-seed for one purpose (``derive_seed(seed, "group", 7)``), stable everywhere."""
    text = "\x1f".join(str(part) for part in parts).encode("utf-8")
    return hashlib.blake2b(seed_bytes(seed) + b"\x1e" + text, digest_size=32).digest()


def unit_interval(seed: int | str | bytes, *parts: object) -> float:
    """A stable pseudo-random number in [0, 1) for ``(seed, *parts)``."""
    digest = derive_seed(seed, *parts)
    return int.from_bytes(digest[:7], "big") / float(1 << 56)


def _mix64(value: int, key: int) -> int:
    """SplitMix64's finaliser: a fast, fixed-width, well-spread integer hash."""
    value = (value ^ key) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)


class Permutation:
    """A seeded permutation of ``range(size)``: ``at(position)`` and ``position_of(value)``."""

    def __init__(self, size: int, seed: int | str | bytes) -> None:
        if size < 0:
            raise ValueError("a permutation size cannot be negative")
        self.size = size
        self._half = max(1, ((size - 1).bit_length() + 1) // 2) if size > 1 else 1
        self._mask = (1 << self._half) - 1
        key_bytes = hashlib.blake2b(seed_bytes(seed), digest_size=8 * ROUNDS).digest()
        self._keys = [int.from_bytes(key_bytes[8 * i : 8 * i + 8], "big") for i in range(ROUNDS)]
        self._wide = self._half > 64
        self._seed = seed_bytes(seed)

    def __len__(self) -> int:
        return self.size

    def _round(self, value: int, index: int) -> int:
        if not self._wide:
            return _mix64(value, self._keys[index]) & self._mask
        data = self._seed + bytes([index]) + value.to_bytes((self._half + 7) // 8, "big")
        width = min(64, (self._half + 7) // 8)
        digest = hashlib.blake2b(data, digest_size=width).digest()
        return int.from_bytes(digest, "big") & self._mask

    def _encrypt(self, value: int) -> int:
        left, right = value >> self._half, value & self._mask
        for index in range(ROUNDS):
            left, right = right, left ^ self._round(right, index)
        return (left << self._half) | right

    def _decrypt(self, value: int) -> int:
        left, right = value >> self._half, value & self._mask
        for index in reversed(range(ROUNDS)):
            left, right = right ^ self._round(left, index), left
        return (left << self._half) | right

    def at(self, position: int) -> int:
        """The value at ``position`` (0 <= position < size)."""
        self._check(position)
        value = self._encrypt(position)
        while value >= self.size:
            value = self._encrypt(value)
        return value

    def position_of(self, value: int) -> int:
        """The position holding ``value``: the inverse of :meth:`at`."""
        self._check(value)
        position = self._decrypt(value)
        while position >= self.size:
            position = self._decrypt(position)
        return position

    def _check(self, number: int) -> None:
        if not 0 <= number < self.size:
            raise IndexError(f"{number} is outside a permutation of size {self.size}")

    def __iter__(self) -> Iterator[int]:
        return (self.at(position) for position in range(self.size))
