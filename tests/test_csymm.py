"""``ascend_linalg.linalg.blas.csymm`` against ``scipy.linalg.blas.csymm``.

Every body runs under both backends (fixture ``backend`` in conftest.py): under
``scipy`` the routed function must be scipy's wrapper exactly; under ``cpu`` the
project's own kernel must run (checked through the dispatch log) and agree with
scipy within the design tolerance, per real and imaginary component:

    |ours - scipy| <= 2**-16 + 2**-10 * |scipy|  (+ the k * eps * |alpha||A||B| bound
                                                  of a length-k complex64 dot product)
"""
import numpy as np
import pytest
import scipy.linalg.blas as scipy_blas
from scipy.linalg import _fblas

from ascend_linalg.linalg import blas

FblasError = getattr(_fblas, "__fblas_error", None) or _fblas.error
C64 = np.complex64
EPS32 = float(np.finfo(np.float32).eps)

SIZES = (0, 1, 2, 3, 7, 16, 17, 31, 33, 64, 65)
# (m, n): squares, m != n both ways, zeros, primes and 2**k +- 1.
SHAPES = [(1, 1), (2, 3), (3, 2), (7, 7), (16, 17), (17, 16), (31, 33), (33, 31),
          (64, 65), (65, 64), (1, 65), (65, 1), (16, 1), (2, 31), (3, 7)]
ZERO_SHAPES = [(0, 0), (0, 1), (0, 3), (0, 17), (1, 0), (3, 0), (64, 0)]
assert {d for s in SHAPES + ZERO_SHAPES for d in s} == set(SIZES)

SCALARS = (0, 1, -1, 1j, -2.5 + 0.5j)


# ---------------------------------------------------------------- helpers
def crand(rng, *shape, order="F"):
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype=C64, order=order)


def operands(rng, m, n, side, order="F"):
    """Random a (k x k, k = m for side 0, n for side 1), b and c (m x n)."""
    k = m if side == 0 else n
    return crand(rng, k, k, order=order), crand(rng, m, n, order=order), crand(rng, m, n, order=order)


def full_symmetric(a, lower):
    """The symmetric matrix csymm means by ``a`` and ``lower``, in complex128."""
    a = np.asarray(a, dtype=np.complex128)
    t = np.tril(a) if lower else np.triu(a)
    return t + t.T - np.diag(np.diag(a))


def reference(alpha, a, b, beta, c, side, lower):
    """alpha*A*B + beta*C (side 0) or alpha*B*A + beta*C (side 1) in complex128."""
    s = full_symmetric(a, lower)
    b = np.asarray(b, dtype=np.complex128)
    prod = s @ b if side == 0 else b @ s
    out = alpha * prod
    if beta != 0:
        out = out + beta * np.asarray(c, dtype=np.complex128)
    return out


def error_scale(alpha, a, b, beta, c, side, lower):
    """|alpha| |A| |B| + |beta| |C|: what rounding error in a component scales with."""
    s = np.abs(full_symmetric(a, lower))
    ab_ = np.abs(np.asarray(b, dtype=np.complex128))
    out = abs(alpha) * (s @ ab_ if side == 0 else ab_ @ s)
    if beta != 0 and c is not None:
        out = out + abs(beta) * np.abs(np.asarray(c, dtype=np.complex128))
    return out


def assert_c64_close(res, ref, k=1, scale=None):
    """Design rule per real/imag component, widened by the dot-product bound."""
    res = np.asarray(res)
    ref = np.asarray(ref)
    assert res.shape == ref.shape
    tol_extra = 0.0 if scale is None else 4 * (k + 2) * EPS32 * np.asarray(scale)
    for part in (np.real, np.imag):
        got = part(res).astype(np.float64)
        want = part(ref).astype(np.float64)
        tol = 2.0 ** -16 + 2.0 ** -10 * np.abs(want) + tol_extra
        bad = ~(np.abs(got - want) <= tol)
        assert not bad.any(), (
            f"{bad.sum()} of {bad.size} components out of tolerance; worst at "
            f"{np.unravel_index(np.argmax(np.where(bad, np.abs(got - want), 0)), bad.shape)}")


def assert_nonfinite_close(res, ref, k=1):
    """Same NaN pattern (per component) and same +-Inf; finite entries close."""
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(np.isnan(part(res)), np.isnan(part(ref)))
        np.testing.assert_array_equal(np.isposinf(part(res)), np.isposinf(part(ref)))
        np.testing.assert_array_equal(np.isneginf(part(res)), np.isneginf(part(ref)))
    fin = np.isfinite(res) & np.isfinite(ref)
    assert_c64_close(res[fin], ref[fin], k)


def assert_result_form(res, m, n):
    assert type(res) is np.ndarray
    assert res.dtype == np.complex64
    assert res.shape == (m, n)
    assert res.flags.f_contiguous


def assert_ran(records, backend, n_calls=1):
    """Under cpu the project's kernel ran (no fallback); under scipy, scipy ran."""
    ours = [r for r in records if r[0] == "csymm"]
    assert len(ours) == n_calls, records
    assert all(r[1] == backend for r in ours), records
    if backend == "cpu":
        assert all(r[2] is None for r in ours), records


def both(*args, **kwargs):
    """(ours, scipy's) results of the same call; scipy's inputs are fresh copies."""
    copies = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
    kcopies = {k: (np.copy(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    return blas.csymm(*args, **kwargs), scipy_blas.csymm(*copies, **kcopies)


def assert_same_as_scipy(ours, ref, backend, k, scale=None):
    assert type(ours) is type(ref)
    assert ours.dtype == ref.dtype
    assert ours.shape == ref.shape
    assert ours.flags.f_contiguous == ref.flags.f_contiguous
    if backend == "scipy":
        np.testing.assert_array_equal(ours, ref)
    else:
        assert_c64_close(ours, ref, k, scale)


# ---------------------------------------------------------------- values
@pytest.mark.parametrize("m,n", SHAPES, ids=[f"{m}x{n}" for m, n in SHAPES])
@pytest.mark.parametrize("lower", [0, 1], ids=["upper", "lower"])
@pytest.mark.parametrize("side", [0, 1], ids=["left", "right"])
def test_values_match_scipy(backend, dispatch, rng, side, lower, m, n):
    a, b, c = operands(rng, m, n, side)
    alpha, beta = -2.5 + 0.5j, 0.75 - 1j
    ours, ref = both(alpha, a, b, beta, c, side=side, lower=lower)
    k = a.shape[0]
    assert_result_form(ours, m, n)
    assert_same_as_scipy(ours, ref, backend, k, error_scale(alpha, a, b, beta, c, side, lower))
    assert_c64_close(ours, reference(alpha, a, b, beta, c, side, lower), k,
                     error_scale(alpha, a, b, beta, c, side, lower))
    assert_ran(dispatch, backend)


@pytest.mark.parametrize("m,n", ZERO_SHAPES, ids=[f"{m}x{n}" for m, n in ZERO_SHAPES])
@pytest.mark.parametrize("side", [0, 1], ids=["left", "right"])
def test_zero_size(backend, dispatch, side, m, n):
    """Quick return: an empty (m, n) complex64 result, as scipy gives for c=None."""
    k = m if side == 0 else n
    a = np.ones((k, k), dtype=C64, order="F")
    b = np.ones((m, n), dtype=C64, order="F")
    for beta in (0, 1j):
        ours, ref = both(1 + 1j, a, b, beta, side=side)
        assert_result_form(ours, m, n)
        assert_same_as_scipy(ours, ref, backend, 1)
    assert_ran(dispatch, backend, n_calls=2)


@pytest.mark.parametrize("m,n", [(0, 0), (0, 3), (3, 0)], ids=["0x0", "0x3", "3x0"])
def test_zero_size_with_c(backend, m, n):
    """scipy's f2py wrapper raises ValueError for an empty c ('unexpected array size');
    ours may either raise ValueError too or return the empty result."""
    a = np.ones((m, m), dtype=C64, order="F")
    b = np.ones((m, n), dtype=C64, order="F")
    c = np.ones((m, n), dtype=C64, order="F")
    with pytest.raises(ValueError):
        scipy_blas.csymm(1, a, b, 1, c)
    try:
        res = blas.csymm(1, a, b, 1, c)
    except ValueError:
        return
    assert_result_form(res, m, n)


@pytest.mark.parametrize("beta", SCALARS, ids=repr)
@pytest.mark.parametrize("alpha", SCALARS, ids=repr)
@pytest.mark.parametrize("side,lower", [(0, 0), (1, 1)], ids=["left-upper", "right-lower"])
def test_alpha_beta(backend, dispatch, rng, side, lower, alpha, beta):
    m, n = 17, 7
    a, b, c = operands(rng, m, n, side)
    c0 = c.copy()
    ours, ref = both(alpha, a, b, beta, c, side=side, lower=lower)
    assert_result_form(ours, m, n)
    scale = error_scale(alpha, a, b, beta, c, side, lower)
    assert_same_as_scipy(ours, ref, backend, a.shape[0], scale)
    assert_c64_close(ours, reference(alpha, a, b, beta, c0, side, lower), a.shape[0], scale)
    np.testing.assert_array_equal(c, c0)  # overwrite_c=0: caller's c untouched
    assert_ran(dispatch, backend)


@pytest.mark.parametrize("poison", ["none", "nan_in_a", "nan_in_b"])
def test_alpha0_beta1_returns_c_unchanged(backend, dispatch, rng, poison):
    a, b, c = operands(rng, 9, 5, 0)
    if poison == "nan_in_a":
        a[2, 3] = a[3, 2] = np.nan
    elif poison == "nan_in_b":
        b[4, 1] = np.nan
    ours, ref = both(0, a, b, 1, c)
    np.testing.assert_array_equal(ours, c)
    np.testing.assert_array_equal(ref, c)
    assert_result_form(ours, 9, 5)
    assert_ran(dispatch, backend)


@pytest.mark.parametrize("beta", [0, 2 - 1j], ids=["beta0", "beta2-1j"])
def test_alpha0_only_scales_c(backend, dispatch, rng, beta):
    """alpha == 0 never reads A or B (NaN there must not leak)."""
    a, b, c = operands(rng, 6, 4, 1)
    a[:] = np.nan
    b[0, 0] = np.inf
    ours, ref = both(0, a, b, beta, c, side=1)
    assert not np.isnan(ours).any()
    assert_same_as_scipy(ours, ref, backend, 1, np.abs(beta * c.astype(np.complex128)))
    assert_c64_close(ours, beta * c.astype(np.complex128))
    assert_ran(dispatch, backend)


@pytest.mark.parametrize("overwrite_c", [0, 1])
@pytest.mark.parametrize("side", [0, 1], ids=["left", "right"])
def test_beta0_never_reads_c(backend, dispatch, rng, side, overwrite_c):
    m, n = 17, 33
    a, b, _ = operands(rng, m, n, side)
    c = np.full((m, n), np.nan, dtype=C64, order="F")
    c_ref = c.copy(order="F")
    ours = blas.csymm(1j, a, b, 0, c, side=side, overwrite_c=overwrite_c)
    ref = scipy_blas.csymm(1j, a, b, 0, c_ref, side=side, overwrite_c=overwrite_c)
    assert not np.isnan(ref).any()
    assert not np.isnan(ours).any()
    assert_same_as_scipy(ours, ref, backend, a.shape[0], error_scale(1j, a, b, 0, None, side, 0))
    assert (ours is c) == (ref is c_ref)
    assert_ran(dispatch, backend)


BAD_VALUES = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf,
              "inf+infj": complex(np.inf, np.inf), "nanj": complex(0, np.nan),
              "-infj": complex(0, -np.inf)}


@pytest.mark.parametrize("value", list(BAD_VALUES), ids=list(BAD_VALUES))
@pytest.mark.parametrize("where", ["a_offdiag", "a_diag", "b"])
@pytest.mark.parametrize("lower", [0, 1], ids=["upper", "lower"])
def test_nonfinite_inputs(backend, dispatch, rng, where, value, lower):
    v = BAD_VALUES[value]
    a, b, c = operands(rng, 7, 5, 0)
    if where == "a_offdiag":
        a[2, 5] = a[5, 2] = v
    elif where == "a_diag":
        a[3, 3] = v
    else:
        b[4, 2] = v
    ours, ref = both(1, a, b, 0.5, c, lower=lower)
    assert_result_form(ours, 7, 5)
    assert (~np.isfinite(ref)).any()
    assert_nonfinite_close(ours, ref, 7)
    assert_ran(dispatch, backend)


@pytest.mark.parametrize("m,n", [(1, 1), (7, 5), (33, 17)], ids=["1x1", "7x5", "33x17"])
@pytest.mark.parametrize("lower", [0, 1], ids=["upper", "lower"])
@pytest.mark.parametrize("side", [0, 1], ids=["left", "right"])
@pytest.mark.parametrize("order", ["F", "C"])
def test_unreferenced_triangle_is_not_read(backend, dispatch, rng, side, lower, m, n, order):
    a, b, c = operands(rng, m, n, side, order=order)
    k = a.shape[0]
    poisoned = a.copy(order=order)
    unread = np.triu_indices(k, 1) if lower else np.tril_indices(k, -1)
    poisoned[unread] = np.nan
    ours, ref = both(1 - 1j, poisoned, b, -1, c, side=side, lower=lower)
    assert np.isfinite(ours).all()
    scale = error_scale(1 - 1j, a, b, -1, c, side, lower)
    assert_same_as_scipy(ours, ref, backend, k, scale)
    assert_c64_close(ours, reference(1 - 1j, a, b, -1, c, side, lower), k, scale)
    assert_ran(dispatch, backend)


@pytest.mark.parametrize("side", [0, 1], ids=["left", "right"])
def test_wrong_lower_gives_different_answer(backend, rng, side):
    """As scipy's test_symm_wrong_uplo: only the chosen triangle is read."""
    a, b, _ = operands(rng, 6, 4, side)
    up = blas.csymm(1, a, b, side=side, lower=0)
    lo = blas.csymm(1, a, b, side=side, lower=1)
    assert not np.allclose(up, lo)
    sym = np.triu(a) + np.triu(a, 1).T
    np.testing.assert_allclose(blas.csymm(1, sym, b, side=side, lower=1),
                               blas.csymm(1, sym, b, side=side, lower=0), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- input coercion
def _padded_f(x):
    """``x`` as a non-contiguous view of a larger Fortran-ordered array."""
    big = np.zeros((x.shape[0] + 3, x.shape[1] + 2), dtype=x.dtype, order="F")
    big[:] = np.nan
    big[:x.shape[0], :x.shape[1]] = x
    return big[:x.shape[0], :x.shape[1]]


def _transposed_view(x):
    t = np.array(x.T, order="F" if x.flags.f_contiguous else "C", copy=True)
    v = t.T  # the layout opposite to x's: C-ordered for a Fortran x
    assert v.flags.c_contiguous == x.flags.f_contiguous
    assert not np.shares_memory(v, x)
    return v


COERCIONS = {
    "list": lambda x: x.tolist(),
    "float64": lambda x: np.asfortranarray(x.real.astype(np.float64)),
    "float32": lambda x: x.real.astype(np.float32),
    "int": lambda x: np.round(4 * x.real).astype(np.int64),
    "int32": lambda x: np.round(4 * x.real).astype(np.int32),
    "bool": lambda x: x.real > 0,
    "complex128": lambda x: x.astype(np.complex128),
    "C_order": lambda x: np.ascontiguousarray(x),
    "padded_F_view": _padded_f,
    "transposed_view": _transposed_view,
    "neg_stride": lambda x: np.asfortranarray(x[::-1, ::-1])[::-1, ::-1],
}


@pytest.mark.parametrize("kind", list(COERCIONS), ids=list(COERCIONS))
@pytest.mark.parametrize("which", ["a", "b", "c", "all"])
@pytest.mark.parametrize("side,lower", [(0, 1), (1, 0)], ids=["left-lower", "right-upper"])
def test_input_coercion(backend, dispatch, rng, which, kind, side, lower):
    m, n = 5, 3
    a, b, c = operands(rng, m, n, side)
    conv = COERCIONS[kind]
    args = {"a": a, "b": b, "c": c}
    for name in (("a", "b", "c") if which == "all" else (which,)):
        args[name] = conv(args[name])
    ours, ref = both(0.5 + 2j, args["a"], args["b"], -1j, args["c"], side=side, lower=lower)
    assert_result_form(ours, m, n)
    scale = error_scale(0.5 + 2j, np.asarray(args["a"]), np.asarray(args["b"]), -1j,
                        np.asarray(args["c"]), side, lower)
    assert_same_as_scipy(ours, ref, backend, a.shape[0], scale)
    assert_ran(dispatch, backend)


@pytest.mark.parametrize("call", [
    "f(3, [3], [-4])", "f(3, [[3]], [-4])", "f(3, 3, -4)", "f(1j, [2], [1, 2, 3], side=1)",
    "f(1j, [[2]], [[1], [2], [3]], side=1)", "f(-1, [[5]], [[1, 2, 3]])",
    "f(2, [[1, 2], [3, 4]], [1, 2])", "f(2, [[1, 2], [3, 4]], [1, 2], lower=1)",
    "f(1, [[1, 2], [3, 4]], [[1, 2]], side=1)",
], ids=lambda s: s.replace(" ", ""))
def test_small_python_inputs(backend, dispatch, call):
    """scipy's own test style: f(3, [3], [-4]) and friends with 1-D and 0-d inputs."""
    ours = eval(call, {"f": blas.csymm})
    ref = eval(call, {"f": scipy_blas.csymm})
    assert_same_as_scipy(ours, ref, backend, 2)
    assert_ran(dispatch, backend)


def _col(n):
    return np.asfortranarray((np.arange(1, n + 1) * (1 - 1j)).astype(C64).reshape(n, 1))


UNIT_AXIS_VIEWS = {
    # name: (a, b, side); each operand is a valid strided view scipy accepts.
    "b_col_reversed_unit_axis": (lambda: np.eye(3, dtype=C64, order="F"),
                                 lambda: _col(3)[:, ::-1], 0),
    "a_1x1_reversed": (lambda: np.array([[2 + 1j]], dtype=C64)[::-1, ::-1],
                       lambda: np.ones((1, 4), dtype=C64, order="F"), 0),
    "b_1row_reversed_rows": (lambda: np.eye(3, dtype=C64, order="F") * 2,
                                 lambda: np.asfortranarray(np.ones((1, 3), C64))[::-1], 1),
    "b_col_step2_view": (lambda: np.eye(3, dtype=C64, order="F"),
                         lambda: np.asfortranarray(np.ones((3, 4), C64))[:, ::2], 0),
    "a_step2_view": (lambda: np.asfortranarray(np.arange(25, dtype=C64).reshape(5, 5))[::2, ::2],
                     lambda: np.ones((3, 2), dtype=C64, order="F"), 0),
    "b_1d_reversed": (lambda: np.eye(3, dtype=C64, order="F"),
                      lambda: np.arange(3, dtype=C64)[::-1], 0),
    "b_1d_step2": (lambda: np.eye(3, dtype=C64, order="F"),
                   lambda: np.arange(6, dtype=C64)[::2], 0),
}


@pytest.mark.parametrize("case", list(UNIT_AXIS_VIEWS), ids=list(UNIT_AXIS_VIEWS))
def test_strided_views(backend, dispatch, case):
    mk_a, mk_b, side = UNIT_AXIS_VIEWS[case]
    ours, ref = both(1 + 2j, mk_a(), mk_b(), side=side)
    assert_same_as_scipy(ours, ref, backend, 5)
    assert_ran(dispatch, backend)


def test_overwrite_c_reversed_unit_axis(backend):
    """A (3, 1) c with a reversed unit axis is F-contiguous by numpy's flags."""
    a = np.eye(3, dtype=C64, order="F")
    c = np.ones((3, 2), dtype=C64, order="F")[:, :1][:, ::-1]
    c_ref = np.ones((3, 2), dtype=C64, order="F")[:, :1][:, ::-1]
    ours = blas.csymm(1, a, _col(3), 1, c, overwrite_c=1)
    ref = scipy_blas.csymm(1, a, _col(3), 1, c_ref, overwrite_c=1)
    np.testing.assert_array_equal(ours, ref)
    assert (ours is c) == (ref is c_ref)


def test_scipy_docstring_example_values(backend):
    np.testing.assert_allclose(blas.csymm(3, [3], [-4]), [[-36]])
    assert blas.csymm(3, [3], [-4]).dtype == np.complex64


def test_positional_keyword_and_defaults(backend, dispatch, rng):
    a, b, c = operands(rng, 4, 6, 1)
    pos = blas.csymm(2j, a, b, 0.5, c, 1, 1, 0)
    kw = blas.csymm(alpha=2j, a=a, b=b, beta=0.5, c=c, side=1, lower=1, overwrite_c=0)
    np.testing.assert_array_equal(pos, kw)
    ref = scipy_blas.csymm(2j, a, b, 0.5, c, 1, 1, 0)
    assert_same_as_scipy(pos, ref, backend, 6)
    # Defaults: beta=0, c=None, side=0, lower=0, overwrite_c=0.
    a0, b0, _ = operands(rng, 5, 3, 0)
    d = blas.csymm(1.5, a0, b0)
    np.testing.assert_array_equal(d, blas.csymm(1.5, a0, b0, beta=0, c=None, side=0, lower=0,
                                                overwrite_c=0))
    assert_same_as_scipy(d, scipy_blas.csymm(1.5, a0, b0), backend, 5)
    # c given with the default beta=0 is never read.
    cn = np.full((5, 3), np.nan, dtype=C64, order="F")
    np.testing.assert_array_equal(blas.csymm(1.5, a0, b0, c=cn), d)
    assert_ran(dispatch, backend, n_calls=5)


def test_signature_matches_scipy():
    """The keyword names are scipy's (read from scipy's f2py docstring)."""
    import inspect
    params = list(inspect.signature(blas.csymm).parameters)
    assert params == ["alpha", "a", "b", "beta", "c", "side", "lower", "overwrite_c"]
    doc = scipy_blas.csymm.__doc__
    assert "c = csymm(alpha,a,b,[beta,c,side,lower,overwrite_c])" in doc
    assert doc.strip()[:40] in blas.csymm.__doc__


# ---------------------------------------------------------------- overwrite_c
C_KINDS = {
    "F_c64": lambda c: np.asfortranarray(c),
    "C_c64": lambda c: np.ascontiguousarray(c),
    "F_c128": lambda c: np.asfortranarray(c.astype(np.complex128)),
    "F_float32": lambda c: np.asfortranarray(c.real.astype(np.float32)),
    "padded_F_c64": _padded_f,
    "list": lambda c: c.tolist(),
}


@pytest.mark.parametrize("overwrite_c", [0, 1, True], ids=["0", "1", "True"])
@pytest.mark.parametrize("kind", list(C_KINDS), ids=list(C_KINDS))
def test_overwrite_c_like_scipy(backend, dispatch, rng, kind, overwrite_c):
    a, b, c = operands(rng, 6, 4, 0)
    c_ours, c_ref = C_KINDS[kind](c), C_KINDS[kind](c)
    before = np.array(c_ours, dtype=np.complex128)
    ours = blas.csymm(1 + 1j, a, b, 2, c_ours, overwrite_c=overwrite_c)
    ref = scipy_blas.csymm(1 + 1j, a, b, 2, c_ref, overwrite_c=overwrite_c)
    assert (ours is c_ours) == (ref is c_ref)
    changed_ours = not np.array_equal(np.array(c_ours, dtype=np.complex128), before)
    changed_ref = not np.array_equal(np.array(c_ref, dtype=np.complex128), before)
    assert changed_ours == changed_ref
    if kind == "F_c64" and overwrite_c:
        assert ours is c_ours  # the one case scipy hands back the caller's c
    assert_same_as_scipy(ours, ref, backend, 6)
    assert_ran(dispatch, backend)


def test_overwrite_c_in_place_values(backend, rng):
    a, b, c = operands(rng, 8, 8, 1)
    want = scipy_blas.csymm(-1, a, b, 1j, c.copy(order="F"), side=1)
    res = blas.csymm(-1, a, b, 1j, c, side=1, overwrite_c=1)
    assert res is c
    assert_c64_close(c, want, 8, error_scale(-1, a, b, 1j, want, 1, 0))


def test_read_only_c_is_never_written(backend, rng):
    """Documented difference: scipy may write into a read-only c; ours copies."""
    a, b, c = operands(rng, 4, 4, 0)
    c.flags.writeable = False
    before = c.copy()
    res = blas.csymm(1, a, b, 1, c, overwrite_c=1)
    np.testing.assert_array_equal(c, before)
    assert res is not c
    assert res.flags.writeable


@pytest.mark.parametrize("order", ["F", "C"])
def test_inputs_not_modified(backend, rng, order):
    a, b, c = operands(rng, 7, 9, 0, order=order)
    for x in (a, b):
        x.flags.writeable = False
    copies = [x.copy() for x in (a, b, c)]
    for side in (0, 1):
        bb = b if side == 0 else np.asarray(b.T, order=order)
        cc = c if side == 0 else np.asarray(c.T, order=order)
        before = [x.copy() for x in (bb, cc)]
        blas.csymm(1 - 2j, a, bb, 3, cc, side=side, lower=side, overwrite_c=0)
        np.testing.assert_array_equal(bb, before[0])
        np.testing.assert_array_equal(cc, before[1])
    for x, y in zip((a, b, c), copies):
        np.testing.assert_array_equal(x, y)
    assert not a.flags.writeable and not b.flags.writeable


# ---------------------------------------------------------------- errors
def _raises_both(exc, call):
    with pytest.raises(exc) as ref_info:
        call(scipy_blas.csymm)
    with pytest.raises(exc) as our_info:
        call(blas.csymm)
    return our_info.value, ref_info.value


@pytest.mark.parametrize("name,value", [("side", 2), ("side", -1), ("lower", 2), ("lower", -1),
                                        ("side", 10 ** 6)])
def test_bad_flag_values(backend, name, value):
    a = np.eye(3, dtype=C64)
    b = np.ones((3, 2), dtype=C64)
    ours, _ = _raises_both(FblasError, lambda f: f(1, a, b, **{name: value}))
    assert isinstance(ours, ValueError)
    assert name in str(ours)


@pytest.mark.parametrize("case", ["a3_b2_left", "a3_b2_right", "a2_b3x2_right", "a3_b3x2_right"])
def test_shape_mismatch(backend, case):
    a = np.eye(3 if case != "a2_b3x2_right" else 2, dtype=C64)
    b = {"a3_b2_left": np.ones((2, 2)), "a3_b2_right": np.ones((2, 2)),
         "a2_b3x2_right": np.ones((2, 3)), "a3_b3x2_right": np.ones((3, 2))}[case]
    side = 0 if case.endswith("left") else 1
    ours, _ = _raises_both(FblasError, lambda f: f(1, a, b, side=side))
    assert isinstance(ours, ValueError)


@pytest.mark.parametrize("cshape", [(2, 2), (2, 3), (3, 3), (1, 6), (6, 1), (6,), (3, 2, 2)],
                         ids=lambda s: "x".join(map(str, s)))
def test_c_wrong_shape(backend, cshape):
    a = np.eye(3, dtype=C64)
    b = np.ones((3, 2), dtype=C64)
    c = np.ones(cshape, dtype=C64)
    ours, _ = _raises_both(ValueError, lambda f: f(1, a, b, 1, c))
    if len(cshape) == 2:
        # Not for other ndim: that form is left to scipy's wrapper, whose message
        # ("0-th dimension must be fixed to 3 but got 6") does not name c.
        assert "c" in str(ours)


@pytest.mark.parametrize("kwargs", [{"alpha": "x"}, {"alpha": None}, {"beta": "x"},
                                    {"alpha": object()}, {"beta": object()}, {"alpha": 1j, "beta": "1"}],
                         ids=["alpha_str", "alpha_None", "beta_str", "alpha_object", "beta_object",
                              "beta_numeric_str"])
def test_bad_scalars_type_error(backend, kwargs):
    a = np.eye(2, dtype=C64)
    b = np.ones((2, 2), dtype=C64)
    full = {"alpha": 1, "a": a, "b": b, **kwargs}
    _raises_both(TypeError, lambda f: f(**full))


@pytest.mark.parametrize("scalars", [
    {"alpha": [3]}, {"alpha": [1, 2]}, {"alpha": np.array([2 - 1j])}, {"alpha": np.float32(2)},
    {"alpha": True}, {"alpha": np.int8(-3)}, {"alpha": 2, "beta": np.complex128(1j)},
    {"alpha": 2, "beta": [0.5]}, {"alpha": np.array(1.5)},
], ids=lambda d: "-".join(f"{k}={v!r}" for k, v in d.items()).replace(" ", ""))
def test_scalar_forms_like_scipy(backend, scalars):
    """Scalars given as sequences, numpy scalars, bools: whatever scipy converts."""
    a = np.array([[1, 2], [2, 3]], dtype=C64)
    b = np.array([[1, 1j], [2, -1]], dtype=C64)
    c = np.ones((2, 2), dtype=C64, order="F")
    full = {"alpha": 1, "a": a, "b": b, "c": c, **scalars}
    ours = blas.csymm(**full)
    ref = scipy_blas.csymm(**full)
    assert_same_as_scipy(ours, ref, backend, 2)


@pytest.mark.parametrize("call", ["f(1, a, b, foo=1)", "f(1, a, b, 0, None, 0, 0, 0, 1)",
                                  "f(1, a)", "f()", "f(1, a, b, alpha=2)"],
                         ids=["unknown_kw", "too_many", "too_few", "none", "dup_alpha"])
def test_bad_call_signature_type_error(backend, call):
    a = np.eye(2, dtype=C64)
    b = np.ones((2, 2), dtype=C64)
    _raises_both(TypeError, lambda f: eval(call, {"f": f, "a": a, "b": b}))


# ---------------------------------------------------------------- get_blas_funcs
def test_get_blas_funcs_returns_ours_for_complex64():
    a = np.ones((2, 2), dtype=C64)
    assert blas.get_blas_funcs("symm", (a,)) is blas.csymm
    assert blas.get_blas_funcs(("symm",), (a,))[0] is blas.csymm
    assert blas.get_blas_funcs(["gemm", "symm"], (a,))[1] is blas.csymm
    assert blas.get_blas_funcs("symm", dtype=np.complex64) is blas.csymm
    gemm = blas.get_blas_funcs("gemm", (a,))
    assert gemm is scipy_blas.get_blas_funcs("gemm", (a,))


@pytest.mark.parametrize("dtype,name", [(np.float64, "dsymm"), (np.float32, "ssymm"),
                                        (np.complex128, "zsymm")])
def test_get_blas_funcs_other_dtypes_are_scipys(dtype, name):
    a = np.ones((2, 2), dtype=dtype)
    f = blas.get_blas_funcs("symm", (a,))
    assert f is scipy_blas.get_blas_funcs("symm", (a,))
    assert f is getattr(scipy_blas, name)
    assert f.typecode == scipy_blas.get_blas_funcs("symm", (a,)).typecode


def test_get_blas_funcs_attributes_and_find_best():
    f = blas.get_blas_funcs("symm", (np.ones(2, C64),))
    g = scipy_blas.get_blas_funcs("symm", (np.ones(2, C64),))
    for attr in ("module_name", "typecode", "prefix", "dtype"):
        assert getattr(f, attr) == getattr(g, attr), attr
    assert blas.find_best_blas_type is scipy_blas.find_best_blas_type
    assert blas.dsymm is scipy_blas.dsymm
    assert blas.zsymm is scipy_blas.zsymm


# ---------------------------------------------------------------- large problem
@pytest.mark.parametrize("lower", [0, 1], ids=["upper", "lower"])
@pytest.mark.parametrize("side", [0, 1], ids=["left", "right"])
def test_large_residual(backend, dispatch, side, lower):
    """300 x 200, by residual against float64 numpy (BLIS style), and a full check."""
    rng = np.random.default_rng(7 + 2 * side + lower)
    m, n = 300, 200
    a, b, c = operands(rng, m, n, side)
    alpha, beta = 0.7 - 1.3j, -0.4 + 0.9j
    c0 = c.astype(np.complex128)
    res = blas.csymm(alpha, a, b, beta, c, side=side, lower=lower)
    assert_result_form(res, m, n)
    s = full_symmetric(a, lower)
    b64 = b.astype(np.complex128)
    t = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    if side == 0:
        want_t = alpha * (s @ (b64 @ t)) + beta * (c0 @ t)
    else:
        want_t = alpha * (b64 @ (s @ t)) + beta * (c0 @ t)
    resid = np.linalg.norm(res.astype(np.complex128) @ t - want_t) / np.linalg.norm(want_t)
    assert resid < 50 * EPS32 * np.sqrt(a.shape[0]), resid
    k = a.shape[0]
    assert_c64_close(res, reference(alpha, a, b, beta, c, side, lower), k,
                     error_scale(alpha, a, b, beta, c, side, lower))
    assert_ran(dispatch, backend)


# ---------------------------------------------------------------- packing variants
_PACK_CASES = [(m, n, side, lower, order)
               for (m, n) in [(1, 1), (7, 5), (33, 17), (130, 70), (300, 200), (600, 40)]
               for side in (0, 1) for lower in (0, 1) for order in ("F", "C")]


def _pack_case_results(seed=11):
    import ascend_linalg
    rng = np.random.default_rng(seed)
    out = []
    for m, n, side, lower, order in _PACK_CASES:
        a, b, c = operands(rng, m, n, side, order=order)
        with ascend_linalg.use_backend("cpu"):
            out.append(blas.csymm(0.7 - 1.3j, a, b, -0.4 + 0.9j, c, side=side, lower=lower))
    return out


def test_portable_packer_gives_the_same_bits(tmp_path):
    """ASCEND_LINALG_CSYMM_PACK=scalar (the portable packer every x86-64 and
    non-x86 build runs) and the default (AVX2 where the CPU has it) pack the
    same elements: the products are bitwise equal, across sides, triangles,
    layouts, tails and column strides past a 4 KB page."""
    from _fake_npu import run_process
    path = tmp_path / "scalar.npz"
    p = run_process(f"""
        import sys, numpy as np
        sys.path.insert(0, {str(__import__('os').path.dirname(__file__))!r})
        from test_csymm import _pack_case_results
        np.savez({str(path)!r}, *_pack_case_results())
        """, ASCEND_LINALG_CSYMM_PACK="scalar")
    assert p.returncode == 0, p.stderr[-3000:]
    scalar = np.load(path)
    ours = _pack_case_results()
    for i, case in enumerate(_PACK_CASES):
        assert np.array_equal(scalar[f"arr_{i}"].view(np.uint64), ours[i].view(np.uint64)), case


@pytest.mark.parametrize("side", [0, 1], ids=["left", "right"])
def test_row_major_b_is_not_copied(side, rng):
    """A C-ordered complex64 b reaches the CPU kernel as its transpose (a view,
    alCsymmRowMajorB), not as a Fortran-ordered copy; the result is scipy's."""
    import ascend_linalg
    from ascend_linalg.linalg import _csymm
    m, n = 37, 21
    a, b, c = operands(rng, m, n, side, order="C")
    *_, b_, b_row_major, _, _ = _csymm._prepare(1, a, b, 0, None, side, 0, 0, row_major_b_ok=True)
    assert b_row_major and np.shares_memory(b_, b) and b_.shape == (n, m)
    # Not for devices that do not take it (the NPU path keeps column-major b).
    *_, b_, b_row_major, _, _ = _csymm._prepare(1, a, b, 0, None, side, 0, 0)
    assert not b_row_major and b_.flags.f_contiguous
    alpha, beta = 0.3 + 1.1j, -0.5 + 0.25j
    with ascend_linalg.use_backend("cpu"):
        res = blas.csymm(alpha, a, b, beta, c, side=side, lower=1)
    assert_result_form(res, m, n)
    assert_c64_close(res, reference(alpha, a, b, beta, c, side, 1), a.shape[0],
                     error_scale(alpha, a, b, beta, c, side, 1))


@pytest.mark.parametrize("m, n, side", [(192, 192, 0), (256, 256, 0), (256, 256, 1), (257, 257, 0), (320, 320, 1),
                                        (200, 130, 1), (600, 40, 0)],
                         ids=["192", "256", "256R", "257", "320R", "200x130R", "600x40"])
def test_thread_count_gives_the_same_bits(rng, m, n, side):
    """The CPU kernel's result does not depend on the thread count: 1, 2, 3
    and 5 threads split C differently (2 x 2 tile grids, column strips, tiles
    handed out in turn), which moves the edges of partial micro-tiles; their
    epilogue rounds as the full tiles' does, and every element's sum runs over
    the same K blocks."""
    import ascend_linalg
    a, b, c = operands(rng, m, n, side)
    before = ascend_linalg.get_num_threads()
    results = {}
    try:
        with ascend_linalg.use_backend("cpu"):
            for threads in (1, 2, 3, 5):
                ascend_linalg.set_num_threads(threads)
                results[threads] = [blas.csymm(0.7 - 1.3j, a, b, beta, c, side=side, lower=1)
                                    for beta in (-0.4 + 0.9j, 1.0, 0.0)]
    finally:
        ascend_linalg.set_num_threads(before)
    for threads in (2, 3, 5):
        for got, want in zip(results[threads], results[1]):
            assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), threads


# ---------------------------------------------------------------- fast binding
def _fast_cases(rng):
    """(label, args, kwargs, fast): calls the one-step binding (_core.csymm_fast)
    must take (fast True) or hand back to the general path (fast False)."""
    a, b, c = operands(rng, 5, 3, 0)
    ar, br, _ = operands(rng, 4, 6, 1)
    unaligned = np.frombuffer(bytearray(5 * 3 * 8 + 1), dtype=C64, offset=1, count=15).reshape(5, 3, order="F")
    assert not unaligned.flags.aligned
    unaligned[...] = c
    read_only = c.copy(order="F")
    read_only.flags.writeable = False
    shared = crand(rng, 5, 8)  # c written in place over a's last column
    return [
        ("c None, beta 0", (1 + 1j, a, b), {}, True),
        ("c None, beta 1", (2, a, b, 1), {}, True),
        ("c None, beta tiny", (2, a, b, 1e-300), {}, True),  # 0 in float32, not 0: zeros either way
        ("side 1, lower", (-1.5, ar, br, 0.5j), {"side": 1, "lower": 1}, True),
        ("F c, copy", (1, a, b, 2, c.copy(order="F")), {}, True),
        ("F c, overwrite", (1, a, b, 2, c.copy(order="F")), {"overwrite_c": 1}, True),
        ("C c, overwrite", (1, a, b, 2, np.ascontiguousarray(c)), {"overwrite_c": 1}, True),
        ("reversed c", (1, a, b, 2, c.copy()[::-1, ::-1]), {"overwrite_c": 1}, True),
        ("unaligned c", (1, a, b, 2, unaligned), {"overwrite_c": 1}, True),
        ("read-only c", (1, a, b, 2, read_only), {"overwrite_c": 1}, True),
        ("big overwrite flag", (1, a, b, 2, c.copy(order="F")), {"overwrite_c": 2 ** 70}, True),
        ("c over a", (1, shared[:, :5], b, 1, shared[:, 4:7]), {"overwrite_c": 1}, False),
        ("c complex128", (1, a, b, 2, c.astype(np.complex128)), {}, False),
        ("C-ordered a", (1, np.ascontiguousarray(a), b), {}, False),
        ("float64 b", (1, a, b.real.astype(np.float64, order="F")), {}, False),
        ("bool flag", (1, a, b), {"lower": True}, False),
        ("numpy alpha", (np.complex64(1j), a, b), {}, False),
        ("alpha None", (None, a, b), {}, False),
        ("alpha too large", (10 ** 400, a, b), {}, False),
        ("side 2", (1, a, b), {"side": 2}, False),
        ("shapes differ", (1, a, b.T.copy(order="F")), {}, False),
        ("c wrong shape", (1, a, b, 1, crand(rng, 3, 5)), {}, False),
        ("empty c", (1, a[:0, :0], b[:0], 1, np.zeros((0, 3), C64, order="F")), {}, False),
        ("non-square a", (1, crand(rng, 5, 6), crand(rng, 6, 3)), {}, False),
    ]


def _outcome(call):
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - the exception itself is compared
        return "raised", exc


@pytest.mark.parametrize("i", range(24))
def test_fast_binding_matches_general_path(rng, monkeypatch, i):
    """Each call gives the same bits, the same object identity, the same
    changes to its arguments and the same exception whether the one-step
    binding or the general Python path handles it; and the binding takes
    exactly the calls it is meant for."""
    import ascend_linalg
    from ascend_linalg import _core
    from ascend_linalg.testing import dispatch_records
    cases = _fast_cases(np.random.default_rng(i))
    assert len(cases) == 24
    label, args, kwargs, fast = cases[i]
    copies = lambda: ([np.copy(x, order="K") if isinstance(x, np.ndarray) else x for x in args],  # noqa: E731
                      {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    real_fast = _core.csymm_fast
    taken = []

    def spy(*a, **k):
        out = real_fast(*a, **k)
        taken.append(out is not None)
        return out

    runs = {}
    # the general path gets copies taken before the fast one may write in place;
    # where flags or memory sharing must survive, both get the same objects
    # (restored in between)
    keep = "read-only" in label or "unaligned" in label or "c over a" in label
    general = (list(args), dict(kwargs)) if keep else copies()
    for path in ("fast", "general"):
        a_, k_ = general if path == "general" else (list(args), dict(kwargs))
        before = [np.array(x, dtype=np.complex128) if isinstance(x, np.ndarray) else None for x in a_]
        monkeypatch.setattr(_core, "csymm_fast", spy if path == "fast" else (lambda *a, **k: None))
        with ascend_linalg.use_backend("cpu"), dispatch_records() as recs:
            kind, value = _outcome(lambda: blas.csymm(*a_, **k_))
        after = [np.array(x, dtype=np.complex128) if isinstance(x, np.ndarray) else None for x in a_]
        same_obj = kind == "ok" and any(value is x for x in a_)
        runs[path] = (kind, value, same_obj, [b_ is not None and not np.array_equal(b_, a2, equal_nan=True)
                                              for b_, a2 in zip(before, after)], recs)
        if path == "fast":
            assert taken == [fast], label
        if keep:  # restore what a run in place changed, for the second path
            for x, b_ in zip(a_, before):
                if isinstance(x, np.ndarray) and x.flags.writeable:
                    x[...] = b_
    (k1, v1, s1, ch1, r1), (k2, v2, s2, ch2, r2) = runs["fast"], runs["general"]
    assert k1 == k2, (label, v1, v2)
    if k1 == "raised":
        assert type(v1) is type(v2) and str(v1) == str(v2), label
        return
    assert r1 == r2, label
    assert s1 == s2 and ch1 == ch2, label
    assert v1.dtype == v2.dtype and v1.shape == v2.shape and v1.flags.f_contiguous == v2.flags.f_contiguous
    np.testing.assert_array_equal(v1.view(np.uint64), v2.view(np.uint64), err_msg=label)
