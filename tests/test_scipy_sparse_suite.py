"""scipy's own ``sparse/tests/test_base.py`` CSR/CSC classes, run with this
project's classes in place of scipy's, under the ``cpu`` backend.

The installed scipy's test module is loaded with ``scipy.sparse.csr_matrix``,
``csr_array``, ``csc_matrix`` and ``csc_array`` replaced by
``ascend_linalg.sparse``'s while it executes, so the classes' ``spcreator`` and
``csr_container`` / ``csc_container`` build ours. Deselected: see _DESELECT.
"""
import pytest
import scipy.sparse

import ascend_linalg
import ascend_linalg.sparse as al_sparse

from _scipy_suite import load

_mod = load("sparse/tests/test_base.py", "scipy_test_base_routed", {
    (scipy.sparse, name): getattr(al_sparse, name)
    for name in ("csr_matrix", "csr_array", "csc_matrix", "csc_array")
})

# test id substring -> reason. Empty: every inherited test runs.
_DESELECT = {}


@pytest.fixture(autouse=True)
def _cpu_backend(request):
    for key, reason in _DESELECT.items():
        if key in request.node.nodeid:
            pytest.skip(reason)
    with ascend_linalg.use_backend("cpu"):
        yield


TestCSR = _mod.TestCSR
TestCSRMatrix = _mod.TestCSRMatrix
TestCSC = _mod.TestCSC
TestCSCMatrix = _mod.TestCSCMatrix
TestCSRNonCanonical = _mod.TestCSRNonCanonical
TestCSRNonCanonicalMatrix = _mod.TestCSRNonCanonicalMatrix
TestCSCNonCanonical = _mod.TestCSCNonCanonical
TestCSCNonCanonicalMatrix = _mod.TestCSCNonCanonicalMatrix


def test_suite_builds_project_classes():
    assert type(TestCSR.datsp) is al_sparse.csr_array
    assert type(TestCSCMatrix.datsp) is al_sparse.csc_matrix
    assert TestCSRMatrix.csr_container is al_sparse.csr_matrix
