"""``spmv``: the NPU operator's fused ``y = alpha*op(A)*x + beta*y``.

scipy has no such call (its products always allocate); this is the
aclsparseSpMV semantics of the SpMV seed document, on every backend.
"""
import numbers

import numpy as np
import scipy.sparse as _sp
from scipy.sparse._sputils import upcast_char

from .. import _core
from .._core import HostError
from .._routing import kernel_lacking, record, route, use_backend
from ._classes import _Routed
from ._residency import track
from ._matvec import (_KERNEL_DTYPES, _ONE, _ZERO, _index_arrays, _operand, aligned, check_structure,
                      kernel_values, run_spmv, sources)

__all__ = ["spmv"]


def _scalar(value, name):
    if isinstance(value, (numbers.Number, np.number)) and not isinstance(value, np.timedelta64):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    raise TypeError(f"spmv: {name} must be a number, got {type(value).__name__}")


_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)
_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
_SCIPY_PLAIN = True  # the plain product's shortcut on scipy (tests switch it off to compare)


def _is_half(dtype):
    """float16, or ml_dtypes' bfloat16 (recognised by name: ml_dtypes is only
    imported by whoever made such an array)."""
    # itemsize first: dtype.name costs microseconds, and every call asks twice
    return dtype.itemsize == 2 and (dtype == np.float16 or dtype.name == "bfloat16")


def _mixed_mode(a_dtype, x_dtype, compute_dtype):
    """(compute dtype, dtypes y may have) for the SpMV seed's mixed-precision
    combinations, None for scipy's own semantics; raises for an unsupported
    request."""
    if _is_half(a_dtype) or _is_half(x_dtype):
        if a_dtype != x_dtype:
            raise TypeError(f"spmv: float16/bfloat16 needs A and x of one dtype, got {a_dtype} and {x_dtype}")
        if compute_dtype is not None and np.dtype(compute_dtype) != _F32:
            raise TypeError(f"spmv: {a_dtype} accumulates in float32, not {np.dtype(compute_dtype)}")
        return _F32, (_F32, a_dtype)
    if compute_dtype is None:
        return None
    compute = np.dtype(compute_dtype)
    if a_dtype == _I32 and x_dtype == _I32 and compute in (_I32, _F32):
        return compute, (compute,)
    raise TypeError(f"spmv: compute_dtype={compute} is supported for float16/bfloat16 A and x "
                    f"(float32) and int32 A and x (int32 or float32), not {a_dtype} and {x_dtype}")


_U8 = np.dtype(np.uint8)
_COMPUTE = {}  # (A, x, alpha's, beta's min_scalar_type chars) -> compute dtype


def _min_scalar_type(value):
    """np.min_scalar_type, without its cost for the usual small Python ints."""
    if type(value) is int and 0 <= value < 256:
        return _U8
    return np.min_scalar_type(value)


def _compute_dtype(a_dtype, x_dtype, alpha, beta):
    """scipy's product dtype of A and x, widened to hold alpha and beta
    (memoised: np.result_type and upcast_char cost microseconds a call)."""
    key = (a_dtype.char, x_dtype.char, _min_scalar_type(alpha).char, _min_scalar_type(beta).char)
    dtype = _COMPUTE.get(key)
    if dtype is None:
        dtype = np.result_type(np.dtype(upcast_char(a_dtype.char, x_dtype.char)),
                               _min_scalar_type(alpha), _min_scalar_type(beta))
        _COMPUTE[key] = dtype
    return dtype


def _raw_csr(A, shape):
    """``(data, indices, indptr)`` + shape: data as an ndarray (any dtype, float16
    and bfloat16 included, which scipy's classes refuse) and a project
    csr_matrix over the same index arrays holding data converted later."""
    if shape is None:
        raise TypeError("spmv: A given as (data, indices, indptr) needs shape=(rows, cols)")
    if len(A) != 3:
        raise TypeError("spmv: A given as a tuple must be (data, indices, indptr)")
    data = np.asarray(A[0])
    if data.ndim != 1:
        raise ValueError("spmv: data must be 1-D")
    return data, A[1], A[2], tuple(shape)


def _kernel_target(y, itemsize, *inputs):
    """The array the kernel writes: y itself, or a copy of it (written back
    by the caller) where the kernel cannot write y in place: an unaligned y,
    strides that are negative or not whole elements, or memory that y may
    share with an input (``spmv(A, x, y=x)``). The kernels write y while other threads still
    read x and A, so writing an input in place would give wrong sums; numpy's
    ``out=`` buffers such overlap in the same way. ``np.may_share_memory``
    only compares the arrays' bounds: no cost worth counting."""
    if y.flags.aligned and all(s >= 0 and s % itemsize == 0 for s in y.strides) and not any(
            np.may_share_memory(y, a) for a in inputs):
        return y
    return np.array(y)


def spmv(A, x, alpha=1, beta=0, y=None, trans=False, compute_dtype=None, out_dtype=None, shape=None):
    """Compute ``y = alpha * op(A) @ x + beta * y`` in one pass.

    Parameters
    ----------
    A : sparse matrix or array (CSR and CSC run as they are; other formats are
        converted with ``tocsr()``), or the CSR arrays ``(data, indices,
        indptr)`` with ``shape=(rows, cols)`` (the form float16/bfloat16 values
        take: scipy's classes refuse them)
    x : ndarray, 1-D of length ``op(A).shape[1]``, or 2-D with that many rows
    alpha, beta : numbers
    y : ndarray, optional. Shape ``(op(A).shape[0],) + x.shape[1:]``, dtype equal
        to the compute dtype, writable. Written in place and returned. When
        ``beta == 0`` it is never read (NaN in it does not propagate). When
        omitted, a new array is returned.
    trans : bool. ``op(A) = A.T`` (no conjugation) when true, else ``A``.
    compute_dtype, out_dtype : the SpMV seed's mixed-precision modes, which
        scipy.sparse itself has not (it refuses float16 data):

        * ``A`` and ``x`` float16, or bfloat16 (``ml_dtypes.bfloat16``): products
          and sums in float32 (``compute_dtype`` None or float32); ``y`` float32
          (default) or the input's type (``out_dtype``, or a ``y`` of that
          dtype), rounded once at the end;
        * ``A`` and ``x`` int32: ``compute_dtype`` int32 (the default: scipy's
          wrapping integer product) or float32 (values converted to float32,
          ``y`` float32).

        Values are converted to the compute dtype as they are read: on the
        ``cpu`` backend float16/bfloat16 values are widened by the kernels in
        place (no copy of A); elsewhere, and for int32 values, into a
        temporary copy first.

    Returns
    -------
    y : ndarray

    The compute dtype is scipy's product dtype of ``A`` and ``x``, widened to
    hold ``alpha`` and ``beta``. On the ``npu``/``cpu`` backends the fused
    kernel runs (float32/64, complex64/128, int32/64); other dtypes, and the
    ``scipy`` backend, compute the same formula with scipy. Values of another
    dtype than the compute dtype are converted to it first, as scipy does,
    except on the ``cpu`` backend with int32 indices for bool or int8 values
    under a float32 or float64 compute dtype and float32, int32 or int64
    values under float64: the kernels widen those as they read them (the same
    values as ``astype`` gives, no copy of A). On every backend
    ``alpha == 1`` scales nothing (``spmv(A, x)`` is scipy's ``op(A) @ x``,
    complex Inf and NaN as scipy has them) and ``beta == 0`` never reads y.
    """
    if (type(x) is np.ndarray and compute_dtype is None and out_dtype is None and shape is None
            and getattr(A, "format", None) in ("csr", "csc") and _sp.issparse(A) and A.ndim == 2):
        backend = route("spmv")
        if backend == "cpu":
            # The common call (one vector, matching native dtypes, float alpha and
            # beta that keep the dtype, contiguous arrays, a y of its own memory)
            # in one step; None: anything else, decided below.
            csc = A.format == "csc"
            rows, cols = A.shape[::-1] if csc else A.shape
            out = _core.spmv_fast(bool(trans) != csc, A.data, A.indices, A.indptr, rows, cols, x, alpha, beta, y)
            if out is not None:
                record("spmv", "cpu")
                return out
        elif (_SCIPY_PLAIN and backend == "scipy" and y is None and x.ndim == 1
              and x.dtype == A.dtype and x.dtype in _FLOATS
              and type(alpha) in (int, float) and alpha == 1 and type(beta) in (int, float) and beta == 0
              and len(x) == A.shape[0 if trans else 1]):
            # The plain product on scipy (auto without an NPU): scipy's own
            # result, which is what the general path below returns for it, and
            # its dtype (alpha 1 and beta 0 widen no float dtype). The
            # project's classes go straight to scipy's product: their own @
            # would decide the backend again.
            op = A.T if trans else A
            product = super(_Routed, op)._matmul_vector(x) if isinstance(op, _Routed) else op @ x
            record("spmv", "scipy")
            return product
    raw = None
    if isinstance(A, tuple):
        raw = _raw_csr(A, shape)
        if not _is_half(raw[0].dtype):
            from ._classes import csr_matrix
            A, raw = csr_matrix(A, shape=raw[3]), None
    elif shape is not None and _sp.issparse(A) and tuple(shape) != A.shape:
        raise ValueError(f"spmv: shape={tuple(shape)} does not match A.shape={A.shape}")
    if raw is not None:
        return _spmv_raw_half(raw, x, alpha, beta, y, trans, compute_dtype, out_dtype)
    if not _sp.issparse(A):
        raise TypeError(f"spmv: A must be a scipy/ascend_linalg sparse matrix, got {type(A).__name__}")
    if A.ndim != 2:
        raise ValueError("spmv: A must be 2-D")
    alpha = _scalar(alpha, "alpha")
    beta = _scalar(beta, "beta")
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"spmv: x must be 1-D or 2-D, got {x.ndim}-D")
    trans = bool(trans)
    rows, cols = A.shape[::-1] if trans else A.shape
    if x.shape[0] != cols:
        raise ValueError(f"spmv: dimension mismatch: op(A) is {rows} x {cols}, x has {x.shape[0]} rows")
    mixed = _mixed_mode(A.dtype, x.dtype, compute_dtype)
    if mixed is not None:
        return _spmv_mixed(A.dtype, lambda d: A.astype(d) if A.format in ("csr", "csc") else A.tocsr().astype(d),
                           x, alpha, beta, y, trans, mixed, out_dtype, rows, None)
    if out_dtype is not None:
        raise TypeError("spmv: out_dtype is only for the float16/bfloat16 modes; "
                        "y has the compute dtype")
    dtype = _compute_dtype(A.dtype, x.dtype, alpha, beta)
    out_shape = (rows,) + x.shape[1:]
    if y is None:
        y = _core.empty_result(out_shape, dtype) if beta == 0 else np.zeros(out_shape, dtype=dtype)
    else:
        if not isinstance(y, np.ndarray):
            raise TypeError(f"spmv: y must be an ndarray, got {type(y).__name__}")
        if y.shape != out_shape:
            raise ValueError(f"spmv: y must have shape {out_shape}, got {y.shape}")
        if y.dtype != dtype:
            raise TypeError(f"spmv: y must have the compute dtype {dtype}, got {y.dtype}")
        if not y.flags.writeable:
            raise ValueError("spmv: y is read-only")
    backend = route("spmv")
    if backend != "scipy" and dtype in _KERNEL_DTYPES:
        # A converted here is a temporary: no device copy outlives the call.
        own = A.format in ("csr", "csc")
        if not own:
            A = A.tocsr()
        hooked = isinstance(A, _Routed)  # reports its own changes; others are always checked
        version = track(A) if backend == "npu" and own and hooked else 0  # before the arrays are read
        srcs = sources(A)
        index = _index_arrays(srcs[2], srcs[1])
        if index is not None:
            # CSC storage is the CSR form of A.T over the same arrays.
            kernel_trans = trans != (A.format == "csc")
            srows, scols = A.shape[::-1] if A.format == "csc" else A.shape
            values = kernel_values(backend, srcs[0], dtype, index[1])
            operand = _operand(x, dtype, kernel_trans, backend)
            # (not flags.c_contiguous: that ignores the strides of length-1 axes)
            target = _kernel_target(y, dtype.itemsize, operand, values, index[0], index[1])
            try:
                run_spmv(backend, A if own else None, version, srcs, hooked,
                         kernel_trans, _ONE[dtype] if alpha == 1 else np.array([alpha], dtype=dtype),
                         index[0], index[1], values, srows, scols,
                         operand, _ZERO[dtype] if beta == 0 else np.array([beta], dtype=dtype), target)
                reason = None
            except HostError as exc:  # a lacking kernel never wrote y (a malformed A may have: guarantees.md)
                reason = kernel_lacking(backend, exc)
                if reason is None:
                    raise
            if reason is None:
                if target is not y:
                    y[...] = target
                record("spmv", backend)
                return y
        else:
            reason = f"index arrays of dtype {srcs[1].dtype} are not integers"
    else:
        reason = None if backend == "scipy" else f"no {backend} kernel for dtype {dtype}"
    if reason is None:
        product = (A.T if trans else A) @ x
    else:
        if A.format in ("csr", "csc"):  # as the kernels would have: see check_structure
            check_structure(A, *(A.shape[::-1] if A.format == "csc" else A.shape))
        with use_backend("scipy"):  # the device was asked already: it lacks this case
            product = (A.T if trans else A) @ x
    product = np.asarray(product, dtype=dtype)
    if alpha != 1:  # as the kernels: alpha 1 scales nothing (complex Inf * (1+0j) would give NaN)
        product = product * dtype.type(alpha)
    if beta == 0:
        y[...] = product
    else:
        y[...] = product + dtype.type(beta) * y
    record("spmv", "scipy", reason)
    return y


def _spmv_raw_half(raw, x, alpha, beta, y, trans, compute_dtype, out_dtype):
    data, indices, indptr, shape = raw
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"spmv: x must be 1-D or 2-D, got {x.ndim}-D")
    rows, cols = shape[::-1] if trans else shape
    if x.shape[0] != cols:
        raise ValueError(f"spmv: dimension mismatch: op(A) is {rows} x {cols}, x has {x.shape[0]} rows")
    mixed = _mixed_mode(data.dtype, x.dtype, compute_dtype)
    _scalar(alpha, "alpha")
    _scalar(beta, "beta")

    def convert(d):
        from ._classes import csr_matrix
        return csr_matrix((data.astype(d), indices, indptr), shape=shape)
    return _spmv_mixed(data.dtype, convert, x, alpha, beta, y, bool(trans), mixed, out_dtype, rows, raw)


def _spmv_half_native(raw, xc, alpha, beta, yc, trans, rows):
    """The float16/bfloat16 values as they are stored, widened to float32 by
    the CPU device's kernels as they are read (no float32 copy of A); x and y
    in float32. None where this path does not apply (another backend, values
    in non-native byte order, index arrays that are not integers, data and
    indices of different lengths): the caller then converts A."""
    data, indices, indptr, shape = raw
    if route("spmv") != "cpu" or not data.dtype.isnative or len(data) != len(indices) or not (
            isinstance(indices, np.ndarray) and isinstance(indptr, np.ndarray)):
        return None
    index = _index_arrays(indptr, indices)
    if index is None or index[0].ndim != 1 or index[1].ndim != 1:
        return None
    out_shape = (rows,) + xc.shape[1:]
    if yc is None:
        yc = np.empty(out_shape, dtype=_F32) if beta == 0 else np.zeros(out_shape, dtype=_F32)
    values = aligned(np.ascontiguousarray(data))
    operand = _operand(xc, _F32, trans, "cpu")
    target = _kernel_target(yc, 4, operand, values, index[0], index[1])
    _core.spmv("cpu", trans, np.array([alpha], dtype=_F32), index[0], index[1], values,
               shape[0], shape[1], operand, np.array([beta], dtype=_F32), target)
    if target is not yc:
        yc[...] = target
    record("spmv", "cpu")
    return yc


def _as_compute(a, compute):
    """``np.asarray(a, dtype=compute)``; float16 into float32 by the host
    layer's exact widening (F16C where the CPU has it: 0.05 ms for 1e6
    values, numpy's cast 1.2 ms)."""
    a = np.asarray(a)
    if (a.dtype == np.float16 and compute == _F32 and a.dtype.isnative and a.flags.c_contiguous
            and a.flags.aligned and route("spmv") != "scipy"):
        return _core.widen_f16(a.view(np.uint16))
    return np.asarray(a, dtype=compute)


def _spmv_mixed(a_dtype, convert, x, alpha, beta, y, trans, mixed, out_dtype, rows, raw):
    """A mixed-precision mode: A (``convert(dtype)``) and x converted to the
    compute dtype (exact for float16/bfloat16 into float32), the fused product
    computed there, y rounded to its dtype once. ``raw``: the CSR arrays of
    16-bit values, which the CPU device reads as they are."""
    compute, outputs = mixed
    out_shape = (rows,) + x.shape[1:]
    if y is not None:
        if not isinstance(y, np.ndarray):
            raise TypeError(f"spmv: y must be an ndarray, got {type(y).__name__}")
        if out_dtype is not None and np.dtype(out_dtype) != y.dtype:
            raise TypeError(f"spmv: y has dtype {y.dtype} but out_dtype is {np.dtype(out_dtype)}")
        out = y.dtype
    else:
        out = compute if out_dtype is None else np.dtype(out_dtype)
    if out not in outputs:
        raise TypeError(f"spmv: with {a_dtype} A and x computing in {compute}, y may be "
                        f"{' or '.join(str(d) for d in outputs)}, not {out}")
    for name, v in (("alpha", alpha), ("beta", beta)):
        if np.iscomplexobj(v) or (compute == _I32 and not float(v).is_integer()):
            raise TypeError(f"spmv: {name}={v!r} does not fit the {compute} compute dtype")
    xc = _as_compute(x, compute)
    if y is None:
        yc = None
    else:
        if y.shape != out_shape:
            raise ValueError(f"spmv: y must have shape {out_shape}, got {y.shape}")
        if not y.flags.writeable:
            raise ValueError("spmv: y is read-only")
        yc = y if y.dtype == compute else (_as_compute(y, compute) if beta != 0
                                            else np.empty(out_shape, dtype=compute))
    result = None
    if raw is not None and compute == _F32:
        result = _spmv_half_native(raw, xc, compute.type(alpha), compute.type(beta), yc, trans, rows)
    if result is None:
        result = spmv(convert(compute), xc, compute.type(alpha), compute.type(beta), yc, trans)
    if y is None:
        return result if out == compute else result.astype(out)
    if result is not y:
        y[...] = result
    return y
