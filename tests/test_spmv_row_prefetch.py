"""Long rows that prefetch their own target on the CPU device: in `A @ x`
the AVX2 dot products prefetch x 64 nonzeros ahead of their gathers; in
`A.T @ x` the scatter of a block that is not scattered prefetches its
partial (or y) as a scattered block's rows do, where the target outgrows
the cache and a row's columns are more than a cache line apart. Both also
prefetch the row's values and indices 8 KiB ahead where the matrix's
arrays outgrow the cache (past the arrays' end near the last row: a
prefetch never faults). A performance choice only: the same bits and the
same checks with it forced on, off or by the rule
(``_core.spmv_row_prefetch_force``), and the prefetch of indices not yet
checked stays in bounds."""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg import _core

MODES = (-1, 0, 1)  # by the rule, never, in every long row


@pytest.fixture(autouse=True)
def rule_restored():
    yield
    _core.spmv_row_prefetch_force(-1)


@pytest.fixture
def threads():
    old = ascend_linalg.get_num_threads()
    yield ascend_linalg.set_num_threads
    ascend_linalg.set_num_threads(old)


def _bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _long_rows(rng, dtype, index_dtype, ncols, sort, rows=97, length=3001):
    # rows of 3001 nonzeros (the vector dot's length) between short ones;
    # ncols 1e6: float64 x is 8 MB (past the rule's 6 MiB), float32 4 MB
    lengths = np.where(np.arange(rows) % 3 == 0, length, rng.integers(0, 40, rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    cols = rng.integers(0, ncols, indptr[-1])
    if sort:
        cols = np.concatenate([np.sort(cols[a:b]) for a, b in zip(indptr[:-1], indptr[1:])])
    S = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(dtype), cols, indptr), shape=(rows, ncols))
    A = asp.csr_matrix(S)
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return S, A


def _raises_with_operands_unchanged(A, x, force, settings, trans=False, fused_y=None):
    # every setting (force(setting) first): the product raises, and so does
    # the fused one where fused_y is given; nothing of the operands changes
    snaps = [a.copy() for a in (x, A.data, A.indices, A.indptr)]
    with ascend_linalg.use_backend("cpu"):
        for setting in settings:
            force(setting)
            with pytest.raises(ValueError, match="malformed"):
                A.T @ x if trans else A @ x
            if fused_y is not None:
                with pytest.raises(ValueError, match="malformed"):
                    asp.spmv(A, x, alpha=2.0, beta=0.5, y=fused_y.copy(), trans=trans)
    for a, b in zip((x, A.data, A.indices, A.indptr), snaps):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("ncols, sort", [(1_000_000, True), (1_000_000, False), (3001, True)])
@pytest.mark.parametrize("trans", [False, True])
def test_same_bits_in_every_mode(rng, threads, dtype, index_dtype, ncols, sort, trans):
    # A.T @ x on two threads: two blocks' partials, 8 MB together in float32
    # over 1e6 columns (past the rule's 6 MiB), 4 MB in float32 over 5e5
    threads(2)
    S, A = _long_rows(rng, dtype, index_dtype, ncols, sort)
    St = S.T if trans else S
    x = rng.standard_normal(St.shape[1]).astype(dtype)
    x[rng.integers(0, St.shape[1], 5)] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    y0 = rng.standard_normal(St.shape[0]).astype(dtype)
    got, fused = {}, {}
    with ascend_linalg.use_backend("cpu"):
        for mode in MODES:
            _core.spmv_row_prefetch_force(mode)
            got[mode] = A.T @ x if trans else A @ x
            fused[mode] = asp.spmv(A, x, alpha=2.0, beta=0.5, y=y0.copy(), trans=trans)
    for mode in MODES:
        np.testing.assert_array_equal(_bits(got[mode]), _bits(got[-1]))
        np.testing.assert_array_equal(_bits(fused[mode]), _bits(fused[-1]))
    # the long rows' vector dot (and the two blocks' partials of A.T @ x)
    # sum in another order than scipy's loop (not S.astype: that sums
    # duplicate columns, and inf * (a + b) is not inf * a + inf * b when a
    # and b differ in sign)
    S64 = sp.csr_matrix((S.data.astype(np.float64), S.indices, S.indptr), shape=S.shape)
    ref = (S64.T if trans else S64) @ x.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(got[-1], ref, equal_nan=True, **tol)
    np.testing.assert_allclose(fused[-1], 2.0 * ref + 0.5 * y0, equal_nan=True, **tol)
    assert np.isnan(ref).any() and np.isnan(got[-1]).any()  # the specials reached a sum


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("where", [0, 100, 2999])  # a long row's offset
@pytest.mark.parametrize("bad", ["cols", "negative", "huge"])
@pytest.mark.parametrize("trans", [False, True])
def test_bad_index_in_a_long_row_raises_in_every_mode(rng, threads, dtype, index_dtype, where, bad, trans):
    # the prefetch reads indices 64 ahead of the gathers' checks: a bad one
    # is clamped there, then caught by the checks; nothing is written but y
    ncols = 1_000_000
    S, A = _long_rows(rng, dtype, index_dtype, ncols, sort=True)
    if bad == "huge" and index_dtype == np.int32:
        value = np.iinfo(np.int32).max
    else:
        value = {"cols": ncols, "negative": -1, "huge": np.iinfo(np.int64).max // 2}[bad]
    A.indices[A.indptr[3] + where] = value  # row 3 is long
    threads(2)
    x = rng.standard_normal(S.shape[0] if trans else ncols).astype(dtype)
    _raises_with_operands_unchanged(A, x, _core.spmv_row_prefetch_force, MODES, trans,
                                    fused_y=np.zeros(ncols if trans else S.shape[0], dtype))


PLANS = (0, 1, 3)  # the rule, no target prefetch (long rows' included), neither prefetch


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("trans", [False, True])
def test_plans_without_target_prefetch_keep_bits_and_checks(rng, threads, fresh_spmv_plans, dtype, index_dtype,
                                                            trans):
    # Under the rule (mode -1), a plan with SPMV_PF_NO_TARGET also turns the
    # long rows' prefetch off: the same bits under every plan, and a bad
    # index in a long row still raises with the operands unchanged.
    threads(2)
    # past kTuneMinWork rows + nonzeros: smaller products keep the rule, whatever is forced
    S, A = _long_rows(rng, dtype, index_dtype, 1_000_000, sort=True, rows=1101)
    St = S.T if trans else S
    x = rng.standard_normal(St.shape[1]).astype(dtype)
    got = {}
    with ascend_linalg.use_backend("cpu"):
        for plan in PLANS:
            _core.spmv_prefetch_force(plan)
            got[plan] = A.T @ x if trans else A @ x
    for plan in PLANS:
        np.testing.assert_array_equal(_bits(got[plan]), _bits(got[0]))
    S64 = sp.csr_matrix((S.data.astype(np.float64), S.indices, S.indptr), shape=S.shape)
    ref = (S64.T if trans else S64) @ x.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(got[1], ref, **tol)
    A.indices[A.indptr[3] + 100] = 1_000_000  # row 3 is long
    _raises_with_operands_unchanged(A, x, _core.spmv_prefetch_force, PLANS, trans)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("bad", ["cols", "negative"])
def test_unprefetched_long_rows_check_each_index(rng, threads, fresh_spmv_plans, dtype, index_dtype, nthreads, bad):
    # Plan 3 prefetches nothing: once a block's partial is all zeroed (one
    # thread: y itself, from the start), a long row's indices are checked as
    # its scatter loads them, with no span check ahead. A bad index late in
    # the block, anywhere in a long row, still raises before anything is
    # written through it; the good matrix gives the rule's bits.
    threads(nthreads)
    ncols = 1_000_000  # scattered: its blocks prefetch nothing under plan 3
    S, A = _long_rows(rng, dtype, index_dtype, ncols, sort=False, rows=1101)  # past kTuneMinWork: plans apply
    x = rng.standard_normal(S.shape[0]).astype(dtype)
    with ascend_linalg.use_backend("cpu"):
        _core.spmv_prefetch_force(0)
        want = A.T @ x
        _core.spmv_prefetch_force(3)
        got = A.T @ x
    np.testing.assert_array_equal(_bits(got), _bits(want))
    long_rows = np.flatnonzero(np.diff(S.indptr) == 3001)
    value = {"cols": ncols, "negative": -1}[bad]
    for r in (long_rows[-1], long_rows[len(long_rows) // 2]):
        for where in (0, 1500, 3000):
            B = A.copy()
            B.indices[B.indptr[r] + where] = value
            _raises_with_operands_unchanged(B, x, _core.spmv_prefetch_force, [3], trans=True)


def test_force_rejects_a_bad_mode():
    for bad in (-2, 2, 100):
        with pytest.raises(ValueError, match="row prefetch mode"):
            _core.spmv_row_prefetch_force(bad)
