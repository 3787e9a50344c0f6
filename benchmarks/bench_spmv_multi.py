"""Sparse matrix times several vectors (``A @ X``, ``A.T @ X`` with 2-D X):
the project's CPU kernels (``use_backend('cpu')``) against scipy's on the
same matrices, in one process, interleaved repetitions, medians
(``_timing.interleaved``).

X in C order (rows contiguous, what the kernels read) and in Fortran order
(copied to C order first, by both: scipy ravels it, ours makes it
contiguous). ``ours/scipy`` is scipy's time over ours (> 1: ours faster).

    python benchmarks/bench_spmv_multi.py [--quick] [--threads N]
"""
import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved  # noqa: E402
from bench_spmv import poisson2d, random_matrix  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg.sparse import csr_matrix  # noqa: E402

warnings.simplefilter("ignore", FutureWarning)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller matrices, fewer repeats")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    scale = 4 if args.quick else 1
    mats = {
        f"poisson2d {1000 // scale}^2": poisson2d(1000 // scale),
        f"random {300000 // scale}, nnz {3000000 // scale}": random_matrix(rng, 300000 // scale, 3000000 // scale),
    }
    repeats = 3 if args.quick else 5
    print(f"ascend_linalg {ascend_linalg.__version__}, {ascend_linalg.get_num_threads()} CPU threads")
    print(f"{'matrix':<30}{'dtype':<9}{'op':<4}{'k':>3}{'X':>3}{'scipy ms':>10}{'ours ms':>9}{'ours/scipy':>11}")
    for label, M in mats.items():
        for dtype in (np.float32, np.float64):
            S = M.astype(dtype)
            S.indices = S.indices.astype(np.int32)
            S.indptr = S.indptr.astype(np.int32)
            A = csr_matrix(S)
            for k in (2, 4, 8, 16):
                for trans in (False, True):
                    for order in "CF":
                        X = np.asarray(rng.standard_normal((S.shape[0], k)), dtype=dtype, order=order)
                        St, At = (S.T, A.T) if trans else (S, A)

                        def ours(At=At, X=X):
                            with ascend_linalg.use_backend("cpu"):
                                return At @ X
                        assert np.allclose(ours(), St @ X, rtol=1e-3, atol=1e-3)
                        t = interleaved({"scipy": lambda St=St, X=X: St @ X, "ours": ours}, repeats=repeats)
                        print(f"{label:<30}{np.dtype(dtype).name:<9}{'T' if trans else 'N':<4}{k:>3}{order:>3}"
                              f"{t['scipy'] * 1e3:>10.2f}{t['ours'] * 1e3:>9.2f}{t['scipy'] / t['ours']:>11.2f}",
                              flush=True)


if __name__ == "__main__":
    main()
