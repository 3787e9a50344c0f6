"""The light ``A^T X`` on the CPU device (kernels/spmv/spmvt_light.h).

For a matrix with far fewer nonzeros than columns, each block zeroes its own
columns of y and sorts its share's products into lists by the block owning
their column; then each block adds its lists to y in block order. Each column
sums its products from zero in CSR nonzero order, scipy's own order, so the
results are compared with scipy's bit for bit, on any thread count.
``_core.spmv_light_force(1)`` makes every product it allows (the plain product,
1 to 16 vectors) run light; ``_core.spmv_light_calls()`` counts the products it
completed, the proof that the kernel ran.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg import _core
from ascend_linalg.sparse import csr_array, csr_matrix, spmv

ml_dtypes = pytest.importorskip("ml_dtypes")

VALUE_DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64]


@pytest.fixture
def light():
    """``_core.spmv_light_force``; the default (-1, the rule) is restored after the test."""
    yield _core.spmv_light_force
    _core.spmv_light_force(-1)


def values(rng, n, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, n).astype(dtype)
    v = rng.standard_normal(n)
    if np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dtype)


def scattered(rng, m, n, nnz, dtype=np.float64, index_dtype=np.int32, empty_runs=False, duplicates=False,
              unsorted=False):
    """nnz random nonzeros in an m x n matrix (rows of any length, many empty), as a
    canonical scipy matrix unless told: duplicates kept, or rows left unsorted."""
    rows = rng.integers(0, m, nnz)
    if empty_runs:  # the nonzeros in a few bands of rows, long runs of empty rows between
        rows = (rows % 7) * (m // 7) + rows % 5
    cols = rng.integers(0, n, nnz)
    if duplicates:
        cols[1::3] = cols[::3][: len(cols[1::3])]
        rows[1::3] = rows[::3][: len(rows[1::3])]
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    if unsorted:  # each row's columns reversed
        order = np.lexsort((-cols, rows))
        rows, cols = rows[order], cols[order]
    indptr = np.zeros(m + 1, np.int64)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr)
    data = values(rng, nnz, dtype)
    S = sp.csr_matrix((data, cols.astype(index_dtype), indptr.astype(index_dtype)), shape=(m, n))
    S.indices = S.indices.astype(index_dtype)  # scipy's constructor may have narrowed them
    S.indptr = S.indptr.astype(index_dtype)
    return S


def run(A, x, **kw):
    before = _core.spmv_light_calls()
    with ascend_linalg.use_backend("cpu"):
        y = A.T @ x if not kw else spmv(A, x, trans=True, **kw)
    return y, _core.spmv_light_calls() - before


@pytest.mark.parametrize("nthreads", [1, 2, 3])
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("nvec", [1, 2, 3, 4, 8, 16])
def test_light_matches_scipy_bitwise(rng, light, threads, nthreads, dtype, nvec):
    """Scipy's sums bit for bit, 1 to 16 vectors, on 1, 2 and 3 blocks (the owner of a
    column found by its guess and the split's bounds)."""
    threads(nthreads)
    light(1)
    S = scattered(rng, 5003, 100_003, 4099, dtype)
    x = values(rng, 5003 * nvec, dtype)
    x = x if nvec == 1 else x.reshape(5003, nvec)
    y, ran = run(csr_matrix(S), x)
    assert ran == 1
    expect = S.T @ x
    assert y.dtype == expect.dtype and y.shape == expect.shape
    np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", ["empty_runs", "duplicates", "unsorted", "one_row", "one_column"])
def test_light_structures(rng, light, threads, index_dtype, shape):
    """Runs of empty rows (skipped eight at a time), duplicate entries, unsorted rows,
    a single row or column: scipy's bits (duplicates and unsorted rows in CSR order)."""
    threads(2)
    light(1)
    if shape == "one_row":
        S = scattered(rng, 1, 300_007, 5000, index_dtype=index_dtype)
    elif shape == "one_column":
        S = scattered(rng, 300_007, 1, 5000, index_dtype=index_dtype)
    else:
        S = scattered(rng, 200_003, 300_007, 9001, index_dtype=index_dtype, **{shape: True})
    assert S.indices.dtype == index_dtype
    A = csr_matrix(S)  # kept as built (no canonical form)
    assert A.indices.dtype == index_dtype
    x = values(rng, S.shape[0], np.float64)
    y, ran = run(A, x)
    assert ran == 1
    np.testing.assert_array_equal(y, S.T @ x)
    X = values(rng, S.shape[0] * 3, np.float64).reshape(-1, 3)
    Y, ran = run(A, X)
    assert ran == 1
    np.testing.assert_array_equal(Y, S.T @ X)


def test_light_nan_inf(rng, light, threads):
    """NaN and Inf in the values and in x reach their columns as in scipy; columns that
    no nonzero reaches are +0."""
    threads(2)
    light(1)
    S = scattered(rng, 3001, 70_001, 2000)
    S.data[::7] = np.nan
    S.data[3::11] = np.inf
    x = values(rng, 3001, np.float64)
    x[::13] = -np.inf
    x[5::17] = np.nan
    y, ran = run(csr_matrix(S), x)
    assert ran == 1
    expect = S.T @ x
    np.testing.assert_array_equal(y, expect)
    untouched = np.setdiff1d(np.arange(70_001), S.indices)
    assert np.all(y[untouched] == 0) and not np.any(np.signbit(y[untouched]))


@pytest.mark.parametrize("order", ["C", "F", "strided"])
def test_light_x_layouts(rng, light, threads, order):
    """X in C or Fortran order or a strided slice, and x @ A: scipy's bits, Y row-major."""
    threads(2)
    light(1)
    S = scattered(rng, 4001, 90_001, 3000, np.float32)
    X = values(rng, 4001 * 10, np.float32).reshape(4001, 10)
    X = {"C": X[:, :5].copy(), "F": np.asfortranarray(X[:, :5]), "strided": X[:, ::2]}[order]
    A = csr_array(S)
    Y, ran = run(A, X)
    assert ran == 1
    np.testing.assert_array_equal(Y, S.T @ X)
    before = _core.spmv_light_calls()
    with ascend_linalg.use_backend("cpu"):
        Z = X.T @ A  # (A^T X)^T: the same kernel
    assert _core.spmv_light_calls() - before == 1
    np.testing.assert_array_equal(Z, X.T @ S)


def test_light_mixed_precision(rng, light, threads):
    """float16 / bfloat16 values widened, float32 sums, in scipy's order."""
    threads(2)
    light(1)
    S = scattered(rng, 3001, 80_001, 2500, np.float32)
    for half in (np.float16, ml_dtypes.bfloat16):
        data = S.data.astype(half)
        xh = values(rng, S.shape[0], np.float32).astype(half)
        wide = sp.csr_matrix((data.astype(np.float32), S.indices, S.indptr), shape=S.shape)
        before = _core.spmv_light_calls()
        with ascend_linalg.use_backend("cpu"):
            y = spmv((data, S.indices, S.indptr), xh, shape=S.shape, trans=True)
        assert _core.spmv_light_calls() - before == 1
        assert y.dtype == np.float32
        np.testing.assert_array_equal(y, wide.T @ xh.astype(np.float32))


def malformed(rng, index_dtype, where, at):
    S = scattered(rng, 3001, 80_001, 3000, index_dtype=index_dtype)
    indices, indptr, data = S.indices.copy(), S.indptr.copy(), S.data.copy()
    k = min(int(len(indices) * at), len(indices) - 1)
    r = int(np.searchsorted(indptr, k, side="right")) - 1
    if where == "index_too_large":
        indices[k] = 80_001
    elif where == "index_negative":
        indices[k] = -1
    elif where == "index_huge":
        indices[k] = np.iinfo(index_dtype).max
    else:
        indptr[r + 1] = indptr[r] - 1
    return S, csr_matrix((data, indices, indptr), shape=S.shape)


@pytest.mark.parametrize("nthreads", [1, 2, 3])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("where", ["index_too_large", "index_negative", "index_huge", "indptr_decreasing"])
@pytest.mark.parametrize("at", [0.0, 0.5, 1.0])
def test_light_malformed_structure_raises(rng, light, threads, nthreads, index_dtype, where, at):
    """An index outside [0, cols) or a decreasing indptr, in any block's share: ValueError,
    nothing read or written out of bounds, the caller's arrays unchanged."""
    threads(nthreads)
    light(1)
    S, A = malformed(rng, index_dtype, where, at)
    saved = (A.indices.copy(), A.indptr.copy(), A.data.copy())
    x = values(rng, S.shape[0], np.float64)
    X = values(rng, S.shape[0] * 4, np.float64).reshape(-1, 4)
    x0, X0 = x.copy(), X.copy()
    for v in (x, X):
        with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
            spmv(A, v, trans=True)
    for kept, now in zip(saved, (A.indices, A.indptr, A.data)):
        np.testing.assert_array_equal(kept, now)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(X, X0)


def test_light_only_plain(rng, light, threads):
    """alpha/beta or a strided y: not light, even forced (the merge path's epilogue), and
    the result is still right; more than 16 vectors are not light either."""
    threads(2)
    light(1)
    S = scattered(rng, 3001, 80_001, 2500)
    x = values(rng, 3001, np.float64)
    y = values(rng, 80_001, np.float64)
    out, ran = run(csr_matrix(S), x, alpha=2.0, beta=0.5, y=y.copy())
    assert ran == 0
    np.testing.assert_allclose(out, 2.0 * (S.T @ x) + 0.5 * y, rtol=1e-12, atol=1e-12)
    y2 = np.zeros(2 * 80_001)
    out, ran = run(csr_matrix(S), x, y=y2[::2])
    assert ran == 0
    np.testing.assert_array_equal(out, S.T @ x)
    X = values(rng, 3001 * 17, np.float64).reshape(3001, 17)
    out, ran = run(csr_matrix(S), X)
    assert ran == 0
    np.testing.assert_allclose(out, S.T @ X, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_light_rule(rng, light, threads, index_dtype):
    """The rule: one vector from 8 columns a nonzero where the merge path would take two
    blocks or more, else from 32 with y of 8 MiB or 65536 rows; several vectors from 4; a
    matrix with more nonzeros keeps the other kernels."""
    threads(2)
    light(-1)
    light_one = scattered(rng, 400_000, 1_000_000, 50_000, index_dtype=index_dtype)  # 20 columns a nonzero
    heavy_one = scattered(rng, 400_000, 1_000_000, 200_000, index_dtype=index_dtype)  # 5
    light_mv = scattered(rng, 100_000, 1_000_000, 200_000, index_dtype=index_dtype)  # 5
    heavy_mv = scattered(rng, 100_000, 1_000_000, 400_000, index_dtype=index_dtype)  # 2.5
    # the merge path in one block (y direct): light only when very light and y large or rows many
    small_one = scattered(rng, 1000, 1_000_000, 1000, index_dtype=index_dtype)  # y 8e6 bytes, 1000 rows
    wide_one = scattered(rng, 1000, 2_000_000, 1000, index_dtype=index_dtype)  # y 16e6 bytes
    tall_one = scattered(rng, 100_000, 1_000_000, 2000, index_dtype=index_dtype)  # 1e5 rows
    denser_one = scattered(rng, 100_000, 1_000_000, 40_000, index_dtype=index_dtype)  # 25 columns a nonzero
    for S, nvec, expect in [(light_one, 1, 1), (heavy_one, 1, 0), (light_mv, 4, 1), (heavy_mv, 4, 0),
                            (small_one, 1, 0), (small_one, 2, 1), (wide_one, 1, 1), (tall_one, 1, 1),
                            (denser_one, 1, 0)]:
        x = values(rng, S.shape[0] * nvec, np.float64)
        x = x if nvec == 1 else x.reshape(-1, nvec)
        y, ran = run(csr_matrix(S), x)
        assert ran == expect, (S.shape, S.nnz, nvec)
        if ran:
            np.testing.assert_array_equal(y, S.T @ x)
        else:  # the merge path's partials: summed in block order
            np.testing.assert_allclose(y, S.T @ x, rtol=1e-12, atol=1e-12)


def test_light_force_mode_checked():
    with pytest.raises(ValueError, match="light mode"):
        _core.spmv_light_force(2)
