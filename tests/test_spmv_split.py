"""The column-split ``A^T x`` on the CPU device (kernels/spmv/spmvt_split.h).

Each block owns a range of y's columns and sums the stretch of every row that
falls there, from zero in row order: scipy's own order, so results are
compared with scipy's bit for bit. ``_core.spmv_split_force(1)`` makes every
product the kernel allows (one vector, two threads or more) run
column-split; ``_core.spmv_split_calls()`` counts the products it completed,
the proof that the kernel ran (a product that found an unsorted row and fell
back to the merge-path kernel does not count).
"""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg import _core
from ascend_linalg.sparse import csr_array, csr_matrix, spmv

from _fused_cases import FUSED, fused_case, textbook_mul

ml_dtypes = pytest.importorskip("ml_dtypes")

VALUE_DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64]


@pytest.fixture
def split(threads):
    """``_core.spmv_split_force`` on two threads; the default (-1, the rule) is restored after the test."""
    threads(2)
    yield _core.spmv_split_force
    _core.spmv_split_force(-1)


@pytest.fixture(params=[-1, 1], ids=["row_pf_rule", "row_pf_all"])
def row_prefetch(request):
    """Long rows' prefetches by the rule, or forced on in every long stretch (the value and
    index streams and the target: ``_core.spmv_row_prefetch_force``); the rule is restored."""
    _core.spmv_row_prefetch_force(request.param)
    yield request.param
    _core.spmv_row_prefetch_force(-1)


def values(rng, n, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, n).astype(dtype)
    v = rng.standard_normal(n)
    if np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dtype)


def long_rows(rng, m, n, length, dtype=np.float64, index_dtype=np.int32, sort=True, special=False, skew=False):
    """m rows of about `length` random columns out of n (sorted unless told; duplicates kept
    adjacent, as scipy's canonical form would sum them: they stay)."""
    lengths = rng.integers(length // 2, 3 * length // 2 + 1, m)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    cols = rng.integers(0, n, indptr[-1])
    if skew:  # most nonzeros in the first tenth of the columns
        cols = np.where(rng.random(indptr[-1]) < 0.9, cols // 10, cols)
    if sort:
        for r in range(m):
            cols[indptr[r]:indptr[r + 1]].sort()
    data = values(rng, indptr[-1], dtype)
    if special and not np.issubdtype(dtype, np.integer):
        data[:: max(data.size // 7, 1)] = np.nan
        data[3 :: max(data.size // 5, 1)] = np.inf
    S = sp.csr_matrix((data, cols, indptr), shape=(m, n))
    S.indices = S.indices.astype(index_dtype)  # scipy's constructor may have narrowed them
    S.indptr = S.indptr.astype(index_dtype)
    return S


def run_split(A, x):
    before = _core.spmv_split_calls()
    with ascend_linalg.use_backend("cpu"):
        y = A.T @ x
    return y, _core.spmv_split_calls() - before


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_split_matches_scipy_bitwise(rng, split, row_prefetch, dtype, index_dtype):
    split(1)
    # y lengths 1, 16 +- 1, a prime and 2^k +- 1: blocks with empty column ranges,
    # ranges that end inside a line of y
    for m, n, length in [(400, 1, 800), (300, 15, 1000), (300, 17, 1000), (250, 1031, 1200),
                         (200, 65_537, 1500), (150, 262_143, 2000)]:
        S = long_rows(rng, m, n, length, dtype, index_dtype, special=True)
        x = values(rng, m, dtype)
        y, ran = run_split(csr_matrix(S), x)
        expect = S.T @ x
        assert ran == 1, (m, n)
        assert y.dtype == expect.dtype and y.shape == expect.shape
        np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("nthreads", [2, 3, 5])
def test_split_same_bits_on_any_thread_count(rng, split, threads, nthreads):
    split(1)
    threads(nthreads)
    for skew in (False, True):
        S = long_rows(rng, 300, 200_003, 1500, skew=skew)
        x = values(rng, 300, np.float64)
        y, ran = run_split(csr_array(S), x)
        assert ran == 1
        np.testing.assert_array_equal(y, S.T @ x)


def test_split_shapes(rng, split):
    """Empty rows (first, last, runs of them), one huge row, x @ A, a strided x."""
    split(1)
    m, n = 400, 70_001
    lengths = rng.integers(500, 1500, m)
    lengths[:3] = 0
    lengths[-2:] = 0
    lengths[100:150] = 0
    lengths[200] = 60_000
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, n, indptr[-1])
    for r in range(m):
        indices[indptr[r]:indptr[r + 1]].sort()
    data = rng.standard_normal(indptr[-1])
    S = sp.csr_matrix((data, indices, indptr), shape=(m, n))
    A = csr_matrix((data.copy(), indices.copy(), indptr.copy()), shape=(m, n))
    xs = rng.standard_normal(2 * m)[::2]
    before = _core.spmv_split_calls()
    with ascend_linalg.use_backend("cpu"):
        y1 = A.T @ xs
        y2 = xs @ A
    assert _core.spmv_split_calls() - before == 2
    expect = S.T @ np.ascontiguousarray(xs)
    np.testing.assert_array_equal(y1, expect)
    np.testing.assert_array_equal(y2, expect)


def test_split_nan_inf_in_x(rng, split):
    split(1)
    S = long_rows(rng, 300, 50_000, 1000)
    x = values(rng, 300, np.float64)
    x[::17] = np.nan
    x[5::23] = -np.inf
    y, ran = run_split(csr_matrix(S), x)
    assert ran == 1
    np.testing.assert_array_equal(y, S.T @ x)


def test_split_mixed_precision(rng, split):
    """float16 / bfloat16 values widened, float32 sums, in scipy's order."""
    split(1)
    S = long_rows(rng, 300, 100_000, 1200, np.float32)
    for half in (np.float16, ml_dtypes.bfloat16):
        data = S.data.astype(half)
        xh = values(rng, S.shape[0], np.float32).astype(half)
        wide = sp.csr_matrix((data.astype(np.float32), S.indices, S.indptr), shape=S.shape)
        before = _core.spmv_split_calls()
        with ascend_linalg.use_backend("cpu"):
            y = spmv((data, S.indices, S.indptr), xh, shape=S.shape, trans=True)
        assert _core.spmv_split_calls() - before == 1
        assert y.dtype == np.float32
        np.testing.assert_array_equal(y, wide.T @ xh.astype(np.float32))


@pytest.mark.parametrize("where", ["first", "middle", "last", "all"])
def test_unsorted_rows_fall_back(rng, split, where):
    """A row out of column order: the block that meets it flags it, and the merge-path
    kernel computes the product instead (its sums, not the split's)."""
    split(1)
    S = long_rows(rng, 300, 80_000, 1000)
    indices, data = S.indices.copy(), S.data.copy()
    rows = {"first": [0], "middle": [150], "last": [299], "all": range(300)}[where]
    for r in rows:  # the same matrix, the row's entries in reverse order
        for arr in (indices, data):
            seg = arr[S.indptr[r]:S.indptr[r + 1]]
            seg[:] = seg[::-1]
    A = csr_matrix((data, indices, S.indptr.copy()), shape=S.shape)
    x = values(rng, 300, np.float64)
    y, ran = run_split(A, x)
    assert ran == 0
    np.testing.assert_allclose(y, S.T @ x, rtol=1e-12, atol=1e-12)


def test_unsorted_within_one_block_is_summed_by_split(rng, split):
    """Rows out of order inside one block's columns are still that block's stretch
    (the check is on the stretch's range, not its order): the split keeps them,
    and the sums are still scipy's row order."""
    split(1)
    S = long_rows(rng, 300, 80_000, 1000)
    indices = S.indices.copy()
    for r in range(300):  # reverse each row's first 10 entries: all in block 0's columns
        a = S.indptr[r]
        seg = indices[a:a + 10]
        seg[:] = seg[::-1]
    A = csr_matrix((S.data.copy(), indices, S.indptr.copy()), shape=S.shape)
    Sr = sp.csr_matrix((S.data.copy(), indices.copy(), S.indptr.copy()), shape=S.shape)
    x = values(rng, 300, np.float64)
    y, ran = run_split(A, x)
    assert ran == 1
    np.testing.assert_array_equal(y, Sr.T @ x)


def malformed(rng, index_dtype, where, at):
    S = long_rows(rng, 300, 80_000, 1000, index_dtype=index_dtype)
    indices, indptr, data = S.indices.copy(), S.indptr.copy(), S.data.copy()
    r = min(int(300 * at), 298)
    if where == "index_too_large":
        indices[indptr[r + 1] - 1] = 80_000  # the row's last: stays sorted
    elif where == "index_negative":
        indices[indptr[r]] = -1  # the row's first: stays sorted
    elif where == "index_huge":
        indices[indptr[r] + 5] = np.iinfo(index_dtype).max  # mid-row: also unsorted
    elif where == "index_extremes":  # the row's ends: sorted, spanning more than the index type
        indices[indptr[r]] = np.iinfo(index_dtype).min
        indices[indptr[r + 1] - 1] = np.iinfo(index_dtype).max
    else:
        indptr[r + 1] = indptr[r] - 5
    return S, csr_matrix((data, indices, indptr), shape=S.shape)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("where", ["index_too_large", "index_negative", "index_huge", "index_extremes",
                                   "indptr_decreasing"])
@pytest.mark.parametrize("at", [0.0, 0.5, 1.0])
def test_split_malformed_structure_raises(rng, split, row_prefetch, index_dtype, where, at):
    split(1)
    S, A = malformed(rng, index_dtype, where, at)
    saved = (A.indices.copy(), A.indptr.copy(), A.data.copy())
    x = values(rng, S.shape[0], np.float64)
    x0 = x.copy()
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
        spmv(A, x, trans=True)
    for kept, now in zip(saved, (A.indices, A.indptr, A.data)):
        np.testing.assert_array_equal(kept, now)
    np.testing.assert_array_equal(x, x0)


@pytest.mark.parametrize("where", ["index_too_large", "index_negative", "indptr_decreasing"])
def test_split_fused_malformed_leaves_y_untouched(rng, split, where):
    """With alpha/beta the sums go to the workspace and y is written only by the
    epilogue launch, after every block checked its stretches."""
    split(1)
    S, A = malformed(rng, np.int32, where, 0.5)
    x = values(rng, S.shape[0], np.float64)
    y = values(rng, S.shape[1], np.float64)
    y0 = y.copy()
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
        spmv(A, x, alpha=2.0, beta=0.5, y=y, trans=True)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("case", range(len(FUSED)))
def test_split_fused_alpha_beta_strided_y(rng, split, dtype, case):
    """y = alpha * A.T @ x + beta * y column-split: scipy's sums, then alpha * s + beta * y, bit for bit."""
    kw = FUSED[case]
    split(1)
    S = long_rows(rng, 300, 131_073, 1000, dtype, special=True)
    x = values(rng, S.shape[0], dtype)
    alpha, beta, y, expect = fused_case(rng, kw, dtype, S.T @ x, values)
    before = _core.spmv_split_calls()
    with ascend_linalg.use_backend("cpu"):
        out = spmv(S, x, alpha=alpha, beta=beta, y=y, trans=True)
    assert _core.spmv_split_calls() - before == 1
    assert out.dtype == expect.dtype
    if y is not None:
        assert np.shares_memory(out, y)  # written into the caller's y, strided or not
    np.testing.assert_array_equal(out, expect)


def test_not_split_where_not_allowed(rng, split, threads):
    """One thread, more than 16 vectors, or A x: the split does not run, even forced."""
    split(1)
    S = long_rows(rng, 300, 50_000, 1000)
    x = values(rng, 300, np.float64)
    X = values(rng, 300 * 17, np.float64).reshape(300, 17)
    before = _core.spmv_split_calls()
    with ascend_linalg.use_backend("cpu"):
        out = spmv(S, X, trans=True)
        yn = csr_matrix(S) @ values(rng, S.shape[1], np.float64)
    assert _core.spmv_split_calls() == before
    np.testing.assert_allclose(out, S.T @ X, rtol=1e-12, atol=1e-12)
    assert yn.shape == (300,)
    threads(1)
    y, ran = run_split(csr_matrix(S), x)
    assert ran == 0
    np.testing.assert_array_equal(y, S.T @ x)  # one block: scipy's order too


def test_by_rule_long_rows_and_large_partials_only(rng, split):
    """The default rule: rows of 1024 nonzeros or more on average with partials past
    6 MiB together; not shorter rows or smaller partials."""
    split(-1)
    cases = [
        (long_rows(rng, 200, 500_000, 1500), True),  # 2 x 4 MB of partials, rows of ~1500
        (long_rows(rng, 100, 400_000, 3000), True),  # 2 x 3.2 MB, rows of ~3000
        (long_rows(rng, 100, 200_000, 3000), False),  # 2 x 1.6 MB, rows of ~3000
        (long_rows(rng, 1200, 500_000, 250), False),  # 2 x 4 MB, rows of ~250
        (long_rows(rng, 400, 500_000, 800), False),  # 2 x 4 MB, rows of ~800
        (long_rows(rng, 400, 60_000, 1000), False),  # 2 x 480 KB
        (long_rows(rng, 30_000, 500_000, 20), False),  # rows of ~20
    ]
    for S, expect_split in cases:
        x = values(rng, S.shape[0], np.float64)
        y, ran = run_split(csr_matrix(S), x)
        assert ran == int(expect_split), S.shape
        np.testing.assert_allclose(y, S.T @ x, rtol=1e-12, atol=1e-12)
        if expect_split:
            np.testing.assert_array_equal(y, S.T @ x)
    split(0)
    wide = cases[0][0]
    y, ran = run_split(csr_matrix(wide), values(rng, wide.shape[0], np.float64))
    assert ran == 0


def several(rng, rows, nvec, dtype, order):
    """rows x nvec values in C or Fortran order, or every other column of a wider array."""
    X = values(rng, rows * 2 * nvec, dtype).reshape(rows, 2 * nvec)
    return X[:, ::2] if order == "strided" else np.asarray(X[:, :nvec], order=order)


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("nvec", [2, 3, 8, 9, 16])
@pytest.mark.parametrize("order", ["C", "F", "strided"])
def test_split_several_vectors_match_scipy_bitwise(rng, split, dtype, nvec, order):
    """A.T @ X and X.T @ A column-split for 2 to 16 vectors, X in any layout: each
    column of the result is scipy's sum, bit for bit, NaN and Inf included."""
    split(1)
    S = long_rows(rng, 200, 70_001, 1000, dtype, special=True)  # two blocks from 2 vectors
    X = several(rng, 200, nvec, dtype, order)
    X0 = X.copy()
    for A in (csr_matrix(S), csr_array(S)):
        Y, ran = run_split(A, X)
        assert ran == 1
        ref = S.T @ X
        assert Y.dtype == ref.dtype and Y.shape == ref.shape
        np.testing.assert_array_equal(Y, ref)
        before = _core.spmv_split_calls()
        with ascend_linalg.use_backend("cpu"):
            Z = X.T @ A
        assert _core.spmv_split_calls() - before == 1
        np.testing.assert_array_equal(Z, X.T @ S)
    np.testing.assert_array_equal(X, X0)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.int32])
@pytest.mark.parametrize("layout", ["new", "C", "F", "strided"])
@pytest.mark.parametrize("alpha,beta", [(1, 0), (2, 0), (-3, 1), (5, -2)])
def test_split_several_vectors_fused(rng, split, dtype, layout, alpha, beta):
    """Y = alpha * A.T @ X + beta * Y column-split, Y new, C, Fortran or strided:
    scipy's sums, then alpha * s + beta * Y, bit for bit; Y written in place;
    beta 0 never reads Y (NaN there must not show)."""
    split(1)
    S = long_rows(rng, 200, 70_001, 1000, dtype, special=True)  # two blocks from 2 vectors
    X = several(rng, 200, 5, dtype, "C")
    s = S.T @ X
    a, b = np.asarray(alpha, dtype)[()], np.asarray(beta, dtype)[()]
    if np.issubdtype(dtype, np.complexfloating):
        a = a * np.asarray(1 - 0.5j, dtype)
    y = None
    if layout != "new":
        y = values(rng, s.size * 6, dtype).reshape(s.shape[0] * 2, s.shape[1] * 3)[::2, ::3]
        y = y if layout == "strided" else np.asarray(y, order=layout)
        if beta == 0 and not np.issubdtype(dtype, np.integer):
            y[...] = np.nan
    expect = s if a == 1 else textbook_mul(a, s)
    if y is not None and b != 0:
        expect = expect + (y if b == 1 else textbook_mul(b, y))
    before = _core.spmv_split_calls()
    with ascend_linalg.use_backend("cpu"):
        out = spmv(S, X, alpha=a, beta=b, y=y, trans=True)
    assert _core.spmv_split_calls() - before == 1
    if y is not None:
        assert np.shares_memory(out, y)
    assert out.dtype == expect.dtype
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("where", ["index_too_large", "index_negative", "indptr_decreasing"])
@pytest.mark.parametrize("fused", [False, True])
def test_split_several_vectors_malformed_raises(rng, split, where, fused):
    """Malformed structure under several vectors: ValueError; with alpha/beta the
    caller's Y is untouched (written only after every block checked its stretches)."""
    split(1)
    S, A = malformed(rng, np.int32, where, 0.5)
    X = several(rng, S.shape[0], 4, np.float64, "C")
    y = values(rng, S.shape[1] * 4, np.float64).reshape(S.shape[1], 4)
    y0 = y.copy()
    kw = dict(alpha=2.0, beta=0.5, y=y) if fused else {}
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
        spmv(A, X, trans=True, **kw)
    np.testing.assert_array_equal(y, y0)


def test_split_several_vectors_unsorted_falls_back(rng, split):
    """An unsorted row under several vectors: the merge path computes the product."""
    split(1)
    S = long_rows(rng, 300, 80_000, 1000)
    indices, data = S.indices.copy(), S.data.copy()
    seg = slice(S.indptr[150], S.indptr[151])
    indices[seg], data[seg] = indices[seg][::-1].copy(), data[seg][::-1].copy()
    A = csr_matrix((data, indices, S.indptr.copy()), shape=S.shape)
    X = several(rng, 300, 6, np.float64, "F")
    Y, ran = run_split(A, X)
    assert ran == 0
    np.testing.assert_allclose(Y, S.T @ X, rtol=1e-12, atol=1e-12)


def test_by_rule_several_vectors(rng, split):
    """The rule for several vectors: rows of 96 nonzeros or more on average (the
    rows' searches are shared by the vectors), partials of all vectors past 6 MiB;
    not shorter rows, more than 16 vectors, or one vector with such rows."""
    split(-1)
    S = long_rows(rng, 2000, 400_000, 200)  # rows of ~200
    short = long_rows(rng, 6000, 400_000, 60)
    for M, nvec, expect_split in ((S, 4, True), (S, 16, True), (S, 17, False), (short, 4, False)):
        X = several(rng, M.shape[0], nvec, np.float64, "C")
        Y, ran = run_split(csr_matrix(M), X)
        assert ran == int(expect_split), (M.shape, nvec)
        np.testing.assert_allclose(Y, M.T @ X, rtol=1e-12, atol=1e-12)
    y, ran = run_split(csr_matrix(S), values(rng, S.shape[0], np.float64))
    assert ran == 0


def among_empty_rows(S, total, at_end=False):
    """S's rows spread evenly over ``total`` rows (or all at the end), the others empty."""
    m = S.shape[0]
    pos = total - m + np.arange(m) if at_end else np.arange(m) * (total // m)
    lengths = np.zeros(total, np.int64)
    lengths[pos] = np.diff(S.indptr)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(S.indptr.dtype)
    M = sp.csr_matrix((S.data, S.indices, indptr), shape=(total, S.shape[1]))
    M.indices = M.indices.astype(S.indices.dtype)  # scipy's constructor may have narrowed them
    M.indptr = M.indptr.astype(S.indptr.dtype)
    return M


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_by_rule_empty_rows_do_not_count(rng, split, index_dtype):
    """The rule's average counts only the rows that hold nonzeros: long rows
    among many empty ones split as they would alone; short rows among them,
    or fewer long ones than the average needs, do not."""
    split(-1)
    cases = [
        (long_rows(rng, 200, 500_000, 1500, index_dtype=index_dtype), True),
        (long_rows(rng, 400, 500_000, 800, index_dtype=index_dtype), False),  # the average under 1024
        (long_rows(rng, 3000, 500_000, 40, index_dtype=index_dtype), False),
    ]
    for S, expect_split in cases:
        for total, at_end in ((S.shape[0], False), (S.shape[0] * 1000 + 7, False), (S.shape[0] * 1000, True)):
            M = among_empty_rows(S, total, at_end)
            assert M.indptr.dtype == index_dtype
            x = values(rng, total, np.float64)
            y, ran = run_split(csr_matrix(M), x)
            assert ran == int(expect_split), (S.shape, total, at_end)
            np.testing.assert_allclose(y, M.T @ x, rtol=1e-12, atol=1e-12)
            if expect_split:
                np.testing.assert_array_equal(y, M.T @ x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", [0, 1], ids=["merge", "split"])
def test_long_rows_among_empty_rows_either_kernel(rng, split, mode, dtype):
    """Both kernels skip empty rows (the split with one compare, the merge
    path's row walk and its chunks of runs): long rows among many empty rows,
    with NaN/Inf, give scipy's sums; the column split's bit for bit. A row of
    every length in between keeps each chunk path busy."""
    split(mode)
    S = long_rows(rng, 300, 400_000, 1000, dtype=dtype, special=True)
    short = long_rows(rng, 300, 400_000, 6, dtype=dtype)
    for M in (among_empty_rows(S, 300_000), among_empty_rows(S, 300_000, at_end=True),
              among_empty_rows(sp.vstack([S, short]).tocsr(), 200_000)):
        x = values(rng, M.shape[0], dtype)
        y, ran = run_split(csr_matrix(M), x)
        assert ran == mode
        ref = M.T @ x
        if mode:
            np.testing.assert_array_equal(y, ref)
        else:
            tol = 1e-4 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * np.nanmax(np.abs(ref[np.isfinite(ref)])))


def test_split_force_rejects_bad_arguments(split):
    with pytest.raises(ValueError, match="split mode"):
        _core.spmv_split_force(2)
    with pytest.raises(ValueError, match="split mode"):
        _core.spmv_split_force(-2)
