"""`A.T @ x`'s scattered float32 and float64 chunks of rows of moderate
length (scatterFilled, kernels/spmv/spmvt_scatter_rows.h): at most 64
nonzeros a row on average (float64 with int32 indices: more than 4, fewer
go to scatterGroups). Each span of up to 512 nonzeros first gets
every nonzero's x (copies of x[row] stored at the row's start, 16, 32, 64
or 128 a row by the chunk's mean), then one loop over the span's nonzeros
scatters them; a row longer than the span runs alone.

It must give the per-row loop's sums bit for bit (scipy's on one thread)
whatever the row lengths: rows longer than the copies stored for them,
rows of exactly the span and one more, empty rows and runs of them, chunk
edges, int32 and int64 indices; and catch a bad index anywhere before
writing through it. Plan 1 (no target prefetch) never takes it; plans 0
(the rule: these partials are scattered) and 4 (any size) do."""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg import _core

from _plans import assert_plans_give_the_row_loops_bits, bits, empty_runs, tol

NCOLS = 200_000  # scattered columns: 800 KB of float32 partial a block
CHUNK = 256  # rows per checked chunk (kChunkRows)
SPAN = 512  # nonzeros a span (kFillSpan)

pytestmark = pytest.mark.usefixtures("fresh_spmv_plans")


def _lengths(rng, kind, n):
    if kind == "poisson10":  # W = 16: about 3% of the rows store more
        return rng.poisson(10, n)
    if kind == "poisson20":  # W = 32
        return rng.poisson(20, n)
    if kind == "poisson40":  # W = 64
        return rng.poisson(40, n)
    if kind == "poisson60":  # W = 128
        return rng.poisson(60, n)
    if kind == "nines-and-forties":  # W = 32 with every fifth row past it
        lengths = np.full(n, 9)
        lengths[::5] = 40
        return lengths
    if kind == "span-edges":  # rows of 511, 512 and 513 nonzeros among rows of 12
        lengths = rng.poisson(12, n)
        lengths[100::700] = SPAN - 1
        lengths[333::700] = SPAN
        lengths[555::700] = SPAN + 1
        return lengths
    if kind == "long-among-short":  # a row of 3000 now and then: one alone
        lengths = rng.poisson(11, n)
        lengths[::1500] = 3000
        lengths[:2] = 3000  # the first chunk's first rows
        return lengths
    if kind == "empty-runs":  # runs of 30 empty rows, some across chunk edges
        return empty_runs(rng, n, 14, 30)
    if kind == "skewed":  # rows of one, every tenth of 100: a skewed matrix (float64 keeps the row loop)
        lengths = np.ones(n, np.int64)
        lengths[::10] = 100
        return lengths
    raise AssertionError(kind)


KINDS = ["poisson10", "poisson20", "poisson40", "poisson60", "nines-and-forties", "span-edges",
         "long-among-short", "empty-runs", "skewed"]


def _matrix(rng, kind, dtype, index_dtype=np.int32):
    # Rows until about 1.1e6 nonzeros: forced plans apply from 2^18 rows +
    # nonzeros (kTuneMinWork), and this one's partials are too small for the
    # rule to prefetch them.
    lengths = _lengths(rng, kind, 200_000)
    n = int(np.searchsorted(np.cumsum(lengths), 1_100_000)) + 1
    lengths = lengths[:n]
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    cols = rng.integers(0, NCOLS, indptr[-1])
    S = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(dtype), cols, indptr), shape=(n, NCOLS))
    S.indices = S.indices.astype(index_dtype)
    S.indptr = S.indptr.astype(index_dtype)
    return S, asp.csr_matrix(S)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", KINDS)
def test_filled_rows_give_the_row_loops_bits(rng, threads, kind, dtype, index_dtype, nthreads):
    threads(nthreads)
    S, A = _matrix(rng, kind, dtype, index_dtype)
    x = rng.standard_normal(S.shape[0]).astype(dtype)
    x[7] = np.nan  # NaN and Inf reach only the columns of their rows
    x[1000] = np.inf
    assert_plans_give_the_row_loops_bits(S, A, x, nthreads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_fused_and_strided_products_keep_their_results(rng, threads, nthreads, dtype):
    # alpha/beta go to the reduction's epilogue; a strided x leaves the
    # filled loop's conditions (unit stride): the same results under every plan
    threads(nthreads)
    S, A = _matrix(rng, "poisson20", dtype)
    xs = rng.standard_normal(2 * S.shape[0]).astype(dtype)
    y0 = rng.standard_normal(S.shape[1]).astype(dtype)
    got = {}
    with ascend_linalg.use_backend("cpu"):
        for plan in (0, 1, 4):
            _core.spmv_prefetch_force(plan)
            got[plan] = [A.T @ xs[::2], A.T @ np.ascontiguousarray(xs[::2]),
                         asp.spmv(A, xs[::2], alpha=2.0, beta=0.5, y=y0.copy(), trans=True)]
    ref = S.T @ xs[::2]
    for plan in (0, 4):
        for a, b in zip(got[plan], got[1]):
            np.testing.assert_array_equal(bits(a), bits(b))
    np.testing.assert_array_equal(bits(got[4][0]), bits(got[4][1]))
    np.testing.assert_allclose(got[4][0], ref, **tol(dtype))
    np.testing.assert_allclose(got[4][2], 2.0 * ref + 0.5 * y0, **tol(dtype))


@pytest.mark.parametrize("kind", ["poisson10", "poisson40", "span-edges"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_filled_rows_catch_a_bad_index_anywhere(rng, threads, kind, dtype, index_dtype, nthreads):
    # Each index is checked as the prefetch loads it, 64 nonzeros before its
    # use. A bad index in the block's first 64, at span and chunk edges, in
    # a row longer than the span, either side of the blocks' split (about
    # nnz / 2) and in the last 64 raises before anything is written through
    # it, under the rule's plan and plan 4; the operands stay as they were.
    threads(nthreads)
    S, A = _matrix(rng, kind, dtype, index_dtype)
    x = rng.standard_normal(S.shape[0]).astype(dtype)
    nnz, half = A.nnz, A.nnz // 2
    edges = [int(A.indptr[r]) for r in (CHUNK, 2 * CHUNK, 5 * CHUNK)] + [SPAN, 2 * SPAN + 3]
    positions = {0, 1, 63, 64, 65, 511, 512, 513, half - 65, half - 64, half - 1, half, half + 64,
                 nnz - 65, nnz - 64, nnz - 1}
    positions |= {e + d for e in edges for d in (-65, -64, -1, 0, 1, 63, 64)}
    if kind == "span-edges":  # inside the rows of 511-513
        for r in (100, 333, 555):
            a, b = int(A.indptr[r]), int(A.indptr[r + 1])
            positions |= {a, a + 64, (a + b) // 2, b - 1}
    ref = S.T @ x
    snaps = [a.copy() for a in (x, A.data, A.indptr)]
    with ascend_linalg.use_backend("cpu"):
        for plan in (0, 4):
            _core.spmv_prefetch_force(plan)
            for p in sorted(positions):
                keep = A.indices[p]
                for bad in (NCOLS, np.iinfo(index_dtype).max, -1):
                    A.indices[p] = bad
                    with pytest.raises(ValueError, match="malformed"):
                        A.T @ x
                A.indices[p] = keep
            np.testing.assert_allclose(A.T @ x, ref, **tol(dtype))  # nothing left behind
    for a, b in zip((x, A.data, A.indptr), snaps):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(A.indices, S.indices)
