"""Drop-in for ``scipy.linalg``: everything is scipy's, with ``blas`` replaced by
:mod:`ascend_linalg.linalg.blas` (routed ``csymm``) and ``get_blas_funcs``
handing out the routed functions.
"""
import scipy.linalg as _scipy_linalg
from scipy.linalg import *  # noqa: F401,F403

from . import blas
from .blas import get_blas_funcs

__all__ = list(_scipy_linalg.__all__)


def __getattr__(name):
    return getattr(_scipy_linalg, name)


def __dir__():
    return sorted(set(dir(_scipy_linalg)) | set(globals()))
