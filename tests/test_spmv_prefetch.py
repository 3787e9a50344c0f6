"""The CPU one-vector SpMV kernels' prefetch plan, `A @ x` and `A.T @ x`
(host/spmv_tiling.h, SpmvPrefetchPlan), chosen by timing the first calls of
each size class (host/spmv_tune.cpp): every plan gives the same bits and the
same checks, and the choice is made, kept per class, and can be fixed."""
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

PLANS = tuple(range(8))  # SpmvPrefetchPlan bits: 1 no target, 2 no streams, 4 any size
WORK_MIN = 1 << 18  # rows + nonzeros from which calls are timed (kTuneMinWork)


pytestmark = pytest.mark.usefixtures("fresh_spmv_plans")


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
@pytest.mark.parametrize("trans", [False, True])
def test_every_plan_gives_the_same_bits_and_checks(rng, threads, layout, dtype, index_dtype, nthreads, trans):
    # A.T @ x: "wide" partials (8 MB a block in float64) are past the rule's
    # bound, "narrow" ones below it (prefetched only under plan 4)
    threads(nthreads)
    S, A = _matrix(rng, layout, dtype, index_dtype)
    St, At = (S.T, A.T) if trans else (S, A)
    x = rng.standard_normal(St.shape[1]).astype(dtype)
    y0 = rng.standard_normal(St.shape[0]).astype(dtype)
    got, fused = {}, {}
    with ascend_linalg.use_backend("cpu"):
        for plan in PLANS:
            _core.spmv_prefetch_force(plan)
            got[plan] = At @ x
            fused[plan] = asp.spmv(A, x, alpha=2.0, beta=0.5, y=y0.copy(), trans=trans)
    ref = St @ x
    for plan in PLANS:
        np.testing.assert_array_equal(_bits(got[plan]), _bits(got[0]))
        np.testing.assert_array_equal(_bits(fused[plan]), _bits(fused[0]))
    # long rows are summed in another order (the vector dot), and A.T @ x on
    # two threads adds the blocks' partials: float32 rounding
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    if layout == "long" or (trans and nthreads > 1):
        np.testing.assert_allclose(got[0], ref, **tol)
    else:
        np.testing.assert_array_equal(got[0], ref)  # scipy's order and bits
    np.testing.assert_allclose(fused[0], 2.0 * ref + 0.5 * y0, **tol)
    # a bad index half way is caught under every plan; the operands are not
    # written (the caller's y may be: docs/guarantees.md)
    A.indices[A.nnz // 2] = S.shape[1]
    snaps = [a.copy() for a in (x, A.data, A.indices, A.indptr)]
    with ascend_linalg.use_backend("cpu"):
        for plan in PLANS:
            _core.spmv_prefetch_force(plan)
            with pytest.raises(ValueError, match="malformed"):
                asp.spmv(A, x, y=np.zeros(St.shape[0], dtype), trans=trans)
            with pytest.raises(ValueError, match="malformed"):
                (A.T if trans else A) @ x  # A.T taken now: it may copy the index arrays
    for a, b in zip((x, A.data, A.indices, A.indptr), snaps):
        np.testing.assert_array_equal(a, b)
    assert not _core.spmv_prefetch_classes()  # forced plans time nothing


def _class_after(A, x, calls):
    with ascend_linalg.use_backend("cpu"):
        for _ in range(calls):
            A @ x
    (c,) = _core.spmv_prefetch_classes()
    return c


@pytest.mark.parametrize(
    "trans, layout, dtype, candidates",
    [
        # A x: float64 x of 8 MB is past the rule's bound (plans: rule, no x
        # prefetch, neither); float32 x of 4 MB is not (rule, no value/index
        # prefetch)
        (False, "wide", np.float64, (0, 1, 3)),
        (False, "wide", np.float32, (0, 2)),
        # A^T x on 2 threads: float64 partials of 16 MB in all are past it;
        # float32 ones of 2.4 MB are not (rule, no value/index prefetch,
        # partials prefetched anyway)
        (True, "wide", np.float64, (0, 1, 3)),
        (True, "narrow", np.float32, (0, 2, 4)),
    ],
)
def test_plan_chosen_by_timing_each_candidate(rng, threads, trans, layout, dtype, candidates):
    threads(2)
    S, A = _matrix(rng, layout, dtype, np.int32)
    assert S.shape[0] + S.nnz >= WORK_MIN
    St, At = (S.T, A.T) if trans else (S, A)
    x = rng.standard_normal(St.shape[1]).astype(dtype)
    timed = 2 * len(candidates)
    c = _class_after(At, x, timed)  # one untimed first call, then all but one timed call
    assert c["plan"] == -1 and c["trans"] == trans and c["value_store"] == 0
    assert c["blocks"] == 2 if trans else c["blocks"] >= 2  # A x splits finer than the threads
    target = (2 * St.shape[0] if trans else St.shape[1]) * np.dtype(dtype).itemsize  # both partials, or x
    assert 2 ** (c["target_log2"] - 1) <= target < 2 ** c["target_log2"]
    assert sum(c["samples"]) == timed - 1
    c = _class_after(At, x, 1)
    assert c["plan"] in candidates
    assert c["samples"] == tuple(2 if p in candidates else 0 for p in PLANS)
    best = {p: c["best_ns"][p] for p in candidates}
    assert all(b > 0 for b in best.values())
    # the fastest, where it beats the rule (plan 0) by 5% (kTuneMargin)
    fastest = min(best, key=best.get)
    assert c["plan"] == (fastest if best[fastest] < 0.95 * best[0] else 0)
    # decided: later calls are not timed, and give the same bits
    with ascend_linalg.use_backend("cpu"):
        y = At @ x
    assert _core.spmv_prefetch_classes()[0]["samples"] == c["samples"]
    _core.spmv_prefetch_force(0)
    with ascend_linalg.use_backend("cpu"):
        y_rule = At @ x
    np.testing.assert_array_equal(_bits(y), _bits(y_rule))
    if not trans:
        np.testing.assert_array_equal(_bits(y), _bits(St @ x))
    else:  # two blocks' partials added: another order than scipy's
        np.testing.assert_allclose(y, St @ x, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-3)


MIB = 1 << 20


@pytest.mark.parametrize(
    "trans, target, candidates",
    [(False, 8 * MIB, (0, 1, 3)), (False, 4 * MIB, (0, 2)), (False, 6 * MIB, (0, 2)),
     (True, 16 * MIB, (0, 1, 3)), (True, 4 * MIB, (0, 2, 4)), (True, 6 * MIB + 1, (0, 1, 3))],
)
def test_decision_keeps_the_rule_unless_another_plan_is_5_percent_faster(trans, target, candidates):
    def decide(times):
        best = [0.0] * len(PLANS)
        for p, ns in times.items():
            best[p] = ns
        plan, cands = _core.spmv_prefetch_decide(trans, target, best)
        assert cands == candidates
        return plan
    other = candidates[1:]
    assert decide({p: 1.0 for p in candidates}) == 0  # a tie keeps the rule
    for p in other:
        assert decide({**{q: 1.0 for q in candidates}, p: 0.96}) == 0  # 4% faster: not enough
        assert decide({**{q: 1.0 for q in candidates}, p: 0.94}) == p  # 6% faster
        assert decide({**{q: 1.0 for q in candidates}, 0: 0.5, p: 0.94}) == 0  # the rule fastest
    if len(other) == 2:  # both past the margin: the faster one
        a, b = other
        assert decide({0: 1.0, a: 0.90, b: 0.80}) == b
        assert decide({0: 1.0, a: 0.80, b: 0.90}) == a
        assert decide({0: 1.0, a: 0.97, b: 0.93}) == b
    with pytest.raises(ValueError, match="8 entries"):
        _core.spmv_prefetch_decide(trans, target, [1.0] * 4)


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
            A.T @ np.ones(S.shape[0])
    classes = _core.spmv_prefetch_classes()
    assert len({c["key"] for c in classes}) == len(classes) == 8  # operation, target size, dtype, threads
    assert sum(c["trans"] for c in classes) == 2
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
            A.T @ np.ones(2000)  # small, transposed
            Aw @ np.ones((Sw.shape[1], 2))  # two vectors
            Aw.T @ np.ones((Sw.shape[0], 3))  # three vectors, transposed
    assert _core.spmv_prefetch_classes() == []


@pytest.mark.parametrize("trans", [False, True])
def test_products_from_work_min_on_are_timed(rng, threads, trans):
    # rows + nonzeros of WORK_MIN - 1: the rule, untimed; WORK_MIN: timed
    # (the mid-size products of 2^18 to 2^20 run the plan their class picks)
    threads(2)
    rows, cols = 40_000, 100_000
    got = {}
    for work in (WORK_MIN - 1, WORK_MIN):
        _core.spmv_prefetch_reset()
        nnz = work - rows
        indptr = np.sort(np.concatenate([[0, nnz], rng.integers(0, nnz + 1, rows - 1)]))
        S = sp.csr_matrix((rng.standard_normal(nnz), rng.integers(0, cols, nnz), indptr), shape=(rows, cols))
        A = asp.csr_matrix(S)
        assert A.shape[0] + A.nnz == work
        x = rng.standard_normal(rows if trans else cols)
        with ascend_linalg.use_backend("cpu"):
            for _ in range(3):
                y = A.T @ x if trans else A @ x
        np.testing.assert_allclose(y, S.T @ x if trans else S @ x, rtol=1e-12, atol=1e-12)
        got[work] = _core.spmv_prefetch_classes()
    assert got[WORK_MIN - 1] == []
    assert len(got[WORK_MIN]) == 1 and got[WORK_MIN][0]["trans"] == trans
    assert sum(got[WORK_MIN][0]["samples"]) == 2  # one untimed first call, then two timed


def test_force_rejects_a_bad_plan():
    for bad in (-2, 8, 100):
        with pytest.raises(ValueError, match="prefetch plan"):
            _core.spmv_prefetch_force(bad)


@pytest.mark.parametrize("trans", [False, True])
def test_concurrent_calls_while_timing(rng, threads, trans):
    threads(2)
    S, A = _matrix(rng, "wide", np.float64, np.int32)
    St, At = (S.T, A.T) if trans else (S, A)
    x = rng.standard_normal(St.shape[1])
    _core.spmv_prefetch_force(0)
    with ascend_linalg.use_backend("cpu"):
        ref = At @ x  # every plan gives these bits (above)
    _core.spmv_prefetch_force(-1)
    out, errors = [], []

    def worker():
        try:
            with ascend_linalg.use_backend("cpu"):
                for _ in range(6):
                    out.append(At @ x)
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
    np.testing.assert_allclose(ref, St @ x, rtol=1e-12, atol=1e-10)
    (c,) = _core.spmv_prefetch_classes()
    assert c["plan"] in (0, 1, 3) and c["trans"] == trans


@pytest.mark.parametrize(
    "value, decided", [("rule", False), ("3", False), ("7", False), ("auto", True), ("8", True), ("bogus", True)]
)
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


@pytest.mark.parametrize("layout", ["wide", "long"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_scattered_transposed_blocks_catch_a_bad_index_anywhere(rng, threads, layout, dtype, index_dtype, nthreads):
    # A.T @ x over scattered columns: partials past the rule's 6 MiB (float32
    # on two threads, float64 on one or two; a call this small is not timed,
    # so the rule's plan, float32 on one thread streaming). Once a block's partial is
    # all zeroed, its scatter checks each index itself as it loads it for the
    # prefetch, 64 nonzeros before using it, instead of a span check 2048 at a
    # time (kernels/spmv/spmvt_scatter_rows.h). A bad index at the edges of
    # both schemes, of the blocks (two blocks split at about nnz / 2) and of
    # the last 64 nonzeros, which no prefetch reads ahead of, is caught each
    # time before anything is written through it.
    threads(nthreads)
    S, A = _matrix(rng, layout, dtype, index_dtype, n=20_000)
    x = rng.standard_normal(S.shape[0]).astype(dtype)
    nnz, half = A.nnz, A.nnz // 2
    positions = sorted({0, 63, 64, 2047, 2048, 2111, 2112, 2113, 5000, half - 65, half - 64, half - 1, half,
                        half + 63, half + 64, half + 2112, nnz - 65, nnz - 64, nnz - 1})
    huge = 2**31 - 1 if index_dtype == np.int32 else 2**62
    ref = S.T @ x
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    with ascend_linalg.use_backend("cpu"):
        np.testing.assert_allclose(A.T @ x, ref, **tol)
        for p in positions:
            keep = A.indices[p]
            for bad in (S.shape[1], huge, -1):
                A.indices[p] = bad
                with pytest.raises(ValueError, match="malformed"):
                    A.T @ x
            A.indices[p] = keep
        np.testing.assert_allclose(A.T @ x, ref, **tol)  # nothing left behind


def _indptr(lengths, index_dtype=np.int64):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_row_shape_tells_skewed_rows_from_even_ones(index_dtype):
    def shape(lengths):
        ip = _indptr(lengths, index_dtype)
        return _core.spmv_row_shape(ip, int(ip[-1]))
    n = 100_000
    assert shape(np.full(n, 10)) == 0  # every row the mean
    assert shape(np.random.default_rng(1).poisson(10, n)) == 0  # a random matrix's rows
    assert shape(np.arange(n) % 5) == 0  # median 2, mean 2: even
    skewed = np.ones(n, np.int64)
    skewed[::1000] = 10_000  # 1% of rows hold 91% of the nonzeros: median 1, mean 11
    assert shape(skewed) == 1
    single = np.zeros(n, np.int64)
    single[n // 3] = 1_000_000  # one dense row, the rest empty
    assert shape(single) == 1
    assert shape(np.zeros(n, np.int64)) == 0  # no nonzeros
    assert shape(np.full(7, 3)) == 0 and shape(np.array([0, 0, 40])) == 1  # fewer rows than samples
    # a malformed indptr (decreasing, or past nnz) gives some shape, reads only rows + 1 entries
    bad = _indptr(np.full(n, 10), index_dtype)
    bad[n // 2] = -(2**31) if index_dtype == np.int32 else -(2**63)
    assert _core.spmv_row_shape(bad, int(bad[-1])) in (0, 1)
    assert _core.spmv_row_shape(bad[: n // 2 + 1], 10**12) in (0, 1)
    with pytest.raises(TypeError, match="int32 or int64"):
        _core.spmv_row_shape(bad.astype(np.float64), 10)
    with pytest.raises(ValueError, match="rows \\+ 1"):
        _core.spmv_row_shape(bad[:0], 0)


def test_skewed_rows_time_their_own_plan(rng, threads):
    """A power-law-like matrix and an even one of one size class (operation,
    types, blocks, target bytes) are timed and decided apart."""
    threads(2)
    S, A = _matrix(rng, "wide", np.float32, np.int32)
    n, k = S.shape[0], 20
    lengths = np.ones(n, np.int64)
    lengths[::100] = 100 * (k - 1) + 1  # same nonzeros, 99% of rows with one
    indptr = _indptr(lengths)
    Sk = sp.csr_matrix((np.ones(indptr[-1], np.float32), rng.integers(0, S.shape[1], indptr[-1]), indptr),
                       shape=S.shape)
    Sk.sum_duplicates()
    Ak = asp.csr_matrix(Sk)
    x = rng.standard_normal(n).astype(np.float32)
    with ascend_linalg.use_backend("cpu"):
        for _ in range(8):
            y, yk = A.T @ x, Ak.T @ x
    np.testing.assert_allclose(y, S.T @ x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(yk, Sk.T @ x, rtol=1e-4, atol=1e-3)
    classes = sorted(_core.spmv_prefetch_classes(), key=lambda c: c["row_shape"])
    assert [c["row_shape"] for c in classes] == [0, 1]
    even, skew = classes
    assert even["key"] != skew["key"]
    for f in ("trans", "value_type", "value_store", "blocks", "target_log2"):
        assert even[f] == skew[f]
    assert even["plan"] >= 0 and skew["plan"] >= 0  # 8 calls each: both decided
    assert even["samples"] == skew["samples"]  # each timed its own calls only


@pytest.mark.parametrize("trans", [False, True])
def test_scattered_columns_time_their_own_plan(rng, threads, trans):
    """A banded matrix and a random one of one size class otherwise (operation,
    types, blocks, target bytes, even rows) are timed and decided apart: on
    the banded one the plans differ only in prefetches it never issues, so
    whichever its calls pick must not become the random one's plan."""
    threads(2)
    S, A = _matrix(rng, "banded", np.float32, np.int32)
    n, k = S.shape[0], 20
    cols = np.sort(rng.integers(0, n, (n, k)), axis=1).ravel()
    Sr = sp.csr_matrix((rng.standard_normal(n * k).astype(np.float32), cols, np.arange(0, n * k + 1, k)),
                       shape=(n, n))
    Ar = asp.csr_matrix(Sr)
    x = rng.standard_normal(n).astype(np.float32)
    op = (lambda M: M.T @ x) if trans else (lambda M: M @ x)
    with ascend_linalg.use_backend("cpu"):
        for _ in range(8):
            y, yr = op(A), op(Ar)
    np.testing.assert_allclose(y, op(S), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(yr, op(Sr), rtol=1e-4, atol=1e-3)
    classes = sorted(_core.spmv_prefetch_classes(), key=lambda c: c["scattered"])
    assert [c["scattered"] for c in classes] == [False, True]
    band, scat = classes
    assert band["key"] != scat["key"]
    for f in ("trans", "value_type", "value_store", "blocks", "target_log2", "row_shape"):
        assert band[f] == scat[f]
    assert band["trans"] == trans and band["row_shape"] == 0
    assert band["plan"] >= 0 and scat["plan"] >= 0  # 8 calls each: both decided
    assert band["samples"] == scat["samples"]  # each timed its own calls only
