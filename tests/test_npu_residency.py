"""Residency of sparse matrices on the (fake) NPU, and what happens at exit.

Byte counts come from the fake runtime's counters (docs/npu.md): a resident
matrix is uploaded once, a changed one again, a dead one is freed. One
subprocess computes everything (module fixture); the tests read its results.
"""
import json

import numpy as np
import pytest

from _fake_npu import FAKE, run, run_process
from ascend_linalg import _core

CHECKS = r"""
import copy, ctypes, gc, json, pickle, threading
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg.sparse import _residency
from ascend_linalg.testing import fake_acl_path

fake = ctypes.CDLL(fake_acl_path())
fake.fakeAclStat.restype = ctypes.c_uint64
stat = lambda n: int(fake.fakeAclStat(n.encode()))
ascend_linalg.set_backend("npu")
rng = np.random.default_rng(5)
out = {}


def matrix(n=300, m=200, density=0.05, seed=3):
    return asp.csr_matrix(sp.random(n, m, density=density, format="csr", random_state=seed))


def nbytes(A):
    return A.indptr.nbytes + A.indices.nbytes + A.data.nbytes


def reference(A, x):
    # scipy's own product over copies of A's current arrays
    return sp.csr_matrix((A.data.copy(), A.indices.copy(), A.indptr.copy()), shape=A.shape) @ x


def h2d_of(f):
    before = stat("bytes_h2d")
    r = f()
    return stat("bytes_h2d") - before, r


# -- 100 products: what moves per call, per mode
traffic = {}
for mode in ("checked", "trusted", "off"):
    ascend_linalg.set_residency(mode)
    A = matrix()
    x = rng.standard_normal(200)
    fake.fakeAclReset()
    ys = [A @ x for _ in range(100)]
    traffic[mode] = dict(h2d=stat("bytes_h2d"), d2h=stat("bytes_d2h"), launches=stat("launches"),
                         matrix=nbytes(A), x=x.nbytes, y=ys[0].nbytes,
                         same=all(np.array_equal(y, ys[0]) for y in ys),
                         right=bool(np.allclose(ys[0], reference(A, x))))
    traffic[mode]["live_with_matrix"] = stat("outstanding")
    del A, ys
    gc.collect()
    traffic[mode]["live_after_del"] = stat("outstanding")
out["traffic"] = traffic


# -- every kind of change re-uploads (and the product is the changed matrix's)
def unsorted():
    A = matrix()
    A.indices = A.indices.copy()
    for r in range(A.shape[0]):
        a, b = A.indptr[r], A.indptr[r + 1]
        A.indices[a:b] = A.indices[a:b][::-1].copy()
        A.data[a:b] = A.data[a:b][::-1].copy()
    A.has_sorted_indices = False
    return A


def _indptr_of(row, n):
    return np.r_[0, np.cumsum(np.bincount(row, minlength=n))]


def with_duplicates():
    S = sp.random(300, 200, density=0.05, format="coo", random_state=4)
    row = np.concatenate([S.row, S.row[:50]])
    col = np.concatenate([S.col, S.col[:50]])
    val = np.concatenate([S.data, S.data[:50]])
    order = np.argsort(row, kind="stable")
    A = asp.csr_matrix((val[order], col[order], _indptr_of(row, 300)), shape=(300, 200))
    A.has_canonical_format = False
    return A


def with_zeros():
    A = matrix()
    A.data[::3] = 0.0
    return A


def with_slack():
    A = matrix()
    # data/indices longer than nnz: prune() cuts them
    A.data = np.r_[A.data, np.full(7, 123.0)]
    A.indices = np.r_[A.indices, np.zeros(7, A.indices.dtype)]
    return A


def new_indptr(A):
    ip = A.indptr.copy()
    ip[1:-1] = np.sort(rng.integers(0, A.nnz + 1, size=len(ip) - 2))
    return ip


CHANGES = {
    "setitem existing": (matrix, lambda A: A.__setitem__(tuple(A.nonzero()[i][0] for i in (0, 1)), 5.0)),
    "setitem new entry": (matrix, lambda A: A.__setitem__((0, int(np.setdiff1d(np.arange(200), A[0].indices)[0])), 5.0)),
    "setdiag": (matrix, lambda A: A.setdiag(2.5)),
    "sort_indices": (unsorted, lambda A: A.sort_indices()),
    "sum_duplicates": (with_duplicates, lambda A: A.sum_duplicates()),
    "eliminate_zeros": (with_zeros, lambda A: A.eliminate_zeros()),
    "prune": (with_slack, lambda A: A.prune()),
    "resize": (matrix, lambda A: A.resize(310, 200)),
    "imul": (matrix, lambda A: A.__imul__(3.0)),
    "itruediv": (matrix, lambda A: A.__itruediv__(4.0)),
    "assign data": (matrix, lambda A: setattr(A, "data", A.data * 2 + 1)),
    "assign indices": (matrix, lambda A: setattr(A, "indices", (A.indices + 1) % 200)),
    "assign indptr": (matrix, lambda A: setattr(A, "indptr", new_indptr(A))),
    "shape setter": (matrix, lambda A: setattr(A, "shape", (200, 300))),
    "numpy write data": (matrix, lambda A: A.data.__imul__(2.0)),
    "numpy write indices": (matrix, lambda A: A.indices.__setitem__(slice(None), (A.indices + 7) % 200)),
    "numpy write indptr": (matrix, lambda A: A.indptr.__setitem__(slice(None), new_indptr(A))),
}
changes = {}
for mode in ("checked", "trusted"):
    ascend_linalg.set_residency(mode)
    for name, (make, change) in CHANGES.items():
        A = make()
        x = rng.standard_normal(A.shape[1])
        A @ x
        steady, _ = h2d_of(lambda: A @ x)
        change(A)
        x2 = rng.standard_normal(A.shape[1])
        after, y = h2d_of(lambda: A @ x2)
        again, y2 = h2d_of(lambda: A @ x2)
        changes[f"{mode}: {name}"] = dict(
            reuploaded=after - again, matrix=nbytes(A), steady_is_small=steady < nbytes(A),
            right=bool(np.allclose(y, reference(A, x2))), again_same=bool(np.array_equal(y, y2)))
        del A
        gc.collect()
out["changes"] = changes
out["live_after_changes"] = stat("outstanding")

# -- cg on a 2-D Poisson matrix
ascend_linalg.set_residency("checked")
n = 40
T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
P = sp.kronsum(T, T, format="csr")
A = asp.csr_matrix(P)
b = np.ones(n * n)
fake.fakeAclReset()
iters = []
x_npu, info_npu = spla.cg(A, b, rtol=1e-10, callback=lambda xk: iters.append(1))
h2d_cg, launches = stat("bytes_h2d"), stat("launches")
per_call, _ = h2d_of(lambda: A @ b)
with ascend_linalg.use_backend("scipy"):
    x_ref, info_ref = spla.cg(P, b, rtol=1e-10)
out["cg"] = dict(info=[info_npu, info_ref], iters=len(iters), launches=launches, h2d=h2d_cg,
                 matrix=nbytes(A), per_call=per_call, close=bool(np.allclose(x_npu, x_ref, rtol=1e-8, atol=1e-10)),
                 residual=float(np.linalg.norm(P @ x_npu - b) / np.linalg.norm(b)))
del A
gc.collect()

# -- two threads on one matrix
A = matrix(2000, 1500, density=0.01, seed=9)
fake.fakeAclReset()
xs = [rng.standard_normal(1500) for _ in range(2)]
refs = [reference(A, x) for x in xs]
results = [[], []]
def worker(i):
    for _ in range(40):
        results[i].append(bool(np.allclose(A @ xs[i], refs[i])))
threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
for t in threads: t.start()
for t in threads: t.join()
h2d = stat("bytes_h2d")
out["threads"] = dict(right=all(results[0]) and all(results[1]) and len(results[0]) == len(results[1]) == 40,
                      uploads=_residency.info()["uploads"], matrix=nbytes(A), h2d=h2d,
                      per_call=h2d_of(lambda: A @ xs[0])[0])
del A
gc.collect()

# -- injected failures: first call (upload) and a later call (copy resident)
fails = {}
for spec in ("malloc:1", "malloc:2", "malloc:3", "malloc:4", "memcpy:1", "memcpy:2", "memcpy:3", "memcpy:4",
             "launch", "sync"):
    for when in ("first", "later"):
        A = matrix()
        x = rng.standard_normal(200)
        if when == "later":
            A @ x
        y = rng.standard_normal(300)
        y0 = y.copy()
        fake.fakeAclSetFail(spec.encode())
        try:
            asp.spmv(A, x, alpha=2.0, beta=0.5, y=y)
            err = None
        except Exception as exc:
            err = f"{type(exc).__name__}: {exc}"
        injected = stat("injected_failures") > 0
        fake.fakeAclSetFail(b"")
        fake.fakeAclReset()
        ok = bool(np.allclose(A @ x, reference(A, x)))
        del A
        gc.collect()
        fails[f"{spec} {when}"] = dict(err=err, untouched=bool(np.array_equal(y, y0)), injected=injected,
                                       ok_after=ok, live=stat("outstanding"))
out["fails"] = fails

# -- out of device memory with other matrices resident: they are evicted, the call succeeds
others = [matrix(seed=s) for s in (11, 12)]
for B in others:
    B @ rng.standard_normal(200)
A = matrix()
x = rng.standard_normal(200)
before = _residency.info()["matrices"]
fake.fakeAclSetFail(b"malloc:1")
y = A @ x
fake.fakeAclSetFail(b"")
out["evict"] = dict(before=before, after=_residency.info()["matrices"], right=bool(np.allclose(y, reference(A, x))))
del A
gc.collect()
ascend_linalg.set_residency("off")       # no copies left to evict
ascend_linalg.set_residency("checked")
A2 = matrix(seed=13)
fake.fakeAclSetFail(b"malloc:1")
try:
    A2 @ x
    out["evict"]["alone"] = None
except MemoryError as exc:
    out["evict"]["alone"] = str(exc)
fake.fakeAclSetFail(b"")
del others, A2
gc.collect()

# -- off frees every copy; products then upload every time
A, B = matrix(), matrix(seed=7)
A @ x, B @ x
live_on = stat("outstanding")
ascend_linalg.set_residency("off")
live_off = stat("outstanding")
h1, _ = h2d_of(lambda: A @ x)
h2, _ = h2d_of(lambda: A @ x)
out["off"] = dict(live_on=live_on, live_off=live_off, h=[h1, h2], matrix=nbytes(A))
ascend_linalg.set_residency("checked")
try:
    ascend_linalg.set_residency("sometimes")
    out["bad_mode"] = None
except ValueError as exc:
    out["bad_mode"] = str(exc)

# -- a resident matrix still pickles and copies; A.T and csc work; cpu keeps nothing
A @ x
out["pickle"] = bool(np.allclose(pickle.loads(pickle.dumps(A)) @ x, A @ x)) and \
    bool(np.allclose(copy.deepcopy(A) @ x, A @ x)) and bool(np.allclose(copy.copy(A) @ x, A @ x))
xt = rng.standard_normal(300)
At = A.T
h = [h2d_of(lambda: At @ xt)[0] for _ in range(3)]
out["transposed"] = dict(right=bool(np.allclose(At @ xt, A.toarray().T @ xt)), h=h,
                         matrix=nbytes(A), right_csc=bool(np.allclose(asp.csc_matrix(A) @ x, reference(A, x))))
del A, B, At
gc.collect()
with ascend_linalg.use_backend("cpu"):
    C = matrix()
    C @ x
    out["cpu_matrices"] = _residency.info()["matrices"]

# -- scipy's own classes have no hooks: trusted still checks them
ascend_linalg.set_residency("trusted")
S = sp.random(300, 200, density=0.05, format="csr", random_state=3)
y = asp.spmv(S, x)
S.data *= 3.0
y2 = asp.spmv(S, x)
out["foreign_trusted"] = bool(np.allclose(y2, S @ x)) and not np.allclose(y, y2)
ascend_linalg.set_residency("checked")
del S
gc.collect()
out["live_end"] = stat("outstanding")
out["bad_calls"] = stat("bad_calls")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def res():
    return run(CHECKS, ASCEND_LINALG_ACL_LIB=FAKE, ASCEND_LINALG_NPU_CORES=4, ASCEND_LINALG_NUM_THREADS=2)


def _overhead(t, calls):
    """h2d of `calls` products that upload nothing but x."""
    return t["h2d"] - calls * t["x"]


@pytest.mark.parametrize("mode", ["checked", "trusted"])
def test_matrix_uploaded_once_over_100_products(res, mode):
    t, off = res["traffic"][mode], res["traffic"]["off"]
    assert t["same"] and t["right"]
    per_call = (off["h2d"] - 100 * off["matrix"]) / 100   # x + status word + tilings
    assert per_call - t["x"] < 512, "more than x and a few hundred bytes of tiling per call"
    assert t["h2d"] == t["matrix"] + 100 * per_call       # the matrix once, then only x per call
    assert off["h2d"] == 100 * (off["matrix"] + per_call)  # off: the matrix every call
    assert t["d2h"] == off["d2h"] == 100 * (t["y"] + 4)    # y (and the status word) back per call


@pytest.mark.parametrize("mode", ["checked", "trusted", "off"])
def test_device_copy_freed_with_the_matrix(res, mode):
    t = res["traffic"][mode]
    assert t["live_with_matrix"] == (3 if mode != "off" else 0)  # indptr, indices, data
    assert t["live_after_del"] == 0


SCIPY_CHANGES = ["setitem existing", "setitem new entry", "setdiag", "sort_indices", "sum_duplicates",
                 "eliminate_zeros", "prune", "resize", "imul", "itruediv", "assign data", "assign indices",
                 "assign indptr", "shape setter"]
NUMPY_CHANGES = ["numpy write data", "numpy write indices", "numpy write indptr"]


@pytest.mark.parametrize("change", SCIPY_CHANGES + NUMPY_CHANGES)
@pytest.mark.parametrize("mode", ["checked", "trusted"])
def test_change_reuploads(res, mode, change):
    if mode == "trusted" and change in NUMPY_CHANGES:
        pytest.skip("trusted does not look at the arrays' bytes (test_trusted_skips_fingerprint)")
    c = res["changes"][f"{mode}: {change}"]
    assert c["steady_is_small"]
    assert c["reuploaded"] == c["matrix"], "the changed matrix was not uploaded again"
    assert c["right"], "stale result after the change"
    assert c["again_same"]


@pytest.mark.parametrize("change", NUMPY_CHANGES)
def test_trusted_skips_fingerprint(res, change):
    # The documented contract of trusted: an in-place numpy write is not seen.
    assert res["changes"][f"trusted: {change}"]["reuploaded"] == 0


def test_no_leak_after_changes(res):
    assert res["live_after_changes"] == 0


def test_cg_poisson_uploads_once_and_matches_scipy(res):
    cg = res["cg"]
    assert cg["info"] == [0, 0]
    assert cg["close"] and cg["residual"] < 1e-9
    calls = cg["launches"]                         # one launch per product (one block)
    assert calls >= cg["iters"] > 10
    assert cg["h2d"] == cg["matrix"] + calls * cg["per_call"]


def test_two_threads_share_one_upload(res):
    t = res["threads"]
    assert t["right"]
    assert t["uploads"] == 1
    assert t["h2d"] == t["matrix"] + 80 * t["per_call"]


FAIL_SPECS = ["malloc:1", "malloc:2", "malloc:3", "malloc:4", "memcpy:1", "memcpy:2", "memcpy:3", "memcpy:4",
              "launch", "sync"]


@pytest.mark.parametrize("when", ["first", "later"])
@pytest.mark.parametrize("spec", FAIL_SPECS)
def test_injected_failure_no_leak(res, spec, when):
    # "first": the call that uploads the matrix fails (malloc/memcpy 1-3 are its
    # arrays); "later": a call on the resident copy (the Nth per-call buffer) fails.
    f = res["fails"][f"{spec} {when}"]
    assert f["injected"], "the failure was never reached"
    assert f["err"] is not None
    if spec.startswith("malloc"):
        assert f["err"].startswith("MemoryError") and "aclrtMalloc" in f["err"], f["err"]
    assert f["untouched"], "y changed although the call failed"
    assert f["ok_after"], "wrong result after a failed call"
    assert f["live"] == 0, "device memory leaked"


def test_out_of_memory_evicts_other_matrices(res):
    e = res["evict"]
    assert e["before"] == 2 and e["after"] == 1 and e["right"]
    assert e["alone"] and "aclrtMalloc" in e["alone"] and "207001" in e["alone"]


def test_off_frees_and_uploads_every_call(res):
    o = res["off"]
    assert o["live_on"] == 6 and o["live_off"] == 0
    assert o["h"][0] == o["h"][1] > o["matrix"]
    assert "residency must be one of 'checked', 'trusted', 'off'" in res["bad_mode"]


def test_pickle_copy_transpose_cpu(res):
    assert res["pickle"]
    t = res["transposed"]
    assert t["right"] and t["right_csc"]
    assert t["h"][0] > t["matrix"] > t["h"][1] == t["h"][2]   # one A.T object: one upload
    assert res["cpu_matrices"] == 0


def test_foreign_matrix_checked_even_in_trusted(res):
    assert res["foreign_trusted"]


def test_nothing_left_and_no_bad_calls(res):
    assert res["live_end"] == 0
    assert res["bad_calls"] == 0


def test_bad_env_mode():
    p = run_process("import ascend_linalg", ASCEND_LINALG_RESIDENCY="maybe")
    assert p.returncode != 0 and "$ASCEND_LINALG_RESIDENCY: residency must be one of" in p.stderr


def test_fingerprint_sees_every_byte():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(3 * 2**18)            # 6 MiB: several 1 MiB chunks
    base = _core.fingerprint([a])
    assert base == _core.fingerprint([a.copy()])
    for pos in (0, 1, 2**17 + 3, a.size - 1):
        b = a.copy()
        b.view(np.uint8)[pos * 8 + 5] ^= 1        # one bit
        assert _core.fingerprint([b]) != base
    # the split between arrays counts, and so does their order
    assert _core.fingerprint([a[:10], a[10:]]) != _core.fingerprint([a[:11], a[11:]])
    assert _core.fingerprint([a[:10], a[10:20]]) != _core.fingerprint([a[10:20], a[:10]])
    assert _core.fingerprint([]) == _core.fingerprint([])
    with pytest.raises(ValueError, match="contiguous"):
        _core.fingerprint([a[::2]])


def test_fingerprint_independent_of_threads():
    a = np.random.default_rng(1).standard_normal(3 * 2**20)   # 24 MiB: the parallel path
    n = _core.cpu_num_threads()
    try:
        _core.cpu_set_num_threads(1)
        one = _core.fingerprint([a])
        _core.cpu_set_num_threads(3)
        three = _core.fingerprint([a])
    finally:
        _core.cpu_set_num_threads(n)
    assert one == three


# ---- interpreter exit ------------------------------------------------------

EXIT = r"""
import numpy as np, scipy.sparse as sp
import ascend_linalg
import ascend_linalg.sparse as asp
from ascend_linalg.linalg.blas import csymm
ascend_linalg.set_backend("npu")
A = asp.csr_matrix(sp.random(300, 200, density=0.05, format="csr", random_state=3))  # alive at exit
y = A @ np.ones(200)
a = np.eye(8, dtype=np.complex64)
csymm(1, a, a)
print("{}")
"""


def _no_sanitizer_report(stderr):
    # Under .ci/sanitize.sh a report made in a daemon thread that is being ended
    # at exit can lose the race with the exiting main thread, so that the
    # process still exits 0 (UBSan's halt_on_error): the report itself fails.
    assert "runtime error:" not in stderr and "Sanitizer" not in stderr, stderr[-3000:]


def _report(tmp_path, code, **env):
    path = tmp_path / "acl_report.jsonl"
    p = run_process(code, ASCEND_LINALG_ACL_LIB=FAKE, FAKE_ACL_REPORT=path, **env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    _no_sanitizer_report(p.stderr)
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines], p


def test_exit_finalizes_what_we_initialised(tmp_path):
    events, _ = _report(tmp_path, EXIT)
    fin = [e for e in events if e["event"] == "finalize"]
    assert len(fin) == 1, events
    f = fin[0]
    # released before aclFinalize: memory of the live matrix, stream, binary, device references
    assert f["outstanding"] == 0 and f["streams"] == 0 and f["binaries"] == 0 and f["device_refs"] == 0
    assert f["resets"] >= 1
    last = events[-1]
    assert last["event"] == "exit" and last["finalizes"] == 1 and last["after_finalize"] == 0


def test_exit_leaves_foreign_init_alone(tmp_path):
    # ACL initialised by another library first: we release what we hold, balance
    # our aclrtSetDevice calls, but do not finalize.
    events, _ = _report(tmp_path, EXIT, FAKE_ACL_PREINIT=1)
    assert [e["event"] for e in events] == ["exit"], events
    e = events[0]
    assert e["finalizes"] == 0 and e["initialised"] == 1
    assert e["outstanding"] == 0 and e["streams"] == 0 and e["binaries"] == 0 and e["device_refs"] == 0


def test_exit_without_npu_use_loads_nothing(tmp_path):
    events, _ = _report(tmp_path, "import ascend_linalg, numpy as np\n"
                                  "from ascend_linalg.linalg.blas import csymm\n"
                                  "with ascend_linalg.use_backend('cpu'):\n"
                                  "    csymm(1, np.eye(3, dtype=np.complex64), np.eye(3, dtype=np.complex64))\n")
    assert events == []   # the fake runtime was never even loaded


def test_exit_with_daemon_threads_still_calling(tmp_path):
    code = r"""
import threading, time, numpy as np, scipy.sparse as sp
import ascend_linalg, ascend_linalg.sparse as asp
ascend_linalg.set_backend("npu")
A = asp.csr_matrix(sp.random(1000, 1000, density=0.02, format="csr", random_state=3))
x = np.ones(1000)
def spin():
    while True:
        try:
            A @ x
        except Exception:
            pass
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
time.sleep(0.3)
"""
    events, p = _report(tmp_path, code)
    ex = events[-1]
    assert ex["event"] == "exit"
    assert ex["after_finalize"] == 0, "an ACL call reached the runtime after aclFinalize"
    if ex["finalizes"]:
        assert events[0]["event"] == "finalize" and events[0]["outstanding"] == 0


def test_exit_with_daemon_threads_fingerprinting():
    # fingerprint owns its arrays while the GIL is released (the list could lose
    # them meanwhile). A daemon thread ended there at exit must leak them, not
    # drop them without the GIL: under .ci/sanitize.sh's build (no NDEBUG)
    # pybind11 checks that, and the process aborts.
    p = run_process(r"""
import threading, time, numpy as np
from ascend_linalg import _core
arrays = [np.ones(2**20), np.arange(10)]
def spin():
    while True:
        _core.fingerprint(arrays)
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
time.sleep(0.3)
""")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    _no_sanitizer_report(p.stderr)


def test_calls_after_shutdown_fail_clearly():
    out = run(r"""
import json, numpy as np, scipy.sparse as sp
import ascend_linalg, ascend_linalg.sparse as asp
from ascend_linalg import _core
ascend_linalg.set_backend("npu")
A = asp.csr_matrix(sp.random(30, 20, density=0.2, format="csr", random_state=3))
A @ np.ones(20)
first = _core.npu_shutdown()
second = _core.npu_shutdown()
try:
    A @ np.ones(20)
    err = None
except Exception as exc:
    err = f"{type(exc).__name__}: {exc}"
print(json.dumps(dict(first=first, second=second, err=err)))
""", ASCEND_LINALG_ACL_LIB=FAKE)
    assert out["first"]["finalized"] and out["first"]["freed"] == 3 and out["first"]["resets"] == 1
    assert out["second"]["note"] == "already shut down" and not out["second"]["finalized"]
    assert out["err"].startswith("HostError") and "shut down at interpreter exit" in out["err"]


def test_forked_child_neither_uses_nor_releases_the_parents_runtime(tmp_path):
    code = r"""
import os, sys, numpy as np, scipy.sparse as sp
import ascend_linalg, ascend_linalg.sparse as asp
ascend_linalg.set_backend("npu")
A = asp.csr_matrix(sp.random(30, 20, density=0.2, format="csr", random_state=3))
A @ np.ones(20)
pid = os.fork()
if pid == 0:
    try:
        A @ np.ones(20)
        sys.exit(3)
    except Exception as exc:
        sys.exit(0 if "forked child cannot use it" in str(exc) else 4)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)
A @ np.ones(20)   # the parent still can
"""
    events, _ = _report(tmp_path, code)
    assert [e["event"] for e in events].count("finalize") == 1, events   # the parent's only
    child_exit, parent_exit = [e for e in events if e["event"] == "exit"]
    assert child_exit["finalizes"] == 0 and child_exit["resets"] == 0
    assert parent_exit["finalizes"] == 1 and parent_exit["outstanding"] == 0
