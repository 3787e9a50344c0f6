"""The CPU `A @ x` kernel's prefetch plan (host/spmv_tiling.h,
SpmvPrefetchPlan), chosen by timing the first calls of each size class
(host/spmv_host.cpp): every plan gives the same bits and the same checks, and
the choice is made, kept per class, and can be fixed."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.sparse as sp

import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg import _core

PLANS = (0, 1, 2, 3)
WORK_MIN = 1 << 20  # rows + nonzeros from which calls are timed (kTuneMinWork)


@pytest.fixture(autouse=True)
def fresh_plans():
    _core.spmv_prefetch_force(-1)
    _core.spmv_prefetch_reset()
    yield
    _core.spmv_prefetch_force(-1)
    _core.spmv_prefetch_reset()


@pytest.fixture
def threads():
    old = ascend_linalg.get_num_threads()
    yield ascend_linalg.set_num_threads
    ascend_linalg.set_num_threads(old)


def _matrix(rng, layout, dtype, index_dtype, n=60_000, k=20):
    # "wide": scattered columns over 8 MB of float64 x (past the rule's 6 MiB:
    # x prefetched under plans 0 and 2); "narrow": over 2.4 MB (x never
    # prefetched; plans 2 and 3 drop the value/index prefetch); "long": some
    # rows of 3001 nonzeros; "banded": streaming columns (no plan changes it).
    ncols = {"wide": 1_000_000, "long": 1_000_000, "narrow": 300_000, "banded": n}[layout]
    if layout == "banded":
        cols = np.clip(np.arange(n)[:, None] + np.arange(-(k // 2), k - k // 2), 0, n - 1).ravel()
        indptr = np.arange(0, n * k + 1, k)
    else:
        lengths = np.full(n, k)
        if layout == "long":
            lengths[::1000] = 3001
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        cols = rng.integers(0, ncols, indptr[-1])
        if layout != "long":
            cols = np.sort(cols.reshape(n, k), axis=1).ravel()
    S = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(dtype), cols, indptr), shape=(n, ncols))
    A = asp.csr_matrix(S)
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return S, A


def _bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("layout", ["wide", "narrow", "long", "banded"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_every_plan_gives_the_same_bits_and_checks(rng, threads, layout, dtype, index_dtype, nthreads):
    threads(nthreads)
    S, A = _matrix(rng, layout, dtype, index_dtype)
    x = rng.standard_normal(S.shape[1]).astype(dtype)
    y0 = rng.standard_normal(S.shape[0]).astype(dtype)
    got, fused = {}, {}
    with ascend_linalg.use_backend("cpu"):
        for plan in PLANS:
            _core.spmv_prefetch_force(plan)
            got[plan] = A @ x
            fused[plan] = asp.spmv(A, x, alpha=2.0, beta=0.5, y=y0.copy())
    ref = S @ x
    for plan in PLANS:
        np.testing.assert_array_equal(_bits(got[plan]), _bits(got[0]))
        np.testing.assert_array_equal(_bits(fused[plan]), _bits(fused[0]))
    # long rows are summed in another order (the vector dot): float32 rounding
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    if layout == "long":
        np.testing.assert_allclose(got[0], ref, **tol)
    else:
        np.testing.assert_array_equal(got[0], ref)  # short rows: scipy's order and bits
    np.testing.assert_allclose(fused[0], 2.0 * ref + 0.5 * y0, **tol)
    # a bad index half way is caught under every plan, y untouched
    A.indices[A.nnz // 2] = S.shape[1]
    with ascend_linalg.use_backend("cpu"):
        for plan in PLANS:
            _core.spmv_prefetch_force(plan)
            y = np.full(S.shape[0], 7.0, dtype)
            with pytest.raises(ValueError, match="malformed"):
                asp.spmv(A, x, y=y)
    assert not _core.spmv_prefetch_classes()  # forced plans time nothing


def _class_after(A, x, calls):
    with ascend_linalg.use_backend("cpu"):
        for _ in range(calls):
            A @ x
    (c,) = _core.spmv_prefetch_classes()
    return c


@pytest.mark.parametrize("dtype, candidates", [(np.float64, (0, 1, 3)), (np.float32, (0, 2))])
def test_plan_chosen_by_timing_each_candidate(rng, threads, dtype, candidates):
    # float64 x of 8 MB is past the rule's bound (plans: rule, no x prefetch,
    # neither); float32 x of 4 MB is not (plans: rule, no value/index prefetch)
    threads(2)
    S, A = _matrix(rng, "wide", dtype, np.int32)
    assert S.shape[0] + S.nnz >= WORK_MIN
    x = rng.standard_normal(S.shape[1]).astype(dtype)
    timed = 2 * len(candidates)
    c = _class_after(A, x, timed)  # one untimed first call, then all but one timed call
    assert c["plan"] == -1
    assert sum(c["samples"]) == timed - 1
    c = _class_after(A, x, 1)
    assert c["plan"] in candidates
    assert c["samples"] == tuple(2 if p in candidates else 0 for p in PLANS)
    best = {p: c["best_ns"][p] for p in candidates}
    assert all(b > 0 for b in best.values())
    assert c["plan"] == min(best, key=best.get)
    # decided: later calls are not timed, and give the same bits
    with ascend_linalg.use_backend("cpu"):
        y = A @ x
    assert _core.spmv_prefetch_classes()[0]["samples"] == c["samples"]
    np.testing.assert_array_equal(_bits(y), _bits(S @ x))


def test_size_classes_are_separate(rng, threads):
    S, A = _matrix(rng, "wide", np.float64, np.int32)
    x = rng.standard_normal(S.shape[1])
    S2, A2 = _matrix(rng, "narrow", np.float64, np.int32)
    x2 = rng.standard_normal(S2.shape[1])
    with ascend_linalg.use_backend("cpu"):
        for nthreads in (1, 2):
            threads(nthreads)
            A @ x
            A2 @ x2
            A2.astype(np.float32) @ x2.astype(np.float32)
    classes = _core.spmv_prefetch_classes()
    assert len({c["key"] for c in classes}) == len(classes) == 6  # x size, dtype, threads
    assert all(c["plan"] == -1 and sum(c["samples"]) == 0 for c in classes)  # first calls: untimed
    _core.spmv_prefetch_reset()
    assert _core.spmv_prefetch_classes() == []


def test_small_and_other_products_are_not_timed(rng):
    S = sp.random(2000, 3000, density=0.01, format="csr", random_state=1)
    A = asp.csr_matrix(S)
    Sw, Aw = _matrix(rng, "wide", np.float64, np.int32)
    with ascend_linalg.use_backend("cpu"):
        for _ in range(8):
            A @ np.ones(3000)  # small
            Aw.T @ np.ones(Sw.shape[0])  # transposed
            Aw @ np.ones((Sw.shape[1], 2))  # two vectors
    assert _core.spmv_prefetch_classes() == []


def test_force_rejects_a_bad_plan():
    for bad in (-2, 4, 100):
        with pytest.raises(ValueError, match="prefetch plan"):
            _core.spmv_prefetch_force(bad)


def test_concurrent_calls_while_timing(rng, threads):
    threads(2)
    S, A = _matrix(rng, "wide", np.float64, np.int32)
    x = rng.standard_normal(S.shape[1])
    ref = S @ x
    out, errors = [], []

    def worker():
        try:
            with ascend_linalg.use_backend("cpu"):
                for _ in range(6):
                    out.append(A @ x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert len(out) == 24
    for y in out:
        np.testing.assert_array_equal(_bits(y), _bits(ref))
    (c,) = _core.spmv_prefetch_classes()
    assert c["plan"] in (0, 1, 3)


@pytest.mark.parametrize("value, decided", [("rule", False), ("3", False), ("auto", True), ("bogus", True)])
def test_environment_fixes_or_leaves_the_plan(value, decided):
    code = (
        "import numpy as np, scipy.sparse as sp, ascend_linalg, ascend_linalg.sparse as asp\n"
        "from ascend_linalg import _core\n"
        "rng = np.random.default_rng(0)\n"
        "n = 60000\n"
        "S = sp.csr_matrix((np.ones(20 * n), rng.integers(0, 10**6, 20 * n), np.arange(0, 20 * n + 1, 20)),"
        " shape=(n, 10**6))\n"
        "A = asp.csr_matrix(S)\n"
        "x = np.ones(10**6)\n"
        "with ascend_linalg.use_backend('cpu'):\n"
        "    for _ in range(8):\n"
        "        assert np.array_equal(A @ x, S @ x)\n"
        "print(len(_core.spmv_prefetch_classes()), [c['plan'] for c in _core.spmv_prefetch_classes()])\n"
    )
    env = dict(os.environ, ASCEND_LINALG_SPMV_PREFETCH=value)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    count, plans = res.stdout.split(" ", 1)
    if decided:
        assert count == "1" and plans.strip() in ("[0]", "[1]", "[3]")
    else:
        assert count == "0"
