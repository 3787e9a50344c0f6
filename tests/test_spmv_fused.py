"""ascend_linalg.sparse.spmv: fused y = alpha*op(A)@x + beta*y (the NPU
operator's semantics), against a float64/complex128 reference on both backends."""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg.sparse import csc_matrix, csr_array, spmv
from ascend_linalg.testing import dispatch_records, kernel_device

BACKENDS = [kernel_device(), "scipy"]


def matrix(rng, m, n, dtype, density=0.3):
    S = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    if np.dtype(dtype).kind == "c":
        S = S + 1j * sp.random(m, n, density=density, format="csr", random_state=rng)
    return csr_array(S.astype(dtype))


def reference(A, x, alpha, beta, y0, trans):
    D = A.toarray().astype(np.complex128)
    op = D.T if trans else D
    out = alpha * (op @ x.astype(np.complex128))
    if beta != 0:
        out = out + beta * y0.astype(np.complex128)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("alpha,beta", [(1, 0), (2.5, 0), (1, 1), (-0.5, 2), (0, 3)])
@pytest.mark.parametrize("nvec", [None, 3])
def test_fused_matches_reference(backend, dtype, trans, alpha, beta, nvec):
    rng = np.random.default_rng(7)
    A = matrix(rng, 37, 23, dtype)
    rows, cols = (23, 37) if trans else (37, 23)
    xs = (cols,) if nvec is None else (cols, nvec)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal((rows,) + xs[1:]).astype(dtype)
    y0 = y.copy()
    want = reference(A, x, alpha, beta, y0, trans)
    with ascend_linalg.use_backend(backend), dispatch_records() as recs:
        got = spmv(A, x, alpha=alpha, beta=beta, y=y, trans=trans)
    assert got is y and got.dtype == np.dtype(dtype)
    tol = 1e-4 if np.dtype(dtype).itemsize <= 8 and np.dtype(dtype) != np.float64 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    assert recs[-1] == ("spmv", backend, None)
    if backend != "scipy":
        assert len(recs) == 1  # one fused kernel call, no separate product


# One sequence of calls, so that a memoised compute dtype from an earlier
# (alpha, beta) could leak into a later one: every scalar kind numpy's
# min_scalar_type tells apart, in both positions.
SCALARS = [1, 0, 2, 255, 256, -1, 70000, 2 ** 40, 1.5, 1e5, 1e40, float("inf"), 1j, 1 + 2j,
           True, np.float32(2), np.float64(1), np.int64(3), np.complex64(1j), np.uint8(7)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32, np.int64])
def test_compute_dtype_widens_for_alpha_and_beta(dtype):
    rng = np.random.default_rng(5)
    A = csr_array(sp.random(9, 7, density=0.5, format="csr", random_state=rng, dtype=np.float64).astype(dtype))
    x = np.arange(1, 8).astype(dtype)
    base = np.dtype(np.result_type(A.dtype, x.dtype))
    for alpha in SCALARS:
        for beta in (0, SCALARS[len(str(alpha)) % len(SCALARS)]):
            want = np.result_type(base, np.min_scalar_type(alpha), np.min_scalar_type(beta))
            y = np.ones(9, dtype=want)
            with ascend_linalg.use_backend(kernel_device()):
                got = spmv(A, x, alpha=alpha, beta=beta, y=None if beta == 0 else y.copy())
            assert got.dtype == want, (alpha, beta)
            with np.errstate(invalid="ignore"):  # inf * 0
                ref = want.type(alpha) * (A.toarray().astype(want) @ x.astype(want)) + want.type(beta) * y
            np.testing.assert_allclose(got, ref, rtol=1e-5 if want.itemsize <= 8 else 1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_beta_zero_never_reads_y(backend):
    A = csr_array(np.array([[1.0, 2.0], [0.0, 3.0]]))
    y = np.full(2, np.nan)
    with ascend_linalg.use_backend(backend):
        spmv(A, np.ones(2), alpha=2.0, beta=0.0, y=y)
    np.testing.assert_array_equal(y, [6.0, 6.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_new_output_and_csc_and_other_formats(backend):
    rng = np.random.default_rng(1)
    D = rng.standard_normal((6, 4)) * (rng.random((6, 4)) < 0.5)
    x4, x6 = rng.standard_normal(4), rng.standard_normal(6)
    with ascend_linalg.use_backend(backend):
        for A in (csr_array(D), csc_matrix(D), sp.coo_array(D), sp.csc_array(D)):
            np.testing.assert_allclose(spmv(A, x4, alpha=3.0), 3.0 * D @ x4)
            np.testing.assert_allclose(spmv(A, x6, trans=True), D.T @ x6)


def test_strided_and_reversed_y_written_in_place():
    A = csr_array(np.arange(12.0).reshape(4, 3))
    x = np.array([1.0, -1.0, 2.0])
    base = np.ones(8)
    y = base[::-2]  # negative stride view of 4 elements
    want = 2 * (A.toarray() @ x) + 0.5 * y
    with ascend_linalg.use_backend("cpu"):
        out = spmv(A, x, alpha=2.0, beta=0.5, y=y)
    assert out is y
    np.testing.assert_allclose(y, want)
    np.testing.assert_allclose(base[::-2], want)


def _unaligned(a):
    """A copy of a whose data starts one byte past an aligned address."""
    buf = np.frombuffer(bytearray(a.nbytes + 1), dtype=a.dtype, offset=1, count=a.size).reshape(a.shape)
    assert not buf.flags.aligned
    buf[...] = a
    return buf


@pytest.mark.parametrize("which", ["y", "x", "data", "indices", "all"])
@pytest.mark.parametrize("trans", [False, True])
def test_unaligned_arrays(which, trans):
    """The kernels read through typed pointers: an unaligned array (any of
    them) is read from an aligned copy, an unaligned y written through one
    and copied back; the caller's arrays are otherwise untouched."""
    rng = np.random.default_rng(5)
    S = matrix(rng, 9, 7, np.float64)
    x = rng.standard_normal(9 if trans else 7)
    y0 = rng.standard_normal(7 if trans else 9)
    want = reference(S, x, 2.0, 0.5, y0, trans)
    data, indices, indptr = S.data, S.indices, S.indptr
    if which in ("data", "all"):
        data = _unaligned(data)
    if which in ("indices", "all"):
        indices = _unaligned(indices)
    if which in ("x", "all"):
        x = _unaligned(x)
    y = _unaligned(y0) if which in ("y", "all") else y0.copy()
    A = csr_array(S, copy=True)
    A.data, A.indices = data, indices  # the constructor would copy them
    assert A.data is data and A.indices is indices
    before = [a.copy() for a in (data, indices, x)]
    with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
        out = spmv(A, x, alpha=2.0, beta=0.5, y=y, trans=trans)
        plain = (A.T if trans else A) @ x
    assert out is y
    np.testing.assert_allclose(y, want.real, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(plain, reference(S, x, 1.0, 0, None, trans).real, rtol=1e-12, atol=1e-12)
    assert [r[1] for r in recs] == ["cpu", "cpu"], recs
    for a, b in zip((data, indices, x), before):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("which", ["x", "y", "data", "indices", "indptr", "alpha"])
def test_core_refuses_unaligned_arrays(which):
    """_core.spmv itself raises for an unaligned array rather than read it."""
    from ascend_linalg import _core
    rng = np.random.default_rng(6)
    S = matrix(rng, 5, 4, np.float64)
    args = {"alpha": np.ones(1), "indptr": S.indptr, "indices": S.indices, "data": S.data,
            "x": rng.standard_normal(4), "beta": np.zeros(1), "y": np.zeros(5)}
    args[which] = _unaligned(args[which])
    with pytest.raises(ValueError, match="aligned"):
        _core.spmv("cpu", False, args["alpha"], args["indptr"], args["indices"], args["data"], 5, 4,
                   args["x"], args["beta"], args["y"])


def test_y_with_odd_stride_on_a_length_one_axis():
    # numpy calls such a y C-contiguous (length-1 axes' strides are ignored),
    # but the kernel takes strides in items: it is written through a copy
    from numpy.lib.stride_tricks import as_strided
    A = csr_array(np.arange(15.0).reshape(5, 3))
    base = np.full(5, np.nan)
    y = as_strided(base, shape=(5, 1), strides=(8, 3))
    assert y.flags.c_contiguous
    with ascend_linalg.use_backend(kernel_device()):
        got = spmv(A, np.ones((3, 1)), y=y)
    assert got is y
    np.testing.assert_array_equal(base, A.toarray().sum(axis=1))


def _square(rng, n, per_row, dtype):
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, n, n * per_row)
    return sp.csr_matrix((rng.standard_normal(n * per_row), (rows, cols)), shape=(n, n)).astype(dtype)


# y sharing memory with x or with A's arrays: the kernels write y while other
# threads still read x and A, so such a y is written through a copy (as
# numpy's out= buffers overlap) and the result is the product of the inputs as
# they were when the call began. 20000 rows of 10 nonzeros: several blocks on
# two threads; one thread: the transposed kernel's single block scatters
# straight into y.
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("beta", [0, 1.5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_y_sharing_memory_with_x(threads, nthreads, trans, beta, dtype):
    rng = np.random.default_rng(11)
    S = _square(rng, 20000, 10, dtype)
    A = csr_array(S)
    threads(nthreads)
    x = rng.standard_normal(20000).astype(dtype)
    want = (2.0 * ((S.T if trans else S).astype(np.float64) @ x.astype(np.float64))
            + beta * x.astype(np.float64))
    with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
        got = spmv(A, x, alpha=2.0, beta=beta, y=x, trans=trans)
    assert got is x and recs[-1] == ("spmv", "cpu", None)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    # overlapping by all but one element
    buf = rng.standard_normal(20001).astype(dtype)
    x, y = buf[:-1], buf[1:]
    want = (S.T if trans else S).astype(np.float64) @ x.astype(np.float64)
    with ascend_linalg.use_backend("cpu"):
        assert spmv(A, x, y=y, trans=trans) is y
    np.testing.assert_allclose(y, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("trans", [False, True])
def test_y_sharing_memory_with_the_matrix(threads, trans):
    # one thread: one block, which writes y as it goes (or, transposed,
    # zeroes it first); y over the last values would change them before
    # they are read
    threads(1)
    rng = np.random.default_rng(12)
    S = _square(rng, 3000, 10, np.float64)
    A = csr_array(S)
    x = rng.standard_normal(3000)
    want = (S.T if trans else S) @ x
    y = A.data[-3000:]  # y is part of A's values
    with ascend_linalg.use_backend("cpu"):
        assert spmv(A, x, y=y, trans=trans) is y
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("trans", [False, True])
def test_half_values_with_y_sharing_memory_with_the_matrix(threads, trans):
    # the float16/bfloat16 values are read by the kernel as they are stored:
    # a float32 y over their first bytes is written through a copy too
    import ml_dtypes
    threads(1)
    rng = np.random.default_rng(13)
    S = _square(rng, 20000, 10, np.float64)
    store = np.zeros(2 * S.nnz, dtype=np.uint8)
    data = store.view(ml_dtypes.bfloat16)
    data[:] = S.data
    y = store[-4 * 20000:].view(np.float32)
    x = rng.standard_normal(20000).astype(ml_dtypes.bfloat16)
    B = sp.csr_matrix((data.astype(np.float64), S.indices, S.indptr), shape=S.shape)
    want = (B.T if trans else B) @ x.astype(np.float64)
    with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
        got = spmv((data, S.indices, S.indptr), x, y=y, shape=S.shape, trans=trans)
    assert got is y and recs[-1] == ("spmv", "cpu", None)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_dtype_without_kernel_falls_back_with_reason():
    A = csr_array(np.array([[1, 0], [1, 1]], dtype=np.int8))
    with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
        y = spmv(A, np.array([3, 4], dtype=np.int8), alpha=2)
    np.testing.assert_array_equal(y, [6, 14])
    assert recs[-1][1] == "scipy" and "no cpu kernel" in recs[-1][2]


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(y=np.zeros(3)), ValueError, "y must have shape"),
    (dict(y=np.zeros(2, dtype=np.float32)), TypeError, "compute dtype"),
    (dict(y=[0.0, 0.0]), TypeError, "y must be an ndarray"),
    (dict(alpha="2"), TypeError, "alpha must be a number"),
    (dict(beta=None), TypeError, "beta must be a number"),
])
def test_bad_arguments(kwargs, exc, words):
    A = csr_array(np.eye(2))
    with pytest.raises(exc, match=words):
        spmv(A, np.ones(2), **kwargs)


def test_bad_shapes_and_inputs():
    A = csr_array(np.eye(2, 3))
    with pytest.raises(ValueError, match="dimension mismatch"):
        spmv(A, np.ones(2))
    with pytest.raises(ValueError, match="dimension mismatch"):
        spmv(A, np.ones(3), trans=True)
    with pytest.raises(TypeError, match="sparse"):
        spmv(np.eye(2), np.ones(2))
    y = np.zeros(2)
    y.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        spmv(A, np.ones(3), y=y)


def test_malformed_structure_raises_and_leaves_y_partially_defined_only():
    A = csr_array(np.eye(3))
    A.indices[1] = 7
    y = np.zeros(3)
    with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed"):
        spmv(A, np.ones(3), y=y)
