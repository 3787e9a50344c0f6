"""scipy's iterative solvers on a matrix built with the project's
``csr_matrix`` (its products on the CPU device) against the same solvers on
scipy's own matrix: what a scipy user who changes the import sees in a loop
where products alternate with numpy's vector work.

Each solver runs a fixed number of iterations (``rtol=0``: no early stop),
so both sides do the same work; ``cg`` and ``gmres`` on a 2-D Poisson
matrix, ``lsqr`` on the same matrix (its products are ``A @ x`` and
``A.T @ x``). Candidates, interleaved in rotating order, medians of whole
solver runs: scipy; ours on one thread; ours on the benchmark's thread
count (``ascend_linalg.set_num_threads``). Products under 2^18 rows +
nonzeros run on one thread whatever the count (docs/design.md), so the
smallest grid shows the per-call cost only.

numpy's and scipy's OpenBLAS thread their vector operations (dot, axpy) on
long vectors. On a 2-core machine their threads and ours share the second
core, which slows every candidate, scipy's included; the header prints the
setting the run used. ``OPENBLAS_NUM_THREADS=1`` keeps OpenBLAS on the
calling thread (see docs/performance.md for both settings).

    python benchmarks/bench_spmv_solvers.py [--quick] [--threads N]
"""
import argparse
import os
import sys
import warnings

import numpy as np
import scipy.sparse.linalg as spla

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved, paired_ratio  # noqa: E402
from bench_spmv import poisson2d  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg.sparse import csr_matrix  # noqa: E402

warnings.simplefilter("ignore", FutureWarning)

ITERS = {"cg": 300, "gmres": 100, "lsqr": 150}


def run(solver, M, rhs, threads=None):
    """One solver run of ITERS[solver] iterations; returns the iteration
    count as the solver reports it (lsqr's itn; cg's and gmres's info), so
    the caller can check both sides did the same work."""
    if threads is not None:
        ascend_linalg.set_num_threads(threads)
    n = ITERS[solver]
    if solver == "cg":
        x, info = spla.cg(M, rhs, rtol=0.0, atol=0.0, maxiter=n)
        return info
    if solver == "gmres":
        x, info = spla.gmres(M, rhs, rtol=0.0, atol=0.0, restart=20, maxiter=n // 20)
        return info
    return spla.lsqr(M, rhs, atol=0.0, btol=0.0, conlim=0.0, iter_lim=n)[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer grids and rounds")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    nt = args.threads or ascend_linalg.get_num_threads()
    grids = (112, 300) if args.quick else (112, 300, 500)
    rounds = 5 if args.quick else 9
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset (OpenBLAS's default)")
    print(f"ascend_linalg {ascend_linalg.__version__}, {nt} CPU threads; OPENBLAS_NUM_THREADS={blas}")
    print(f"{'solver':<8}{'grid':>6}{'nnz':>10}{'scipy ms':>10}{'ours 1t ms':>12}{'ours ms':>9}"
          f"{'ours/scipy':>12}{'ours 1t/scipy':>15}")
    ascend_linalg.set_backend("cpu")
    try:
        for g in grids:
            S = poisson2d(g)
            A = csr_matrix(S)
            rhs = np.ones(S.shape[0])
            for solver in ITERS:
                # same iteration counts on both sides (lsqr: itn; cg and gmres:
                # info, the iterations run when not converged)
                got = (run(solver, S, rhs), run(solver, A, rhs, nt))
                assert got[0] == got[1], f"{solver} {g}: {got} iterations"
                s = {}
                t = interleaved({"scipy": lambda: run(solver, S, rhs),
                                 "ours1": lambda: run(solver, A, rhs, 1),
                                 "ours": lambda: run(solver, A, rhs, nt)}, repeats=rounds, min_time=0.0, samples=s)
                print(f"{solver:<8}{g:>5}^2{S.nnz:>10}{t['scipy'] * 1e3:>10.1f}{t['ours1'] * 1e3:>12.1f}"
                      f"{t['ours'] * 1e3:>9.1f}{paired_ratio(s, 'scipy', 'ours'):>12.2f}"
                      f"{paired_ratio(s, 'scipy', 'ours1'):>15.2f}", flush=True)
    finally:
        ascend_linalg.set_num_threads(nt)


if __name__ == "__main__":
    main()
