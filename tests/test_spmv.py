"""CSR/CSC times dense operands: ``ascend_linalg.sparse`` classes against scipy's.

Every product is computed twice, by the project's class and by scipy's class
built from the same data, and must agree in type, dtype, shape and values
(exactly for integer and bool results). Under the ``cpu`` backend the dispatch
log must show that the project's SpMV kernel ran, or, for a result dtype
without a kernel, that scipy ran with a reason.
"""
import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import ascend_linalg
import ascend_linalg.sparse as asp

KINDS = {
    "csr_matrix": (asp.csr_matrix, sp.csr_matrix),
    "csr_array": (asp.csr_array, sp.csr_array),
    "csc_matrix": (asp.csc_matrix, sp.csc_matrix),
    "csc_array": (asp.csc_array, sp.csc_array),
}
COUNTERPART = {"csr_matrix": "csc_matrix", "csc_matrix": "csr_matrix",
               "csr_array": "csc_array", "csc_array": "csr_array"}
KERNEL_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128,
                                       np.int32, np.int64)}
DTYPES = ["float32", "float64", "complex64", "complex128", "int32", "int64", "bool", "int8", "uint8"]

# ---------------------------------------------------------------- helpers
def build(kind, S):
    """(ours, scipy's) of one kind from the same scipy matrix (copied)."""
    ours_cls, ref_cls = KINDS[kind]
    return ours_cls(S.copy()), ref_cls(S.copy())


def values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.6
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -5, 6, size=shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def random_sparse(rng, m, n, density=0.3, dtype=np.float64):
    S = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    S.data = values(rng, S.nnz, dtype)
    return S


def assert_same(ours, ref):
    assert type(ours) is type(ref), (type(ours), type(ref))
    assert ours.dtype == ref.dtype, (ours.dtype, ref.dtype)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    if sp.issparse(ref):
        ours, ref = ours.toarray(), ref.toarray()
    ours, ref = np.asarray(ours), np.asarray(ref)
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, ref)
    else:
        tight = ref.dtype in (np.float64, np.complex128)
        np.testing.assert_allclose(ours, ref, rtol=1e-12 if tight else 2e-5,
                                   atol=1e-12 if tight else 1e-5, equal_nan=True)
        for part in (np.real, np.imag):  # +-Inf and NaN exactly where scipy has them
            np.testing.assert_array_equal(np.isnan(part(ours)), np.isnan(part(ref)))
            np.testing.assert_array_equal(np.isinf(part(ours)), np.isinf(part(ref)))


def assert_kernel_ran(records, backend, expect_fallback=False):
    ops = [r for r in records if r[0] in ("csr_matvec", "csc_matvec")]
    assert ops, records
    if backend == "scipy":
        assert all(r[1] == "scipy" for r in ops), records
    elif expect_fallback:
        assert all(r[1] == "scipy" and r[2] for r in ops), records
    else:
        assert all(r[1] == backend and r[2] is None for r in ops), records


OPS = {
    "A@x": lambda A, x, y, X: A @ x,
    "A.dot(x)": lambda A, x, y, X: A.dot(x),
    "A*x": lambda A, x, y, X: A * x,  # elementwise for sparse arrays
    "x@A": lambda A, x, y, X: y @ A,
    "A.T@y": lambda A, x, y, X: A.T @ y,
    "A@X_C": lambda A, x, y, X: A @ np.ascontiguousarray(X),
    "A@X_F": lambda A, x, y, X: A @ np.asfortranarray(X),
    "A@X_strided": lambda A, x, y, X: A @ np.repeat(X, 2, axis=1)[:, ::2],
    "A.dot(X)": lambda A, x, y, X: A.dot(X),
    "A@x_col": lambda A, x, y, X: A @ x.reshape(-1, 1),
    "A@x_strided": lambda A, x, y, X: A @ np.repeat(x, 2)[::2],
    "A@matrix": lambda A, x, y, X: A @ np.matrix(X),
    "A*matrix": lambda A, x, y, X: A * np.matrix(X),
    "Y@A": lambda A, x, y, X: np.ones((3, A.shape[0])) @ A,
}
# A product that runs through the project's SpMV hook (others may be elementwise).
ROUTED = {"A@x", "A.dot(x)", "x@A", "A.T@y", "A@X_C", "A@X_F", "A@X_strided", "A.dot(X)",
          "A@x_col", "A@x_strided", "A@matrix", "Y@A"}


def run_both(op, A, B, x, y, X):
    return OPS[op](A, x, y, X), OPS[op](B, x, y, X)


# ---------------------------------------------------------------- operations
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_products_match_scipy(backend, dispatch, rng, kind, op):
    S = random_sparse(rng, 13, 9)
    A, B = build(kind, S)
    x, y, X = rng.standard_normal(9), rng.standard_normal(13), rng.standard_normal((9, 4))
    if op == "A*matrix" and kind.endswith("array"):
        # Elementwise with an incompatible shape: both raise the same error.
        with pytest.raises(ValueError) as ref_info:
            OPS[op](B, x, y, X)
        with pytest.raises(ValueError) as our_info:
            OPS[op](A, x, y, X)
        assert str(our_info.value) == str(ref_info.value)
        return
    ours, ref = run_both(op, A, B, x, y, X)
    assert_same(ours, ref)
    routed = op in ROUTED or (op.startswith("A*") and kind.endswith("matrix"))
    if routed:
        assert_kernel_ran(dispatch, backend)
    if op == "A*x" and kind.endswith("array"):
        assert sp.issparse(ours)  # elementwise, like scipy


@pytest.mark.parametrize("kind", list(KINDS))
def test_matrix_operand_result_types(backend, kind, rng):
    A, B = build(kind, random_sparse(rng, 5, 4))
    M = np.matrix(rng.standard_normal((4, 2)))
    res = A @ M
    assert type(res) is type(B @ M)
    assert isinstance(res, np.matrix) == kind.endswith("matrix")
    col = A @ np.ones((4, 1))
    assert col.shape == (5, 1)


# ---------------------------------------------------------------- dtypes
@pytest.mark.parametrize("data_dtype", DTYPES)
@pytest.mark.parametrize("kind", ["csr_matrix", "csc_array"])
def test_dtype_pairs(backend, rng, kind, data_dtype):
    """Every (data, x) dtype pair: scipy's result dtype exactly; fallback recorded."""
    from ascend_linalg.testing import dispatch_records
    S = random_sparse(rng, 11, 7, density=0.5, dtype=data_dtype)
    A, B = build(kind, S)
    for x_dtype in DTYPES:
        x = values(rng, 7, x_dtype)
        X = values(rng, (7, 3), x_dtype)
        with dispatch_records() as rec:
            ours, ours2 = A @ x, A @ X
        ref, ref2 = B @ x, B @ X
        assert_same(ours, ref)
        assert_same(ours2, ref2)
        result = np.dtype(ref.dtype)
        assert_kernel_ran(rec, backend, expect_fallback=result not in KERNEL_DTYPES)
        if backend != "scipy" and result not in KERNEL_DTYPES:
            assert all(str(result) in r[2] for r in rec), rec


# ---------------------------------------------------------------- shapes
def _shape_cases():
    r = np.random.default_rng(5)
    cases = {
        "0x5": sp.csr_matrix((0, 5)),
        "5x0": sp.csr_matrix((5, 0)),
        "0x0": sp.csr_matrix((0, 0)),
        "1x1": sp.csr_matrix(np.array([[2.5]])),
        "1x1_empty": sp.csr_matrix((1, 1)),
        "all_empty_9x7": sp.csr_matrix((9, 7)),
        "empty_rows": sp.csr_matrix(np.diag([0, 1.5, 0, 0, -2, 0, 0, 3.0])[:, :6]),
        "one_huge_row": sp.csr_matrix((r.standard_normal(5000),
                                       (np.full(5000, 3), np.arange(5000))), shape=(7, 5000)),
        "huge_row_and_singletons": sp.vstack([sp.random(40, 6000, density=0.0005, random_state=1),
                                              sp.csr_matrix(r.standard_normal((1, 6000)))]).tocsr(),
        "primes_31x37": sp.random(31, 37, density=0.2, random_state=2, format="csr"),
        "63x65": sp.random(63, 65, density=0.1, random_state=3, format="csr"),
        "129x127": sp.random(129, 127, density=0.05, random_state=4, format="csr"),
        "dense_17x17": sp.csr_matrix(r.standard_normal((17, 17))),
        "column_1x300": sp.random(300, 1, density=0.5, random_state=5, format="csr"),
        "row_1x300": sp.random(1, 300, density=0.5, random_state=6, format="csr"),
    }
    return cases


SHAPE_CASES = _shape_cases()


@pytest.mark.parametrize("case", list(SHAPE_CASES))
@pytest.mark.parametrize("kind", ["csr_matrix", "csc_array"])
def test_shapes(backend, dispatch, rng, kind, case):
    A, B = build(kind, SHAPE_CASES[case])
    m, n = A.shape
    x, y, X = rng.standard_normal(n), rng.standard_normal(m), rng.standard_normal((n, 3))
    for op in ("A@x", "A.T@y", "A@X_C", "A@X_F", "x@A", "A@x_col"):
        ours, ref = run_both(op, A, B, x, y, X)
        assert_same(ours, ref)
    assert_kernel_ran(dispatch, backend)


# ---------------------------------------------------------------- non-canonical structure
def _noncanonical():
    # Row 0: duplicates of column 2; row 1 empty; row 2 unsorted with a duplicate; row 3 one entry.
    data = np.array([1.0, 2.0, -3.0, 4.0, 5.0, 6.0, 0.5, 7.0])
    indices = np.array([2, 2, 0, 4, 1, 4, 0, 3])
    indptr = np.array([0, 3, 3, 7, 8])
    return data, indices, indptr, (4, 5)


@pytest.mark.parametrize("index_dtype", ["int32", "int64", "mixed"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_duplicates_and_unsorted_indices(backend, dispatch, rng, kind, index_dtype):
    data, indices, indptr, shape = _noncanonical()
    if kind.startswith("csc"):
        shape = shape[::-1]
    ours_cls, ref_cls = KINDS[kind]
    A = ours_cls((data.copy(), indices.copy(), indptr.copy()), shape=shape)
    B = ref_cls((data.copy(), indices.copy(), indptr.copy()), shape=shape)
    assert not A.has_canonical_format
    if index_dtype != "int32":
        A.indices = A.indices.astype(np.int64)
        B.indices = B.indices.astype(np.int64)
    if index_dtype == "int64":
        A.indptr = A.indptr.astype(np.int64)
        B.indptr = B.indptr.astype(np.int64)
    m, n = shape
    x, y, X = rng.standard_normal(n), rng.standard_normal(m), rng.standard_normal((n, 2))
    for op in ("A@x", "A@X_F", "x@A", "A.T@y"):
        ours, ref = run_both(op, A, B, x, y, X)
        assert_same(ours, ref)
    np.testing.assert_allclose(A @ x, B.toarray() @ x, rtol=1e-12)
    assert not A.has_canonical_format  # the product did not sort the caller's matrix
    np.testing.assert_array_equal(A.indices, indices)
    assert_kernel_ran(dispatch, backend)


# ---------------------------------------------------------------- non-finite values
@pytest.mark.parametrize("where", ["data", "x", "both", "nan_only"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "complex64"])
@pytest.mark.parametrize("kind", ["csr_array", "csc_matrix"])
def test_nan_inf(backend, dispatch, rng, kind, dtype, where):
    S = random_sparse(rng, 12, 10, density=0.4, dtype=dtype)
    if where == "nan_only":
        S.data[2] = np.nan
    if where in ("data", "both"):
        S.data[0], S.data[3], S.data[-1] = np.nan, np.inf, -np.inf
    A, B = build(kind, S)
    x = values(rng, 10, dtype)
    X = values(rng, (10, 3), dtype)
    if where in ("x", "both"):
        x[1], x[4] = np.nan, -np.inf
        X[2, 1], X[5, 0] = np.inf, np.nan
    if where == "nan_only":
        x[5] = X[6, 2] = np.nan
    y = values(rng, 12, dtype)
    for op in ("A@x", "A@X_F", "A@X_C", "x@A"):
        ours, ref = run_both(op, A, B, x, y, X)
        assert_same(ours, ref)
    assert_kernel_ran(dispatch, backend)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("bad", ["x_short", "x_long", "X_rows", "x@A", "dot", "x_col", "3d"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_dimension_mismatch_same_message(backend, rng, kind, bad):
    A, B = build(kind, random_sparse(rng, 6, 4))
    call = {
        "x_short": lambda M: M @ np.ones(3),
        "x_long": lambda M: M @ np.ones(5),
        "X_rows": lambda M: M @ np.ones((5, 2)),
        "x@A": lambda M: np.ones(4) @ M,
        "dot": lambda M: M.dot(np.ones(7)),
        "x_col": lambda M: M @ np.ones((3, 1)),
        "3d": lambda M: M @ np.ones((4, 2, 2)),
    }[bad]
    with pytest.raises(ValueError) as ref_info:
        call(B)
    with pytest.raises(ValueError) as our_info:
        call(A)
    assert str(our_info.value) == str(ref_info.value)


MALFORMED = {
    "index_huge": lambda A: A.indices.__setitem__(0, 10 ** 6),
    "index_eq_dim": lambda A: A.indices.__setitem__(0, A.shape[1] if A.format == "csr" else A.shape[0]),
    "index_negative": lambda A: A.indices.__setitem__(0, -1),
    "indptr_decreasing": lambda A: A.indptr.__setitem__(2, A.indptr[3] + 2),
    "indptr_last_gt_nnz": lambda A: A.indptr.__setitem__(-1, A.nnz + 5),
    "indptr_first_nonzero": lambda A: A.indptr.__setitem__(0, 1),
    "indptr_negative": lambda A: A.indptr.__setitem__(0, -3),
}


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("case", list(MALFORMED))
@pytest.mark.parametrize("kind", ["csr_matrix", "csc_array"])
def test_malformed_structure_raises_on_cpu(rng, kind, case, index_dtype):
    S = random_sparse(rng, 8, 6, density=0.5)
    A = KINDS[kind][0](S)
    if index_dtype == "int64":
        A.indices = A.indices.astype(np.int64)
        A.indptr = A.indptr.astype(np.int64)
    MALFORMED[case](A)
    x, X = np.ones(6), np.ones((6, 3))
    with ascend_linalg.use_backend("cpu"):
        for f in (lambda: A @ x, lambda: A @ X, lambda: A.dot(x)):
            with pytest.raises(ValueError):
                f()


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("where", [0.0, 0.37, 0.5, 0.999, "long_row", "long_row_end"])
@pytest.mark.parametrize("bad", [-1, "ncols", 2 ** 31 - 1])
@pytest.mark.parametrize("kind", ["csr_matrix", "csc_array"])
def test_bad_index_anywhere_in_a_large_matrix(rng, kind, bad, where, index_dtype):
    # Large enough for several blocks, index-check spans and indptr chunks,
    # with one long row (checked as it is read) among the short ones: the
    # bad index must be found wherever it sits.
    S = random_sparse(rng, 4000, 3000, density=0.004).tolil()
    S[1234, :] = rng.standard_normal(3000)
    S = S.tocsr()
    S.sort_indices()
    A = KINDS[kind][0](S)
    if index_dtype == "int64":
        A.indices = A.indices.astype(np.int64)
        A.indptr = A.indptr.astype(np.int64)
    long_row = slice(int(A.indptr[1234]), int(A.indptr[1235])) if A.format == "csr" else None
    if where == "long_row":
        k = long_row.start + 5 if long_row else A.nnz // 3
    elif where == "long_row_end":
        k = long_row.stop - 1 if long_row else A.nnz // 3 + 1
    else:
        k = min(int(where * A.nnz), A.nnz - 1)
    n_inner = A.shape[1] if A.format == "csr" else A.shape[0]
    A.indices[k] = n_inner if bad == "ncols" else bad
    x = np.ones(A.shape[1])
    xt = np.ones(A.shape[0])
    with ascend_linalg.use_backend("cpu"):
        with pytest.raises(ValueError, match="malformed"):
            A @ x
        with pytest.raises(ValueError, match="malformed"):
            _transposed_product(A, xt)


def _transposed_product(A, x):
    # A.T @ x without scipy's own format check (which A.T @ x runs first):
    # the transposed storage of the same arrays is the other kernel.
    other = asp.csc_matrix if A.format == "csr" else asp.csr_matrix
    B = other((A.data, A.indices, A.indptr), shape=A.shape[::-1])
    return B @ x


@pytest.mark.parametrize("layout", ["random", "stencil", "mixed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_short_rows_give_scipys_bits(rng, dtype, layout):
    # Rows shorter than the long-row threshold are summed as scipy's
    # sparsetools sums them: one accumulator, rounded products, in order.
    # Random and stencil rows average under 16 nonzeros (the kernel's chunks
    # of short rows); the mixed rows alternate 5 and 31 nonzeros, 18 on
    # average, so they take the row-by-row path (its unrolled chain and its
    # counted loop).
    if layout == "random":
        S = sp.random(3000, 2000, density=0.004, random_state=3, format="csr").astype(dtype)
    elif layout == "mixed":
        lengths = np.tile([5, 31], 1500)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        cols = np.concatenate([np.sort(rng.choice(2000, n, replace=False)) for n in lengths])
        S = sp.csr_matrix((rng.standard_normal(indptr[-1]), cols, indptr), shape=(3000, 2000)).astype(dtype)
    else:
        S = sp.diags([rng.standard_normal(2000 - abs(d)) for d in (-45, -1, 0, 1, 45)], [-45, -1, 0, 1, 45],
                     shape=(2000, 2000), format="csr").astype(dtype)
    if np.iscomplexobj(S.data):
        S.data = S.data + 1j * rng.standard_normal(S.nnz)
    x = rng.standard_normal(2000).astype(dtype)
    assert np.diff(S.indptr).max() < 32
    with ascend_linalg.use_backend("cpu"):
        y = asp.csr_matrix(S) @ x
    np.testing.assert_array_equal(y, S @ x)


def _row_runs(rng, nrows, ncols, dtype, index_dtype, near):
    # Runs of 1-60 rows of one length each, lengths 0-17 (the kernels' run
    # loops take 1-16, one past that goes row by row); columns anywhere
    # (duplicates and unsorted included), or within 20 of the diagonal, which
    # the kernels judge streaming (not scattered).
    lengths = []
    while len(lengths) < nrows:
        lengths += [int(rng.integers(0, 18))] * int(rng.integers(1, 61))
    lengths = np.array(lengths[:nrows])
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)
    if near:
        rows = np.repeat(np.arange(nrows), lengths)
        cols = np.clip(rows * ncols // nrows + rng.integers(-20, 21, indptr[-1]), 0, ncols - 1)
    else:
        cols = rng.integers(0, ncols, indptr[-1])
    S = sp.csr_matrix((values(rng, indptr[-1], dtype), cols, indptr), shape=(nrows, ncols))
    S.indices, S.indptr = S.indices.astype(index_dtype), S.indptr.astype(index_dtype)  # scipy takes int32
    return S


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", ["cache", "stream"])
def test_row_runs_give_scipys_bits(rng, threads, dtype, index_dtype, size):
    # Rows in runs of one length go through the run loops (the products of a
    # chunk whose rows mostly repeat the length before them): in cache for
    # both dtypes, A x and A^T x; A x in streaming blocks too. Same
    # bits as scipy's sparsetools, Inf and NaN in x included, except where
    # several blocks split a row (summed in parts, docs/guarantees.md): at
    # most one row per block boundary.
    if size == "cache":  # one block: A^T x too sums in scipy's order
        S = _row_runs(rng, 3000, 2500, dtype, index_dtype, near=False)
    else:  # A x's blocks (8 on two threads) over 2^16 nonzeros each: streaming
        S = _row_runs(rng, 100_000, 100_000, dtype, index_dtype, near=True)
    A = asp.csr_matrix(S)
    assert A.indices.dtype == index_dtype and np.diff(S.indptr).max() == 17
    x, xt = values(rng, S.shape[1], dtype), values(rng, S.shape[0], dtype)
    x[[3, 50, 700]] = [np.inf, -np.inf, np.nan]
    xt[[5, 60, 800]] = [np.inf, np.nan, -np.inf]
    threads(2)
    with ascend_linalg.use_backend("cpu"):
        y, want = A @ x, S @ x
        if size == "cache":
            np.testing.assert_array_equal(y, want)
            np.testing.assert_array_equal(A.T @ xt, S.T @ xt)
        else:
            rtol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(y, want, rtol=rtol)
            assert np.count_nonzero((y != want) & ~(np.isnan(y) & np.isnan(want))) <= 64
            np.testing.assert_allclose(A.T @ xt, S.T @ xt, rtol=rtol)


def _bad_indices_raise(A, x, edits):
    # A @ x on the CPU device raises ValueError ("malformed") with each
    # (position, bad index) edit of A.indices in turn, each undone after;
    # A's arrays and x end as they began.
    snaps = [a.copy() for a in (x, A.data, A.indices, A.indptr)]
    for k, bad in edits:
        A.indices[k] = bad
        with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
            A @ x
        A.indices[k] = snaps[2][k]
    for a, b in zip((x, A.data, A.indices, A.indptr), snaps):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", ["cache", "stream"])
def test_run_chunks_check_each_index_as_they_load_it(rng, threads, dtype, index_dtype, size):
    # A x's run chunks check no span ahead: the runs (rows of 1-16) and the
    # rows between them (17, summed one nonzero at a time) compare each
    # index as they load it. A bad one in either, first, middle or last in
    # its row, raises before x is read through it; the operands are unchanged.
    if size == "cache":
        S = _row_runs(rng, 3000, 2500, dtype, index_dtype, near=False)
    else:
        S = _row_runs(rng, 100_000, 100_000, dtype, index_dtype, near=True)
    A = asp.csr_matrix(S)
    lengths = np.diff(A.indptr)
    x = values(rng, S.shape[1], dtype)
    threads(2)
    edits = []
    for length in (9, 17):
        row = int(np.flatnonzero(lengths[len(lengths) // 3:] == length)[0]) + len(lengths) // 3
        for pos in (0, length // 2, length - 1):
            edits += [(int(A.indptr[row]) + pos, bad) for bad in (S.shape[1], -1)]
    _bad_indices_raise(A, x, edits)
    with ascend_linalg.use_backend("cpu"):
        np.testing.assert_allclose(A @ x, S @ x, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype,grid", [(np.float32, 112), (np.float64, 112), (np.float32, 300), (np.float64, 300)])
@pytest.mark.parametrize("bad", [-1, "ncols"])
def test_bad_index_in_row_runs(threads, dtype, grid, index_dtype, bad):
    # A stencil's rows run through the run loops (in cache, and in streaming
    # blocks: the 300^2 grid on two threads), which check each index as they
    # load it: a bad index at the start, inside or at the end of the nonzeros
    # is found before x is read there, in A x and A^T x.
    A = asp.csr_matrix(_stencil(grid, 2).astype(dtype))
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    n = A.shape[0]
    x = np.ones(n, dtype=dtype)
    threads(2)
    with ascend_linalg.use_backend("cpu"):
        want = A @ x
        for pos in (0, A.nnz // 3, A.nnz - 1):
            keep = A.indices[pos]
            A.indices[pos] = n if bad == "ncols" else bad
            with pytest.raises(ValueError, match="malformed"):
                A @ x
            with pytest.raises(ValueError, match="malformed"):
                _transposed_product(A, x)
            A.indices[pos] = keep
        np.testing.assert_array_equal(A @ x, want)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offsets", [(0,), (0, 1), (-1, 0, 1)], ids=["diagonal", "bidiagonal", "tridiagonal"])
def test_narrow_bands_run_as_runs(rng, threads, nthreads, dtype, offsets):
    # Rows of 1-3 nonzeros near the diagonal, in runs of one length: A x
    # takes them as runs (fixedRun), not as groups of 8 nonzeros (dotGroups,
    # which scattered short rows take). One thread: scipy's bits, NaN and Inf
    # in x included; two: at most one row per block boundary summed in parts.
    # A bad index in a run raises before x is read there.
    n = 200_003
    S = sp.diags([values(rng, n, dtype) for _ in offsets], offsets, shape=(n, n), format="csr")
    S.indices, S.indptr = S.indices.astype(np.int32), S.indptr.astype(np.int32)
    A = asp.csr_matrix(S)
    x = values(rng, n, dtype)
    x[[7, 1000, n - 2]] = [np.inf, np.nan, -np.inf]
    threads(nthreads)
    with ascend_linalg.use_backend("cpu"):
        y = A @ x
    want = S @ x
    if nthreads == 1 or len(offsets) == 1:
        np.testing.assert_array_equal(y, want)
    else:
        np.testing.assert_allclose(y, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
        assert np.count_nonzero((y != want) & ~(np.isnan(y) & np.isnan(want))) <= 16
    _bad_indices_raise(A, x, [(A.nnz // 2, n), (A.nnz - 1, n)])


def _stencil(g, dims):
    one = sp.identity(g, format="csr")
    d = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(g, g))
    if dims == 2:
        return (sp.kron(one, d) + sp.kron(d, one)).tocsr()
    return (sp.kron(sp.kron(one, one), d) + sp.kron(sp.kron(one, d), one) + sp.kron(sp.kron(d, one), one)).tocsr()


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_stencils_stream_and_random_columns_scatter(rng, index_dtype):
    # The row loops prefetch x (the transposed partial) per nonzero only where
    # the columns jump around. A stencil's row-to-row jump back is large but
    # its diagonals stream: one thread's block of the 2000^2 Poisson matrix
    # was once judged scattered and ran A.T @ x at 0.6x scipy.
    from ascend_linalg._core import spmv_scattered
    def blocks(A, nb):
        idx = A.indices.astype(index_dtype)
        return [spmv_scattered(idx, A.nnz * b // nb, A.nnz * (b + 1) // nb) for b in range(nb)]
    for A in (_stencil(2000, 2), _stencil(60, 3),
              sp.diags([np.ones(10**5)] * 9, list(range(-4, 5)), shape=(10**5, 10**5), format="csr")):
        for nb in (1, 2, 3, 4, 8):
            assert blocks(A, nb) == [False] * nb, (A.shape, nb)
    n = 10**5
    R = sp.csr_matrix((np.ones(8 * n), rng.integers(0, n, 8 * n), np.arange(0, 8 * n + 1, 8)), shape=(n, n))
    R.sort_indices()
    assert blocks(R, 1) == [True] and blocks(R, 4) == [True] * 4
    # one long sorted row sweeps its columns in order: it streams
    L = sp.csr_matrix((np.ones(50_000), np.sort(rng.choice(n, 50_000, replace=False)), [0, 50_000]), shape=(1, n))
    assert blocks(L, 1) == [False]
    assert not spmv_scattered(R.indices, 0, 100)  # too short to judge: streams
    with pytest.raises(ValueError):
        spmv_scattered(R.indices, 0, R.nnz + 1)
    with pytest.raises(TypeError):
        spmv_scattered(R.indices.astype(np.float64), 0, 10)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("layout", ["banded", "scattered", "scattered-long",
                                    "scattered-narrow", "scattered-long-narrow", "scattered-short-narrow"])
@pytest.mark.parametrize("threads", [1, 2])
def test_large_blocks_prefetch_paths(rng, layout, index_dtype, threads):
    # Blocks of 2^16 nonzeros or more take the row loops' prefetching paths
    # (value/index streams; for scattered columns over more than 6 MiB of x
    # or of the blocks' partials together, those as well: along a long row
    # a piece at a time for x, span by checked span for the partial), which
    # smaller matrices never reach: same sums, same checks there.
    # "-narrow": scattered columns over 2.4 MB (float64), on the
    # streams-only path, except that "scattered-short-narrow" (rows of 2)
    # prefetches A.T @ x's partial from 512 KiB on (kScatterPfShortMinBytes).
    n, k = 120_000, 8
    ncols = {"banded": n}.get(layout, 300_000 if layout.endswith("narrow") else 1_000_000)  # float64 x: 8 MB
    layout = layout.removesuffix("-narrow")
    if layout == "banded":
        cols = np.clip(np.arange(n)[:, None] + np.arange(-3, 5), 0, n - 1).ravel()
        indptr = np.arange(0, n * k + 1, k)
    else:
        lengths = np.full(n, 2 if layout == "scattered-short" else k)
        if layout == "scattered-long":
            lengths[::1000] = 3001  # unsorted long rows, split by span checks and blocks
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        cols = rng.integers(0, ncols - 20_000, indptr[-1])  # the last columns empty
        if layout == "scattered":
            cols = np.sort(cols.reshape(n, k), axis=1).ravel()
    S = sp.csr_matrix((rng.standard_normal(indptr[-1]), cols, indptr), shape=(n, ncols))
    A = asp.csr_matrix(S)
    if index_dtype == "int64":
        A.indices = A.indices.astype(np.int64)
        A.indptr = A.indptr.astype(np.int64)
    x, xt = rng.standard_normal(ncols), rng.standard_normal(n)
    old = ascend_linalg.get_num_threads()
    ascend_linalg.set_num_threads(threads)
    try:
        with ascend_linalg.use_backend("cpu"):
            if layout == "scattered-long":
                np.testing.assert_allclose(A @ x, S @ x, rtol=1e-12, atol=1e-10)
            else:
                np.testing.assert_array_equal(A @ x, S @ x)  # short rows: scipy's order and bits
            np.testing.assert_allclose(A.T @ xt, S.T @ xt, rtol=1e-12, atol=1e-12)
            # beta == 0 writes every element of y, the empty columns' too (as +0)
            yt = asp.spmv(A, xt, y=np.full(ncols, np.nan), trans=True)
            np.testing.assert_allclose(yt, S.T @ xt, rtol=1e-12, atol=1e-12)
            assert not np.signbit(yt[(S.T @ xt) == 0]).any()
            bad = [A.nnz // 2]
            if layout == "scattered-long":  # also inside a long row (split by span checks in A.T @ x)
                bad.append(int(A.indptr[60_000]) + 1500)
            for pos in bad:
                keep = A.indices[pos]
                A.indices[pos] = ncols
                with pytest.raises(ValueError, match="malformed"):
                    A @ x
                with pytest.raises(ValueError, match="malformed"):
                    A.T @ xt
                A.indices[pos] = keep
    finally:
        ascend_linalg.set_num_threads(old)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [2, 3, 4])
def test_transposed_blocks_sum_their_own_columns_into_y(rng, dtype, threads):
    # A.T @ x on several threads: a streaming block scatters the spans whose
    # columns are its own pages of y straight into y, and the others into its
    # partial; the reduction adds the partials to y's sums. Banded rows, with
    # far-off nonzeros every 1009 rows (their spans go to the partial, onto
    # pages that other spans summed into y), two runs of empty columns (y's
    # pages no block touches: +0), and Inf/NaN in x; y starts as NaN.
    n = 150_000
    cols = np.clip(np.arange(n)[:, None] + np.arange(-4, 5), 0, n - 1)
    far = np.arange(n) % 1009 == 0
    extra = np.where(far, (np.arange(n) * 7919) % n, -1)[:, None]
    cols = np.concatenate([cols, extra], axis=1).ravel()
    rows = np.repeat(np.arange(n), 10)
    keep = (cols >= 0) & ~((cols >= 40_000) & (cols < 60_000)) & ~((cols >= 100_000) & (cols < 101_500))
    S = sp.csr_matrix((rng.standard_normal(keep.sum()), (rows[keep], cols[keep])), shape=(n, n)).astype(dtype)
    S.sum_duplicates()
    A = asp.csr_matrix(S)
    x = rng.standard_normal(n).astype(dtype)
    x[[5_000, 77_777]] = np.inf
    x[120_000] = np.nan
    want = S.T @ x
    old = ascend_linalg.get_num_threads()
    ascend_linalg.set_num_threads(threads)
    try:
        with ascend_linalg.use_backend("cpu"):
            got = A.T @ x
            again = asp.spmv(A, x, y=np.full(n, np.nan, dtype), trans=True)
    finally:
        ascend_linalg.set_num_threads(old)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(got.view(np.uint8), again.view(np.uint8))  # deterministic
    empty = np.r_[40_000:60_000, 100_000:101_500]
    assert (got[empty] == 0).all() and not np.signbit(got[empty]).any()


# ---------------------------------------------------------------- class preservation
CHAINS = {
    "T": lambda A: A.T,
    "transpose()": lambda A: A.transpose(),
    "copy": lambda A: A.copy(),
    "astype": lambda A: A.astype(np.float32),
    "A+A": lambda A: A + A,
    "A-A": lambda A: A - A,
    "A*2": lambda A: A * 2,
    "2*A": lambda A: 2 * A,
    "-A": lambda A: -A,
    "A/2": lambda A: A / 2,
    "A[1:5]": lambda A: A[1:5],
    "A[:, 1:3]": lambda A: A[:, 1:3],
    "tocsr": lambda A: A.tocsr(),
    "tocsc": lambda A: A.tocsc(),
    "asformat_csr": lambda A: A.asformat("csr"),
    "multiply": lambda A: A.multiply(A),
    "conj": lambda A: A.conj(),
    "A@A.T": lambda A: A @ A.T,
}


@pytest.mark.parametrize("chain", list(CHAINS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_chains_keep_the_class(backend, rng, kind, chain):
    A, B = build(kind, random_sparse(rng, 8, 8))
    ours, ref = CHAINS[chain](A), CHAINS[chain](B)
    ref_name = type(ref).__name__
    assert ref_name in KINDS, ref_name
    assert type(ours) is KINDS[ref_name][0], (type(ours), ref_name)
    assert_same(ours.toarray(), ref.toarray())
    if chain in ("T", "transpose()"):
        assert type(ours) is KINDS[COUNTERPART[kind]][0]
    x = rng.standard_normal(ours.shape[1])
    assert_same(ours @ x, ref @ x)


def test_isinstance_of_scipy_classes():
    S = sp.random(4, 4, density=0.5, format="csr", random_state=0)
    assert isinstance(asp.csr_matrix(S), sp.csr_matrix)
    assert isinstance(asp.csr_array(S), sp.csr_array)
    assert isinstance(asp.csc_matrix(S), sp.csc_matrix)
    assert isinstance(asp.csc_array(S), sp.csc_array)
    assert sp.issparse(asp.csr_matrix(S)) and sp.isspmatrix_csr(asp.csr_matrix(S))
    assert asp.csr_matrix(S).format == "csr" and asp.csc_array(S).format == "csc"


@pytest.mark.parametrize("name,call,want", [
    ("eye_csr", lambda: asp.eye(5, format="csr"), "csr_matrix"),
    ("eye_csc", lambda: asp.eye(5, format="csc"), "csc_matrix"),
    ("random_csr", lambda: asp.random(6, 4, density=0.5, format="csr", random_state=0), "csr_matrix"),
    ("random_csc", lambda: asp.random(6, 4, density=0.5, format="csc", random_state=0), "csc_matrix"),
    ("identity", lambda: asp.identity(3, format="csr"), "csr_matrix"),
    ("kron", lambda: asp.kron(asp.eye(2), asp.eye(3), format="csr"), "csr_matrix"),
    ("vstack", lambda: asp.vstack([asp.eye(2, format="csr")] * 2, format="csr"), "csr_matrix"),
    ("eye_array", lambda: asp.eye_array(5, format="csr"), "csr_array"),
    ("random_array", lambda: asp.random_array((6, 4), density=0.5, format="csc", rng=0), "csc_array"),
    ("diags_array", lambda: asp.diags_array([1.0, 2.0, 3.0], format="csr"), "csr_array"),
    ("vstack_arrays", lambda: asp.vstack([asp.csr_array(np.eye(2))] * 2, format="csr"), "csr_array"),
])
def test_constructors_return_our_classes(name, call, want):
    res = call()
    assert type(res) is KINDS[want][0]
    with ascend_linalg.use_backend("cpu"):
        x = np.ones(res.shape[1])
        np.testing.assert_allclose(res @ x, KINDS[want][1](res) @ x)


# ---------------------------------------------------------------- an iterative solver
def test_cg_poisson_2d(backend, dispatch):
    """scipy.sparse.linalg.cg on a 30 x 30 grid Laplacian built with our csr_matrix."""
    g = 30
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(g, g))
    L = (sp.kron(sp.eye(g), T) + sp.kron(T, sp.eye(g))).tocsr()
    b = np.random.default_rng(0).standard_normal(g * g)
    A = asp.csr_matrix(L)
    x, info = spla.cg(A, b, rtol=1e-10, maxiter=2000)
    x_ref, info_ref = spla.cg(sp.csr_matrix(L), b, rtol=1e-10, maxiter=2000)
    assert info == 0 and info_ref == 0
    np.testing.assert_allclose(x, x_ref, rtol=1e-6, atol=1e-8)
    assert np.linalg.norm(L @ x - b) <= 1e-8 * np.linalg.norm(b)
    ops = [r for r in dispatch if r[0] == "csr_matvec"]
    assert len(ops) > 10
    assert all(r[1] == backend for r in ops)
