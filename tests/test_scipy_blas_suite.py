"""scipy's own ``linalg/tests/test_blas.py`` symm tests, run with the routed csymm.

The installed scipy's test module is loaded with ``_fblas.csymm`` replaced by
``ascend_linalg.linalg.blas.csymm`` while it is collected, so every
``parametrize_blas(fblas, "symm", ...)`` case with prefix ``c`` calls ours, under
the ``cpu`` backend (the project's kernel). Deselected: none.
"""
import pytest
from scipy.linalg import _fblas

import ascend_linalg
from ascend_linalg.linalg import blas

from _scipy_suite import load

_mod = load("linalg/tests/test_blas.py", "scipy_test_blas_routed",
            {(_fblas, "csymm"): blas.csymm})


@pytest.fixture(autouse=True)
def _cpu_backend():
    with ascend_linalg.use_backend("cpu"):
        yield


class TestBLAS3Symm(_mod.TestBLAS3Symm):
    pass


class TestSyHe(_mod.TestSyHe):
    pass


def test_routed_function_is_collected():
    params = [m for m in TestBLAS3Symm.test_symm.pytestmark if m.name == "parametrize"]
    funcs = [p.values[0] for p in params[0].args[1]]
    assert blas.csymm in funcs
