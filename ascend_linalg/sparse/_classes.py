"""CSR/CSC classes whose products with dense operands route through the host layer.

Each class is scipy's own with three changes: ``_matmul_vector`` and
``_matmul_multivector`` (the hooks behind ``@``, ``dot``, ``*`` for matrices,
``x @ A``, ``A.T @ x``) go to :func:`._matvec.matvec`; the
``_csr_container`` / ``_csc_container`` properties name these classes, so that
transpose, copy, astype, arithmetic, slicing and tocsr/tocsc keep routing; and
every way scipy offers to change a matrix in place reports the change to
:mod:`._residency` (so a device copy of it is never reused stale).
"""
import functools

import numpy as np
import scipy.sparse as _sp

from . import _residency
from ._matvec import matvec

__all__ = ["csr_array", "csr_matrix", "csc_array", "csc_matrix"]

# scipy's (>= 1.14; it has no _set_self) in-place operations on compressed
# matrices. __setitem__ covers _set_many/_zero_many/_insert_many, setdiag
# covers _setdiag, __imul__/__itruediv__ scale data in place. Every other
# change assigns data/indices/indptr or the shape (check_format, the shape
# setter's __dict__ swap), which _residency sees by keying a device copy on
# those very array objects and the shape: no __setattr__ hook, which would tax
# every construction and slice.
_MUTATORS = ("__setitem__", "setdiag", "sort_indices", "sum_duplicates", "eliminate_zeros",
             "prune", "resize", "__imul__", "__itruediv__")


def _reporting(name):
    method = getattr(_sp.csr_matrix, name)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return getattr(super(_Routed, self), name)(*args, **kwargs)
        finally:
            _residency.changed(self)  # after the change, also when it failed half-way
    return wrapper


class _Routed:
    _transposed_storage = False

    def __matmul__(self, other):
        # What scipy's __matmul__ ends in for an ndarray of shape (N,) (the
        # fast path at the top of _matmul_dispatch), without the isscalarlike
        # test before it, which costs about a microsecond per call.
        if other.__class__ is np.ndarray and other.ndim == 1 and other.shape[0] == self._shape_as_2d[1]:
            return self._matmul_vector(other)
        return super().__matmul__(other)

    def _matmul_vector(self, other):
        y = matvec(self, other, self._transposed_storage)
        if y is None:
            return super()._matmul_vector(other)
        return y[0] if self.ndim == 1 else y

    def _matmul_multivector(self, other):
        y = matvec(self, other, self._transposed_storage)
        if y is None:
            return super()._matmul_multivector(other)
        return y.reshape(other.shape[-1]) if self.ndim == 1 else y


for _name in _MUTATORS:
    setattr(_Routed, _name, _reporting(_name))
del _name


class csr_array(_Routed, _sp.csr_array):
    __doc__ = _sp.csr_array.__doc__

    @property
    def _csr_container(self):
        return csr_array

    @property
    def _csc_container(self):
        return csc_array


class csc_array(_Routed, _sp.csc_array):
    __doc__ = _sp.csc_array.__doc__
    _transposed_storage = True

    @property
    def _csr_container(self):
        return csr_array

    @property
    def _csc_container(self):
        return csc_array


class csr_matrix(_Routed, _sp.csr_matrix):
    __doc__ = _sp.csr_matrix.__doc__

    @property
    def _csr_container(self):
        return csr_matrix

    @property
    def _csc_container(self):
        return csc_matrix


class csc_matrix(_Routed, _sp.csc_matrix):
    __doc__ = _sp.csc_matrix.__doc__
    _transposed_storage = True

    @property
    def _csr_container(self):
        return csr_matrix

    @property
    def _csc_container(self):
        return csc_matrix


# scipy class -> this library's subclass, for results built by scipy's functions.
REBRAND = {
    _sp.csr_array: csr_array,
    _sp.csc_array: csc_array,
    _sp.csr_matrix: csr_matrix,
    _sp.csc_matrix: csc_matrix,
}


def rebrand(obj):
    """A scipy CSR/CSC result as this library's class, sharing its arrays (no copy).

    (``__class__`` assignment is refused for the sparray classes, whose
    layout CPython judges different; the instance state all lives in
    ``__dict__``, so a new instance takes it over.)
    """
    cls = REBRAND.get(type(obj))
    if cls is None:
        return obj
    new = cls.__new__(cls)
    new.__dict__.update(obj.__dict__)
    return new
