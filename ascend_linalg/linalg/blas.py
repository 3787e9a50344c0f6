"""Drop-in for ``scipy.linalg.blas``: every name is scipy's, except ``csymm``
(routed through the host layer) and ``get_blas_funcs``, which hands out the
routed ``csymm`` wherever scipy's would hand out its own.
"""
import functools

import scipy.linalg.blas as _scipy_blas
from scipy.linalg import _fblas

from ._csymm import BlasArgumentError, csymm

__all__ = ["get_blas_funcs", "find_best_blas_type", "csymm", "BlasArgumentError"]

find_best_blas_type = _scipy_blas.find_best_blas_type

# scipy function -> routed replacement
_ROUTED = {_fblas.csymm: csymm}


@functools.wraps(_scipy_blas.get_blas_funcs)
def get_blas_funcs(names, arrays=(), dtype=None, ilp64=False):
    funcs = _scipy_blas.get_blas_funcs(names, arrays, dtype, ilp64)
    if isinstance(funcs, (list, tuple)):
        return [_ROUTED.get(f, f) for f in funcs]
    return _ROUTED.get(funcs, funcs)


def __getattr__(name):
    return getattr(_scipy_blas, name)


def __dir__():
    return sorted(set(dir(_scipy_blas)) | set(globals()))
