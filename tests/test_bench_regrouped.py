"""benchmarks/bench_spmv_long_rows.py's ``regrouped``: a matrix's nonzeros,
in its order, in rows of a fixed length (the ``rows of 1024`` line of
``--parts``). The timing is only meaningful if the regrouped matrix holds
exactly the same loads in the same order."""
import os
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
with warnings.catch_warnings():  # the module sets a filter for its own runs: kept out of the test session
    from bench_spmv_long_rows import regrouped  # noqa: E402


@pytest.mark.parametrize("length", [1, 3, 7, 1024])
def test_regrouped_keeps_the_nonzeros_in_order(length):
    rng = np.random.default_rng(length)
    P = sp.random(40, 30, density=0.2, format="csr", random_state=rng, dtype=np.float64)
    before = (P.data.copy(), P.indices.copy(), P.indptr.copy())
    M = regrouped(P, length)
    rows = -(-P.nnz // length)
    assert M.shape == (rows, P.shape[1])
    np.testing.assert_array_equal(M.data, before[0])
    np.testing.assert_array_equal(M.indices, before[1])
    np.testing.assert_array_equal(np.diff(M.indptr)[:-1], length)
    assert M.indptr[-1] == P.nnz and 1 <= M.indptr[-1] - M.indptr[-2] <= length
    # P itself untouched
    for a, b in zip(before, (P.data, P.indices, P.indptr)):
        np.testing.assert_array_equal(a, b)
    # the same products: column sums (A.T @ ones) agree
    np.testing.assert_allclose(M.T @ np.ones(rows), P.T @ np.ones(P.shape[0]), rtol=1e-12)


def test_regrouped_keeps_a_column_twice_in_a_row():
    # rows 0 and 1 both hold column 2: a new row of 2 spanning them holds it twice
    P = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 2, 0]), np.array([0, 1, 2, 3])), shape=(3, 4))
    M = regrouped(P, 2)
    np.testing.assert_array_equal(M.indices, [2, 2, 0])
    np.testing.assert_array_equal(M @ np.arange(4.0), [6.0, 0.0])
