"""Memory: repeated calls keep resident memory flat; exit with a warm pool is clean."""
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from scipy.linalg import _fblas

import ascend_linalg
from ascend_linalg import sparse as S
from ascend_linalg.linalg import blas

REPEATS = 10_000
TOLERANCE_MB = 20


def _rss_mb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _ops():
    rng = np.random.default_rng(0)
    a = np.asfortranarray((rng.standard_normal((8, 8)) + 1j * rng.standard_normal((8, 8))).astype(np.complex64))
    b = np.asfortranarray(rng.standard_normal((8, 3)).astype(np.complex64))
    c = np.zeros((8, 3), np.complex64, order="F")
    dense = rng.standard_normal((20, 10)) * (rng.random((20, 10)) < 0.3)
    A, Ac, Am = S.csr_array(dense), S.csc_array(dense), S.csr_matrix(dense)
    x, X, xt = rng.standard_normal(10), rng.standard_normal((10, 2)), rng.standard_normal(20)
    bad = S.csr_array(dense)
    bad.indices[0] = 99  # error path: ValueError every call
    a_c = np.ascontiguousarray(a)  # row-major a: the transposed-view path
    b_ro = b.copy(order="F")
    b_ro.flags.writeable = False

    def bad_call():
        try:
            bad @ x
        except ValueError:
            pass
        try:
            blas.csymm(1, a, b[:5])
        except ValueError:
            pass
    return {
        "csymm": lambda: blas.csymm(1 + 1j, a, b, beta=0.5, c=c, overwrite_c=1),
        "csymm_copy_paths": lambda: blas.csymm(2, a_c, b_ro, side=0, lower=1),
        "csr_matvec": lambda: A @ x,
        "csc_matvec": lambda: Ac @ x,
        "csr_matmat": lambda: Am * X,
        "transposed": lambda: A.T @ xt,
        "errors": bad_call,
    }


@pytest.mark.parametrize("name", list(_ops()))
def test_rss_flat_over_repeated_calls(name):
    fn = _ops()[name]
    with ascend_linalg.use_backend("cpu"):
        for _ in range(500):  # warm-up: pool, caches, allocator arenas
            fn()
        before = _rss_mb()
        for _ in range(REPEATS):
            fn()
        after = _rss_mb()
    assert after - before < TOLERANCE_MB, f"{name}: RSS grew {after - before:.1f} MB over {REPEATS} calls"


def test_correct_after_repetition():
    ops = _ops()
    with ascend_linalg.use_backend("cpu"):
        first = ops["transposed"]()
        for _ in range(200):
            ops["transposed"]()
        assert np.array_equal(ops["transposed"](), first)


EXIT_SCRIPT = textwrap.dedent("""
    import threading, numpy as np, ascend_linalg
    from ascend_linalg import sparse as S
    from ascend_linalg.linalg import blas
    ascend_linalg.set_backend("cpu")
    a = np.asfortranarray(np.eye(300, dtype=np.complex64))
    blas.csymm(1, a, a)
    S.csr_array(np.eye(500)) @ np.ones(500)
    ascend_linalg.set_num_threads(3)
    blas.csymm(1, a, a)
    {extra}
    print("done", flush=True)
""")
IMPORT_TIMEOUT = 300  # the editable install may rebuild the extension on import
EXIT_TIMEOUT = 30


@pytest.mark.parametrize("extra", [
    "",
    # a daemon thread still launching work when the interpreter exits: CPython
    # ends it with pthread_exit when it takes the GIL back, a forced unwind
    # through the binding's frames (_core.cpp, retakeGil)
    "t = threading.Thread(target=lambda: [blas.csymm(1, a, a) for _ in range(10**6)], "
    "daemon=True); t.start(); import time; time.sleep(0.2)",
], ids=["plain", "daemon-thread-launching"])
def test_interpreter_exit_with_warm_pool_does_not_hang(extra):
    """Time from the script's last line to process exit is what is bounded."""
    proc = subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT.format(extra=extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.monotonic() + IMPORT_TIMEOUT
        while "done" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
        assert "done" in line, proc.stderr.read()[-2000:] if proc.poll() is not None else "no 'done'"
        t0 = time.monotonic()
        try:
            rc = proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"interpreter did not exit within {EXIT_TIMEOUT}s after its last statement")
        err = proc.stderr.read()
        assert rc == 0, err[-2000:]
        assert time.monotonic() - t0 < EXIT_TIMEOUT
        # a sanitizer report from the thread ended at exit may not change rc
        assert "runtime error:" not in err and "Sanitizer" not in err, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
