"""Both CPU kernels' chunks of short rows in groups of 8 nonzeros
(kernels/spmv/spmv_row_groups.h): each nonzero's row found from the next 8
(or 16) row ends instead of a loop per row.

`A.T @ x` (scatterGroups, kernels/spmv/spmvt_scatter_rows.h): a scattered
block's chunk of short float64 rows (int32 indices, at most 4 nonzeros a
row on average); float32 chunks take scatterFilled there instead (each
nonzero's x stored first, then one loop: tests/test_spmvt_filled.py), and
these tests hold it to the same. It must give the per-row loop's sums bit
for bit (scipy's on one thread), whatever the row lengths: empty rows, runs
of them, groups in which 8 or more rows end (up to 15, from the next 8 row
ends; from 16, one nonzero at a time), long rows among short ones, chunk
edges; and catch a bad index anywhere before writing through it. These
products are mostly smaller than the 2^18 rows + nonzeros from which a
forced plan applies (kTuneMinWork), so their plans are the rule's, which
prefetches short rows' partials past 512 KiB: scattered blocks. (Rows of
0-16, `up-to-16`, pass it: there plan 1 runs the row loop, and its bits
are compared with the groups'.)

`A @ x` (dotGroups, kernels/spmv/spmv_rows_n1.h): any block's chunk of at
most 3 (float32) or 4 (float64) nonzeros a row on average and no row of 32
or more, under every plan, sums each row in nonzero order into a buffer:
scipy's bits."""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg import _core

from _plans import assert_plans_give_the_row_loops_bits, empty_runs, tol
from _plans import bits as _bits

NCOLS = 200_000  # scattered columns: 800 KB of float32 partial a block
CHUNK = 256  # rows per checked chunk (kChunkRows)


pytestmark = pytest.mark.usefixtures("fresh_spmv_plans")


def _lengths(rng, kind, n):
    if kind == "ones":
        return np.ones(n, np.int64)
    if kind == "zero-one":  # every other row empty: a group's 8 nonzeros span 16 rows
        return np.arange(n) % 2
    if kind == "poisson1":  # many groups in which 8 or more rows end, fewer than 16
        return rng.poisson(1, n)
    if kind == "poisson2":
        return rng.poisson(2, n)
    if kind == "poisson5":
        return rng.poisson(5, n)
    if kind == "sevens":
        return np.full(n, 7)
    if kind == "up-to-16":
        return rng.integers(0, 17, n)
    if kind == "short-and-long":  # a few long rows: their chunks average past the bound
        lengths = rng.poisson(2, n)
        lengths[::997] = 300
        return lengths
    if kind == "empty-runs":  # runs of 40 empty rows, some across chunk edges
        return empty_runs(rng, n, 3, 40)
    raise AssertionError(kind)


KINDS = ["ones", "zero-one", "poisson1", "poisson2", "poisson5", "sevens", "up-to-16", "short-and-long", "empty-runs"]


def _matrix(rng, kind, dtype, n=30_000):
    lengths = _lengths(rng, kind, n)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    cols = rng.integers(0, NCOLS, indptr[-1])
    S = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(dtype), cols, indptr), shape=(n, NCOLS))
    S.indices = S.indices.astype(np.int32)
    S.indptr = S.indptr.astype(np.int32)
    return S, asp.csr_matrix(S)


def _each_bad_index_raises(A, positions, product):
    # each position in turn holds each bad value; the index is put back after
    for p in sorted(positions):
        keep = A.indices[p]
        for bad in (NCOLS, 2**31 - 1, -1):
            A.indices[p] = bad
            with pytest.raises(ValueError, match="malformed"):
                product()
        A.indices[p] = keep


def _every_layout(test):
    # every row-length pattern, both value types, 1 and 2 threads
    for mark in (pytest.mark.parametrize("nthreads", [1, 2]), pytest.mark.parametrize("dtype", [np.float32, np.float64]),
                 pytest.mark.parametrize("kind", KINDS)):
        test = mark(test)
    return test


def _case(rng, threads, kind, dtype, nthreads, trans):
    threads(nthreads)
    S, A = _matrix(rng, kind, dtype)
    x = rng.standard_normal(S.shape[0] if trans else S.shape[1]).astype(dtype)
    x[7] = np.nan  # NaN and Inf reach only the results they touch
    x[1000] = np.inf if trans else -np.inf
    return S, A, x


@_every_layout
def test_grouped_rows_give_the_row_loops_bits(rng, threads, kind, dtype, nthreads):
    S, A, x = _case(rng, threads, kind, dtype, nthreads, trans=True)
    assert_plans_give_the_row_loops_bits(S, A, x, nthreads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_fused_and_strided_products_keep_their_results(rng, threads, dtype, nthreads):
    # alpha/beta and a strided x leave the grouped loop's conditions (unit
    # stride) or its epilogue to the host: the same results under every plan
    threads(nthreads)
    S, A = _matrix(rng, "poisson2", dtype)
    xs = rng.standard_normal(2 * S.shape[0]).astype(dtype)
    x = xs[::2]
    y0 = rng.standard_normal(S.shape[1]).astype(dtype)
    got = {}
    with ascend_linalg.use_backend("cpu"):
        for plan in (0, 1, 4):
            _core.spmv_prefetch_force(plan)
            got[plan] = (A.T @ x, asp.spmv(A, x, alpha=2.0, beta=0.5, y=y0.copy(), trans=True))
    ref = S.T @ x
    for plan in (0, 4):
        np.testing.assert_array_equal(_bits(got[plan][0]), _bits(got[1][0]))
        np.testing.assert_array_equal(_bits(got[plan][1]), _bits(got[1][1]))
    np.testing.assert_allclose(got[4][0], ref, **tol(dtype))
    np.testing.assert_allclose(got[4][1], 2.0 * ref + 0.5 * y0, **tol(dtype))


@pytest.mark.parametrize("kind", ["poisson1", "poisson2", "zero-one"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_grouped_rows_catch_a_bad_index_anywhere(rng, threads, kind, dtype, nthreads):
    # The grouped loop checks each index as it loads it for the prefetch, 64
    # nonzeros before using it. A bad index in the block's first 64, at group
    # and chunk edges, either side of the blocks' split (about nnz / 2) and
    # in the last 64 (which no prefetch reads ahead of) raises before
    # anything is written through it, under the rule's plan and plan 4.
    threads(nthreads)
    S, A = _matrix(rng, kind, dtype, n=12_000)
    x = rng.standard_normal(S.shape[0]).astype(dtype)
    nnz, half = A.nnz, A.nnz // 2
    edges = [int(A.indptr[r]) for r in (CHUNK, 2 * CHUNK, 8 * CHUNK)]
    positions = {0, 1, 7, 8, 63, 64, 65, 2047, 2048, 2112, half - 65, half - 64, half - 1, half, half + 64,
                 nnz - 65, nnz - 64, nnz - 9, nnz - 8, nnz - 1}
    positions |= {e + d for e in edges for d in (-65, -64, -1, 0, 1, 8, 63, 64)}
    ref = S.T @ x
    snaps = [a.copy() for a in (x, A.data, A.indptr)]
    with ascend_linalg.use_backend("cpu"):
        for plan in (0, 4):
            _core.spmv_prefetch_force(plan)
            _each_bad_index_raises(A, positions, lambda: A.T @ x)
            np.testing.assert_allclose(A.T @ x, ref, **tol(dtype))  # nothing left behind
    for a, b in zip((x, A.data, A.indptr), snaps):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(A.indices, S.indices)


@_every_layout
def test_grouped_rows_give_scipys_bits_in_a_x(rng, threads, kind, dtype, nthreads):
    S, A, x = _case(rng, threads, kind, dtype, nthreads, trans=False)
    y0 = rng.standard_normal(S.shape[0]).astype(dtype)
    got = {}
    with ascend_linalg.use_backend("cpu"):
        for plan in (0, 1, 3, 4):
            _core.spmv_prefetch_force(plan)
            got[plan] = (A @ x, asp.spmv(A, x, alpha=2.0, beta=0.5, y=y0.copy()),
                         asp.spmv(A, x, alpha=-1.0, beta=1.0, y=y0.copy()))
    ref = S @ x
    for plan in (1, 3, 4):
        for a, b in zip(got[plan], got[0]):
            np.testing.assert_array_equal(_bits(a), _bits(b))
    loose = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    if nthreads == 1 and kind != "short-and-long":
        np.testing.assert_array_equal(_bits(got[0][0]), _bits(ref))
    else:
        # a chunk with a long row keeps the row loop, whose long rows take the
        # vector dot (another order); on 2 threads a row split between blocks
        # adds two partial sums
        np.testing.assert_allclose(got[0][0], ref, **loose)
    np.testing.assert_allclose(got[0][1], 2.0 * ref + 0.5 * y0, **loose)
    np.testing.assert_allclose(got[0][2], y0 - ref, **loose)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_grouped_rows_in_a_x_catch_a_bad_index(rng, threads, dtype, nthreads):
    # a chunk's indices are all checked before its first product
    threads(nthreads)
    S, A = _matrix(rng, "poisson1", dtype, n=12_000)
    x = rng.standard_normal(S.shape[1]).astype(dtype)
    nnz = A.nnz
    positions = {0, 1, 7, 8, 64, nnz // 2, nnz - 65, nnz - 9, nnz - 1} | {int(A.indptr[CHUNK]) + d for d in (-1, 0, 1)}
    snaps = [a.copy() for a in (x, A.data, A.indptr)]
    with ascend_linalg.use_backend("cpu"):
        for plan in (0, 1):
            _core.spmv_prefetch_force(plan)
            _each_bad_index_raises(A, positions, lambda: A @ x)
            np.testing.assert_array_equal(A @ x, S @ x)
    for a, b in zip((x, A.data, A.indptr), snaps):
        np.testing.assert_array_equal(a, b)
