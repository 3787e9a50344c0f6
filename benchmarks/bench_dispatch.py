"""Dispatch overhead: the default (`auto`) path against calling scipy directly.

Goal (foundation issue): `auto` within 10% of scipy for a 64x64 csymm and a
50k-nonzero matvec. Also shows the `cpu` device on the same problems, and the
per-call cost where the work is nothing: csymm at 1x1, 16x16 and 32x32, and
the fused ``spmv`` (against scipy's ``A @ x``) on a 10 x 10 matrix.

    python benchmarks/bench_dispatch.py
"""
import os
import sys

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import csymm as scipy_csymm

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg.linalg.blas import csymm  # noqa: E402
from ascend_linalg.sparse import csr_matrix, spmv  # noqa: E402


def poisson2d(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.identity(n), T) + sp.kron(T, sp.identity(n))).tocsr()


def main():
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((64, 64)) + 1j * rng.standard_normal((64, 64))).astype(np.complex64, order="F")
    b = (rng.standard_normal((64, 64)) + 1j * rng.standard_normal((64, 64))).astype(np.complex64, order="F")
    S = poisson2d(100)  # 10^4 rows, 49,600 nonzeros
    A = csr_matrix(S)
    x = rng.standard_normal(S.shape[1])

    def in_backend(name, fn):
        # The process-wide setting, as a user would select it (a `with
        # use_backend` block per call would time the context manager too).
        def run():
            ascend_linalg.set_backend(name)
            try:
                return fn()
            finally:
                ascend_linalg.set_backend("auto")
        return run

    assert ascend_linalg.get_backend() == "auto", "run with ASCEND_LINALG_BACKEND unset"
    print(f"ascend_linalg {ascend_linalg.__version__}; default backend {ascend_linalg.get_backend()}; "
          f"{ascend_linalg.get_num_threads()} CPU threads")
    print(f"{'case':<30}{'scipy us':>10}{'auto us':>10}{'auto/scipy':>12}{'cpu us':>10}{'cpu/scipy':>11}")
    def square(n):
        z = rng.standard_normal((2, n, n)) + 1j * rng.standard_normal((2, n, n))
        return np.asfortranarray(z[0], dtype=np.complex64), np.asfortranarray(z[1], dtype=np.complex64)
    small = {n: square(n) for n in (1, 16, 32)}
    T = sp.random(10, 10, density=0.3, format="csr", random_state=0)
    Tt, xt = csr_matrix(T), np.ones(10)
    cases = {
        **{f"csymm {n}x{n} complex64": (lambda a=a_, b=b_: scipy_csymm(1.0, a, b), lambda a=a_, b=b_: csymm(1.0, a, b))
           for n, (a_, b_) in small.items()},
        "csymm 64x64 complex64": (lambda: scipy_csymm(1.0, a, b), lambda: csymm(1.0, a, b)),
        "spmv(A, x) vs A @ x, 10x10": (lambda: T @ xt, lambda: spmv(Tt, xt)),
        f"csr @ x, nnz={S.nnz}": (lambda: S @ x, lambda: A @ x),
        f"csr.T @ x, nnz={S.nnz}": (lambda: S.T @ x, lambda: A.T @ x),
    }
    for label, (ref, ours) in cases.items():
        t = interleaved({"scipy": ref, "auto": ours, "cpu": in_backend("cpu", ours)}, repeats=21)
        print(f"{label:<30}{t['scipy'] * 1e6:>10.1f}{t['auto'] * 1e6:>10.1f}{t['auto'] / t['scipy']:>12.3f}"
              f"{t['cpu'] * 1e6:>10.1f}{t['cpu'] / t['scipy']:>11.3f}")


if __name__ == "__main__":
    main()
