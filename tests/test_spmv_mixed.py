"""The SpMV seed's mixed-precision modes of ``ascend_linalg.sparse.spmv``:
float16/bfloat16 values and x accumulated in float32 (y float32 or the input
type), int32 values computed in int32 or float32. Checked against a float64
reference on the kernel backend (dispatch log) and on the scipy backend."""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg.sparse import csr_matrix, spmv
from ascend_linalg.testing import dispatch_records

from _faults import FAULTS, broken

ml_dtypes = pytest.importorskip("ml_dtypes")
HALF = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
BACKENDS = ["cpu", "scipy"]


def _csr(rng, m, n, density=0.15):
    S = sp.random(m, n, density=density, random_state=int(rng.integers(1 << 30)), format="csr")
    S.data = rng.standard_normal(S.nnz)
    return S


def _ref(data, S, x, trans):
    """float64 product of the values as stored (half -> float64 is exact)."""
    A = sp.csr_matrix((data.astype(np.float64), S.indices, S.indptr), shape=S.shape)
    return (A.T if trans else A) @ x.astype(np.float64)


def _bound(data, S, x, trans, scale=1.0):
    A = sp.csr_matrix((np.abs(data.astype(np.float64)), S.indices, S.indptr), shape=S.shape)
    return 4e-7 * scale * ((A.T if trans else A) @ np.abs(x.astype(np.float64))) + 1e-30


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("nvec", [None, 3])
@pytest.mark.parametrize("half", list(HALF))
def test_half_values_accumulate_in_float32(backend, trans, nvec, half, rng):
    hd = HALF[half]
    S = _csr(rng, 61, 37)
    data = S.data.astype(hd)
    xlen = S.shape[0] if trans else S.shape[1]
    x = rng.standard_normal((xlen,) if nvec is None else (xlen, nvec)).astype(hd)
    with ascend_linalg.use_backend(backend), dispatch_records() as rec:
        y = spmv((data, S.indices, S.indptr), x, shape=S.shape, trans=trans)
    assert y.dtype == np.float32
    assert rec[-1] == ("spmv", backend, None)
    if backend == "cpu":
        assert len(rec) == 1  # the fused kernel, nothing else
    ref = _ref(data, S, x, trans)
    # float32 accumulation of exact products: within a few float32 ulps of the sum of |terms|
    assert np.all(np.abs(y - ref) <= _bound(data, S, x, trans, 8))
    # and better than accumulating in the half type itself would be
    assert np.abs(y - ref).max() < np.abs(ref).max() * 1e-5


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("half", list(HALF))
def test_half_output_rounds_once(backend, half, rng):
    hd = HALF[half]
    S = _csr(rng, 80, 50)
    data = S.data.astype(hd)
    x = rng.standard_normal(50).astype(hd)
    y0 = rng.standard_normal(80).astype(hd)
    alpha, beta = 1.5, -0.25
    y = y0.copy()
    with ascend_linalg.use_backend(backend):
        out = spmv((data, S.indices, S.indptr), x, alpha=alpha, beta=beta, y=y, shape=S.shape)
    assert out is y and y.dtype == hd
    exact = alpha * _ref(data, S, x, False) + beta * y0.astype(np.float64)
    # One rounding to the half type (at most half an ulp of it) after a float32 result.
    eps = float(ml_dtypes.finfo(hd).eps)
    ulp = eps * np.exp2(np.floor(np.log2(np.maximum(np.abs(exact), 1e-30))))
    assert np.all(np.abs(y.astype(np.float64) - exact) <= 0.5 * ulp + _bound(data, S, x, False, 16))
    fresh = spmv((data, S.indices, S.indptr), x, alpha=alpha, shape=S.shape, out_dtype=hd)
    assert fresh.dtype == hd


@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("half", list(HALF))
def test_every_half_value_widens_exactly(half, trans, index):
    # The CPU kernels read the 16-bit values as they are stored and widen each
    # as it is read: every one of the 65536 bit patterns, on the diagonal, times
    # one must come out as numpy / ml_dtypes convert it (NaN as NaN).
    hd = HALF[half]
    data = np.arange(1 << 16, dtype=np.uint16).view(hd)
    n = data.size
    ar = np.arange(n + 1, dtype=index)
    with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
        y = spmv((data, ar[:-1], ar), np.ones(n, dtype=hd), shape=(n, n), trans=trans)
    assert rec == [("spmv", "cpu", None)]
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        expect = np.float32(0) + data.astype(np.float32)  # the kernel's sum: +0 + v * 1
    nan = np.isnan(expect)
    np.testing.assert_array_equal(np.isnan(y), nan)
    np.testing.assert_array_equal(y[~nan].view(np.uint32), expect[~nan].view(np.uint32))


@pytest.mark.parametrize("half", list(HALF))
def test_baseline_build_widens_every_half_value_exactly(half):
    # The build for CPUs without AVX2/F16C widens float16 in integer arithmetic;
    # this machine runs the AVX2 one, so its baseline dot product is called here.
    from ascend_linalg import _core
    bits = np.arange(1 << 16, dtype=np.uint16)
    got = _core.spmv_widen_baseline(bits, half)
    with np.errstate(invalid="ignore"):
        expect = np.float32(0) + bits.view(HALF[half]).astype(np.float32)
    nan = np.isnan(expect)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), expect[~nan].view(np.uint32))


def _rows_of(rng, lengths, n, index):
    """CSR structure with the given row lengths, sorted distinct columns."""
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index)
    indices = np.concatenate([np.sort(rng.choice(n, k, replace=False)) for k in lengths] or [[]]).astype(index)
    return indices, indptr


@pytest.mark.parametrize("size", ["small", "streaming"])
@pytest.mark.parametrize("nvec", [None, 2])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("half", list(HALF))
def test_half_values_in_every_row_shape(half, trans, index, nvec, size, rng):
    # Empty rows, short rows, rows past the long-row threshold and one full
    # row; "streaming" has blocks of more than 2^16 nonzeros (the prefetching
    # loops). alpha/beta general, y float32 updated in place.
    hd = HALF[half]
    m, n = (300, 257) if size == "small" else (3000, 400)
    lengths = rng.integers(0, 6, m) if size == "small" else rng.integers(30, 90, m)
    lengths[::7] = 0
    lengths[5] = n
    lengths[100:110] = 40
    indices, indptr = _rows_of(rng, lengths, n, index)
    S = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(m, n))
    data = rng.standard_normal(indices.size).astype(hd)
    xlen, ylen = (m, n) if trans else (n, m)
    xshape = (xlen,) if nvec is None else (xlen, nvec)
    x = rng.standard_normal(xshape).astype(hd)
    y0 = rng.standard_normal((ylen,) + xshape[1:]).astype(np.float32)
    y = y0.copy()
    alpha, beta = 1.5, -0.5
    with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
        out = spmv((data, indices, indptr), x, alpha=alpha, beta=beta, y=y, shape=(m, n), trans=trans)
    assert out is y and rec == [("spmv", "cpu", None)]
    exact = alpha * _ref(data, S, x, trans) + beta * y0.astype(np.float64)
    assert np.all(np.abs(y - exact) <= alpha * _bound(data, S, x, trans, 8) + 4e-7 * np.abs(exact))


@pytest.mark.parametrize("half", list(HALF))
def test_half_values_are_not_copied(half):
    # A float32 copy of the values (what the other backends make) would be
    # 4 MiB here; the CPU device reads the 2-byte values in place.
    import tracemalloc
    hd = HALF[half]
    nnz, m, n = 1 << 20, 1 << 12, 64
    data = np.ones(nnz, dtype=hd)
    indices = (np.arange(nnz) % n).astype(np.int32)
    indptr = np.arange(0, nnz + 1, nnz // m, dtype=np.int32)
    x = np.ones(n, dtype=hd)
    with ascend_linalg.use_backend("cpu"):
        spmv((data, indices, indptr), x, shape=(m, n))
        tracemalloc.start()
        try:
            y = spmv((data, indices, indptr), x, shape=(m, n))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    np.testing.assert_array_equal(y, np.full(m, nnz // m, dtype=np.float32))
    assert peak < nnz  # bytes: y and small arrays only


def test_half_values_in_foreign_byte_order_are_refused(rng):
    # The kernels read the 2-byte values as they lie: only native order is a
    # float16 mode (big-endian ">f2" data is not read as if it were).
    S = _csr(rng, 50, 40)
    x = rng.standard_normal(40).astype(np.float16)
    with ascend_linalg.use_backend("cpu"), pytest.raises(TypeError, match=">f2"):
        spmv((S.data.astype(">f2"), S.indices, S.indptr), x, shape=S.shape)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("trans", [False, True])
def test_half_values_malformed_structure_raises(fault, trans, rng):
    S = _csr(rng, 40, 30)
    indices, indptr = broken(S.indices, S.indptr, fault, 30)
    data = S.data.astype(np.float16)
    x = rng.standard_normal(40 if trans else 30).astype(np.float16)
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed|index"):
        spmv((data, indices, indptr), x, shape=S.shape, trans=trans)


@pytest.mark.parametrize("half", list(HALF))
def test_half_beta_zero_never_reads_y(half, rng):
    hd = HALF[half]
    S = _csr(rng, 30, 20)
    data = S.data.astype(hd)
    x = rng.standard_normal(20).astype(hd)
    for y in (np.full(30, np.nan, dtype=np.float32), np.full(30, np.nan, dtype=hd)):
        with ascend_linalg.use_backend("cpu"):
            spmv((data, S.indices, S.indptr), x, y=y, shape=S.shape)
        assert np.isfinite(y.astype(np.float64)).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("trans", [False, True])
def test_int32_compute_modes(backend, trans, rng):
    S = _csr(rng, 40, 30)
    S.data = rng.integers(-2 ** 30, 2 ** 30, S.nnz)
    A = csr_matrix(S.astype(np.int32))
    x = rng.integers(-1000, 1000, S.shape[0] if trans else S.shape[1]).astype(np.int32)
    with ascend_linalg.use_backend(backend), dispatch_records() as rec:
        yi = spmv(A, x, trans=trans)
        yf = spmv(A, x, trans=trans, compute_dtype=np.float32)
    assert [r for r in rec if r[0] == "spmv"] == [("spmv", backend, None)] * 2
    # int32 compute: scipy's own (wrapping) integer product
    expect = (S.astype(np.int32).T if trans else S.astype(np.int32)) @ x
    assert yi.dtype == np.int32
    np.testing.assert_array_equal(yi, expect)
    # float32 compute: values converted to float32 as read, summed in float32
    data32 = A.data.astype(np.float32)
    ref = _ref(data32, S, x.astype(np.float32), trans)
    assert yf.dtype == np.float32
    assert np.all(np.abs(yf - ref) <= _bound(data32, S, x.astype(np.float32), trans, 8))


@pytest.mark.parametrize("call, err", [
    (lambda d, S, x: spmv((d, S.indices, S.indptr), x), "needs shape"),
    (lambda d, S, x: spmv((d, S.indices), x, shape=S.shape), "data, indices, indptr"),
    (lambda d, S, x: spmv((d, S.indices, S.indptr), x.astype(np.float32), shape=S.shape), "one dtype"),
    (lambda d, S, x: spmv((d, S.indices, S.indptr), x, shape=S.shape, compute_dtype=np.float64), "accumulates in float32"),
    (lambda d, S, x: spmv((d, S.indices, S.indptr), x, shape=S.shape, out_dtype=np.float64), "y may be"),
    (lambda d, S, x: spmv((d, S.indices, S.indptr), x, shape=S.shape, y=np.zeros(S.shape[0])), "y may be"),
    (lambda d, S, x: spmv((d, S.indices, S.indptr), x, shape=S.shape, alpha=1j), "does not fit"),
    (lambda d, S, x: spmv((d, S.indices, S.indptr), x[:-1], shape=S.shape), "dimension mismatch"),
    (lambda d, S, x: spmv(csr_matrix(S), x.astype(np.float64), out_dtype=np.float32), "out_dtype is only"),
    (lambda d, S, x: spmv(csr_matrix(S), x.astype(np.float64), compute_dtype=np.float32), "compute_dtype=float32 is supported"),
    (lambda d, S, x: spmv(csr_matrix(S.astype(np.int32)), x.astype(np.int32), compute_dtype=np.int32, alpha=0.5), "does not fit"),
])
def test_bad_mixed_requests_raise(call, err, rng):
    S = _csr(rng, 12, 9)
    d = S.data.astype(np.float16)
    x = rng.standard_normal(9).astype(np.float16)
    with ascend_linalg.use_backend("cpu"), pytest.raises((TypeError, ValueError), match=err):
        call(d, S, x)


def test_raw_arrays_of_a_scipy_dtype_run_as_csr(rng):
    S = _csr(rng, 25, 14)
    x = rng.standard_normal(14)
    with ascend_linalg.use_backend("cpu"), dispatch_records() as rec:
        y = spmv((S.data, S.indices, S.indptr), x, shape=S.shape, alpha=2.0)
    assert rec == [("spmv", "cpu", None)]
    np.testing.assert_allclose(y, 2.0 * (S @ x), rtol=1e-12, atol=1e-12)


def test_float16_widening_of_x_is_exact():
    # x (and y when beta != 0) in float16 are widened by the host layer
    # (F16C where the CPU has it), not by numpy: every bit pattern, odd
    # lengths (the scalar tail after groups of eight), 2-D shapes.
    from ascend_linalg import _core
    bits = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        expect = bits.view(np.float16).astype(np.float32)
    for n in (0, 1, 7, 8, 9, 13, 1 << 16):
        got = _core.widen_f16(bits[-n:] if n else bits[:0])
        want = expect[-n:] if n else expect[:0]
        assert got.dtype == np.float32 and got.shape == (n,)
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    two = _core.widen_f16(bits[:21].reshape(7, 3))
    assert two.shape == (7, 3)
    np.testing.assert_array_equal(two.view(np.uint32), expect[:21].reshape(7, 3).view(np.uint32))
    # a strided view is copied first (pybind11), never read as if contiguous
    np.testing.assert_array_equal(_core.widen_f16(bits[:4000:3]).view(np.uint32), expect[:4000:3].view(np.uint32))


@pytest.mark.parametrize("layout", ["contiguous", "strided", "2d-F"])
def test_float16_x_any_layout_through_spmv(layout, rng, monkeypatch):
    # contiguous x goes through _core.widen_f16; other layouts through numpy;
    # same result either way, and y (beta != 0) is widened the same way
    from ascend_linalg.sparse import _spmv as mod
    calls = []
    real = mod._core.widen_f16
    monkeypatch.setattr(mod._core, "widen_f16", lambda b: calls.append(b.shape) or real(b))
    S = _csr(rng, 40, 31)
    data = S.data.astype(np.float16)
    base = rng.standard_normal((62, 3)).astype(np.float16)
    x = {"contiguous": base[:31, 0].copy(), "strided": base[::2, 0], "2d-F": np.asfortranarray(base[:31, :2])}[layout]
    y0 = rng.standard_normal((40,) + x.shape[1:]).astype(np.float16)
    with ascend_linalg.use_backend("cpu"):
        y = spmv((data, S.indices, S.indptr), x, beta=0.5, y=y0.copy(), shape=S.shape)
    ref = (sp.csr_matrix((data.astype(np.float64), S.indices, S.indptr), shape=S.shape) @ x.astype(np.float64)
           + 0.5 * y0.astype(np.float64))
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=4e-3, atol=4e-3)
    assert (x.shape in calls) == (layout == "contiguous")
    assert y0.shape in calls  # y0.copy() is C-contiguous
