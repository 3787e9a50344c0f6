"""``csymm`` with exactly the signature, defaults, coercion and errors of
``scipy.linalg.blas.csymm``, routed through the host layer.

Calls in the form scipy's own tests and users write (numbers for the scalars,
integers for the flags, arrays or nested lists of at most two dimensions) run on
the selected device. Anything else f2py would still accept (flags given as
floats or lists, arrays of more than two dimensions with unit axes, a non-square
``a`` that scipy reads partially, object arrays) is answered by scipy's own
wrapper so that the result is scipy's, with the reason logged. Argument errors
are raised as :class:`BlasArgumentError`, which is both a ``ValueError`` and
scipy's f2py ``_fblas.error``, so either ``except`` clause catches it.
"""
import numbers

import numpy as np
from scipy.linalg import _fblas

from .. import _routing
from .._routing import kernel_lacking, record, route

__all__ = ["csymm", "BlasArgumentError"]

_scipy_csymm = _fblas.csymm
# f2py's module exception (exposed as `_fblas.__fblas_error` in scipy >= 1.14).
_FblasError = getattr(_fblas, "__fblas_error", None) or getattr(_fblas, "error", Exception)
_C64 = np.dtype(np.complex64)
_NUMERIC_KINDS = frozenset("biufc")


class BlasArgumentError(ValueError, _FblasError):
    """A BLAS wrapper rejected its arguments (message names the argument)."""


class _Fallback(Exception):
    """This call's argument form is left to scipy's wrapper; args[0] says why."""


# Exact built-in types take a fast path: isinstance against the numbers ABCs
# costs about a microsecond per argument, more than a 16x16 product.
_FAST_SCALARS = (complex, float, int)


def _flag(value, name, default):
    if value is None:
        return default
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return int(value)
    raise _Fallback(f"{name}={value!r} is converted by scipy's f2py rules")


def _scalar(value, name, default):
    if value is None:
        return default
    if type(value) in _FAST_SCALARS:
        return complex(value)
    if isinstance(value, (numbers.Number, np.number, np.bool_)) and not isinstance(value, np.timedelta64):
        return complex(value)
    raise _Fallback(f"{name} of type {type(value).__name__} is converted by scipy's f2py rules")


def _matrix(value, name):
    arr = value if type(value) is np.ndarray else np.asarray(value)
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise _Fallback(f"{name} has dtype {arr.dtype}, converted by scipy's f2py rules")
    if arr.ndim == 2:
        return arr
    if arr.size == 0:
        raise _Fallback(f"empty {arr.ndim}-D {name} is shaped by scipy's f2py rules")
    if arr.ndim == 1:
        return arr.reshape(arr.shape[0], 1)
    if arr.ndim == 0:
        return arr.reshape(1, 1)
    raise _Fallback(f"{name} has {arr.ndim} dimensions, reshaped by scipy's f2py rules")


def _fortran_view(arr, rows, cols):
    """True when ``arr`` (complex64) is column-major with unit row stride."""
    s0, s1 = arr.strides
    return (s0 == 8 or rows <= 1) and (cols <= 1 or (s1 % 8 == 0 and s1 >= 8 * max(rows, 1)))


def _symmetric_operand(a, lower):
    """``a`` as a column-major complex64 view plus the ``lower`` to read it with.

    A row-major ``a`` is used through its transpose with the triangle flipped:
    the same stored elements, no copy.
    """
    if a.dtype == _C64:
        k = a.shape[0]
        if _fortran_view(a, k, k):
            return a, lower
        if _fortran_view(a.T, k, k):
            return a.T, 1 - lower
    return np.asarray(a, dtype=_C64, order="F"), lower


def _general_operand(b, row_major_ok):
    """``b`` as the kernel reads it, plus whether that is B's transpose.

    A row-major complex64 ``b`` goes to devices that take it so
    (``row_major_ok``: the CPU) as its transpose, a column-major view of the
    same elements (alCsymmRowMajorB), instead of being copied into Fortran order.
    """
    if b.dtype == _C64:
        if _fortran_view(b, *b.shape):
            return b, False
        if row_major_ok and _fortran_view(b.T, b.shape[1], b.shape[0]):
            return b.T, True
    return np.asarray(b, dtype=_C64, order="F"), False


def _output(c, m, n, beta, overwrite_c):
    if c is None:
        return (np.empty if beta == 0 else np.zeros)((m, n), dtype=_C64, order="F")
    is_array = type(c) is np.ndarray
    if not (is_array or isinstance(c, (list, tuple, numbers.Number))):
        raise _Fallback(f"c of type {type(c).__name__} is handled by scipy's f2py rules")
    if (c.ndim if is_array else np.ndim(c)) != 2:
        raise _Fallback("c that is not 2-D keeps its own shape in scipy's result")
    if (c.size if is_array else np.size(c)) == 0:
        raise _Fallback("an empty c is accepted or refused by scipy's f2py rules")
    arr = _matrix(c, "c")
    if arr.shape != (m, n):
        raise ValueError(f"csymm: c must have shape (m, n) = ({m}, {n}), got {arr.shape}")
    # Same object only where scipy gives it back: overwrite_c and c already a
    # writable, Fortran-contiguous complex64 array. (scipy also writes into a
    # read-only c; this library copies instead.)
    if (overwrite_c and arr is c and c.dtype == _C64 and c.flags.f_contiguous
            and c.flags.writeable and c.flags.aligned):
        return c
    return np.array(arr, dtype=_C64, order="F", copy=True)


def _dims(a, b, side):
    """(m, n) as scipy's wrapper derives them; raises where scipy rejects."""
    if side == 0:
        if a.shape[1] != b.shape[0]:
            raise BlasArgumentError(
                f"csymm: with side=0 (C = alpha*A*B) a.shape[1] must equal b.shape[0], "
                f"got a {a.shape} and b {b.shape}")
        m, n = a.shape[0], b.shape[1]
    else:
        if b.shape[1] != a.shape[0]:
            raise BlasArgumentError(
                f"csymm: with side=1 (C = alpha*B*A) b.shape[1] must equal a.shape[0], "
                f"got a {a.shape} and b {b.shape}")
        m, n = b.shape[0], a.shape[1]
    if a.shape[0] != a.shape[1]:
        raise _Fallback(f"non-square a {a.shape}: scipy reads part of it")
    return m, n


def _prepare(alpha, a, b, beta, c, side, lower, overwrite_c, row_major_b_ok=False):
    side = _flag(side, "side", 0)
    lower = _flag(lower, "lower", 0)
    if side not in (0, 1):
        raise BlasArgumentError(f"csymm: side must be 0 (C = alpha*A*B) or 1 (C = alpha*B*A), got {side}")
    if lower not in (0, 1):
        raise BlasArgumentError(f"csymm: lower must be 0 (upper triangle) or 1 (lower triangle), got {lower}")
    overwrite_c = _flag(overwrite_c, "overwrite_c", 0)
    alpha = _scalar(alpha, "alpha", None)
    if alpha is None:
        raise _Fallback("alpha=None")
    beta = _scalar(beta, "beta", 0j)
    a = _matrix(a, "a")
    b = _matrix(b, "b")
    m, n = _dims(a, b, side)
    cout = _output(c, m, n, beta, overwrite_c)
    a, lower = _symmetric_operand(a, lower)
    b, b_row_major = _general_operand(b, row_major_b_ok)
    if cout is c:
        # Written in place: an operand sharing c's memory is read from a copy,
        # so the result is alpha*A*B + beta*C of the values passed in.
        if np.may_share_memory(cout, a):
            a = a.copy(order="F")
        if np.may_share_memory(cout, b):
            b = b.copy(order="F")  # b (or B^T) keeps its meaning: a copy of the same matrix
    return side, lower, alpha, a, b, b_row_major, beta, cout


def _scipy(alpha, a, b, beta, c, side, lower, overwrite_c):
    try:
        return _scipy_csymm(alpha, a, b, beta, c, side, lower, overwrite_c)
    except _FblasError as exc:
        raise BlasArgumentError(f"csymm: invalid arguments ({exc})") from None


_CORE = []


def _core_module():
    # Imported on first use (the package imports this module while loading).
    if not _CORE:
        from .. import _core
        _CORE.append(_core)
    return _CORE[0]


def csymm(alpha, a, b, beta=0, c=None, side=0, lower=0, overwrite_c=0):
    backend = route("csymm")
    if backend != "scipy":
        _core = _core_module()
        try:
            # The common call (complex64 Fortran-ordered a and b, c None or a
            # complex64 array, plain flags and scalars) is checked and run by
            # one binding; None: the general path below decides.
            cout = _core.csymm_fast(backend, alpha, a, b, beta, c, side, lower, overwrite_c)
            if cout is None:
                try:
                    side_, lower_, alpha_, a_, b_, b_row_major, beta_, cout = _prepare(
                        alpha, a, b, beta, c, side, lower, overwrite_c, row_major_b_ok=backend == "cpu")
                except _Fallback as why:
                    record("csymm", "scipy", str(why))
                    return _scipy(alpha, a, b, beta, c, side, lower, overwrite_c)
                if b_row_major:  # b_ is B^T (a C-ordered b, uncopied)
                    _core.csymm(backend, side_, lower_, alpha_, a_, b_, beta_, cout, b_row_major=True)
                else:
                    _core.csymm(backend, side_, lower_, alpha_, a_, b_, beta_, cout)
        except _core.HostError as exc:  # outputs are untouched when a call fails
            why = kernel_lacking(backend, exc)
            if why is None:
                raise
            record("csymm", "scipy", why)
            return _scipy_route(alpha, a, b, beta, c, side, lower, overwrite_c)
        record("csymm", backend)
        return cout
    record("csymm", "scipy")
    return _scipy_route(alpha, a, b, beta, c, side, lower, overwrite_c)


def _scipy_route(alpha, a, b, beta, c, side, lower, overwrite_c):
    if overwrite_c and type(c) is np.ndarray and not c.flags.writeable:
        overwrite_c = 0  # never write memory the caller marked read-only
    return _scipy(alpha, a, b, beta, c, side, lower, overwrite_c)


csymm.__doc__ = (_scipy_csymm.__doc__ or "") + """
Routed by ascend_linalg: runs on the NPU or CPU device when selected (see
``ascend_linalg.get_backend``), else on scipy. Differences from scipy: a
read-only ``c`` is never written (a copy is returned), and argument errors are
``BlasArgumentError`` (a ``ValueError`` and scipy's f2py ``_fblas.error``).
"""
# The attributes scipy's get_blas_funcs sets on its functions.
csymm.module_name = "fblas"
csymm.typecode = "c"
csymm.prefix = "c"
csymm.dtype = _C64
csymm.int_dtype = np.dtype(np.int32)
