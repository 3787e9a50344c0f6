"""Shared fixtures: run a test body once per backend and collect dispatch records.

``backend`` enters ``ascend_linalg.use_backend`` for the test (ids ``cpu`` and
``scipy``; ``npu`` instead of ``cpu`` when ``$ASCEND_LINALG_TEST_DEVICE=npu``,
see ``ascend_linalg.testing.kernel_device``); ``dispatch`` collects the
``(op, backend, reason)`` records emitted while the test runs. Together they
let a test compare values with scipy under both backends and, under the
project's device, prove that the project's kernel ran.
"""
import numpy as np
import pytest

import ascend_linalg
from ascend_linalg import _core
from ascend_linalg.testing import dispatch_records, kernel_device

BACKENDS = (kernel_device(), "scipy")


@pytest.fixture(params=BACKENDS)
def backend(request):
    """The backend name, entered with ``use_backend`` for the whole test."""
    with ascend_linalg.use_backend(request.param):
        yield request.param


@pytest.fixture
def dispatch():
    """List that fills with ``(op, backend, reason)`` dispatch records."""
    with dispatch_records() as records:
        yield records


@pytest.fixture
def fresh_spmv_plans():
    """No forced SpMV prefetch plan and no size class timed yet, before and
    after the test (``_core.spmv_prefetch_force``, ``spmv_prefetch_reset``)."""
    _core.spmv_prefetch_force(-1)
    _core.spmv_prefetch_reset()
    yield
    _core.spmv_prefetch_force(-1)
    _core.spmv_prefetch_reset()


@pytest.fixture
def threads():
    """``ascend_linalg.set_num_threads``; the thread count is restored after the test."""
    before = ascend_linalg.get_num_threads()
    yield ascend_linalg.set_num_threads
    ascend_linalg.set_num_threads(before)


@pytest.fixture
def rng():
    """A fresh, seeded generator per test, so that every test is reproducible alone."""
    return np.random.default_rng(1234)
