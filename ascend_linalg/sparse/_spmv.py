"""``spmv``: the NPU operator's fused ``y = alpha*op(A)*x + beta*y``.

scipy has no such call (its products always allocate); this is the
aclsparseSpMV semantics of the SpMV seed document, on every backend.
"""
import numbers

import numpy as np
import scipy.sparse as _sp
from scipy.sparse._sputils import upcast_char

from .._core import HostError
from .._routing import kernel_lacking, record, route
from ._classes import _Routed
from ._residency import track
from ._matvec import _KERNEL_DTYPES, _index_arrays, _operand, run_spmv, sources

__all__ = ["spmv"]


def _scalar(value, name):
    if isinstance(value, (numbers.Number, np.number)) and not isinstance(value, np.timedelta64):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    raise TypeError(f"spmv: {name} must be a number, got {type(value).__name__}")


def spmv(A, x, alpha=1, beta=0, y=None, trans=False):
    """Compute ``y = alpha * op(A) @ x + beta * y`` in one pass.

    Parameters
    ----------
    A : sparse matrix or array (CSR and CSC run as they are; other formats are
        converted with ``tocsr()``)
    x : ndarray, 1-D of length ``op(A).shape[1]``, or 2-D with that many rows
    alpha, beta : numbers
    y : ndarray, optional. Shape ``(op(A).shape[0],) + x.shape[1:]``, dtype equal
        to the compute dtype, writable. Written in place and returned. When
        ``beta == 0`` it is never read (NaN in it does not propagate). When
        omitted, a new array is returned.
    trans : bool. ``op(A) = A.T`` (no conjugation) when true, else ``A``.

    Returns
    -------
    y : ndarray

    The compute dtype is scipy's product dtype of ``A`` and ``x``, widened to
    hold ``alpha`` and ``beta``. On the ``npu``/``cpu`` backends the fused
    kernel runs (float32/64, complex64/128, int32/64); other dtypes, and the
    ``scipy`` backend, compute the same formula with scipy.
    """
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
    dtype = np.result_type(np.dtype(upcast_char(A.dtype.char, x.dtype.char)),
                           np.min_scalar_type(alpha), np.min_scalar_type(beta))
    out_shape = (rows,) + x.shape[1:]
    if y is None:
        y = np.empty(out_shape, dtype=dtype) if beta == 0 else np.zeros(out_shape, dtype=dtype)
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
            target = y if all(s >= 0 and s % dtype.itemsize == 0 for s in y.strides) else np.array(y)
            try:
                run_spmv(backend, A if own else None, version, srcs, hooked,
                         kernel_trans, np.array([alpha], dtype=dtype), index[0], index[1],
                         np.ascontiguousarray(srcs[0], dtype=dtype), srows, scols, _operand(x, dtype),
                         np.array([beta], dtype=dtype), target)
                reason = None
            except HostError as exc:  # y is untouched when a call fails
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
    product = (A.T if trans else A) @ x
    product = np.asarray(product, dtype=dtype) * dtype.type(alpha)
    if beta == 0:
        y[...] = product
    else:
        y[...] = product + dtype.type(beta) * y
    record("spmv", "scipy", reason)
    return y
