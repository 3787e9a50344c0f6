"""The transposed kernel's streaming runs (runScatterRows<true>,
kernels/spmv/spmvt_scatter_rows.h): no span check ahead of them; each index
is checked as it is loaded against the window of columns whose pages the
span checks have made ready (ScatterWindow, kernels/spmv/spmvt_pages.h).
An index outside the window goes back through a span check from there.

These matrices are banded (streaming blocks, rows of 9 in runs) with rows
that leave the window now and then, upwards and downwards, onto pages no
span has touched yet, and the workspace is dirty from an earlier product:
every such nonzero must land on a zeroed page of the right target (y, the
block's own columns, or its partial), on one thread and several, for the
plain product and the fused one, and a bad index must be caught wherever it
sits, before anything is written through it.

int32 and int64 values run the same loops as float32 and float64.

Both kernels' runs also take eight rows at once (kGroupRun,
kernels/spmv/spmv_merge_common.h): the rows' indptr in one vector, their
indices in one running maximum; a bad index anywhere in such a group must
send it back to the checks per index.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg import _core
from ascend_linalg.sparse import csr_matrix, spmv
from ascend_linalg.testing import dispatch_records

N = 120_000


def banded_with_jumps(rng, dtype, index_dtype, far=True):
    """9 diagonals; every 1009th row also has a column far above or far
    below its band (a page of its own), every 1201st one at column 3."""
    rows = np.arange(N)
    cols = np.clip(rows[:, None] + np.arange(-4, 5), 0, N - 1)
    extra = np.full(N, -1)
    if far:
        extra[rows % 1009 == 0] = (rows[rows % 1009 == 0] * 7919) % N
        extra[rows % 1201 == 0] = 3
    cols = np.concatenate([cols, extra[:, None]], axis=1).ravel()
    r = np.repeat(rows, 10)
    keep = cols >= 0
    S = sp.csr_matrix((rng.standard_normal(keep.sum()), (r[keep], cols[keep])), shape=(N, N))
    S.sum_duplicates()
    A = csr_matrix(S.astype(dtype))
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return S, A


def test_the_blocks_stream():
    # the premise: these blocks are streaming ones (the runs above), not
    # scattered, for every block count used below
    _, A = banded_with_jumps(np.random.default_rng(0), np.float64, np.int32)
    for nb in (1, 2, 3):
        assert [_core.spmv_scattered(A.indices, A.nnz * b // nb, A.nnz * (b + 1) // nb)
                for b in range(nb)] == [False] * nb


@pytest.mark.parametrize("mode", ["plain", "fused"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_rows_that_leave_the_window_sum_like_scipy(rng, threads, nthreads, dtype, index_dtype, mode):
    S, A = banded_with_jumps(rng, dtype, index_dtype)
    x = rng.standard_normal(N).astype(dtype)
    y0 = rng.standard_normal(N).astype(dtype)
    threads(nthreads)
    # dirty the workspace: the same product with huge sums, every page
    # touched (a column per row spread over all of them)
    D = sp.csr_matrix((np.full(N, 1e30), (np.arange(N), (np.arange(N) * 7) % N)), shape=(N, N))
    Dirty = csr_matrix(D.astype(dtype))
    with ascend_linalg.use_backend("cpu"):
        Dirty.T @ np.ones(N, dtype)
    xs = x.astype(np.float64)
    if mode == "plain":
        want = S.T @ xs
        with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
            got = A.T @ x
    else:
        want = 1.5 * (S.T @ xs) - 0.5 * y0.astype(np.float64)
        y = y0.copy()
        with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
            got = spmv(A, x, alpha=1.5, beta=-0.5, y=y, trans=True)
        assert got is y
    assert recs and all(r[1] == "cpu" for r in recs), recs
    scale = (abs(S).T @ np.abs(xs)) + (np.abs(y0) if mode == "fused" else 0) + 1
    tol = 1e-5 if dtype == np.float32 else 1e-13
    err = np.abs(got.astype(np.float64) - want) / scale
    assert err.max() <= tol, (err.max(), int(err.argmax()))


@pytest.mark.parametrize("mode", ["plain", "fused"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_integer_runs_sum_exactly(rng, threads, nthreads, dtype, index_dtype, mode):
    # int32 and int64 values take the same runs (and their window) as
    # float32/float64: the banded matrix with its jumps, and the identity
    # (runs of rows of one nonzero), over a dirty workspace; integer sums
    # are exact, so every thread count gives scipy's result.
    S, _ = banded_with_jumps(rng, np.float64, index_dtype)
    S.data = rng.integers(-9, 10, S.nnz).astype(np.float64)
    x = rng.integers(-9, 10, N).astype(dtype)
    y0 = rng.integers(-9, 10, N).astype(dtype)
    threads(nthreads)
    D = sp.csr_matrix((np.full(N, 10**6), (np.arange(N), (np.arange(N) * 7) % N)), shape=(N, N))
    with ascend_linalg.use_backend("cpu"):
        csr_matrix(D.astype(dtype)).T @ np.ones(N, dtype)
    for M in (S, sp.identity(N, format="csr") * 3):
        M = M.astype(dtype)
        A = csr_matrix(M)
        A.indices = A.indices.astype(index_dtype)
        A.indptr = A.indptr.astype(index_dtype)
        with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
            if mode == "plain":
                got, want = A.T @ x, M.T @ x
            else:
                y = y0.copy()
                got, want = spmv(A, x, alpha=3, beta=-2, y=y, trans=True), 3 * (M.T @ x) - 2 * y0
                assert got is y
        assert recs and all(r[1] == "cpu" for r in recs), recs
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("bad", [-1, "ncols", 2 ** 31 - 1])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_bad_index_after_the_window_has_formed(rng, threads, nthreads, bad, index_dtype, dtype):
    # Far into a block (its window long formed), in a run row, in a row that
    # jumps, and the last nonzero: each raises before anything is written
    # through it, and the operands are left as they were.
    S, A = banded_with_jumps(rng, dtype, index_dtype)
    S = sp.csr_matrix((A.data, A.indices, A.indptr), shape=A.shape)  # A's own values
    x = (rng.standard_normal(N) * 10).astype(dtype)
    threads(nthreads)
    row = 1009 * 50  # its far column, outside its band
    lo, hi = int(A.indptr[row]), int(A.indptr[row + 1])
    far = np.flatnonzero(A.indices[lo:hi] == (row * 7919) % N)
    assert hi - lo == 10 and far.size == 1
    jump = lo + int(far[0])
    snaps = [a.copy() for a in (x, A.data, A.indices, A.indptr)]
    for k in (A.nnz // 3, A.nnz // 2 + 4, jump, A.nnz - 1):
        A.indices[k] = N if bad == "ncols" else bad
        with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
            A.T @ x
        A.indices[k] = snaps[2][k]
    for a, b in zip((x, A.data, A.indices, A.indptr), snaps):
        np.testing.assert_array_equal(a, b)
    with ascend_linalg.use_backend("cpu"):
        np.testing.assert_allclose(A.T @ x, S.T @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("rows", [3000, 200_000])
@pytest.mark.parametrize("length", [1, 4, 5, 8, 9, 16])
def test_bad_index_anywhere_in_eight_rows_of_a_run(threads, length, rows, trans):
    # Rows of one length (a run), in cache (3000 rows, one block) and
    # streaming (200000, two threads): a bad index at every position of
    # sixteen rows, so at every position of an eight-row group however the
    # groups fall, is caught; then the product is scipy's again.
    c = np.minimum(np.arange(rows)[:, None] + np.arange(length), rows - 1)
    S = sp.csr_matrix((np.ones(rows * length), c.ravel(), np.arange(rows + 1) * length), shape=(rows, rows))
    A = csr_matrix(S.astype(np.float32))
    x = np.ones(rows, np.float32)
    threads(2)
    start = int(A.indptr[rows // 2 + 3])
    for k in range(start, start + 16 * length):
        keep = A.indices[k]
        A.indices[k] = rows
        with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
            (A.T @ x) if trans else (A @ x)
        A.indices[k] = keep
    with ascend_linalg.use_backend("cpu"):
        got = (A.T @ x) if trans else (A @ x)
    np.testing.assert_array_equal(got, (S.T @ x) if trans else (S @ x))
