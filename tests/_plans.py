"""A transposed product under forced prefetch plans, checked against plan 1
(no target prefetch: the per-row loop in a scattered block) and scipy.
Shared by the tests of the scattered blocks' chunk loops
(test_spmv_groups.py, test_spmvt_filled.py)."""
import numpy as np

import ascend_linalg
from ascend_linalg import _core


def bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


def assert_plans_give_the_row_loops_bits(S, A, x, nthreads):
    """``A.T @ x`` under plans 0, 1 and 4: plans 0 and 4 bit for bit plan 1's;
    on one thread (one block, the sums in row order) scipy's bits too, else
    scipy's result to rounding (the blocks' partials are added)."""
    got = {}
    with ascend_linalg.use_backend("cpu"):
        for plan in (0, 1, 4):
            _core.spmv_prefetch_force(plan)
            got[plan] = A.T @ x
    ref = S.T @ x
    for plan in (0, 4):
        np.testing.assert_array_equal(bits(got[plan]), bits(got[1]))
    if nthreads == 1:
        np.testing.assert_array_equal(bits(got[1]), bits(ref))
    else:
        np.testing.assert_allclose(got[4], ref, **tol(x.dtype))


def empty_runs(rng, n, mean, run):
    """n row lengths ~ Poisson(mean), with runs of `run` empty rows every 300
    rows from row 50 (some across the 256-row chunks' edges)."""
    lengths = rng.poisson(mean, n)
    for start in range(50, n, 300):
        lengths[start:start + run] = 0
    return lengths
