"""What a copy must deliver: a pattern in which every 32-bit word is a function of its position and no two words of
a copy are equal (word i = i x PATTERN_MULTIPLIER + seed, mod 2^32: an odd multiplier is a bijection on 32-bit
words), so that a chunk dropped, repeated, shifted or left unwritten leaves words that differ from the pattern.

The check compares, word for word, the bytes copied back with the bytes sent: the device's destination of a host-to-
device copy read back to the host beside the host's source, and the host's destination of a device-to-host copy
beside the pattern the device's source was filled with. Its output (OUT_WORDS words, what the probe's `out` holds
after the check launch): the words compared, then per direction (h2d, d2h) the words that differ and the first of
them plus one (0: none)."""

from __future__ import annotations

import numpy as np

PATTERN_MULTIPLIER = 0x9E3779B1  # odd: word values are distinct within 2^32 words
SEEDS = {"h2d": 0x1234567, "d2h": 0x7654321}  # one pattern per direction: a bidir copy cannot meet the other's
OUT_WORDS = 5


def pattern(words: int, seed: int, xp=np) -> object:
    """The pattern of `words` 32-bit words (NumPy, or CuPy as `xp`, with the same values)."""
    index = xp.arange(words, dtype=xp.uint32)
    return index * xp.uint32(PATTERN_MULTIPLIER) + xp.uint32(seed)


def mismatches(sent: np.ndarray, received: np.ndarray) -> tuple[int, int]:
    """(words that differ, index of the first of them plus one, 0 where none) between two copies' words."""
    if sent.shape != received.shape:
        return max(sent.size, received.size), 1
    bad = np.flatnonzero(sent != received)
    return int(bad.size), int(bad[0]) + 1 if bad.size else 0


def outcome(compared: int, found: dict[str, tuple[int, int]]) -> np.ndarray:
    """The check's output words: words compared, then (differing, first + 1) for h2d and d2h (zeros where unused)."""
    words = [compared]
    for direction in ("h2d", "d2h"):
        words += list(found.get(direction, (0, 0)))
    return np.asarray(words, dtype=np.uint32)


def expected(compared: int) -> np.ndarray:
    """What a correct copy's check writes: every word compared, none differing."""
    return outcome(compared, {}).astype(np.float64)
