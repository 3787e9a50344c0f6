"""The cache of memory behind large product results (ascend_linalg/_core_results.cpp).

A CPU-device result of 32 MiB or more is an ndarray made by numpy under this
project's memory handler; freed, its memory waits idle for the next such
result. These tests check that such results are right (a reused block's old
values never show), that they are ordinary arrays, and that the cache keeps
its bounds.
"""
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
from ascend_linalg import _core
from ascend_linalg import sparse as S

MIN = _core.result_cache_info()["min_result_bytes"]
HANDLER = "ascend_linalg_results"


def handler_name(a):
    return np.lib.get_handler_name(a) if hasattr(np.lib, "get_handler_name") else \
        np._core.multiarray.get_handler_name(a)


@pytest.fixture(autouse=True)
def cpu_and_default_limit():
    limit = _core.result_cache_info()["limit_bytes"]
    with ascend_linalg.use_backend("cpu"):
        yield
    ascend_linalg.set_result_cache_limit(limit)


def mostly_empty(n, m, dtype, seed=0):
    """n x m CSR, about 1% of the rows holding 3 nonzeros: most of the result's rows are empty."""
    rng = np.random.default_rng(seed)
    L = np.where(rng.random(n) < 0.01, 3, 0)
    indptr = np.concatenate([[0], np.cumsum(L)])
    nnz = int(indptr[-1])
    data = rng.standard_normal(nnz) + (1j * rng.standard_normal(nnz) if np.dtype(dtype).kind == "c" else 0)
    return sp.csr_matrix((data.astype(dtype), rng.integers(0, m, nnz), indptr), shape=(n, m))


def rows_for(nbytes, itemsize, k=1):
    return -(-nbytes // (itemsize * k)) + 7  # past nbytes, not a round number


# products with a result past the threshold: (name, dtype, vectors, op)
CASES = [("A @ x float64", np.float64, 1, "N"), ("A @ x complex64", np.complex64, 1, "N"),
         ("A @ X float32", np.float32, 4, "N"), ("A.T @ X complex128", np.complex128, 3, "T"),
         ("A.T @ x float64", np.float64, 1, "T"), ("A @ X int64", np.int64, 2, "N")]


def make_case(dtype, k, op, seed=0):
    itemsize = np.dtype(dtype).itemsize
    n = rows_for(MIN, itemsize, k)
    # A.T @ x: A is 1000 x n, so the result has n rows
    S0 = mostly_empty(n, 1000, dtype, seed) if op == "N" else mostly_empty(n, 1000, dtype, seed).T.tocsr()
    if np.dtype(dtype).kind == "i":
        S0.data = np.arange(1, S0.nnz + 1, dtype=dtype) % 7 - 3
    rng = np.random.default_rng(seed + 1)
    shape = (S0.shape[1 if op == "N" else 0],) + ((k,) if k > 1 else ())
    x = rng.integers(-3, 4, shape).astype(dtype) if np.dtype(dtype).kind == "i" else \
        rng.standard_normal(shape).astype(dtype)
    return S0, x


def product(A, x, op):
    return A @ x if op == "N" else A.T @ x


@pytest.mark.parametrize("name,dtype,k,op", CASES, ids=[c[0] for c in CASES])
def test_large_result_from_the_cache_equals_scipy(name, dtype, k, op):
    S0, x = make_case(dtype, k, op)
    want = product(S0, x, op)
    got = product(S.csr_matrix(S0), x, op)
    assert got.nbytes >= MIN
    assert handler_name(got) == HANDLER
    assert got.flags.owndata and got.flags.writeable and got.flags.c_contiguous
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype in (np.float32, np.complex64) else 1e-12)


@pytest.mark.parametrize("name,dtype,k,op", CASES, ids=[c[0] for c in CASES])
def test_a_reused_block_shows_none_of_its_old_values(name, dtype, k, op):
    """Most rows of these results are empty: a reused block must still read 0 there."""
    S0, x = make_case(dtype, k, op)
    A = S.csr_matrix(S0)
    first = product(A, x, op)
    first[...] = 99 if np.dtype(dtype).kind == "i" else np.nan  # what the next result's block now holds
    hits = _core.result_cache_info()["hits"]
    del first
    x2 = (x * 2).astype(dtype)
    got = product(A, x2, op)
    assert _core.result_cache_info()["hits"] == hits + 1  # the freed block, taken again
    # exact where a row is empty (0), within rounding elsewhere; NaN nowhere
    np.testing.assert_allclose(got, product(S0, x2, op), rtol=1e-5 if dtype in (np.float32, np.complex64)
                               else 1e-12, atol=0)


def test_fused_spmv_result_from_the_cache():
    S0, x = make_case(np.float64, 1, "N")
    got = S.spmv(S.csr_matrix(S0), x, alpha=2.5)
    assert handler_name(got) == HANDLER
    np.testing.assert_allclose(got, 2.5 * (S0 @ x), rtol=1e-12)
    # beta != 0 with no y: a zero y (numpy's), never a cached block's old values
    got = S.spmv(S.csr_matrix(S0), x, alpha=1.0, beta=3.0)
    np.testing.assert_allclose(got, S0 @ x, rtol=1e-12)


def test_small_results_are_numpys_own():
    A = S.csr_matrix(sp.random(100, 50, density=0.1, random_state=0, format="csr"))
    assert handler_name(A @ np.ones(50)) == handler_name(np.empty(3))
    a = _core.empty_result((MIN // 8 - 1,), np.dtype(np.float64))
    assert handler_name(a) == handler_name(np.empty(3))
    assert handler_name(_core.empty_result(MIN // 8, np.dtype(np.float64))) == HANDLER


def test_empty_result_rejects_negative_dimensions():
    with pytest.raises(ValueError, match="negative"):
        _core.empty_result((-1, 4), np.dtype(np.float64))


def test_limit_zero_turns_the_cache_off():
    big = _core.empty_result((MIN // 8,), np.dtype(np.float64))
    del big
    assert _core.result_cache_info()["idle_blocks"] >= 1
    ascend_linalg.set_result_cache_limit(0)
    info = _core.result_cache_info()
    assert not info["enabled"] and info["idle_blocks"] == 0 and info["idle_bytes"] == 0
    S0, x = make_case(np.float64, 1, "N")
    got = S.csr_matrix(S0) @ x
    assert handler_name(got) != HANDLER
    np.testing.assert_allclose(got, S0 @ x, rtol=1e-12)


def test_a_live_block_freed_after_the_cache_is_turned_off_is_unmapped():
    big = _core.empty_result((MIN // 8,), np.dtype(np.float64))
    big[:] = 1.0
    ascend_linalg.set_result_cache_limit(0)
    del big
    info = _core.result_cache_info()
    assert info["idle_blocks"] == 0 and info["live_blocks"] == 0


def test_idle_blocks_stay_within_the_limits():
    ascend_linalg.release_result_cache()
    arrays = [_core.empty_result((MIN // 8 + i * 300_000,), np.dtype(np.float64)) for i in range(7)]
    assert _core.result_cache_info()["live_blocks"] == 7
    del arrays
    info = _core.result_cache_info()
    assert info["live_blocks"] == 0
    assert info["idle_blocks"] <= info["max_idle_blocks"] and info["idle_bytes"] <= info["limit_bytes"]
    ascend_linalg.set_result_cache_limit(MIN + (8 << 20))  # room for one block
    info = _core.result_cache_info()
    assert info["idle_blocks"] == 1 and info["idle_bytes"] <= MIN + (8 << 20)
    freed = ascend_linalg.release_result_cache()
    assert freed >= MIN and _core.result_cache_info()["idle_blocks"] == 0


def test_a_block_goes_only_to_a_result_of_about_its_size():
    ascend_linalg.release_result_cache()
    del_me = _core.empty_result((2 * MIN // 8,), np.dtype(np.float64))
    del del_me
    hits = _core.result_cache_info()["hits"]
    small = _core.empty_result((MIN // 8,), np.dtype(np.float64))  # half the idle block: a new one
    assert _core.result_cache_info()["hits"] == hits
    del small
    again = _core.empty_result((MIN // 8,), np.dtype(np.float64))  # the block just freed
    assert _core.result_cache_info()["hits"] == hits + 1
    del again


def test_a_cached_result_is_an_ordinary_array():
    S0, x = make_case(np.float64, 1, "N")
    want = S0 @ x
    got = S.csr_matrix(S0) @ x
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(got)), want)
    np.testing.assert_array_equal(got.copy(), want)
    view = got[::3]
    del got
    np.testing.assert_array_equal(view, want[::3])  # the view keeps the block alive
    del view
    grown = S.csr_matrix(S0) @ x
    grown.resize(len(want) + 1000, refcheck=False)  # realloc through the handler: a larger block
    np.testing.assert_array_equal(grown[:len(want)], want)
    assert (grown[len(want):] == 0).all()
    grown.resize(10, refcheck=False)  # shrinks into malloc'd memory
    np.testing.assert_array_equal(grown, want[:10])
    del grown


def test_concurrent_large_products():
    S0, x = make_case(np.complex64, 1, "N")
    A = S.csr_matrix(S0)
    want = S0 @ x
    errors = []

    def work():
        try:
            with ascend_linalg.use_backend("cpu"):
                for _ in range(4):
                    y = A @ x
                    np.testing.assert_allclose(y, want, rtol=1e-5)
                    y[...] = np.nan
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    info = _core.result_cache_info()
    assert info["idle_blocks"] <= info["max_idle_blocks"]


@pytest.mark.parametrize("value,limit", [("0", 0), ("64", 64 << 20), ("", 1 << 30), ("lots", 1 << 30),
                                         ("12MB", 1 << 30)])
def test_environment_sets_the_limit(value, limit):
    env = dict(os.environ, ASCEND_LINALG_RESULT_CACHE_MB=value)
    out = subprocess.run([sys.executable, "-c", "import ascend_linalg as a; i = a.result_cache_info(); "
                          "print(i['limit_bytes'], i['enabled'])"], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert int(out[0]) == limit and (out[1] == "True") == (limit > 0)


def test_set_limit_rejects_negative():
    with pytest.raises(ValueError, match=">= 0"):
        ascend_linalg.set_result_cache_limit(-1)
