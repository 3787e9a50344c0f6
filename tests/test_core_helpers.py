"""The extension's helpers outside the two operations: `_core.stream_triad`,
`_core.stream_pass` and `_core.scatter_pass`, the yardsticks of
benchmarks/bench_spmv.py."""
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
    before = a.copy()
    with pytest.raises(ValueError, match=words):
        _core.stream_triad(a, b, c, 3.0, blocks)
    np.testing.assert_array_equal(a, before)  # nothing written


def _word_sum(a):
    """stream_pass's checksum of one array: its little-endian 64-bit words
    plus its trailing bytes, modulo 2^64."""
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    whole = raw.size // 8 * 8
    words = raw[:whole].view("<u8")
    return (int(words.sum(dtype=np.uint64)) + int(raw[whole:].sum(dtype=np.uint64))) % (1 << 64)


def _expected_out(nbytes):
    words = nbytes // 8
    return np.concatenate([np.arange(words, dtype="<u8").view(np.uint8), np.zeros(nbytes % 8, np.uint8)])


@pytest.mark.parametrize("blocks", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("sizes", [(), (0,), (1,), (7, 0, 9), (33, 1024, 4099), (1 << 17, 13)])
def test_stream_pass_reads_every_byte_and_writes_every_byte(sizes, blocks, rng):
    # random bytes with the top bits set, so the sum wraps past 2^64
    reads = [rng.integers(0, 256, n, dtype=np.uint8) | np.uint8(0x80) for n in sizes]
    before = [r.copy() for r in reads]
    for out_bytes in (0, 5, 8, 1001, 1 << 16):
        out = np.full(out_bytes, 0xAB, np.uint8)
        got = _core.stream_pass(reads, out, blocks)
        assert got == sum(_word_sum(r) for r in reads) % (1 << 64)
        np.testing.assert_array_equal(out, _expected_out(out_bytes))
    for r, r0 in zip(reads, before):
        np.testing.assert_array_equal(r, r0)


def test_stream_pass_takes_any_dtype_and_shape(rng):
    # the product's own arrays: float values, int32 indices, a 2-D float64 out
    vals = rng.standard_normal(1001).astype(np.float32)
    idx = rng.integers(-5, 5, 777).astype(np.int32)
    x = np.array([np.nan, np.inf, -0.0, 1.5])
    out = np.zeros((3, 5))
    got = _core.stream_pass([vals, idx, x], out, 2)
    assert got == (_word_sum(vals) + _word_sum(idx) + _word_sum(x)) % (1 << 64)
    np.testing.assert_array_equal(out.reshape(-1).view("<u8"), np.arange(15, dtype="<u8"))


def test_stream_pass_with_one_pool_thread(rng):
    old = ascend_linalg.get_num_threads()
    ascend_linalg.set_num_threads(1)
    try:
        a = rng.integers(0, 1 << 62, 5000, dtype=np.int64)
        out = np.zeros(100, np.int64)
        got = _core.stream_pass([a], out, 4)  # more blocks than threads
    finally:
        ascend_linalg.set_num_threads(old)
    assert got == _word_sum(a)
    np.testing.assert_array_equal(out, np.arange(100))


@pytest.mark.parametrize("case, words", [
    ("read strided", "read array 1 must be C-contiguous"),
    ("read Fortran", "read array 0 must be C-contiguous"),
    ("out strided", "out must be C-contiguous"),
    ("out read-only", "writeable"),
    ("out is a read", "share memory"),
    ("out inside a read", "share memory"),
])
def test_stream_pass_rejects_bad_arguments(case, words):
    a, b = np.arange(64.0), np.arange(32, dtype=np.int32)
    reads, out, blocks = [a, b], np.zeros(16), 2
    if case == "read strided":
        reads = [a, np.arange(64, dtype=np.int32)[::2]]
    elif case == "read Fortran":
        reads = [np.asfortranarray(np.ones((4, 3))), b]
    elif case == "out strided":
        out = np.zeros(32)[::2]
    elif case == "out read-only":
        out.setflags(write=False)
    elif case == "out is a read":
        out = a
    elif case == "out inside a read":
        out = a[10:20]
    before = out.copy()
    reads_before = [r.copy() for r in reads]
    with pytest.raises(ValueError, match=words):
        _core.stream_pass(reads, out, blocks)
    np.testing.assert_array_equal(out, before)  # nothing written
    for r, r0 in zip(reads, reads_before):
        np.testing.assert_array_equal(r, r0)


def test_stream_pass_rejects_a_read_that_is_not_an_array():
    with pytest.raises(TypeError):
        _core.stream_pass([object()], np.zeros(4), 1)


@pytest.mark.parametrize("blocks", [0, -3, 1 << 40], ids=["zero", "negative", "huge"])
@pytest.mark.parametrize("fn", ["stream_triad", "stream_pass", "scatter_pass"])
def test_yardsticks_reject_a_bad_block_count(fn, blocks):
    out = np.zeros(16)
    with pytest.raises(ValueError, match="blocks must be in"):
        if fn == "stream_triad":
            _core.stream_triad(out, np.ones(16), np.ones(16), 3.0, blocks)
        elif fn == "stream_pass":
            _core.stream_pass([np.ones(8)], out, blocks)
        else:
            _core.scatter_pass(np.zeros(8, np.int32), np.ones(8), out, blocks)
    assert not out.any()  # nothing written


@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("vtype", [np.float32, np.float64])
@pytest.mark.parametrize("length, n", [(0, 5), (1, 1), (7, 3), (1000, 997), (1 << 17, 1 << 12), (65537, 127)])
@pytest.mark.parametrize("blocks", [1, 2, 3, 64])
def test_scatter_pass_is_bincount(itype, vtype, length, n, blocks, rng):
    # small integers: every order of the sums is exact, so equal to bincount
    idx = rng.integers(0, n, length).astype(itype)
    val = rng.integers(-8, 9, length).astype(vtype)
    idx0, val0 = idx.copy(), val.copy()
    out = np.full(n, np.nan, vtype)
    _core.scatter_pass(idx, val, out, blocks)
    np.testing.assert_array_equal(out, np.bincount(idx, val, minlength=n).astype(vtype))
    np.testing.assert_array_equal(idx, idx0)
    np.testing.assert_array_equal(val, val0)


@pytest.mark.parametrize("vtype, rtol", [(np.float32, 1e-4), (np.float64, 1e-12)])
def test_scatter_pass_sums_random_values(vtype, rtol, rng):
    n, length = 4099, 1 << 16
    idx = rng.integers(0, n, length).astype(np.int32)
    val = rng.standard_normal(length).astype(vtype)
    val[[3, 70]] = [np.nan, np.inf]
    out = np.empty(n, vtype)
    _core.scatter_pass(idx, val, out, 2)
    ref = np.bincount(idx, val.astype(np.float64), minlength=n)
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol * 20)  # NaN and Inf where bincount has them
    assert np.isnan(out[idx[3]]) and np.isnan(ref[idx[3]])


def test_scatter_pass_with_one_pool_thread(rng):
    idx = rng.integers(0, 100, 5000).astype(np.int64)
    val = rng.integers(0, 4, 5000).astype(np.float64)
    out = np.zeros(100)
    old = ascend_linalg.get_num_threads()
    ascend_linalg.set_num_threads(1)
    try:
        _core.scatter_pass(idx, val, out, 4)  # more blocks than threads
    finally:
        ascend_linalg.set_num_threads(old)
    np.testing.assert_array_equal(out, np.bincount(idx, val, minlength=100))


@pytest.mark.parametrize("bad", [-1, 16, 2**31 - 1, -2**31])
@pytest.mark.parametrize("blocks", [1, 3])
def test_scatter_pass_rejects_an_index_out_of_range(bad, blocks):
    idx = np.arange(64, dtype=np.int32) % 16
    idx[37] = bad
    val = np.ones(64)
    out = np.full(16, 7.0)
    with pytest.raises(ValueError, match=r"1 index\(es\) outside \[0, 16\)"):
        _core.scatter_pass(idx, val, out, blocks)
    np.testing.assert_array_equal(out, 7.0)  # nothing written


@pytest.mark.parametrize("case, words", [
    ("float index", "indices must be int32 or int64"),
    ("int values", "values must be float32 or float64"),
    ("out dtype", "out must have the values' dtype"),
    ("2-D", "must be 1-D"),
    ("strided values", "C-contiguous"),
    ("strided out", "C-contiguous"),
    ("read-only out", "writeable"),
    ("lengths", "the same length"),
    ("out is values", "share memory"),
    ("empty out", "out is empty"),
])
def test_scatter_pass_rejects_bad_arguments(case, words):
    idx, val, out = np.zeros(8, np.int32), np.ones(8), np.zeros(4)
    if case == "float index":
        idx = np.zeros(8)
    elif case == "int values":
        val, out = np.ones(8, np.int64), np.zeros(4, np.int64)
    elif case == "out dtype":
        out = np.zeros(4, np.float32)
    elif case == "2-D":
        idx, val = idx.reshape(2, 4), val.reshape(2, 4)
    elif case == "strided values":
        val = np.ones(16)[::2]
    elif case == "strided out":
        out = np.zeros(8)[::2]
    elif case == "read-only out":
        out.setflags(write=False)
    elif case == "lengths":
        val = np.ones(9)
    elif case == "out is values":
        out = val[2:6]
    elif case == "empty out":
        out = np.zeros(0)
    before = out.copy()
    with pytest.raises(ValueError, match=words):
        _core.scatter_pass(idx, val, out, 2)
    np.testing.assert_array_equal(out, before)
