"""The NPU path end to end on the fake ACL runtime (docs/npu.md).

Discovery is cached per process, so every case that needs a particular
environment runs in a subprocess with ASCEND_LINALG_ACL_LIB (and FAKE_ACL_*)
set before ascend_linalg is imported.
"""
import ctypes
import pathlib
import re
import shutil
import struct
import subprocess

import pytest

from _fake_npu import FAKE, run

ROOT = pathlib.Path(__file__).resolve().parents[1]


INFO = """
import json, ascend_linalg
from ascend_linalg import _core, _routing
info = _core.acl_info()
info["route"] = _routing.route("csymm")
print(json.dumps(info))
"""


# ---- discovery -------------------------------------------------------------

def test_fake_makes_npu_usable_and_auto_routes_to_it():
    info = run(INFO, ASCEND_LINALG_ACL_LIB=FAKE)
    assert info["usable"], info["reason"]
    assert info["library"] == FAKE
    assert info["device_count"] == 1 and info["soc"] == "Ascend950PR_9599"
    assert info["route"] == "npu"


def test_discovery_order(tmp_path):
    homes = {}
    for name in ("home", "toolkit"):
        lib = tmp_path / name / "lib64"
        lib.mkdir(parents=True)
        (lib / "libascendcl.so").symlink_to(FAKE)
        homes[name] = str(tmp_path / name)
    both = dict(ASCEND_HOME_PATH=homes["home"], ASCEND_TOOLKIT_HOME=homes["toolkit"])
    info = run(INFO, ASCEND_LINALG_ACL_LIB=FAKE, **both)
    assert info["library"] == FAKE
    assert info["searched"][:3] == [FAKE, homes["home"] + "/lib64/libascendcl.so",
                                    homes["toolkit"] + "/lib64/libascendcl.so"]
    assert run(INFO, **both)["library"] == homes["home"] + "/lib64/libascendcl.so"
    info = run(INFO, ASCEND_HOME_PATH=str(tmp_path / "nowhere"), ASCEND_TOOLKIT_HOME=homes["toolkit"])
    assert info["library"] == homes["toolkit"] + "/lib64/libascendcl.so" and info["usable"]


def test_no_library_reason_and_explicit_npu_error():
    code = INFO.replace('print(json.dumps(info))', """
from ascend_linalg import use_backend, BackendUnavailableError
from ascend_linalg.linalg.blas import csymm
import numpy as np
a = np.eye(2, dtype=np.complex64)
try:
    with use_backend("npu"):
        csymm(1, a, a)
    info["error"] = None
except BackendUnavailableError as exc:
    info["error"] = str(exc)
print(json.dumps(info))""")
    info = run(code, ASCEND_LINALG_ACL_LIB="/nonexistent/libascendcl.so")
    assert not info["usable"] and info["route"] == "scipy"
    assert "not found" in info["reason"] and "/nonexistent/libascendcl.so" in info["reason"]
    assert info["error"] and "not found" in info["error"]


def test_missing_symbol(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build a stub runtime")
    src = tmp_path / "stub.c"
    src.write_text("int aclInit(const char* p) { (void)p; return 0; }\n")
    lib = tmp_path / "libascendcl.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    info = run(INFO, ASCEND_LINALG_ACL_LIB=lib)
    assert not info["usable"]
    assert "lacks symbol aclFinalize" in info["reason"], info["reason"]


@pytest.mark.parametrize("code, words", [
    (507033, "driver, toolkit and OPP versions do not match"),
    (507008, "SoC version"),
    (207004, "no device"),
])
def test_init_error_codes(code, words):
    info = run(INFO, ASCEND_LINALG_ACL_LIB=FAKE, FAKE_ACL_FAIL=f"init:{code}")
    assert not info["usable"] and info["route"] == "scipy"
    assert f"aclInit failed: ACL error {code}" in info["reason"] and words in info["reason"]


def test_zero_devices():
    info = run(INFO, ASCEND_LINALG_ACL_LIB=FAKE, FAKE_ACL_DEVICE_COUNT=0)
    assert not info["usable"] and info["device_count"] == 0
    assert "0 devices" in info["reason"]


def test_every_host_kernel_is_in_the_fake():
    lib = ctypes.CDLL(FAKE)
    lib.fakeAclKernelName.restype = ctypes.c_char_p
    have = {lib.fakeAclKernelName(i).decode() for i in range(lib.fakeAclKernelCount())}
    used = set()
    for f in (ROOT / "host").glob("*_host.cpp"):  # less those the host launches on the CPU device only
        used |= {m.group(1) for m in re.finditer(r'KernelDesc\s+\w+\s*\{\s*"(\w+)"[^\n]*', f.read_text())
                 if "// cpu-only" not in m.group(0)}
    assert used and used <= have, f"add to fake_acl/fake_kernels.def: {sorted(used - have)}"


def test_fake_rejects_bad_pointers_and_kinds():
    lib = ctypes.CDLL(FAKE)
    lib.aclInit(None)
    p = ctypes.c_void_p()
    assert lib.aclrtMalloc(ctypes.byref(p), ctypes.c_size_t(64), 0) == 0
    host = ctypes.create_string_buffer(128)
    memcpy = lib.aclrtMemcpy
    memcpy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert memcpy(p, 64, host, 64, 1) == 0
    assert memcpy(p, 128, host, 65, 1) == 100000          # past the allocation
    assert memcpy(host, 64, p, 64, 1) == 100000           # wrong kind
    assert memcpy(p, 64, host, 64, 7) == 100000           # unknown kind
    lib.aclrtFree.argtypes = [ctypes.c_void_p]
    assert lib.aclrtFree(ctypes.c_void_p(0x1234)) == 100000
    assert lib.aclrtFree(p) == 0
    assert lib.aclrtFree(p) == 100000                     # double free


# ---- results, transfers and failures on the fake NPU ------------------------

CHECKS = r"""
import ctypes, json
import numpy as np
from ascend_linalg import _core
from ascend_linalg.testing import fake_acl_path
fake = ctypes.CDLL(fake_acl_path())
fake.fakeAclStat.restype = ctypes.c_uint64
stat = lambda n: int(fake.fakeAclStat(n.encode()))
rng = np.random.default_rng(1)
out = {}

def cplx(*shape):
    return np.asfortranarray((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64))

# csymm: npu == cpu bit for bit (same tiling: ASCEND_LINALG_NPU_CORES == threads)
same = []
for side in (0, 1):
    for lower in (0, 1):
        for alpha, beta in ((0.5 - 1j, 2 + 0.5j), (1, 0), (0, 3j), (2j, 1)):
            m, n = 37, 23
            k = n if side else m
            a, b, c = cplx(k, k), cplx(m, n), cplx(m, n)
            c_cpu, c_npu = c.copy(order="F"), c.copy(order="F")
            _core.csymm("cpu", side, lower, alpha, a, b, beta, c_cpu)
            _core.csymm("npu", side, lower, alpha, a, b, beta, c_npu)
            same.append(bool(np.array_equal(c_cpu, c_npu)) and not np.array_equal(c_npu, c))
out["csymm_same"] = same

# csymm bytes: beta == 0 never uploads C; C comes back once.
m, n = 40, 30
a, b = cplx(m, m), cplx(m, n)
traffic = []
for beta in (0, 1 + 1j):
    c = cplx(m, n)
    fake.fakeAclReset()
    _core.csymm("npu", 0, 0, 1.5, a, b, beta, c)
    traffic.append((stat("bytes_h2d"), stat("bytes_d2h"), stat("launches"), stat("outstanding")))
out["csymm_traffic"] = traffic
out["csymm_sizes"] = [a.nbytes, b.nbytes, m * n * 8]

# SpMV: npu == cpu for N/T, several dtypes, 2-D X and strided Y.
import scipy.sparse as sp
S = sp.random(300, 200, density=0.05, format="csr", random_state=3)
spmv_same = []
for dtype in (np.float64, np.float32, np.complex64, np.complex128, np.int64):
    A = S.astype(dtype)
    if dtype == np.int64:
        A.data = rng.integers(-5, 5, A.nnz).astype(np.int64)
    for trans in (False, True):
        for ncols in (1, 3):
            rows, cols = A.shape
            xl, yl = (rows, cols) if trans else (cols, rows)
            x = (rng.standard_normal((xl, ncols)) * 4).astype(dtype)
            ybase = (rng.standard_normal((yl, 2 * ncols)) * 4).astype(dtype)
            for beta in (0, 2):
                ys = {}
                for dev in ("cpu", "npu"):
                    y = ybase.copy()
                    view = y[:, ::2]   # strided: the gaps must survive
                    _core.spmv(dev, trans, np.array([3], dtype), A.indptr, A.indices, A.data,
                               rows, cols, x, np.array([beta], dtype), view)
                    ys[dev] = y
                spmv_same.append(bool(np.array_equal(ys["cpu"], ys["npu"])) and
                                 bool(np.array_equal(ys["npu"][:, 1::2], ybase[:, 1::2])))
out["spmv_same"] = spmv_same

# SpMV bytes: contiguous y, beta == 0 vs 1.
A = S.astype(np.float64)
x = rng.standard_normal(200)
traffic = []
for beta in (0.0, 1.0):
    y = rng.standard_normal(300)
    fake.fakeAclReset()
    _core.spmv("npu", False, np.array([1.0]), A.indptr, A.indices, A.data, 300, 200, x,
               np.array([beta]), y)
    traffic.append((stat("bytes_h2d"), stat("bytes_d2h"), stat("launches"), stat("outstanding")))
out["spmv_traffic"] = traffic
out["spmv_sizes"] = [A.indptr.nbytes + A.indices.nbytes + A.data.nbytes + x.nbytes, 300 * 8]

# Injected failures: clear exception, output untouched, nothing left allocated.
fails = {}
for spec in ("malloc:1", "malloc:3", "memcpy:2", "memcpy:5", "launch", "sync"):
    for op in ("csymm", "spmv"):
        fake.fakeAclSetFail(spec.encode())
        if op == "csymm":
            a, b, c = cplx(20, 20), cplx(20, 10), cplx(20, 10)
            before = c.copy(order="F")
            call = lambda: _core.csymm("npu", 0, 1, 1 - 1j, a, b, 0.5, c)
            target = c
        else:
            y, xt = rng.standard_normal(200), rng.standard_normal(300)
            before, target = y.copy(), y
            call = lambda: _core.spmv("npu", True, np.array([1.0]), A.indptr, A.indices, A.data, 300, 200,
                                      xt, np.array([0.5]), y)
        try:
            call()
            err = None
        except Exception as exc:
            err = f"{type(exc).__name__}: {exc}"
        fails[f"{op} {spec}"] = [err, bool(np.array_equal(target, before)), stat("outstanding"),
                                 stat("injected_failures") > 0]
        fake.fakeAclSetFail(b"")
        fake.fakeAclReset()
out["fails"] = fails
out["bad_calls"] = stat("bad_calls")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def checks():
    return run(CHECKS, ASCEND_LINALG_ACL_LIB=FAKE, ASCEND_LINALG_NUM_THREADS=4, ASCEND_LINALG_NPU_CORES=4)


def test_csymm_npu_matches_cpu(checks):
    assert all(checks["csymm_same"]), checks["csymm_same"]


def test_spmv_npu_matches_cpu(checks):
    assert all(checks["spmv_same"]), checks["spmv_same"]


def test_csymm_bytes_moved(checks):
    a, b, c = checks["csymm_sizes"]
    (h2d0, d2h0, launches0, left0), (h2d1, d2h1, launches1, left1) = checks["csymm_traffic"]
    assert launches0 == launches1 == 1 and left0 == left1 == 0
    assert d2h0 == d2h1 == c                    # C comes back once
    tiling = h2d0 - a - b                       # beta == 0: A, B and the tiling only
    assert 0 < tiling < 512
    assert h2d1 == a + b + c + tiling           # beta != 0 also uploads C


def test_spmv_bytes_moved(checks):
    structure_and_x, y = checks["spmv_sizes"]
    (h2d0, d2h0, launches0, left0), (h2d1, d2h1, launches1, left1) = checks["spmv_traffic"]
    assert left0 == left1 == 0 and launches0 == launches1
    assert d2h0 == d2h1 == y + 4                # Y and the status word
    assert h2d1 - h2d0 == y                     # beta != 0 uploads Y
    # structure, X, the zeroed status line (64 bytes) and one tiling per launch
    assert 0 < h2d0 - structure_and_x - 64 < 512 * launches0


@pytest.mark.parametrize("spec", ["malloc:1", "malloc:3", "memcpy:2", "memcpy:5", "launch", "sync"])
@pytest.mark.parametrize("op", ["csymm", "spmv"])
def test_injected_failure(checks, op, spec):
    err, untouched, outstanding, injected = checks["fails"][f"{op} {spec}"]
    assert injected, "the failure was never reached"
    assert err is not None
    if spec.startswith("malloc"):
        # MemoryError, with the failing ACL call and its code in the message
        assert err.startswith("MemoryError: "), err
        assert "aclrtMalloc(" in err and "ACL error 207001" in err and "out of device memory" in err, err
    else:
        assert "ACL error 507899" in err and "driver internal error" in err, err
    assert untouched, "the caller's output changed although the call failed"
    assert outstanding == 0, "device memory leaked"


def test_no_invalid_calls_reached_the_fake(checks):
    assert checks["bad_calls"] == 0


def test_binary_without_a_kernel_falls_back_to_scipy_with_the_reason():
    # An architecture's binary holds only some ops (docs/npu.md): a call whose
    # kernel the binary lacks runs on scipy, recorded, instead of raising.
    out = run(r"""
import ctypes, json, numpy as np, scipy.sparse as sp
from scipy.linalg.blas import csymm as scipy_csymm
import ascend_linalg, ascend_linalg.sparse as asp
from ascend_linalg.linalg.blas import csymm
from ascend_linalg.testing import dispatch_records, fake_acl_path
fake = ctypes.CDLL(fake_acl_path()); fake.fakeAclStat.restype = ctypes.c_uint64
S = sp.random(40, 30, density=0.2, format="csr", random_state=2)
A = asp.csr_matrix(S)
x, xt = np.arange(30.0), np.arange(40.0)
a = (np.eye(5) + 1j).astype(np.complex64)
fake.fakeAclReset()
with dispatch_records() as recs:
    c = csymm(1, a, a)
    y, yt = A @ x, A.T @ xt
    yf = asp.spmv(A, x, alpha=2.0)
moved = {k: int(fake.fakeAclStat(k.encode())) for k in ("bytes_h2d", "mallocs", "launches")}
import gc
del A
gc.collect()
print(json.dumps(dict(
    same=[bool(np.allclose(c, scipy_csymm(1, a, a))), bool(np.allclose(y, S @ x)),
          bool(np.allclose(yt, S.T @ xt)), bool(np.allclose(yf, 2 * (S @ x)))],
    recs=[list(r) for r in recs], moved=moved, outstanding=int(fake.fakeAclStat(b"outstanding")))))
""", ASCEND_LINALG_ACL_LIB=FAKE, FAKE_ACL_MISSING_KERNELS="csymm_packed,spmv_merge,spmvt_merge")
    assert all(out["same"]), out
    ops = {}
    for r in out["recs"]:
        ops.setdefault(r[0], r)  # the first of each (spmv's inner scipy product comes later)
    assert ops["csymm"][1] == "scipy" and "aclrtBinaryGetFunction(csymm_packed)" in ops["csymm"][2]
    assert ops["csr_matvec"][1] == "scipy" and "spmv_merge" in ops["csr_matvec"][2]
    assert ops["csc_matvec"][1] == "scipy" and "spmvt_merge" in ops["csc_matvec"][2]
    assert ops["spmv"][1] == "scipy" and "the npu has no kernel for it" in ops["spmv"][2]
    # The binary is asked before anything is staged or uploaded: such a call
    # moves no bytes and allocates no device memory.
    assert out["moved"] == {"bytes_h2d": 0, "mallocs": 0, "launches": 0}, out["moved"]
    assert out["outstanding"] == 0


def test_value_type_the_binary_lacks_falls_back_to_scipy_with_the_reason():
    # A device binary whose SpMV kernels compute float32 only (the arch22
    # Ascend C build; FAKE_ACL_SPMV_TYPES makes the fake's kernels refuse the
    # rest the same way, with status word 2): other types come back
    # NOT_SUPPORTED and run on scipy, with the caller's arrays untouched.
    out = run(r"""
import ctypes, gc, json, numpy as np, scipy.sparse as sp
import ascend_linalg, ascend_linalg.sparse as asp
from ascend_linalg import use_backend
from ascend_linalg.testing import dispatch_records, fake_acl_path
fake = ctypes.CDLL(fake_acl_path()); fake.fakeAclStat.restype = ctypes.c_uint64
S64 = sp.random(60, 45, density=0.2, format="csr", random_state=3)
S32 = S64.astype(np.float32)
A64, A32 = asp.csr_matrix(S64), asp.csr_matrix(S32)
rng = np.random.default_rng(0)
x, xt = rng.standard_normal(45), rng.standard_normal(60)
y0 = rng.standard_normal(60)
y, keep = y0.copy(), (A64.data.copy(), A64.indices.copy(), A64.indptr.copy(), x.copy())
with dispatch_records() as recs:
    r64, r64t = A64 @ x, A64.T @ xt
    asp.spmv(A64, x, alpha=2.0, beta=0.5, y=y)
    r32 = A32 @ x.astype(np.float32)
with use_backend("npu"), dispatch_records() as recs_npu:
    r64n = A64 @ x
del A64, A32
gc.collect()
print(json.dumps(dict(
    exact=[bool(np.array_equal(r64, S64 @ x)), bool(np.array_equal(r64t, S64.T @ xt)),
           bool(np.array_equal(r64n, S64 @ x)),
           bool(np.allclose(y, 2.0 * (S64 @ x) + 0.5 * y0, rtol=1e-13, atol=0))],
    close32=bool(np.allclose(r32, S32 @ x.astype(np.float32), rtol=1e-5, atol=1e-6)),
    untouched=all(bool(np.array_equal(a, b)) for a, b in zip(keep, (S64.data, S64.indices, S64.indptr, x))),
    recs=[list(r) for r in recs], recs_npu=[list(r) for r in recs_npu],
    outstanding=int(fake.fakeAclStat(b"outstanding")), bad_calls=int(fake.fakeAclStat(b"bad_calls")))))
""", ASCEND_LINALG_ACL_LIB=FAKE, FAKE_ACL_SPMV_TYPES="float32")
    assert all(out["exact"]) and out["close32"] and out["untouched"], out
    # The fused call asks the device once, then computes on scipy (its inner
    # product is recorded as a plain scipy call).
    backends = [(r[0], r[1]) for r in out["recs"]]
    assert backends == [("csr_matvec", "scipy"), ("csc_matvec", "scipy"), ("csr_matvec", "scipy"),
                        ("spmv", "scipy"), ("csr_matvec", "npu")], out["recs"]
    assert out["recs"][2][2] is None
    for r in out["recs"][:2] + out["recs"][3:4] + out["recs_npu"]:
        assert r[1] == "scipy" and "NOT_SUPPORTED" in r[2] and "value type 1" in r[2], r
    assert out["outstanding"] == 0 and out["bad_calls"] == 0


def test_ascendc_value_types_table_matches_the_kernel_sources():
    # The table the host asks before staging for a real kernel binary.
    R32F, R64F, C32F, C64F, R32I = 0, 1, 2, 3, 4
    from ascend_linalg import _core
    for k in ("spmv_merge", "spmv_fixup_merge", "spmvt_merge", "spmvt_reduce_merge"):
        assert _core.ascendc_kernel_computes("arch22", k, R32F)
        for t in (R64F, C32F, C64F, R32I):
            assert not _core.ascendc_kernel_computes("arch22", k, t)
    assert _core.ascendc_kernel_computes("arch35", "csymm_packed", C32F)
    assert not _core.ascendc_kernel_computes("arch35", "csymm_packed", C64F)
    root = pathlib.Path(__file__).resolve().parents[1]
    spmv = (root / "kernels/spmv/arch22/spmv_kernel.cpp").read_text()
    assert "t_.valueType != AL_R_32F" in spmv  # the kernel's own refusal, which the table mirrors


# CsymmTilingData and SpmvTilingData (host/*_tiling.h) as the kernel receives them.
CSYMM_TILING = struct.Struct("=6q4f13i4xq")
CSYMM_FIELDS = ("m n k lda ldb ldc alphaReal alphaImag betaReal betaImag side uplo alphaBetaMode "
                "blockM blockN blockK tilesM tilesN tailM tailN tailK usedCoreNum reserved workspaceSize").split()
SPMV_TILING = struct.Struct("=8q16s16s6i5q4i")
SPMV_FIELDS = ("rows cols nnz nvec xRowStride xColStride yRowStride yColStride alpha beta trans valueType "
               "indexType betaMode usedCoreNum valueStore workspaceSize carryOffset partOffset pageOffset "
               "pages prefetchPlan reserved0 reserved1 reserved2").split()


@pytest.mark.parametrize("cores", [None, 5])
def test_npu_launches_are_tiled_for_the_npu(cores):
    # The NPU launch carries the tiling of the NPU platform (cube-core count,
    # DAV_3510 buffer limits, one block per core), not the CPU's.
    env = dict(ASCEND_LINALG_ACL_LIB=FAKE)
    if cores:
        env["ASCEND_LINALG_NPU_CORES"] = cores
    out = run(r"""
import ctypes, json, numpy as np
import ascend_linalg.sparse as asp
from ascend_linalg import use_backend
from ascend_linalg.linalg.blas import csymm
from ascend_linalg.testing import fake_acl_path
fake = ctypes.CDLL(fake_acl_path())
fake.fakeAclLastTiling.restype = ctypes.c_size_t
def last(name):
    n = fake.fakeAclLastTiling(name.encode(), None, 0)
    buf = ctypes.create_string_buffer(n)
    fake.fakeAclLastTiling(name.encode(), buf, n)
    return buf.raw.hex()
rng = np.random.default_rng(1)
got = {}
with use_backend("npu"):
    for m, n, side, lower in [(300, 300, 0, 0), (1024, 512, 1, 1), (16, 16, 0, 1)]:
        a = (rng.standard_normal((max(m, n),) * 2) + 1j).astype(np.complex64)
        a = np.asfortranarray(a[:m, :m] if side == 0 else a[:n, :n])
        b = np.asfortranarray(rng.standard_normal((m, n)).astype(np.complex64))
        csymm(1, a, b, side=side, lower=lower)
        got[f"csymm {m} {n} {side} {lower}"] = last("csymm_packed")
    g = 200
    A = asp.kronsum(asp.diags([-1, 2, -1], [-1, 0, 1], shape=(g, g)),
                    asp.diags([-1, 2, -1], [-1, 0, 1], shape=(g, g)), format="csr")
    x = np.ones(g * g)
    A @ x; got["spmv"] = last("spmv_merge")
    A.T @ x; got["spmvt"] = last("spmvt_merge")
    got["nnz"] = int(A.nnz)
print(json.dumps(got))
""", **env)
    from ascend_linalg import _core
    ncores = cores or 32  # Ascend950PR (the fake's SoC): 32 cube cores
    for key, hexdata in out.items():
        if not key.startswith("csymm"):
            continue
        raw = bytes.fromhex(hexdata)
        assert len(raw) == CSYMM_TILING.size, (key, len(raw))
        t = dict(zip(CSYMM_FIELDS, CSYMM_TILING.unpack(raw)))
        m, n, side, lower = map(int, key.split()[1:])
        want = _core.csymm_tiling(142 if side else 141, 122 if lower else 121, m, n,
                                  platform="ascend950", cores=ncores)
        for f in ("m", "n", "k", "blockM", "blockN", "blockK", "tilesM", "tilesN", "tailM", "tailN",
                  "tailK", "usedCoreNum", "workspaceSize"):
            assert t[f] == want[f], (key, f, t[f], want[f])
        assert want["platform"]["coreNum"] == ncores
        assert t["usedCoreNum"] == min(ncores, t["tilesM"] * t["tilesN"])
        assert 2 * t["blockM"] * t["blockN"] * 4 <= 256 * 1024  # L0C
        # What the CPU platform (the host's threads) would have chosen differs.
        threads = _core.cpu_num_threads()
        cpu = _core.csymm_tiling(142 if side else 141, 122 if lower else 121, m, n, platform="cpu", threads=threads)
        if m >= 300 and 4 * threads != ncores:
            assert (cpu["blockM"], cpu["usedCoreNum"]) != (t["blockM"], t["usedCoreNum"]), key
    work = 200 * 200 + out["nnz"]
    for key in ("spmv", "spmvt"):
        raw = bytes.fromhex(out[key])
        assert len(raw) == SPMV_TILING.size, (key, len(raw))
        t = dict(zip(SPMV_FIELDS, SPMV_TILING.unpack(raw)))
        assert (t["rows"], t["nnz"], t["trans"]) == (40000, out["nnz"], key == "spmvt")
        # the prefetch plan is the CPU kernel's; the NPU's launches carry none
        assert (t["prefetchPlan"], t["reserved0"], t["reserved1"], t["reserved2"]) == (0, 0, 0, 0)
        # One block per core (the CPU device runs four per thread), at least
        # 16384 rows + nonzeros each.
        assert t["usedCoreNum"] == max(1, min(ncores, work // 16384)), (key, t["usedCoreNum"])


def test_half_values_on_the_npu_are_converted_first():
    # The NPU kernels read values of the compute type: the host refuses
    # float16/bfloat16 values there (NOT_SUPPORTED, before any transfer), and
    # spmv() converts them to float32 first, on the npu, with the CPU device's
    # in-place widening giving the same numbers.
    pytest.importorskip("ml_dtypes")
    out = run(r"""
import json, numpy as np, ml_dtypes, scipy.sparse as sp
from ascend_linalg import _core, use_backend
from ascend_linalg.sparse import spmv
from ascend_linalg.testing import dispatch_records
rng = np.random.default_rng(0)
S = sp.random(60, 50, density=0.2, format="csr", random_state=1)
res = {}
for hd in (np.float16, ml_dtypes.bfloat16):
    d = S.data.astype(hd)
    x = rng.standard_normal(50).astype(hd)
    with use_backend("npu"), dispatch_records() as rec:
        yn = spmv((d, S.indices, S.indptr), x, shape=S.shape)
    with use_backend("cpu"):
        yc = spmv((d, S.indices, S.indptr), x, shape=S.shape)
    try:
        _core.spmv("npu", False, np.ones(1, np.float32), S.indptr, S.indices, d, 60, 50,
                   x.astype(np.float32), np.zeros(1, np.float32), np.empty(60, np.float32))
        err = None
    except Exception as e:
        err = [type(e).__name__, str(e)]
    res[np.dtype(hd).name] = [rec, bool(np.allclose(yn, yc, rtol=1e-5, atol=1e-6)), err]
print(json.dumps(res))
""", ASCEND_LINALG_ACL_LIB=FAKE)
    for half in ("float16", "bfloat16"):
        rec, same, err = out[half]
        assert rec == [["spmv", "npu", None]]
        assert same
        assert err[0] == "HostError" and "NOT_SUPPORTED" in err[1] and "CPU device only" in err[1], err
