"""Sparse matrix times dense vector(s) through the host layer.

``matvec`` is what the routed classes' ``_matmul_vector`` / ``_matmul_multivector``
call: it returns the product computed on the selected device, or ``None`` when the
call belongs to scipy (scipy backend, or a dtype the kernels lack; the reason is
logged). Result dtype is scipy's ``upcast_char`` of the matrix and operand.
"""
import numpy as np
from scipy.sparse._sputils import upcast_char

from .._routing import kernel_lacking, record, route
from . import _residency
from .. import _core
from .._core import HostError

# Result dtypes the SpMV kernels compute in, with their alpha = 1 and beta = 0.
_KERNEL_DTYPES = frozenset(np.dtype(t) for t in (
    np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64))
_ONE = {t: np.ones(1, dtype=t) for t in _KERNEL_DTYPES}
_ZERO = {t: np.zeros(1, dtype=t) for t in _KERNEL_DTYPES}
_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_WIDENED = {}  # (values, result, index dtype) -> the host's answer, asked once


def widened(backend, data, dtype, indices):
    """Whether the ``backend`` kernel of result ``dtype`` reads ``data`` as it
    is, widening each value as numpy's ``astype(dtype)`` would (the CPU
    kernels, for the pairs ``spmvWidenedValues`` in host/spmv_internal.h
    names): the product is the one over ``data.astype(dtype)``, without that
    copy."""
    if backend != "cpu":
        return False
    key = (data.dtype, dtype, indices.dtype)
    answer = _WIDENED.get(key)
    if answer is None:
        answer = _WIDENED[key] = _core.spmv_reads_widened(*key)
    return answer


def kernel_values(backend, data, dtype, indices):
    """``data`` as the ``backend`` kernel of result ``dtype`` reads it: as it
    is where the kernel widens it (``widened``), else converted to ``dtype``;
    contiguous and aligned either way."""
    if widened(backend, data, dtype, indices):
        return aligned(np.ascontiguousarray(data))
    return aligned(np.ascontiguousarray(data, dtype=dtype))


def aligned(a):
    """``a``, or an aligned copy of it: the kernels read every array through
    typed pointers, which must be aligned (an array made with
    ``np.frombuffer(..., offset=1)`` is not; ``np.ascontiguousarray`` keeps
    it as it is, and ``_core.spmv`` refuses it)."""
    return a if a.flags.aligned else np.array(a)


def _index_arrays(indptr, indices):
    """(indptr, indices) as one int32/int64 dtype, or None when they are not integers."""
    if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
        return None
    if indptr.dtype != indices.dtype or indptr.dtype not in _INDEX_DTYPES:
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int64)
    return aligned(np.ascontiguousarray(indptr)), aligned(np.ascontiguousarray(indices))


def check_structure(A, rows, cols):
    """Raise ``ValueError``, as the kernels do, when A's arrays (the CSR form
    of a ``rows`` x ``cols`` matrix) are not a valid structure.

    The cpu and npu backends promise that a malformed matrix raises (docs/
    guarantees.md). A product they hand to scipy (a result dtype without a
    kernel, such as bool or int8) gets this check first: scipy's own product
    trusts the structure, reads out of bounds and may crash. Index arrays
    that are not integers are left to scipy, which raises for them."""
    data, indices, indptr = sources(A)
    if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
        return
    if indptr.ndim != 1 or len(indptr) != rows + 1:
        raise ValueError(f"indptr has length {len(indptr)}, expected rows + 1 = {rows + 1}")
    nnz = min(len(indices), len(data))
    if indptr[0] != 0:
        raise ValueError(f"indptr[0] must be 0, got {indptr[0]}")
    last = int(indptr[-1])
    if not 0 <= last <= nnz:
        raise ValueError(f"indptr[-1] = {last} is outside [0, nnz = {nnz}]")
    bad = rows > 1 and bool((indptr[1:] < indptr[:-1]).any())
    if not bad and last:
        used = indices[:last]  # one pass: as unsigned, a negative index is past cols too
        bad = bool(used.view(used.dtype.str.replace("i", "u")).max() >= cols)
    if bad:
        raise ValueError("malformed sparse structure: indptr must be non-decreasing within [0, nnz] and "
                         f"every index must lie in [0, {cols})")


def _operand(x, dtype, trans, backend):
    """x as the kernel of ``op(A) @ x`` (``trans``: op is A^T) on ``backend``
    reads it."""
    if x.dtype != dtype or not x.flags.aligned:
        return x.astype(dtype)  # C order, aligned
    if x.flags.c_contiguous:
        return x
    item = dtype.itemsize
    if any(s < 0 or s % item for s in x.strides):
        return np.ascontiguousarray(x)
    if backend != "cpu" and not trans and x.ndim == 2 and x.shape[1] > 1 and x.strides[1] != item:
        # The non-transposed kernel reads a row of X per nonzero, at random:
        # its rows must be contiguous. scipy copies such an X to C order too
        # (other.ravel()), in one thread; the CPU device packs X's rows
        # itself, on every thread. The transposed kernel reads X's rows in
        # order and gathers a strided row itself, so it takes X as it is.
        return np.ascontiguousarray(x)
    return x


def sources(A):
    """A's own (data, indices, indptr), each attribute read once: the arrays a
    call converts and the ones its device copy is keyed on are the same."""
    return A.data, A.indices, A.indptr


def run_spmv(backend, A, version, srcs, hooked, trans, alpha, indptr, indices, data, rows, cols, x, beta, y):
    """``_core.spmv`` on arrays made from ``srcs`` (:func:`sources` of matrix
    ``A``); on the npu through A's device copy (:mod:`._residency`),
    ``version`` being A's version read before ``srcs`` were (``A`` None: a
    temporary, no copy). When device memory runs out while other matrices hold
    copies, those are freed and the call is tried once more. ``hooked``: A's
    class reports its own changes."""
    if backend != "npu" or A is None:
        _core.spmv(backend, trans, alpha, indptr, indices, data, rows, cols, x, beta, y)
        return
    resident, verify = _residency.resident_for(A, version, srcs, data.dtype, indptr.dtype, hooked)
    try:
        _core.spmv(backend, trans, alpha, indptr, indices, data, rows, cols, x, beta, y,
                   resident=resident, verify=verify)
    except MemoryError:
        if resident is None or not _residency.evict_others(A):
            raise
        _core.spmv(backend, trans, alpha, indptr, indices, data, rows, cols, x, beta, y,
                   resident=resident, verify=verify)


def matvec(A, other, transposed):
    """``A @ other`` for 1-D or 2-D ndarray ``other`` (shape already checked).

    ``transposed`` is True for CSC storage: the arrays then describe the CSR
    form of A.T and the transposed kernel computes A @ other.
    """
    op = "csc_matvec" if transposed else "csr_matvec"
    backend = route(op)
    if backend == "scipy":
        record(op, "scipy")
        return None
    if backend == "cpu" and other.ndim == 1:
        # The common call (one vector, matching native dtypes, contiguous
        # arrays) in one step; None: anything else, decided below.
        M, N = A._shape_as_2d
        y = _core.spmv_fast(transposed, A.data, A.indices, A.indptr, N if transposed else M,
                            M if transposed else N, other)
        if y is not None:
            record(op, backend)
            return y
    dtype = A.dtype
    if other.dtype != dtype or dtype not in _KERNEL_DTYPES:  # the same kernel dtype: upcast is itself
        dtype = np.dtype(upcast_char(dtype.char, other.dtype.char))
    M, N = A._shape_as_2d
    rows, cols = (N, M) if transposed else (M, N)
    if dtype not in _KERNEL_DTYPES:
        check_structure(A, rows, cols)
        record(op, "scipy", f"no {backend} kernel for result dtype {dtype}")
        return None
    version = _residency.track(A) if backend == "npu" else 0  # before the arrays are read
    srcs = sources(A)
    index = _index_arrays(srcs[2], srcs[1])
    if index is None:
        record(op, "scipy", f"index arrays of dtype {srcs[1].dtype} are not integers")
        return None
    indptr, indices = index
    data = kernel_values(backend, srcs[0], dtype, indices)
    x = _operand(other, dtype, transposed, backend)
    y = _core.empty_result((M,) + other.shape[1:], dtype)
    try:
        run_spmv(backend, A, version, srcs, True, transposed, _ONE[dtype], indptr, indices, data, rows, cols,
                 x, _ZERO[dtype], y)
    except HostError as exc:
        why = kernel_lacking(backend, exc)
        if why is None:
            raise
        check_structure(A, rows, cols)
        record(op, "scipy", why)
        return None
    record(op, backend)
    return y
