"""CSR/CSC classes whose products with dense operands route through the host layer.

Each class is scipy's own with two changes: ``_matmul_vector`` and
``_matmul_multivector`` (the hooks behind ``@``, ``dot``, ``*`` for matrices,
``x @ A``, ``A.T @ x``) go to :func:`._matvec.matvec`, and the
``_csr_container`` / ``_csc_container`` properties name these classes, so that
transpose, copy, astype, arithmetic, slicing and tocsr/tocsc keep routing.
"""
import scipy.sparse as _sp

from ._matvec import matvec

__all__ = ["csr_array", "csr_matrix", "csc_array", "csc_matrix"]


class _Routed:
    _transposed_storage = False

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
