"""The compiled float formatter against Python's `repr`, byte for byte."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from probcep.cli.floats import WIDTH, repr_texts


def texts(x: np.ndarray) -> list[bytes]:
    x = np.ascontiguousarray(x, np.float64)
    skip = ~((x >= 1e-4) & (x < 1e16)) | (x == np.floor(x))
    out, offsets = np.empty(len(x) * WIDTH, np.uint8), np.empty(len(x) + 1, np.int32)
    repr_texts(x, skip, out, offsets)
    got = [bytes(out[offsets[i]:offsets[i + 1]]) for i in range(len(x))]
    return [b"" if s else g for g, s in zip(got, skip)]


def want(x: np.ndarray) -> list[bytes]:
    return [b"" if not (1e-4 <= v < 1e16) or v == int(v) else repr(v).encode()
            for v in x.tolist()]


def test_every_exponent_powers_of_two_and_short_decimals():
    rng = np.random.default_rng(11)
    lo, hi = (int(np.float64(v).view(np.uint64)) for v in (1e-4, 1e16))
    bit_patterns = rng.integers(lo, hi, 100_000, dtype=np.uint64).view(np.float64)
    twos = 2.0 ** np.arange(-14, 54)  # the lower neighbour is closer than the upper
    near_twos = np.concatenate([twos, np.nextafter(twos, 0), np.nextafter(twos, np.inf),
                                1.5 * twos, 0.75 * twos])
    short = rng.integers(1, 10 ** 6, 30_000) / 10.0 ** rng.integers(1, 10, 30_000)
    x = np.concatenate([rng.random(50_000), rng.random(10_000) ** 12, bit_patterns,
                        near_twos, short, np.nextafter(short, 0), np.nextafter(short, 2),
                        [0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.5, 1e-4, 0.9999999999999999, 1.5,
                         0.00010000000000000002, 4503599627370495.5, 9.999999999999998e15]])
    assert texts(x) == want(x)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(1e-4, 1e16, exclude_max=True), max_size=20))
def test_random_doubles(values):
    x = np.array(values, np.float64)
    assert texts(x) == want(x)
