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
