"""The one-step binding behind ``A @ x`` on the CPU device (``_core.spmv_fast``).

Every case runs twice, once with the binding and once with it switched off
(the general path in ``_matvec.matvec``): both must give the same outcome
(result bits, dtype, shape and type, or the same exception and message), the
same dispatch record, and leave the operands unchanged; the binding must take
exactly the cases it is meant to take (1-D, matching native dtypes,
contiguous, aligned) and hand every other back. Results are also checked
against scipy's own product.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg import _core
from ascend_linalg.testing import dispatch_records

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


class _Sub(np.ndarray):
    pass


def _matrix(rng, m, n, dtype=np.float64, density=0.3, kind=asp.csr_matrix):
    S = sp.random(m, n, density=density, format="csr", random_state=rng)
    if np.dtype(dtype).kind == "c":
        S.data = S.data + 1j * rng.standard_normal(S.nnz)
    elif np.dtype(dtype).kind in "iu":
        S.data = rng.integers(-5, 6, S.nnz).astype(np.float64)
    return kind(S.astype(dtype))


def _unaligned(x):
    buf = np.frombuffer(bytearray(x.nbytes + 1), dtype=x.dtype, offset=1, count=x.size)
    assert not buf.flags.aligned
    buf[...] = x
    return buf


def _cases():
    """(label, build(rng) -> (A, x), fast)."""
    def plain(dtype, kind=asp.csr_matrix, m=7, n=11):
        def build(rng):
            A = _matrix(rng, m, n, dtype, kind=kind)
            return A, (rng.standard_normal(A.shape[-1]) * 3).astype(dtype)
        return build

    def one_d(rng):  # a 1-D csr_array: its 1 x n CSR form, the result a scalar
        v = rng.standard_normal(9) * (rng.random(9) < 0.6)
        return asp.csr_array(v), rng.standard_normal(9)

    def with_x(fn, dtype=np.float64):
        def build(rng):
            A = _matrix(rng, 7, 11, dtype)
            return A, fn(rng.standard_normal(11))
        return build

    def with_arrays(fn):
        def build(rng):
            A = _matrix(rng, 9, 13)
            fn(A)
            return A, rng.standard_normal(13)
        return build

    def int64_indices(A):
        A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)

    def mixed_indices(A):
        A.indices = A.indices.astype(np.int64)

    def strided_data(A):
        big = np.zeros(2 * A.nnz)
        big[::2] = A.data
        A.data = big[::2]

    def unaligned_data(A):
        A.data = _unaligned(A.data)

    def unaligned_indices(A):
        A.indices = _unaligned(A.indices)

    def bad_index(A):
        A.indices[-1] = A.shape[1]

    def bad_indptr(A):
        A.indptr[3] = A.indptr[-1] + 5

    def short_indptr(A):
        A.indptr = A.indptr[:-1].copy()

    return [
        ("float64", plain(np.float64), True),
        ("float32", plain(np.float32), True),
        ("complex64", plain(np.complex64), True),
        ("complex128", plain(np.complex128), True),
        ("int32", plain(np.int32), True),
        ("int64", plain(np.int64), True),
        ("csc float64 (transposed kernel)", plain(np.float64, asp.csc_matrix), True),
        ("csr_array", plain(np.float32, asp.csr_array), True),
        ("csc_array complex128", plain(np.complex128, asp.csc_array), True),
        ("1-D csr_array", one_d, True),
        ("0 x 5", plain(np.float64, m=0, n=5), True),
        ("5 x 0", plain(np.float64, m=5, n=0), True),
        ("1 x 1", plain(np.float64, m=1, n=1), True),
        ("int64 indices", with_arrays(int64_indices), True),
        ("bad index", with_arrays(bad_index), True),
        ("bad indptr", with_arrays(bad_indptr), True),
        ("inf and nan in x", with_x(lambda x: np.where(np.arange(11) % 3 == 0, np.inf, x) * np.where(
            np.arange(11) == 4, np.nan, 1.0)), True),
        ("indptr one short", with_arrays(short_indptr), False),
        ("int32 indptr, int64 indices", with_arrays(mixed_indices), False),
        ("strided data", with_arrays(strided_data), False),
        ("float32 matrix, float64 x", with_x(lambda x: x, np.float32), False),
        ("float64 matrix, float32 x", with_x(lambda x: x.astype(np.float32)), False),
        ("int32 matrix, float64 x", with_x(lambda x: x, np.int32), False),
        ("bool matrix", plain(np.bool_), False),
        ("strided x", with_x(lambda x: np.repeat(x, 2)[::2]), False),
        ("reversed x", with_x(lambda x: x[::-1]), False),
        ("big-endian x", with_x(lambda x: x.astype(">f8")), False),
        ("unaligned x", with_x(_unaligned), False),
        ("ndarray subclass x", with_x(lambda x: x.view(_Sub)), False),
        ("unaligned data", with_arrays(unaligned_data), False),
        ("unaligned indices", with_arrays(unaligned_indices), False),
    ]


CASES = _cases()


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 (compared between the two paths)
        return "raised", exc


@pytest.mark.parametrize("label,build,fast", CASES, ids=[c[0] for c in CASES])
def test_fast_binding_matches_general_path(monkeypatch, label, build, fast):
    real = _core.spmv_fast
    runs = {}
    for path in ("fast", "general"):
        A, x = build(np.random.default_rng(len(label)))  # the same operands for both paths
        arrays = [A.data, A.indices, A.indptr, x]
        before = [a.copy() for a in arrays]
        taken = []

        def spy(*args, **kwargs):
            try:
                out = real(*args, **kwargs)
            except Exception:
                taken.append(True)  # it took the call: a malformed matrix raises from the kernel
                raise
            taken.append(out is not None)
            return out
        monkeypatch.setattr(_core, "spmv_fast", spy if path == "fast" else (lambda *a, **k: None))
        with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
            kind, value = _outcome(lambda: A @ x)
        for a, b in zip(arrays, before):
            assert np.array_equal(a, b, equal_nan=True) and a.dtype == b.dtype, (label, path)
        if path == "fast":
            # a case the binding must refuse may also never reach it (scipy's
            # own checks first, a dtype the kernels lack)
            assert taken == [True] if fast else not any(taken), (label, taken)
        runs[path] = (kind, value, recs, A, x)
    (k1, v1, r1, A, x), (k2, v2, r2, _, _) = runs["fast"], runs["general"]
    assert k1 == k2, (label, v1, v2)
    if k1 == "raised":
        assert type(v1) is type(v2) and str(v1) == str(v2), label
        assert isinstance(v1, ValueError), (label, v1)
        return
    assert r1 == r2, label
    assert type(v1) is type(v2) and v1.dtype == v2.dtype and np.shape(v1) == np.shape(v2), label
    assert np.array_equal(np.atleast_1d(v1).view(np.uint8), np.atleast_1d(v2).view(np.uint8)), label
    # and scipy's own product on the same arrays
    ref_cls = {asp.csr_matrix: sp.csr_matrix, asp.csc_matrix: sp.csc_matrix,
               asp.csr_array: sp.csr_array, asp.csc_array: sp.csc_array}[type(A)]
    ref = ref_cls((A.data, A.indices, A.indptr), shape=A.shape) @ np.asarray(x)
    assert v1.dtype == ref.dtype and v1.shape == ref.shape, label
    if v1.dtype.kind in "iu":
        assert np.array_equal(v1, ref), label
    else:
        single = v1.dtype in (np.float32, np.complex64)
        np.testing.assert_allclose(v1, ref, rtol=1e-5 if single else 1e-12, atol=1e-5 if single else 1e-12,
                                   equal_nan=True)


def test_fast_binding_taken_under_cpu_only(monkeypatch):
    """Under the scipy backend (and auto without an NPU) the binding is never asked."""
    calls = []
    monkeypatch.setattr(_core, "spmv_fast", lambda *a, **k: calls.append(1))
    A = _matrix(np.random.default_rng(0), 5, 6)
    for backend in ("scipy", "auto"):
        with ascend_linalg.use_backend(backend):
            if backend == "auto" and ascend_linalg.devices()[0]["usable"]:
                continue
            A @ np.ones(6)
    assert calls == []


def test_fast_binding_hands_back_bad_arguments():
    """Direct calls: anything outside the common case is None, not an error."""
    rng = np.random.default_rng(1)
    A = _matrix(rng, 6, 4)
    d, j, p = A.data, A.indices, A.indptr
    x = rng.standard_normal(4)
    ok = _core.spmv_fast(False, d, j, p, 6, 4, x)
    np.testing.assert_allclose(ok, sp.csr_matrix(A) @ x, rtol=1e-12, atol=1e-12)
    xt = rng.standard_normal(6)
    np.testing.assert_allclose(_core.spmv_fast(True, d, j, p, 6, 4, xt), sp.csr_matrix(A).T @ xt,
                               rtol=1e-12, atol=1e-12)
    for args in [
        (False, d, j, p, 6, 4, x[:3]),                    # x too short
        (False, d, j, p, 6, 4, np.ones(6)),               # x of op(A)^T's length
        (True, d, j, p, 6, 4, x),                         # transposed: x must have 6
        (False, d, j, p, 5, 4, x),                        # indptr is not rows + 1
        (False, d, j, p, -1, 4, x),                       # negative shape
        (False, d, j, p, 6, 4, x.reshape(2, 2)),          # 2-D x
        (False, d, j, p, 6, 4, list(x)),                  # not an ndarray
        (False, d.reshape(1, -1), j, p, 6, 4, x),         # 2-D data
        (False, d, j.astype(np.uint32), p.astype(np.uint32), 6, 4, x),  # unsigned indices
        (False, d.astype(np.float16), j, p, 6, 4, x.astype(np.float16)),  # no kernel dtype here
    ]:
        assert _core.spmv_fast(*args) is None, args


def _fused_cases():
    """(label, kwargs of spmv besides A and x, matrix dtype, x dtype, y maker, trans, fast)."""
    def full(dtype):
        return lambda rng, n: (rng.standard_normal(n) * 2).astype(dtype)
    nan = lambda rng, n: np.full(n, np.nan)  # noqa: E731
    f64, f32, c64, c128 = np.float64, np.float32, np.complex64, np.complex128
    return [
        ("defaults", {}, f64, f64, None, False, True),
        ("alpha beta y float64", dict(alpha=2.5, beta=0.5), f64, f64, full(f64), False, True),
        ("transposed", dict(alpha=-1.5, beta=2.0), f64, f64, full(f64), True, True),
        ("float32 small alpha", dict(alpha=3, beta=-2.0), f32, f32, full(f32), False, True),
        ("float32 nan alpha", dict(alpha=float("nan")), f32, f32, None, False, True),
        ("float32 inf beta, new y", dict(beta=float("inf")), f32, f32, None, False, True),
        ("float32 int alpha 65535", dict(alpha=65535), f32, f32, None, False, True),
        ("float32 int alpha 65536: float64", dict(alpha=65536), f32, f32, None, False, False),
        ("float32 int alpha -32769: float64", dict(alpha=-32769), f32, f32, None, False, False),
        ("float32 alpha 1e39: float64", dict(alpha=1e39), f32, f32, None, False, False),
        ("complex128 complex alpha", dict(alpha=1 - 2j, beta=0.5j), c128, c128, full(c128), True, True),
        ("complex64 real alpha", dict(alpha=2.0, beta=1), c64, c64, full(c64), False, True),
        ("complex64 complex alpha", dict(alpha=1j), c64, c64, None, False, False),
        ("float64 complex alpha: complex128", dict(alpha=1j), f64, f64, None, False, False),
        ("beta -0.0, NaN y never read", dict(alpha=2.0, beta=-0.0), f64, f64, nan, False, True),
        ("numpy scalar alpha", dict(alpha=np.float64(2.0)), f64, f64, None, False, False),
        ("bool alpha", dict(alpha=True), f64, f64, None, False, False),
        ("int alpha past int64", dict(alpha=2**63), f64, f64, None, False, False),
        ("int32 matrix", dict(alpha=2, beta=1), np.int32, np.int32, lambda rng, n: np.arange(n, dtype=np.int32),
         False, False),
        ("float32 y for float64", dict(alpha=2.0), f64, f64, full(f32), False, False),
        ("y too short", dict(alpha=2.0), f64, f64, lambda rng, n: np.ones(n - 1), False, False),
        ("strided y", dict(beta=1.0), f64, f64, lambda rng, n: np.ones(2 * n)[::2], False, False),
        ("read-only y", dict(beta=1.0), f64, f64, lambda rng, n: np.ones(n).view(), False, False),
        ("y is x", dict(alpha=2.0, beta=1.0), f64, f64, "x", False, False),
        ("list x", dict(alpha=2.0), f64, "list", None, False, False),
        ("x of the wrong length", dict(alpha=2.0), f64, "short", None, False, False),
    ]


FUSED_CASES = _fused_cases()


@pytest.mark.parametrize("label,kw,dtype,xdtype,ymaker,trans,fast", FUSED_CASES,
                         ids=[c[0] for c in FUSED_CASES])
def test_fast_binding_fused_spmv_matches_general_path(monkeypatch, label, kw, dtype, xdtype, ymaker, trans, fast):
    """spmv(A, x, alpha, beta, y, trans): the binding and the general path give the
    same outcome; the binding takes exactly the common calls."""
    real = _core.spmv_fast
    runs = {}
    for path in ("fast", "general"):
        rng = np.random.default_rng(len(label))
        A = _matrix(rng, 9, 9, dtype)  # square: y may be x
        n_in = A.shape[0] if trans else A.shape[1]
        n_out = A.shape[1] if trans else A.shape[0]
        x = (rng.standard_normal(n_in) * 3).astype(xdtype if xdtype not in ("list", "short") else np.float64)
        if xdtype == "list":
            x = list(x)
        elif xdtype == "short":
            x = x[:-1]
        y = x if ymaker == "x" else (ymaker(rng, n_out) if ymaker else None)
        if label == "read-only y":
            y.flags.writeable = False
        arrays = [A.data, A.indices, A.indptr]
        before = [a.copy() for a in arrays]
        taken = []

        def spy(*args, **kwargs):
            out = real(*args, **kwargs)
            taken.append(out is not None)
            return out
        monkeypatch.setattr(_core, "spmv_fast", spy if path == "fast" else (lambda *a, **k: None))
        with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
            kind, value = _outcome(lambda: asp.spmv(A, x, y=y, trans=trans, **kw))
        for a, b in zip(arrays, before):
            assert np.array_equal(a, b) and a.dtype == b.dtype, (label, path)
        if path == "fast":
            assert any(taken) == fast, (label, taken)
        if kind == "ok" and y is not None and ymaker != "x":
            assert value is y, label  # written into the caller's y
        runs[path] = (kind, value, recs)
    (k1, v1, r1), (k2, v2, r2) = runs["fast"], runs["general"]
    assert k1 == k2, (label, v1, v2)
    if k1 == "raised":
        assert type(v1) is type(v2) and str(v1) == str(v2), label
        return
    assert r1 == r2, label
    assert v1.dtype == v2.dtype and v1.shape == v2.shape, label
    b1, b2 = (np.ascontiguousarray(v).view(np.uint8) for v in (v1, v2))
    assert np.array_equal(b1, b2), label


def test_fast_binding_fused_malformed_matches_general_path(monkeypatch):
    real = _core.spmv_fast
    msgs = []
    for fn in (real, lambda *a, **k: None):
        A = _matrix(np.random.default_rng(3), 9, 13)
        A.indices[-1] = 13
        monkeypatch.setattr(_core, "spmv_fast", fn)
        with ascend_linalg.use_backend("cpu"), pytest.raises(ValueError, match="malformed") as exc:
            asp.spmv(A, np.ones(13), alpha=2.0, beta=1.0, y=np.zeros(9))
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1]


def _plain_cases():
    """(label, A kind, dtype, x maker, kwargs, taken): spmv on scipy (the
    scipy backend, auto without an NPU)."""
    f32, f64, c64, c128 = np.float32, np.float64, np.complex64, np.complex128
    special = lambda x: np.where(np.arange(len(x)) % 3 == 0, np.inf, np.where(np.arange(len(x)) % 5 == 1, np.nan, x))  # noqa: E731
    same = lambda x: x  # noqa: E731
    cases = []
    for dt in (f32, f64, c64, c128):
        for kind in (asp.csr_matrix, asp.csr_array, asp.csc_matrix, sp.csr_matrix):
            for trans in (False, True):
                cases.append((f"{np.dtype(dt).name} {kind.__module__.split('.')[0]}.{kind.__name__} trans={trans}",
                              kind, dt, same, dict(trans=trans), True))
        cases.append((f"{np.dtype(dt).name} Inf/NaN x", asp.csr_matrix, dt, special, {}, True))
        cases.append((f"{np.dtype(dt).name} Inf/NaN x transposed", asp.csr_matrix, dt, special, dict(trans=True), True))
    cases += [
        ("alpha 1.0 beta 0.0", asp.csr_matrix, f64, same, dict(alpha=1.0, beta=0.0), True),
        ("alpha 2", asp.csr_matrix, f64, same, dict(alpha=2), False),
        ("beta 0.5", asp.csr_matrix, f64, same, dict(beta=0.5), False),
        ("numpy alpha", asp.csr_matrix, f64, same, dict(alpha=np.float64(1)), False),
        ("complex alpha 1+0j", asp.csr_matrix, c128, special, dict(alpha=1 + 0j), False),
        ("y given", asp.csr_matrix, f64, same, dict(y="zeros"), False),
        ("float32 x, float64 A", asp.csr_matrix, f64, lambda x: x.astype(f32), {}, False),
        ("int32 matrix", asp.csr_matrix, np.int32, same, {}, False),
        ("2-D x", asp.csr_matrix, f64, lambda x: x.reshape(-1, 1), {}, False),
        ("list x", asp.csr_matrix, f64, list, {}, False),
        ("x too short", asp.csr_matrix, f64, lambda x: x[:-1], {}, False),
        ("bsr matrix", sp.bsr_matrix, f64, same, {}, False),
    ]
    return cases


PLAIN_CASES = _plain_cases()


@pytest.mark.parametrize("label,kind,dtype,xmaker,kw,taken", PLAIN_CASES, ids=[c[0] for c in PLAIN_CASES])
@pytest.mark.parametrize("backend", ["scipy", "auto"])
def test_plain_spmv_on_scipy_matches_general_path(monkeypatch, backend, label, kind, dtype, xmaker, kw, taken):
    """spmv(A, x) with alpha 1, beta 0 and no y, on scipy: the shortcut gives the
    general path's outcome (bits, dtype, record, errors), which is scipy's own
    product, and takes exactly those calls."""
    if backend == "auto" and ascend_linalg.devices()[0]["usable"]:
        pytest.skip("auto routes to the NPU here")
    from ascend_linalg.sparse import _spmv
    real = _spmv._compute_dtype
    runs = {}
    for path in ("shortcut", "general"):
        rng = np.random.default_rng(len(label))
        A = kind(_matrix(rng, 9, 13, dtype))
        trans = kw.get("trans", False)
        x = xmaker((rng.standard_normal(A.shape[0] if trans else A.shape[1]) * 3).astype(dtype))
        args = dict(kw)
        if args.get("y") == "zeros":
            args["y"] = np.zeros(A.shape[1] if trans else A.shape[0], dtype=dtype)
        general = []
        monkeypatch.setattr(_spmv, "_SCIPY_PLAIN", path == "shortcut")
        monkeypatch.setattr(_spmv, "_compute_dtype", lambda *a: general.append(1) or real(*a))
        with ascend_linalg.use_backend(backend), dispatch_records() as recs:
            kind_, value = _outcome(lambda: asp.spmv(A, x, **args))
        if path == "shortcut" and kind_ == "ok":  # (the general path checks x before the dtype)
            assert (not general) == taken, label
        runs[path] = (kind_, value, [r for r in recs if r[0] == "spmv"], A, x)
    (k1, v1, r1, A, x), (k2, v2, r2, _, _) = runs["shortcut"], runs["general"]
    assert k1 == k2, (label, v1, v2)
    if k1 == "raised":
        assert type(v1) is type(v2) and str(v1) == str(v2), label
        return
    assert r1 == r2 and r1 and r1[0][1] == "scipy", (label, r1, r2)
    assert type(v1) is type(v2) and v1.dtype == v2.dtype and v1.shape == v2.shape, label
    assert np.array_equal(np.ascontiguousarray(v1).view(np.uint8), np.ascontiguousarray(v2).view(np.uint8)), label
    if taken:  # scipy's own product, bit for bit
        S = sp.csr_matrix(A)
        ref = (S.T if kw.get("trans") else S) @ x
        assert v1.dtype == ref.dtype and np.array_equal(v1.view(np.uint8), ref.view(np.uint8)), label


def test_alpha_one_scales_nothing_on_every_backend():
    """alpha == 1 is no scaling on scipy as in the kernels: a complex Inf of
    op(A) x stays as scipy's product has it ((1+0j) * (inf+nanj) would be NaN)."""
    A = asp.csr_matrix(np.eye(3, dtype=np.complex128))
    x = np.array([np.inf + 0j, 1 - 2j, np.nan + 1j])
    ref = sp.csr_matrix(A) @ x
    for backend in ("scipy", "cpu"):
        for kw in ({}, dict(alpha=1.0, beta=0.0, y=np.full(3, np.nan + 0j)), dict(alpha=1 + 0j)):
            with ascend_linalg.use_backend(backend):
                out = asp.spmv(A, x, **kw)
            assert np.array_equal(out.view(np.uint8), ref.view(np.uint8)), (backend, kw, out, ref)
