"""The extension's helpers outside the two operations: `_core.stream_triad`,
the bandwidth yardstick of benchmarks/bench_spmv.py."""
import numpy as np
import pytest

import ascend_linalg
from ascend_linalg import _core


@pytest.mark.parametrize("n", [0, 1, 7, 64, 1000, 1 << 17])
@pytest.mark.parametrize("blocks", [1, 2, 3, 64])
def test_stream_triad_computes_every_element(n, blocks, rng):
    b, c = rng.standard_normal(n), rng.standard_normal(n)
    a = np.full(n, np.nan)
    b0, c0 = b.copy(), c.copy()
    _core.stream_triad(a, b, c, -1.5, blocks)
    np.testing.assert_array_equal(a, b + -1.5 * c)  # one rounded product, one rounded sum
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_array_equal(c, c0)


def test_stream_triad_with_one_pool_thread():
    # more blocks than threads: the one thread runs them all
    old = ascend_linalg.get_num_threads()
    ascend_linalg.set_num_threads(1)
    try:
        a, b, c = np.zeros(1000), np.arange(1000.0), np.ones(1000)
        _core.stream_triad(a, b, c, 2.0, 3)
    finally:
        ascend_linalg.set_num_threads(old)
    np.testing.assert_array_equal(a, np.arange(1000.0) + 2.0)


def test_stream_triad_reads_converted_b_and_c():
    a = np.zeros(5)
    _core.stream_triad(a, np.arange(5), np.arange(10.0)[::2], 1.0, 2)  # int b, strided c
    np.testing.assert_array_equal(a, np.arange(5) + np.arange(10.0)[::2])


@pytest.mark.parametrize("case, words", [
    ("a float32", "C-contiguous float64"),
    ("a int64", "C-contiguous float64"),
    ("a strided", "C-contiguous float64"),
    ("a read-only", "writeable"),
    ("a 2-D", "1-D"),
    ("b short", "same length"),
    ("c long", "same length"),
    ("blocks 0", "blocks"),
    ("blocks negative", "blocks"),
    ("blocks huge", "blocks"),
])
def test_stream_triad_rejects_bad_arguments(case, words):
    n = 16
    a, b, c, blocks = np.zeros(n), np.ones(n), np.ones(n), 2
    if case == "a float32":
        a = np.zeros(n, np.float32)
    elif case == "a int64":
        a = np.zeros(n, np.int64)
    elif case == "a strided":
        a = np.zeros(2 * n)[::2]
    elif case == "a read-only":
        a.setflags(write=False)
    elif case == "a 2-D":
        a = np.zeros((4, 4))
    elif case == "b short":
        b = np.ones(n - 1)
    elif case == "c long":
        c = np.ones(n + 1)
    elif case == "blocks 0":
        blocks = 0
    elif case == "blocks negative":
        blocks = -3
    elif case == "blocks huge":
        blocks = 1 << 40
    before = a.copy()
    with pytest.raises(ValueError, match=words):
        _core.stream_triad(a, b, c, 3.0, blocks)
    np.testing.assert_array_equal(a, before)  # nothing written
