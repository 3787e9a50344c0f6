"""The binned ``A^T x`` on the CPU device (kernels/spmv/spmvt_bins.h).

Binning sums every column from zero in row order, scipy's own order, so its
results are compared with scipy's bit for bit. ``_core.spmv_bin_force(1,
chunk_entries)`` makes every product the kernel allows run binned (small
``chunk_entries`` split the matrix into many bin-then-drain passes);
``_core.spmv_bin_calls()`` counts the products that ran binned, the proof
that the kernel ran.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg import _core
from ascend_linalg.sparse import csr_array, csr_matrix, spmv

from _fused_cases import FUSED, fused_case

ml_dtypes = pytest.importorskip("ml_dtypes")

VALUE_DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64]


@pytest.fixture
def bins():
    """``_core.spmv_bin_force``; the default (-1, by size) is restored after the test."""
    yield _core.spmv_bin_force
    _core.spmv_bin_force(-1, 0)


def random_csr(rng, m, n, nnz, dtype, index_dtype=np.int32, special=False):
    r = np.sort(rng.integers(0, m, nnz))
    c = rng.integers(0, n, nnz)
    v = rng.standard_normal(nnz)
    if np.issubdtype(dtype, np.integer):
        v = rng.integers(-1000, 1000, nnz)
    elif np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(nnz)
    S = sp.csr_matrix((v.astype(dtype), (r, c)), shape=(m, n))
    S.sum_duplicates()
    if special and S.nnz > 10:
        S.data[:: max(S.nnz // 7, 1)] = np.nan
        S.data[3 :: max(S.nnz // 5, 1)] = np.inf
    S.indices = S.indices.astype(index_dtype)
    S.indptr = S.indptr.astype(index_dtype)
    return S


def vector(rng, n, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, n).astype(dtype)
    x = rng.standard_normal(n)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(n)
    return x.astype(dtype)


def run_binned(A, x):
    before = _core.spmv_bin_calls()
    with ascend_linalg.use_backend("cpu"):
        y = A.T @ x
    return y, _core.spmv_bin_calls() - before


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("chunk", [0, 37, 4099])
def test_binned_matches_scipy_bitwise(rng, bins, dtype, index_dtype, chunk):
    bins(1, chunk)
    # columns around the 2^16-column bins' edges, rows enough for 2 blocks
    for m, n, nnz in [(300_000, 65_537, 200_000), (5000, 131_073, 40_000), (1, 65_536, 3000), (97, 1, 500)]:
        S = random_csr(rng, m, n, nnz, dtype, index_dtype, special=not np.issubdtype(dtype, np.integer))
        x = vector(rng, m, dtype)
        y, ran = run_binned(csr_matrix(S), x)
        expect = S.T @ x
        assert ran == 1
        assert y.dtype == expect.dtype and y.shape == expect.shape
        np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_binned_same_bits_on_any_thread_count(rng, bins, threads, nthreads):
    bins(1, 10_000)
    threads(nthreads)
    S = random_csr(rng, 400_000, 200_003, 1_000_000, np.float64)
    x = vector(rng, S.shape[0], np.float64)
    y, ran = run_binned(csr_array(S), x)
    assert ran == 1
    np.testing.assert_array_equal(y, S.T @ x)


def test_binned_shapes(rng, bins):
    """Empty rows, one huge row, duplicates and unsorted indices, x @ A, a strided x."""
    bins(1, 513)
    m, n = 50_000, 70_000
    lengths = np.where(rng.random(m) < 0.7, 0, rng.integers(0, 6, m))
    lengths[m // 2] = 60_000
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, n, indptr[-1])  # unsorted, with duplicates
    data = rng.standard_normal(indptr[-1])
    S = sp.csr_matrix((data, indices, indptr), shape=(m, n))
    A = csr_matrix((data.copy(), indices.copy(), indptr.copy()), shape=(m, n))
    xs = rng.standard_normal(2 * m)[::2]
    before = _core.spmv_bin_calls()
    with ascend_linalg.use_backend("cpu"):
        y1 = A.T @ xs
        y2 = xs @ A
    assert _core.spmv_bin_calls() - before == 2
    expect = S.T @ np.ascontiguousarray(xs)
    np.testing.assert_array_equal(y1, expect)
    np.testing.assert_array_equal(y2, expect)


def test_binned_mixed_precision(rng, bins):
    """float16 / bfloat16 values widened, float32 sums, in scipy's order."""
    bins(1, 0)
    S = random_csr(rng, 300_000, 100_000, 400_000, np.float32)
    for half in (np.float16, ml_dtypes.bfloat16):
        data = S.data.astype(half)
        xh = vector(rng, S.shape[0], np.float32).astype(half)
        wide = sp.csr_matrix((data.astype(np.float32), S.indices, S.indptr), shape=S.shape)
        before = _core.spmv_bin_calls()
        with ascend_linalg.use_backend("cpu"):
            y = spmv((data, S.indices, S.indptr), xh, shape=S.shape, trans=True)
        assert _core.spmv_bin_calls() - before == 1
        assert y.dtype == np.float32
        np.testing.assert_array_equal(y, wide.T @ xh.astype(np.float32))


def malformed(rng, index_dtype, where, at=1 / 3):
    """A 300,000 x 80,000 matrix with one defect about `at` of the way through its nonzeros."""
    S = random_csr(rng, 300_000, 80_000, 300_000, np.float64, index_dtype)
    indices, indptr, data = S.indices.copy(), S.indptr.copy(), S.data.copy()
    if where == "index_too_large":
        indices[int(len(indices) * at)] = 80_000
    elif where == "index_negative":
        indices[int(len(indices) * at)] = -1
    else:
        r = int(300_000 * at)
        indptr[r] = indptr[r + 1] + 5
    return S, csr_matrix((data, indices, indptr), shape=S.shape)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("where", ["index_too_large", "index_negative", "indptr_decreasing"])
def test_binned_malformed_structure_raises(rng, bins, index_dtype, where):
    bins(1, 1000)
    S, A = malformed(rng, index_dtype, where, {"index_too_large": 2 / 3, "indptr_decreasing": 2 / 3}.get(where, 1 / 3))
    saved = (A.indices.copy(), A.indptr.copy(), A.data.copy())
    x = vector(rng, S.shape[0], np.float64)
    x0 = x.copy()
    before = _core.spmv_bin_calls()
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
        spmv(A, x, trans=True)
    assert _core.spmv_bin_calls() == before + 1  # the binned kernel found it
    for kept, now in zip(saved, (A.indices, A.indptr, A.data)):
        np.testing.assert_array_equal(kept, now)
    np.testing.assert_array_equal(x, x0)


@pytest.mark.parametrize("where", ["index_too_large", "index_negative", "indptr_decreasing"])
@pytest.mark.parametrize("at", [0.01, 0.5, 0.999])
@pytest.mark.parametrize("chunk", [0, 1000])
def test_binned_fused_malformed_leaves_y_untouched(rng, bins, where, at, chunk):
    """With alpha/beta the sums go to the workspace and y is written only by the
    last chunk's drain: a defect in any chunk raises before y is touched."""
    bins(1, chunk)
    S, A = malformed(rng, np.int32, where, at)
    x = vector(rng, S.shape[0], np.float64)
    y = vector(rng, S.shape[1], np.float64)
    y0 = y.copy()
    before = _core.spmv_bin_calls()
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
        spmv(A, x, alpha=2.0, beta=0.5, y=y, trans=True)
    assert _core.spmv_bin_calls() == before + 1
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("chunk", [0, 37])
@pytest.mark.parametrize("case", range(len(FUSED)))
def test_binned_fused_alpha_beta_strided_y(rng, bins, dtype, chunk, case):
    """y = alpha * A.T @ x + beta * y binned: scipy's sums, then numpy's alpha * s + beta * y, bit for bit."""
    kw = FUSED[case]
    bins(1, chunk)
    S = random_csr(rng, 300_000, 131_073, 300_000, dtype, special=not np.issubdtype(dtype, np.integer))
    x = vector(rng, S.shape[0], dtype)
    alpha, beta, y, expect = fused_case(rng, kw, dtype, S.T @ x, vector)
    before = _core.spmv_bin_calls()
    with ascend_linalg.use_backend("cpu"):
        out = spmv(S, x, alpha=alpha, beta=beta, y=y, trans=True)
    assert _core.spmv_bin_calls() - before == 1
    assert out.dtype == expect.dtype
    if y is not None:
        assert np.shares_memory(out, y)  # written into the caller's y, strided or not
    np.testing.assert_array_equal(out, expect)


def test_several_vectors_not_binned(rng, bins):
    """The binned kernel takes one vector; A.T @ X with 3 keeps the partial kernel."""
    bins(1, 0)
    S = random_csr(rng, 300_000, 90_000, 300_000, np.float64)
    X = vector(rng, S.shape[0] * 3, np.float64).reshape(-1, 3)
    before = _core.spmv_bin_calls()
    with ascend_linalg.use_backend("cpu"):
        out = spmv(S, X, trans=True)
    assert _core.spmv_bin_calls() == before
    np.testing.assert_allclose(out, S.T @ X, rtol=1e-12, atol=1e-12)


def test_by_size_bins_large_scattered_products_only(rng, bins):
    """The default rule: past 20 MB of partials with scattered indices, not below or banded."""
    bins(-1, 0)
    # one block (rows + nonzeros under 2^18): partials of cols * 8 bytes
    # 21.6 MB, scattered; 20 columns a nonzero (32 or more would run light: test_spmv_light.py)
    big = random_csr(rng, 2000, 2_700_000, 135_000, np.float64)
    small = random_csr(rng, 2000, 1_000_000, 40_000, np.float64)  # 8 MB
    band = sp.diags([np.ones(2_700_000 - k) for k in range(3)], [0, 1, 2], shape=(2_700_000, 2_700_000),
                    format="csr")[:20_000]  # 21.6 MB of partials, streaming indices
    for S, binned in [(big, True), (small, False), (band, False)]:
        x = vector(rng, S.shape[0], np.float64)
        y, ran = run_binned(csr_matrix(S), x)
        assert ran == int(binned)
        np.testing.assert_allclose(y, S.T @ x, rtol=1e-12, atol=1e-12)
        if binned:
            np.testing.assert_array_equal(y, S.T @ x)


def test_bin_force_rejects_bad_arguments(bins):
    with pytest.raises(ValueError, match="bin mode"):
        bins(2, 0)
    with pytest.raises(ValueError, match="chunk_entries"):
        bins(1, -1)
