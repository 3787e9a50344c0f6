"""Products whose values the CPU kernels widen as they read them.

scipy computes ``A @ x`` in its result dtype (``upcast`` of A's and x's),
converting A's values to it first: a bool or int8 matrix times a float32 or
float64 vector, a float32, int32 or int64 matrix times a float64 one. With
int32 indices the CPU kernels read such values as they lie and widen each one
as numpy's ``astype`` does (host/spmv_internal.h, ``spmvWidenedValues``), so
the product is the one over the converted copy, without the copy. Checked
here: results (exactly where the sums are exact: integer-valued x), scipy's
result dtype, the dispatch log, that no copy is made, the other paths (int64
indices, the scipy backend) and malformed structure.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg import _core
from ascend_linalg.sparse import csr_array, csr_matrix
from ascend_linalg.testing import dispatch_records

from _faults import FAULTS, broken

# (values dtype, x dtype): scipy's result is float64 for the first five and
# float32 for the last two.
PAIRS = [("bool", "float64"), ("int8", "float64"), ("int32", "float64"), ("int64", "float64"),
         ("float32", "float64"), ("bool", "float32"), ("int8", "float32")]
IDS = [f"{a}-{b}" for a, b in PAIRS]


def values(rng, n, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(n) < 0.7
    if dtype.kind == "i":
        hi = 100 if dtype.itemsize == 1 else 1 << 20
        return rng.integers(-hi, hi, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


def rows_matrix(rng, lengths, n, dtype, index=np.int32):
    """CSR with the given row lengths, random sorted columns out of n."""
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index)
    indices = np.concatenate([np.sort(rng.choice(n, size=k, replace=False)) for k in lengths]
                             or [np.zeros(0, np.int64)]).astype(index)
    S = sp.csr_matrix((values(rng, indices.size, dtype), indices, indptr), shape=(len(lengths), n))
    S.indices, S.indptr = indices, indptr  # scipy's constructor may narrow int64 ones
    return S


def awkward(rng, m, n, dtype, index=np.int32):
    """Empty rows, short rows, a few long ones and (n > 0) one full row."""
    lengths = rng.integers(0, min(n, 9) + 1, m)
    if m:
        lengths[:: 5] = 0
        lengths[m // 2] = n
        lengths[1::97] = min(n, 300)
    return rows_matrix(rng, lengths, n, dtype, index)


def operand(rng, n, dtype, shape, exact):
    """x (shape None) or X with shape[0] columns, C or F order (shape[1]);
    small integers when exact (every sum then exact in float32/float64)."""
    full = (n,) if shape is None else (n, shape[0])
    v = rng.integers(-4, 5, full) if exact else rng.standard_normal(full)
    v = v.astype(dtype)
    return np.asfortranarray(v) if shape is not None and shape[1] == "F" else v


def product(A, x, trans):
    return (A.T if trans else A) @ x


def bound(S, x, trans, dtype):
    """A rounding bound on the difference from scipy's sums (same terms,
    another order): a few units of the result type's epsilon times |A||x| per
    term."""
    A = sp.csr_matrix((np.abs(S.data.astype(np.float64)), S.indices, S.indptr), shape=S.shape)
    eps = np.finfo(dtype).eps
    terms = max(int(np.diff(S.indptr).max(initial=0)), S.shape[0] if trans else 1)
    return 2 * eps * terms * product(A, np.abs(x.astype(np.float64)), trans) + np.finfo(dtype).tiny


@pytest.mark.parametrize("shape", [None, (3, "C"), (3, "F")], ids=["vec", "X-C", "X-F"])
@pytest.mark.parametrize("trans", [False, True], ids=["N", "T"])
@pytest.mark.parametrize("size", [(0, 7), (7, 0), (1, 1), (31, 17), (257, 255), (2000, 4099)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_widened_values_match_scipy(pair, size, trans, shape, rng):
    vd, xd = pair
    m, n = size
    S = awkward(rng, m, n, vd)
    A = csr_matrix(S)
    before = (S.data.copy(), S.indices.copy(), S.indptr.copy())
    xlen = m if trans else n
    op = "csc_matvec" if trans else "csr_matvec"
    for exact in (True, False):
        x = operand(rng, xlen, xd, shape, exact)
        want = product(S, x, trans)
        with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
            got = product(A, x, trans)
        assert rec == [(op, "cpu", None)]
        assert got.dtype == want.dtype and got.shape == want.shape
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            assert np.all(np.abs(got - want) <= bound(S, x, trans, want.dtype))
    for a, b in zip(before, (A.data, A.indices, A.indptr)):
        np.testing.assert_array_equal(a, b)  # the caller's arrays untouched
    assert A.data.dtype == np.dtype(vd)


@pytest.mark.parametrize("trans", [False, True], ids=["N", "T"])
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_widened_equals_the_converted_product(pair, trans, rng, threads):
    # Integer-valued x: every sum exact, so the product over the values as
    # stored equals the one over their astype copy bit for bit, on one thread
    # and two, through the streaming and the scattered loops (a banded and a
    # random matrix of more than 2^18 rows + nonzeros, the timed sizes).
    vd, xd = pair
    n = 60_000
    band = sp.diags([np.ones(n - abs(k)) for k in range(-3, 4)], list(range(-3, 4)), shape=(n, n), format="csr")
    r, c = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
    rand = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, n))
    for S in (band, rand):
        S = S.astype(vd)
        S.data = values(rng, S.nnz, vd)
        S.indices, S.indptr = S.indices.astype(np.int32), S.indptr.astype(np.int32)
        x = operand(rng, n, xd, None, True)
        converted = csr_matrix((S.data.astype(np.result_type(S.dtype, x.dtype)), S.indices, S.indptr), shape=S.shape)
        for t in (1, 2):
            threads(t)
            with ascend_linalg.use_backend("cpu"):
                got = product(csr_matrix(S), x, trans)
                ref = product(converted, x, trans)
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(got, product(S, x, trans))


@pytest.mark.parametrize("mode", ["split", "bins"])
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_widened_transposed_split_and_binned(pair, mode, rng, threads):
    # The column-split and the binned A^T x read the values too.
    vd, xd = pair
    threads(2)
    S = rows_matrix(rng, rng.integers(250, 450, 1000), 5000, vd)  # past 2^18 rows + nonzeros: two blocks
    x = operand(rng, S.shape[0], xd, None, True)
    force = _core.spmv_split_force if mode == "split" else _core.spmv_bin_force
    calls = _core.spmv_split_calls if mode == "split" else _core.spmv_bin_calls
    before = calls()
    force(1)
    try:
        with ascend_linalg.use_backend("cpu"):
            got = csr_matrix(S).T @ x
    finally:
        force(-1)
    assert calls() == before + 1
    np.testing.assert_array_equal(got, S.T @ x)


def test_special_values_widen_as_numpy_casts(rng):
    # int64 past 2^53 rounds to the nearest float64, as astype does; a bool
    # byte other than 0 or 1 (a view of raw bytes) is true; NaN and Inf in
    # float32 values and in x propagate as in scipy's float64 product.
    n = 64
    indptr = np.arange(n + 1, dtype=np.int32)
    indices = rng.permutation(n).astype(np.int32)
    big = np.array([2**53 + 1, -(2**63), 2**63 - 1, 2**62 + 3] * (n // 4), dtype=np.int64)
    raw = np.array([0, 1, 2, 255] * (n // 4), dtype=np.uint8).view(np.bool_)
    f32 = rng.standard_normal(n).astype(np.float32)
    f32[::7], f32[3::11] = np.nan, np.inf
    x = rng.standard_normal(n)
    x[5], x[9] = np.inf, np.nan
    for data in (big, raw, f32):
        S = sp.csr_matrix((data, indices, indptr), shape=(n, n))
        for trans in (False, True):
            converted = sp.csr_matrix((data.astype(np.float64), indices, indptr), shape=(n, n))
            with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
                got = product(csr_matrix(S), x, trans)
            assert rec and rec[0][1] == "cpu"
            np.testing.assert_array_equal(got, product(converted, x, trans))  # one term a row and column
    assert np.array_equal(raw.view(np.uint8), np.array([0, 1, 2, 255] * (n // 4), dtype=np.uint8))


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_widened_values_are_not_copied(pair):
    # The result dtype's copy of the values (what scipy makes) would be
    # nnz * 4 or 8 bytes; the CPU kernels read the values in place.
    import tracemalloc
    vd, xd = pair
    nnz, m, n = 1 << 20, 1 << 12, 64
    data = np.ones(nnz, dtype=vd)
    indices = (np.arange(nnz) % n).astype(np.int32)
    indptr = np.arange(0, nnz + 1, nnz // m, dtype=np.int32)
    A = csr_matrix((data, indices, indptr), shape=(m, n))
    x = np.ones(n, dtype=xd)
    with ascend_linalg.use_backend("cpu"):
        A @ x
        tracemalloc.start()
        try:
            y = A @ x
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    np.testing.assert_array_equal(y, np.full(m, nnz // m, dtype=xd))
    assert peak < nnz  # bytes: y and small arrays only


@pytest.mark.parametrize("trans", [False, True], ids=["N", "T"])
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_int64_indices_convert_the_values(pair, trans, rng):
    # The widened kernels take int32 indices; int64 ones run the result
    # dtype's kernel on a converted copy, as before: same results.
    vd, xd = pair
    S = awkward(rng, 120, 90, vd, index=np.int64)
    assert S.indices.dtype == np.int64
    x = operand(rng, 120 if trans else 90, xd, None, True)
    with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
        got = product(csr_array(S), x, trans)
    assert rec[0][1] == "cpu"
    np.testing.assert_array_equal(got, product(S, x, trans))


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("trans", [False, True], ids=["N", "T"])
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_widened_malformed_structure_raises(pair, trans, fault, rng):
    vd, xd = pair
    S = awkward(rng, 40, 30, vd)
    indices, indptr = broken(S.indices, S.indptr, fault, 30)
    A = csr_matrix((S.data, indices, indptr), shape=S.shape)
    x = operand(rng, 40 if trans else 30, xd, None, True)
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed|index"):
        product(A, x, trans)


def test_scipy_backend_and_other_pairs_unchanged(rng):
    # The scipy backend runs scipy's product; pairs outside the list (uint8
    # values, a float32 x with int32 values: float64) take the converted path.
    S = awkward(rng, 50, 40, "int32")
    A = csr_matrix(S)
    x64 = operand(rng, 40, "float64", None, False)
    with ascend_linalg.use_backend("scipy"), dispatch_records() as rec:
        got = A @ x64
    assert rec == [("csr_matvec", "scipy", None)]
    np.testing.assert_array_equal(got, S @ x64)
    for vd, xd in (("uint8", "float64"), ("int32", "float32"), ("int16", "float32")):
        S = awkward(rng, 50, 40, vd)
        x = operand(rng, 40, xd, None, True)
        with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
            got = csr_matrix(S) @ x
        assert rec == [("csr_matvec", "cpu", None)]
        assert got.dtype == (S @ x).dtype
        np.testing.assert_array_equal(got, S @ x)


def test_binding_refuses_unwidened_small_values(rng):
    # _core.spmv takes int8 or bool values only where it widens them.
    indptr = np.array([0, 1, 2], dtype=np.int32)
    indices = np.array([0, 1], dtype=np.int32)
    y = np.zeros(2)
    for data, x, idx in ((np.ones(2, np.int8), np.ones(2, np.int8), np.int32),
                         (np.ones(2, np.bool_), np.ones(2), np.int64),
                         (np.ones(2, np.int8), np.ones(2, np.int32), np.int32)):
        yy = np.zeros(2, x.dtype)
        with pytest.raises(TypeError, match="no SpMV kernel"):
            _core.spmv("cpu", False, np.ones(1, x.dtype), indptr.astype(idx), indices.astype(idx), data, 2, 2, x,
                       np.zeros(1, x.dtype), yy)
    # a pair the host widens: the binding passes it through
    _core.spmv("cpu", False, np.ones(1), indptr, indices, np.ones(2, np.int8), 2, 2, np.array([3.0, 4.0]),
               np.zeros(1), y)
    np.testing.assert_array_equal(y, [3.0, 4.0])


@pytest.mark.parametrize("trans", [False, True], ids=["N", "T"])
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_spmv_fused_with_widened_values(pair, trans, rng):
    # spmv(): alpha, beta and y in place over values widened as read; beta 0
    # never reads y (NaN there stays out); exact with integer-valued x.
    from ascend_linalg.sparse import spmv
    vd, xd = pair
    S = awkward(rng, 90, 70, vd)
    x = operand(rng, 90 if trans else 70, xd, (2, "F"), True)
    exact = product(S, x, trans)
    y0 = operand(rng, exact.shape[0], xd, (2, "C"), True)
    y = y0.copy()
    with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
        out = spmv(csr_matrix(S), x, alpha=2, beta=-1, y=y, trans=trans)
        nan = np.full_like(y0, np.nan)
        fresh = spmv(csr_matrix(S), x, y=nan, trans=trans)
    assert out is y and fresh is nan and rec == [("spmv", "cpu", None)] * 2
    np.testing.assert_array_equal(y, 2 * exact - y0)
    np.testing.assert_array_equal(nan, exact)


def test_host_names_exactly_the_widened_pairs():
    """``_core.spmv_reads_widened`` (the host's ``spmvWidenedValues``, which the
    Python layer asks): the seven pairs with int32 indices, float16/bfloat16
    under float32 with either index width, and nothing else."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kinds = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", ml_dtypes.bfloat16, "float32", "float64",
             "complex64", "complex128"]
    for v in kinds:
        for c in kinds:
            for index in ("int32", "int64"):
                got = _core.spmv_reads_widened(np.dtype(v), np.dtype(c), np.dtype(index))
                half = np.dtype(v) in (np.dtype("float16"), np.dtype(ml_dtypes.bfloat16)) and np.dtype(c) == np.float32
                want = half or (index == "int32" and (str(np.dtype(v)), str(np.dtype(c))) in PAIRS)
                assert got is want, (v, c, index)
