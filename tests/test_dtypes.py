import numpy as np

from harness import dtypes


def test_bf16_rounds_to_nearest_even():
    values = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, 3.0e38])
    assert list(dtypes.encode("bf16", values)) == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x7F62]


def test_round_to_gives_exactly_representable_values():
    rng = np.random.default_rng(0)
    for dtype in ("f16", "bf16"):
        x = dtypes.round_to(dtype, rng.standard_normal(1000))
        assert np.array_equal(dtypes.round_to(dtype, x), x)
        assert np.array_equal(dtypes.decode(dtype, dtypes.encode(dtype, x)), x)


def test_unit_roundoff():
    assert dtypes.unit_roundoff("f16") == 2**-11 and dtypes.unit_roundoff("f32") == 2**-24


def _nearest_by_brute_force(dtype, values):
    """round_to's fp8 answer as a search over every finite code in code order (the first nearest wins)."""
    table = dtypes.fp8_values(dtype)
    finite = np.flatnonzero(np.isfinite(table))
    return table[finite[np.abs(np.asarray(values, dtype=np.float64)[..., None] - table[finite]).argmin(-1)]]


def test_fp8_rounding_and_encoding_match_a_search_over_every_code():
    """round_to and encode search a sorted table of the 256 codes (issue 46, item 11: np.vectorize over a dict
    took most of the conformance sweep's check time): the same values and codes as a search over every code,
    ties (midpoints) and signed zeros, non-finite and out-of-range values included; a value the type does
    not hold is refused, naming the first such value."""
    import pytest

    from harness.errors import SpecError

    rng = np.random.default_rng(1)
    for dtype in dtypes.FP8:
        table = dtypes.fp8_values(dtype)
        finite = np.sort(table[np.isfinite(table)])
        midpoints = (finite[1:] + finite[:-1]) / 2
        values = np.concatenate([rng.standard_normal(2000) * 4, rng.standard_normal(500) * 1e5, midpoints, finite,
                                 [0.0, -0.0, np.nan, np.inf, -np.inf, 1e12, -1e12, 2.0 ** -30, -(2.0 ** -30)]])
        got, expected = dtypes.round_to(dtype, values), _nearest_by_brute_force(dtype, values)
        assert np.array_equal(got, expected, equal_nan=True), dtype
        assert np.array_equal(np.signbit(got), np.signbit(expected)), dtype
        # beyond about 1e18 the search's float64 distances all round to one value and it took code 0 (+0): the
        # sorted table gives the nearest value, the largest of that sign
        assert dtypes.round_to(dtype, np.array([1e300, -1e300])).tolist() == [finite[-1], finite[0]]
        assert dtypes.round_to(dtype, values[:35].reshape(5, 7)).shape == (5, 7)
        codes = {float(v): c for c, v in enumerate(table) if np.isfinite(v) and not (v == 0 and c)}
        exact = dtypes.round_to(dtype, values)
        assert dtypes.encode(dtype, exact).tolist() == [codes[float(v)] for v in exact]
        assert dtypes.encode(dtype, exact[:21].reshape(3, 7)).shape == (3, 7)
        assert dtypes.encode(dtype, np.float64(finite[5])).shape == () and dtypes.encode(dtype, -0.0) == 0
        assert np.array_equal(dtypes.decode(dtype, dtypes.encode(dtype, exact)), exact)
        with pytest.raises(SpecError, match=r"^0\.3 is not a"):
            dtypes.encode(dtype, np.array([[finite[3], 0.3], [0.7, finite[4]]]))
        with pytest.raises(SpecError, match=r"^nan is not a"):
            dtypes.encode(dtype, np.array([np.nan]))
