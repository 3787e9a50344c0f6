"""Products of matrices whose rows are mostly empty, on the CPU device.

Empty rows take shortcuts in the kernels: in ``A @ x`` a run of them is
written +0 in one loop (``runRows``, the plain product's chunks of runs); in
``A.T @ x`` the merge path's row walk and the column split skip each with one
compare, and a chunk of empty rows does not count as a run of one length.
These tests put runs of empty rows of every length around rows of every
length class (the unrolled runs of 1-16, short rows, rows past kLongRow) and
check every output against scipy: ``A @ x`` bit for bit on one thread with
rows under kLongRow (each row summed in scipy's order), else within the
rounding bound of any order; also into a ``y`` full of NaN that the product
must overwrite, with +0 for every empty row.
The column split's own empty-row tests are in ``test_spmv_split.py``.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg.sparse import csr_array, csr_matrix, spmv
from ascend_linalg.testing import dispatch_records


def mostly_empty(rng, rows, cols, dtype, index_dtype, lengths):
    """``rows`` rows, most of them empty, in runs: the others of a length
    drawn from ``lengths``, random sorted columns (a repeat now and then)."""
    L = np.zeros(rows, np.int64)
    r = 0
    while r < rows:
        r += int(rng.geometric(0.01))  # a run of empty rows, 100 long on average
        run = int(rng.integers(1, 5))  # then a few rows with nonzeros
        L[r:r + run] = rng.choice(lengths, size=len(L[r:r + run]))
        r += run
    indptr = np.concatenate([[0], np.cumsum(L)])
    row = np.repeat(np.arange(rows), L)
    idx = rng.integers(0, cols, row.size)
    idx = idx[np.lexsort((idx, row))].astype(index_dtype)  # sorted within each row
    data = rng.standard_normal(idx.size).astype(dtype)
    S = sp.csr_matrix((data, idx, indptr), shape=(rows, cols))
    S.indices, S.indptr = S.indices.astype(index_dtype), S.indptr.astype(index_dtype)
    return S


def within_bound(y, S, x, ref):
    """y within 2 (n + 3) eps sum|a||x| of the float64 product (n: the most
    terms of any output), scipy's NaN pattern where x's NaN reaches."""
    exact = S.astype(np.float64) @ x.astype(np.float64)
    bound = abs(S).astype(np.float64) @ np.abs(np.nan_to_num(x)).astype(np.float64)
    n = max(int(np.diff(S.indptr).max()), 1)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert (np.abs(y[ok] - exact[ok]) <= 2 * (n + 3) * np.finfo(y.dtype).eps * bound[ok]).all()


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lengths", [(1, 2, 3, 8, 16), (17, 24, 31), (32, 50, 300)], ids=["runs", "short", "long"])
def test_ax_runs_of_empty_rows_match_scipy_bitwise(rng, threads, nthreads, index_dtype, dtype, lengths):
    threads(nthreads)
    S = mostly_empty(rng, 200_003, 4099, dtype, index_dtype, lengths)
    assert np.count_nonzero(np.diff(S.indptr)) < S.shape[0] // 4
    x = rng.standard_normal(S.shape[1]).astype(dtype)
    x[::97] = np.nan  # NaN reaches only the rows that read it
    ref = S @ x
    for A in (csr_matrix(S), csr_array(S)):
        with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
            y = A @ x
            out = np.full(S.shape[0], np.nan, dtype)
            got = spmv(A, x, y=out)  # alpha 1, beta 0: the plain product, y never read
        assert [r[1] for r in rec] == ["cpu", "cpu"]
        assert y.dtype == ref.dtype
        assert got is out
        for res in (y, out):
            if nthreads == 1 and max(lengths) < 32:
                np.testing.assert_array_equal(res, ref)
            else:  # a row split between blocks, or a long row's vector dot: another order
                within_bound(res, S, x, ref)
            assert not np.signbit(res[np.diff(S.indptr) == 0]).any()  # +0, as scipy's empty sum
            np.testing.assert_array_equal(res[np.diff(S.indptr) == 0], 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lengths", [(1, 2, 3, 8, 16), (32, 50, 300)], ids=["runs", "long"])
def test_atx_mostly_empty_rows_match_scipy(rng, threads, dtype, lengths):
    threads(2)
    S = mostly_empty(rng, 300_007, 200_003, dtype, np.int32, lengths)
    x = rng.standard_normal(S.shape[0]).astype(dtype)
    with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
        y = csr_matrix(S).T @ x
    assert [r[1] for r in rec] == ["cpu"]
    ref = S.astype(np.float64).T @ x.astype(np.float64)
    bound = np.abs(S).astype(np.float64).T @ np.abs(x).astype(np.float64)
    nmax = max(int(np.bincount(S.indices, minlength=S.shape[1]).max()), 1)
    assert (np.abs(y - ref) <= 2 * (nmax + 3) * np.finfo(dtype).eps * bound).all()


@pytest.fixture
def rule_plan():
    """The prefetch plan by the rule (plan 0, not timed), restored after the test."""
    from ascend_linalg import _core
    _core.spmv_prefetch_force(0)
    yield
    _core.spmv_prefetch_force(-1)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, np.int64])
def test_ax_mostly_empty_wide_x(rng, threads, rule_plan, nthreads, dtype):
    """x too large for the cache and gathered at random (the scattered prefetch plan), most
    rows empty: each empty row is +0 (plain) or alpha * 0 + beta * y (fused), the others
    scipy's sums; a strided y keeps the elements between its own."""
    threads(nthreads)
    S = mostly_empty(rng, 300_007, 2_000_003, dtype, np.int32, (1, 2, 3, 5))
    if np.issubdtype(dtype, np.complexfloating):
        S.data = S.data + 1j * rng.standard_normal(S.nnz)
    x = (rng.standard_normal(S.shape[1]) * 100).astype(dtype)
    ref = S @ x
    empty = np.diff(S.indptr) == 0
    A = csr_matrix(S)
    with ascend_linalg.use_backend("cpu"):
        y = A @ x
        y0 = (rng.standard_normal(S.shape[0]) * 100).astype(dtype)
        fused = spmv(A, x, alpha=2, beta=3, y=y0.copy())
    assert y.dtype == ref.dtype
    if nthreads == 1 or np.issubdtype(dtype, np.integer):  # rows of at most 5: scipy's order
        np.testing.assert_array_equal(y, ref)
    elif np.issubdtype(dtype, np.complexfloating):  # a row split between blocks: another order
        np.testing.assert_allclose(y, ref, rtol=1e-13, atol=1e-10)
    else:
        within_bound(y, S, x, ref)
    np.testing.assert_array_equal(y[empty], 0)
    assert not np.signbit(y[empty].real).any()
    np.testing.assert_array_equal(fused[empty], (3 * y0)[empty])
    np.testing.assert_allclose(fused, 2 * ref + 3 * y0, rtol=1e-5)
    # runs of empty rows are filled a stretch at a time where y is not read:
    # into a caller's strided y (the elements between untouched), and alpha * 0
    with ascend_linalg.use_backend("cpu"):
        buf = np.full(2 * S.shape[0], 7, dtype)
        spmv(A, x, y=buf[::2])
        neg = spmv(A, x, alpha=-1) if dtype != np.int64 else None
    np.testing.assert_array_equal(buf[1::2], 7)
    np.testing.assert_array_equal(buf[::2][empty], 0)
    assert not np.signbit(buf[::2][empty].real).any()
    np.testing.assert_allclose(buf[::2], ref, rtol=1e-5)
    if neg is not None:  # -1 * 0: -0, as numpy's -1 * (S @ x)
        np.testing.assert_array_equal(np.signbit(neg[empty].real), True)
        np.testing.assert_allclose(neg, -ref, rtol=1e-5)


@pytest.mark.parametrize("nthreads", [1, 3])
@pytest.mark.parametrize("nvec", [2, 4, 9])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, np.int64])
def test_axx_runs_of_empty_rows(rng, threads, nthreads, nvec, dtype):
    """``A @ X`` (several vectors) where most rows are empty: a run of them is
    filled in one stretch (beta 0: y not read) with +0, or alpha * 0 (-0 for
    alpha -1, NaN for alpha inf), into a new y, a caller's contiguous y full
    of NaN and a caller's strided y; fused beta still reads y there."""
    threads(nthreads)
    S = mostly_empty(rng, 20_011, 5003, dtype, np.int32, (1, 2, 3, 5))
    if np.issubdtype(dtype, np.complexfloating):
        S.data = S.data + 1j * rng.standard_normal(S.nnz)
    empty = np.diff(S.indptr) == 0
    assert empty[-300:].any() and empty.mean() > 0.9
    X = (rng.standard_normal((S.shape[1], nvec)) * 10).astype(dtype)
    ref = S @ X

    def check(y, want):
        if nthreads == 1 or np.issubdtype(dtype, np.integer):  # rows of at most 5: scipy's order
            np.testing.assert_array_equal(y, want)
        else:  # a row split between blocks: another order
            np.testing.assert_allclose(y, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
        np.testing.assert_array_equal(np.signbit(y[empty].real), np.signbit(want[empty].real))

    A = csr_matrix(S)
    with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
        for Xo in (X, np.asfortranarray(X)):
            check(A @ Xo, ref)
        full = np.full(ref.shape, np.nan, dtype) if dtype != np.int64 else np.full(ref.shape, -7, dtype)
        got = spmv(A, X, y=full)
        assert got is full
        check(full, ref)
        wide = np.full((ref.shape[0], 2 * nvec), 5, dtype)
        spmv(A, X, y=wide[:, ::2])  # rows of y not one stretch
        check(wide[:, ::2], ref)
        np.testing.assert_array_equal(wide[:, 1::2], 5)  # the columns between untouched
        if dtype != np.int64:
            check(spmv(A, X, alpha=-1), -1 * ref)
            assert np.signbit(spmv(A, X, alpha=-1)[empty].real).all()
            inf = spmv(A, X, alpha=np.inf)
            assert np.isnan(inf[empty]).all()
        y0 = (rng.standard_normal(ref.shape) * 10).astype(dtype)
        fused = spmv(A, X, alpha=2, beta=3, y=y0.copy())
    assert {r[1] for r in rec} == {"cpu"}
    np.testing.assert_array_equal(fused[empty], (3 * y0)[empty])
    np.testing.assert_allclose(fused, 2 * ref + 3 * y0, rtol=1e-4)
