"""`A.T @ x` of a narrow matrix (kernels/spmv/spmvt_narrow.h): one vector, a
partial of at most 16 KiB (2,048 float64 columns, 4,096 float32, 1,024
complex128) and at least 2^16 nonzeros. Each block sums into its partial,
zeroed up front; a chunk of short rows (at most 40 nonzeros a row on
average) has its indices checked in one pass, then runs as runs of rows of
one length or as one flat loop over its nonzeros with each nonzero's x
stored first (8, 16, 32 or 64 copies a row by the chunk's mean; a row
longer than that stores the rest in a loop, one longer than 512 nonzeros
runs alone). The first and last row of a block and chunks of longer rows
check each index as they load it.

The sums are scipy's, in nonzero order: on one thread bit for bit scipy's
whatever the rows' lengths; and a bad index anywhere raises before
anything is written through it."""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
import ascend_linalg.sparse as asp

from _faults import FAULTS, broken
from _plans import empty_runs

SPAN = 512  # nonzeros a span of the flat loop (kNarrowSpan)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64]


def _lengths(rng, kind, n, cols):
    if kind == "up-to-8":  # the tall matrix of bench_spmv_shapes.py: 0-8 at random
        return rng.integers(0, 9, n)
    if kind == "poisson12":  # 16 copies a row, some rows past them
        return rng.poisson(12, n)
    if kind == "poisson30":  # 64 copies a row
        return rng.poisson(30, n)
    if kind == "runs-of-5":  # runs of rows of one length (runScatterRows)
        lengths = np.full(n, 5)
        lengths[::97] = 3
        return lengths
    if kind == "empty-runs":  # runs of 30 empty rows
        return empty_runs(rng, n, 6, 30)
    if kind == "span-edges":  # rows of 511, 512 and 513 among rows of 4
        lengths = rng.integers(0, 9, n)
        lengths[100::700] = SPAN - 1
        lengths[333::700] = SPAN
        lengths[555::700] = SPAN + 1
        lengths[0] = SPAN + 7  # the block's first row, checked as it loads
        return lengths
    if kind == "long-chunks":  # chunks averaging more than 40: the row loop
        lengths = rng.poisson(60, n)
        lengths[::9] = 1
        return lengths
    raise AssertionError(kind)


KINDS = ["up-to-8", "poisson12", "poisson30", "runs-of-5", "empty-runs", "span-edges", "long-chunks"]


def _values(rng, n, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, n).astype(dtype)
    v = rng.standard_normal(n)
    if np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dtype)


def _matrix(rng, kind, dtype, cols=8, index_dtype=np.int32, nnz=150_000):
    """Rows until about ``nnz`` nonzeros, random columns with duplicates and
    in no order (scipy sums them as they come)."""
    lengths = _lengths(rng, kind, 300_000, cols)
    n = int(np.searchsorted(np.cumsum(lengths), nnz)) + 1
    indptr = np.concatenate([[0], np.cumsum(lengths[:n])])
    S = sp.csr_matrix((_values(rng, indptr[-1], dtype), rng.integers(0, cols, indptr[-1]), indptr),
                      shape=(n, cols))
    S.indices = S.indices.astype(index_dtype)
    S.indptr = S.indptr.astype(index_dtype)
    return S, asp.csr_matrix(S)


def _assert_same_bytes(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def _assert_close(got, ref, dtype):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if np.issubdtype(dtype, np.integer):  # wrapping sums: exact in any order
        np.testing.assert_array_equal(got, ref)
        return
    rtol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * max(1.0, float(np.abs(ref).max(initial=0))))


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_narrow_products_match_scipy(rng, threads, kind, dtype, nthreads):
    threads(nthreads)
    S, A = _matrix(rng, kind, dtype)
    x = _values(rng, S.shape[0], dtype)
    with ascend_linalg.use_backend("cpu"):
        got = A.T @ x
    ref = S.T @ x
    if nthreads == 1:  # one block, the sums in nonzero order
        _assert_same_bytes(got, ref)
    else:
        _assert_close(got, ref, dtype)


@pytest.mark.parametrize("cols", [1, 2, 3, 31, 1023, 1024, 1025, 2047, 2048, 2049, 4096, 4097])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_widths_either_side_of_the_bound(rng, threads, cols, dtype):
    # 16 KiB of partial: 4096 float32, 2048 float64, 1024 complex128 columns
    threads(1)
    S, A = _matrix(rng, "up-to-8", dtype, cols=cols, nnz=70_000)
    x = _values(rng, S.shape[0], dtype)
    with ascend_linalg.use_backend("cpu"):
        got = A.T @ x
    _assert_same_bytes(got, S.T @ x)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_int64_indices_special_values_and_a_strided_x(rng, threads, nthreads, index_dtype):
    threads(nthreads)
    S, A = _matrix(rng, "poisson12", np.float64, cols=100, index_dtype=index_dtype)
    xs = _values(rng, 2 * S.shape[0], np.float64)
    x = xs[::2]
    x[7], x[5000] = np.nan, np.inf  # each reaches only its row's columns
    S.data[40_000] = -np.inf
    A.data[40_000] = -np.inf
    with ascend_linalg.use_backend("cpu"):
        got, dense = A.T @ x, A.T @ np.ascontiguousarray(x)
    ref = S.T @ x
    _assert_same_bytes(got, dense)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    if nthreads == 1:
        _assert_same_bytes(got, ref)
    else:
        fin = np.isfinite(ref)
        np.testing.assert_array_equal(got[~fin], ref[~fin])
        np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-12)


@pytest.mark.parametrize("pair", [(np.bool_, np.float64), (np.int8, np.float32), (np.float32, np.float64)])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_widened_values_give_the_converted_products_bits(rng, threads, pair, nthreads):
    vdt, xdt = pair
    threads(nthreads)
    S, A = _matrix(rng, "up-to-8", np.float64, cols=50)
    data = (rng.integers(-3, 4, S.nnz) if vdt != np.float32 else rng.standard_normal(S.nnz)).astype(vdt)
    A = asp.csr_matrix((data, S.indices, S.indptr), shape=S.shape)
    C = asp.csr_matrix((data.astype(xdt), S.indices, S.indptr), shape=S.shape)
    x = rng.standard_normal(S.shape[0]).astype(xdt)
    with ascend_linalg.use_backend("cpu"):
        got, conv = A.T @ x, C.T @ x
    _assert_same_bytes(got, conv)
    _assert_close(got, sp.csr_matrix((data, S.indices, S.indptr), shape=S.shape).T @ x, xdt)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_fused_products_through_the_narrow_partial(rng, threads, nthreads):
    threads(nthreads)
    S, A = _matrix(rng, "up-to-8", np.complex128, cols=9)
    x = _values(rng, S.shape[0], np.complex128)
    y0 = _values(rng, 9, np.complex128)
    y = y0.copy()
    with ascend_linalg.use_backend("cpu"):
        out = asp.spmv(A, x, alpha=2 - 1j, beta=0.5, y=y, trans=True)
    assert out is y
    _assert_close(y, (2 - 1j) * (S.T @ x) + 0.5 * y0, np.complex128)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("kind", ["up-to-8", "span-edges", "long-chunks", "runs-of-5"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_malformed_structure_raises(rng, threads, kind, fault, nthreads):
    threads(nthreads)
    S, A = _matrix(rng, kind, np.float64, cols=8)
    x = _values(rng, S.shape[0], np.float64)
    indices, indptr = broken(A.indices, A.indptr, fault, 8)
    B = asp.csr_matrix((A.data, indices, indptr), shape=A.shape)
    snaps = [a.copy() for a in (x, B.data, B.indices, B.indptr)]
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
        B.T @ x
    for a, b in zip((x, B.data, B.indices, B.indptr), snaps):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["up-to-8", "span-edges", "long-chunks", "poisson30"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_a_bad_index_anywhere_raises(rng, threads, kind, nthreads):
    # block edges (about nnz / 2 on two threads), chunk edges, the first
    # and last nonzeros, inside a long row; too large, the largest index
    # and negative
    threads(nthreads)
    S, A = _matrix(rng, kind, np.float64, cols=8)
    x = _values(rng, S.shape[0], np.float64)
    nnz, half = A.nnz, A.nnz // 2
    positions = {0, 1, 511, 512, 513, half - 1, half, half + 1, nnz - 2, nnz - 1}
    positions |= {int(A.indptr[r]) + d for r in (256, 512, 1280) for d in (-1, 0, 1)}
    if kind == "span-edges":
        for r in (100, 333, 555):
            a, b = int(A.indptr[r]), int(A.indptr[r + 1])
            positions |= {a, (a + b) // 2, b - 1}
    ref = S.T @ x
    y = np.zeros(8)
    with ascend_linalg.use_backend("cpu"):
        for p in sorted(positions):
            keep = A.indices[p]
            for bad in (8, np.iinfo(np.int32).max, -1):
                A.indices[p] = bad
                with pytest.raises(ValueError, match="malformed"):
                    A.T @ x
                with pytest.raises(ValueError, match="malformed"):
                    asp.spmv(A, x, beta=1.0, y=y, trans=True)
            A.indices[p] = keep
        got = A.T @ x
    _assert_close(got, ref, np.float64)  # nothing left behind
    np.testing.assert_array_equal(A.indices, S.indices)
