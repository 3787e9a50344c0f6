"""Sparse matrix times several vectors (2-D X): the kernels' multi-vector path.

With X's rows contiguous the kernels work on a row of X per nonzero, several
vectors at a time (``kMvWidth`` = 8 plus a remainder of 1-7), and the
transposed kernel keeps a row-major partial. These tests cross those widths,
the block splits (several threads, long rows split between blocks, index
checks a span ahead), X's layouts and every kernel dtype, against scipy.
"""
import functools

import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg.sparse import spmv
from ascend_linalg.testing import dispatch_records, kernel_device

NVECS = [2, 3, 7, 8, 9, 16, 17]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64]


def values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    v = rng.standard_normal(shape)
    if dtype.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def matrix(rng, m, n, dtype, density=0.004, long_row=True, index=np.int32):
    """Random CSR with empty rows and, optionally, one row of every column
    (split between blocks)."""
    S = sp.random(m, n, density=density, format="lil", random_state=rng, dtype=np.float64)
    if long_row:
        S[m // 2, :] = np.ones(n)
    S = S.tocsr()
    S.data = values(rng, S.nnz, dtype)
    S.indices = S.indices.astype(index)
    S.indptr = S.indptr.astype(index)
    return S


def layout(X, how):
    if how == "C":
        return np.ascontiguousarray(X)
    if how == "F":
        return np.asfortranarray(X)
    # rows contiguous, row stride padded past the vectors
    big = np.zeros((X.shape[0], X.shape[1] + 5), dtype=X.dtype)
    big[:, 2:2 + X.shape[1]] = X
    return big[:, 2:2 + X.shape[1]]


def check(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "i":
        np.testing.assert_array_equal(got, want)
        return
    tight = want.dtype in (np.float64, np.complex128)
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12 if tight else 1e-5,
                               atol=(1e-12 if tight else 1e-5) * scale)


def check_nonfinite(got, want):
    """``check`` for results holding Inf/NaN: the same NaNs, the same Infs
    (sign included), the finite part within ``check``'s tolerance."""
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    ok = np.isfinite(want)
    np.testing.assert_array_equal(got[~ok & ~nan], want[~ok & ~nan])
    check(np.where(ok, got, 0), np.where(ok, want, 0))


@pytest.mark.parametrize("nvec", NVECS)
@pytest.mark.parametrize("how", ["C", "F", "padded"])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_widths_layouts_and_blocks(rng, threads, nvec, how, nthreads):
    threads(nthreads)
    S = matrix(rng, 1500, 1100, np.float64)
    A = asp.csr_matrix(S)
    X = layout(values(rng, (1100, nvec), np.float64), how)
    Y = layout(values(rng, (1500, nvec), np.float64), how)
    X0, Y0 = X.copy(), Y.copy()
    with ascend_linalg.use_backend(kernel_device()), dispatch_records() as recs:
        got_n = A @ X
        got_t = A.T @ Y
    check(got_n, S @ X)
    check(got_t, S.T @ Y)
    assert got_n.flags.c_contiguous and got_t.flags.c_contiguous  # as scipy's
    assert [r[1:] for r in recs] == [(kernel_device(), None)] * 2, recs
    np.testing.assert_array_equal(X, X0)  # the caller's operands untouched
    np.testing.assert_array_equal(Y, Y0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_dtypes_and_index_types(rng, threads, dtype, index):
    threads(2)
    S = matrix(rng, 900, 700, dtype, index=index)
    A = asp.csr_array(S)
    for nvec in (2, 5, 8, 13):
        X = values(rng, (700, nvec), dtype)
        Y = values(rng, (900, nvec), dtype)
        with ascend_linalg.use_backend(kernel_device()), dispatch_records() as recs:
            got_n, got_t = A @ X, A.T @ Y
        check(got_n, S @ X)
        check(got_t, S.T @ Y)
        assert all(r[1:] == (kernel_device(), None) for r in recs), recs


@pytest.mark.parametrize("how", ["F", "every-other-column", "F-every-other-row"])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.int32])
def test_strided_x_rows_packed_on_every_thread(rng, threads, how, nthreads, dtype):
    # A @ X with X's rows strided: the CPU device first packs them row-major
    # into its workspace, X's rows split over the threads (one share per
    # thread past 256 KiB of X; in Fortran order tiles of 64 rows, ragged at
    # the shares' ends), then runs the kernel on the packed copy.
    threads(nthreads)
    n, nvec = 40_001, 5
    S = matrix(rng, 3000, n, dtype, density=0.0005)
    A = asp.csr_matrix(S)
    base = values(rng, (2 * n, 2 * nvec), dtype)
    X = {"F": np.asfortranarray(base[:n, :nvec]),
         "every-other-column": base[:n, ::2],
         "F-every-other-row": np.asfortranarray(base)[::2, :nvec]}[how]
    assert X.strides[1] != X.itemsize
    X0 = X.copy()
    with ascend_linalg.use_backend(kernel_device()), dispatch_records() as recs:
        got = A @ X
        y = np.zeros((3000, nvec), dtype=got.dtype)
        spmv(A, X, alpha=2, beta=1, y=y)
    check(got, S @ X)
    check(y, 2 * (S @ X))
    assert all(r[1:] == (kernel_device(), None) for r in recs), recs
    np.testing.assert_array_equal(X, X0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("nvec", [2, 5, 8, 11])
@pytest.mark.parametrize("how", ["C", "F"])
def test_one_thread_gives_scipys_bits(rng, threads, dtype, nvec, how):
    # One block: each (row, vector) sums its nonzeros in order, products
    # rounded before the sum, as scipy's csr_matvecs / csc_matvecs. (Complex
    # products fused into vfmaddsub by GCC's vectoriser broke this once.)
    # A.T @ Y with Y in Fortran order gathers each row of Y in the kernel.
    threads(1)
    S = matrix(rng, 800, 600, dtype, density=0.02, long_row=False)
    A = asp.csr_matrix(S)
    X = layout(values(rng, (600, nvec), dtype), how)
    Y = layout(values(rng, (800, nvec), dtype), how)
    with ascend_linalg.use_backend(kernel_device()):
        got_n, got_t = A @ X, A.T @ Y
    np.testing.assert_array_equal(got_n, S @ X)
    np.testing.assert_array_equal(got_t, S.T @ Y)


@pytest.mark.parametrize("nvec", [2, 9])
def test_nan_inf_in_x_and_data(rng, threads, nvec):
    threads(2)
    S = matrix(rng, 600, 500, np.float64)
    S.data[::37] = np.inf
    S.data[5::41] = np.nan
    A = asp.csr_matrix(S)
    X = values(rng, (500, nvec), np.float64)
    X[7, 0], X[100, nvec - 1], X[250, 1] = np.inf, np.nan, -np.inf
    Y = values(rng, (600, nvec), np.float64)
    Y[3, 1], Y[300, 0] = np.nan, np.inf
    with ascend_linalg.use_backend(kernel_device()), np.errstate(invalid="ignore"):
        got_n, got_t = A @ X, A.T @ Y
        want_n, want_t = S @ X, S.T @ Y
    for got, want in ((got_n, want_n), (got_t, want_t)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("where", ["first", "middle", "long_row", "long_row_end", "last"])
@pytest.mark.parametrize("bad", [-1, "ncols"])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_bad_index_raises(rng, threads, where, bad, index, nthreads):
    threads(nthreads)
    S = matrix(rng, 2000, 1500, np.float64, index=index)
    S.sort_indices()
    r = 1000  # the long row
    lo, hi = int(S.indptr[r]), int(S.indptr[r + 1])
    k = {"first": 0, "middle": S.nnz // 3, "long_row": lo + 7, "long_row_end": hi - 1,
         "last": S.nnz - 1}[where]
    S.indices[k] = 1500 if bad == "ncols" else -1
    X, Y = np.ones((1500, 4)), np.ones((2000, 4))
    with ascend_linalg.use_backend(kernel_device()):
        with pytest.raises(ValueError, match="malformed"):
            asp.csr_matrix((S.data, S.indices, S.indptr), shape=S.shape) @ X
        # the same arrays as CSC: the transposed kernel (no scipy format check)
        with pytest.raises(ValueError, match="malformed"):
            asp.csc_matrix((S.data, S.indices, S.indptr), shape=S.shape[::-1]) @ Y
    np.testing.assert_array_equal(X, 1.0)


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("y_layout", ["C", "F", "padded"])
@pytest.mark.parametrize("alpha,beta", [(1, 0), (2.0, 0), (1, 1), (-0.5, 3.0)])
def test_fused_into_callers_y(rng, threads, trans, y_layout, alpha, beta):
    # The fused form writes the caller's y in any layout: the transposed
    # kernel's reduction then walks its row-major partial into strided y.
    threads(2)
    S = matrix(rng, 700, 500, np.float64)
    rows, cols = (500, 700) if trans else (700, 500)
    X = values(rng, (cols, 6), np.float64)
    y = layout(values(rng, (rows, 6), np.float64), y_layout)
    y0 = y.copy()
    want = alpha * ((S.T if trans else S) @ X) + beta * y0
    with ascend_linalg.use_backend(kernel_device()):
        got = spmv(asp.csr_array(S), X, alpha=alpha, beta=beta, y=y, trans=trans)
    assert got is y
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nvec", [4, 9])
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("how", ["C", "F"])
def test_scattered_partial_past_the_cache(rng, threads, nvec, nthreads, how):
    # 2e5 columns x 4 or 9 float64 vectors: each block's partial passes 6 MiB
    # and its columns are random, so the transposed kernel prefetches partial
    # rows ahead (the first 8 vectors' loop), and the non-transposed one the
    # rows of X (6.4 MB or more) it gathers; a bad index in the last
    # nonzeros, where the prefetch stops, is still found. F: Y's rows are
    # gathered, X's packed first.
    threads(nthreads)
    m, n = 20000, 200000
    idx = rng.integers(0, n, size=m * 10)
    S = sp.csr_matrix((values(rng, m * 10, np.float64), idx, np.arange(0, m * 10 + 1, 10)), shape=(m, n))
    Y = layout(values(rng, (m, nvec), np.float64), how)
    X = layout(values(rng, (n, nvec), np.float64), how)
    with ascend_linalg.use_backend(kernel_device()):
        got = asp.csc_matrix((S.data, S.indices, S.indptr), shape=(n, m)) @ Y
        got_n = asp.csr_matrix(S) @ X
    check(got, S.T @ Y)
    check(got_n, S @ X)
    for k in (S.nnz - 3, S.nnz - 70):
        bad = S.indices.copy()
        bad[k] = n
        with ascend_linalg.use_backend(kernel_device()), pytest.raises(ValueError, match="malformed"):
            asp.csc_matrix((S.data, bad, S.indptr), shape=(n, m)) @ Y
        with ascend_linalg.use_backend(kernel_device()), pytest.raises(ValueError, match="malformed"):
            asp.csr_matrix((S.data, bad, S.indptr), shape=(m, n)) @ X


def banded_with_far_nonzeros(rng, n, dtype):
    """n x n, 9 diagonals, a far-off nonzero every 1009th row, two runs of
    empty columns (40,000-60,000 and 100,000-101,500 when n is 150,000)."""
    cols = np.clip(np.arange(n)[:, None] + np.arange(-4, 5), 0, n - 1)
    far = np.where(np.arange(n) % 1009 == 0, (np.arange(n) * 7919) % n, -1)[:, None]
    cols = np.concatenate([cols, far], axis=1).ravel()
    rows = np.repeat(np.arange(n), 10)
    keep = (cols >= 0) & ~((cols >= 40_000) & (cols < 60_000)) & ~((cols >= 100_000) & (cols < 101_500))
    S = sp.csr_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    S.sum_duplicates()
    S.data = values(rng, S.nnz, dtype)
    return S


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, np.int64])
@pytest.mark.parametrize("nvec", [2, 4, 9])
@pytest.mark.parametrize("nthreads", [2, 3])
def test_transposed_blocks_sum_their_own_columns_into_Y(rng, threads, dtype, nvec, nthreads):
    # A.T @ X into a Y in C order on several threads: a streaming block (not
    # scattered, 65,536 nonzeros or more) scatters the spans whose columns
    # are its own pages of Y straight into Y and the others into its
    # partial; the reduction adds the partials to Y's sums. The far-off
    # nonzeros' spans go to partials, onto pages that other spans summed
    # into Y; Y's pages that no block touches come out +0. A caller's Y in C
    # order full of NaN (-7) takes the same path (the same bits); one in Fortran
    # order takes the partials alone (the same values up to rounding).
    threads(nthreads)
    n = 150_000
    S = banded_with_far_nonzeros(rng, n, dtype)
    A = asp.csr_matrix(S)
    X = values(rng, (n, nvec), dtype)
    if np.dtype(dtype).kind != "i":
        X[5_000, 0] = np.inf
        X[77_777, nvec - 1] = -np.inf
        X[120_000, 1] = np.nan
    X0 = X.copy()
    want = S.T @ X
    junk = -7 if np.dtype(dtype).kind == "i" else np.nan  # beta 0: Y never read
    with ascend_linalg.use_backend(kernel_device()), dispatch_records() as recs:
        got = A.T @ X
        again = spmv(A, X, y=np.full((n, nvec), junk, dtype), trans=True)
        fort = spmv(A, X, y=np.full((n, nvec), junk, dtype, order="F"), trans=True)
    assert all(r[1:] == (kernel_device(), None) for r in recs), recs
    np.testing.assert_array_equal(X, X0)
    for g in (got, fort):
        check_nonfinite(g, want)
    np.testing.assert_array_equal(got.view(np.uint8), again.view(np.uint8))  # deterministic
    empty = np.r_[40_000:60_000, 100_000:101_500]
    assert (got[empty] == 0).all()
    if np.dtype(dtype).kind == "f":
        assert not np.signbit(got[empty]).any()
    # a bad index inside the band, in each block's own columns
    for pos in (S.nnz // (2 * nthreads), S.nnz - S.nnz // (2 * nthreads)):
        bad = S.indices.copy()
        bad[pos] = n
        B = asp.csr_matrix((S.data, bad, S.indptr), shape=S.shape)
        with ascend_linalg.use_backend(kernel_device()):
            with pytest.raises(ValueError, match="malformed"):
                B.T @ X
    np.testing.assert_array_equal(X, X0)


@functools.lru_cache(maxsize=None)
def _fixed_widths_matrix(dtype):
    """62,000 x 1201: 40,000 random rows (4 nonzeros a row), then 2,000
    empty rows, one full row, 19,999 more random rows."""
    rng = np.random.default_rng(77)
    S = matrix(rng, 60_000, 1201, dtype, density=4 / 1201, long_row=True)
    S = sp.vstack([S[:40_000], sp.csr_matrix((2000, 1201), dtype=dtype), S[40_000:]], format="csr")
    assert S.shape[0] + S.nnz > 2**18
    return S


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("nvec", [2, 4, 8])
@pytest.mark.parametrize("alpha", [1, -1, 3])
@pytest.mark.parametrize("y_layout", ["C", "padded"])
def test_fixed_widths_into_y(rng, threads, dtype, nvec, alpha, y_layout):
    # A @ X of 2, 4 or 8 real vectors with beta 0 into a y whose vectors are
    # contiguous runs the row loop of that fixed width, storing each row's
    # sums (times alpha) straight into y: runs of empty rows, a long row
    # split between blocks, Inf/NaN in X. One thread: scipy's bits times
    # alpha; three: the same values up to rounding. A padded y's elements
    # between its rows stay untouched.
    S = _fixed_widths_matrix(np.dtype(dtype))  # 300,000 rows + nonzeros: several blocks
    A = asp.csr_matrix(S)
    X = values(rng, (1201, nvec), dtype)
    if np.dtype(dtype).kind == "f":
        X[7, 0], X[600, nvec - 1], X[1100, 1] = np.inf, -np.inf, np.nan
    want = alpha * (S @ X)
    fill = -7 if np.dtype(dtype).kind == "i" else np.nan
    for nthreads in (1, 3):
        threads(nthreads)
        big = np.full((S.shape[0], nvec + 3), fill, dtype)
        y = np.full((S.shape[0], nvec), fill, dtype) if y_layout == "C" else big[:, 1:1 + nvec]
        with ascend_linalg.use_backend(kernel_device()), dispatch_records() as recs:
            got = spmv(A, X, alpha=alpha, y=y)
        assert got is y
        assert [r[1:] for r in recs] == [(kernel_device(), None)], recs
        if nthreads == 1:
            np.testing.assert_array_equal(got, want)
        else:
            check_nonfinite(got, want)
        if y_layout == "padded":
            np.testing.assert_array_equal(big[:, 0], fill)
            np.testing.assert_array_equal(big[:, 1 + nvec:], fill)
