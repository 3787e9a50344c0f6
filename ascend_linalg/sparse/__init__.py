"""Drop-in for ``scipy.sparse``.

Everything is scipy's, except ``csr_array``, ``csr_matrix``, ``csc_array`` and
``csc_matrix``, which are subclasses whose products with dense operands run on
the selected device (see :mod:`ascend_linalg`). scipy's construction functions
(``eye``, ``diags``, ``random``, ``kron``, ``vstack``, ...) are wrapped so that a
CSR/CSC result comes back as this library's class. Beyond scipy: ``spmv``, the
fused ``y = alpha*op(A)@x + beta*y`` of the NPU operator.
"""
import functools

import scipy.sparse as _scipy_sparse
from scipy.sparse import *  # noqa: F401,F403

from ._classes import csc_array, csc_matrix, csr_array, csr_matrix, rebrand
from ._spmv import spmv

__all__ = list(_scipy_sparse.__all__) + ["spmv"]


def _returning_ours(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return rebrand(func(*args, **kwargs))
    return wrapper


# scipy functions that build a sparse matrix (the rest return other things).
_CONSTRUCTORS = (
    "block_array", "block_diag", "bmat", "diags", "diags_array", "expand_dims", "eye",
    "eye_array", "hstack", "identity", "kron", "kronsum", "load_npz", "permute_dims",
    "rand", "random", "random_array", "spdiags", "swapaxes", "tril", "triu", "vstack",
)
for _name in _CONSTRUCTORS:
    if hasattr(_scipy_sparse, _name):
        globals()[_name] = _returning_ours(getattr(_scipy_sparse, _name))
del _name


def __getattr__(name):
    return getattr(_scipy_sparse, name)


def __dir__():
    return sorted(set(dir(_scipy_sparse)) | set(globals()))
