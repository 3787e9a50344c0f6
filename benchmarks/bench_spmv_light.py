"""Transposed products with far fewer nonzeros than columns, on the CPU
device: the merge path (``_core.spmv_light_force(0)``), the light product
(forced, 1), the rule's choice (-1) and scipy, in one process, interleaved
rounds in rotating order (``_timing.interleaved``), medians. The ratio is
scipy's time over the rule's (> 1: ours is faster), the median of each
round's own ratio (``_timing.paired_ratio``).

Matrices: 1e6 x 1e6 with 1% of the rows holding 5 nonzeros; 1e5 x 1e6 with
5,000 random nonzeros; 1e5 x 1e6 with 1e5; each times one vector and times
4 (X in C order), float32 and float64. Each result is checked against
scipy's first.

    python benchmarks/bench_spmv_light.py [--quick] [--threads N]
"""
import argparse
import os
import sys

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved, paired_ratio  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg import _core  # noqa: E402
from ascend_linalg.sparse import csr_matrix  # noqa: E402


def rows_of(rng, m, n, frac, length):
    """m x n, a fraction ``frac`` of the rows (at random) holding ``length`` random columns."""
    L = np.where(rng.random(m) < frac, length, 0)
    indptr = np.concatenate([[0], np.cumsum(L)])
    A = sp.csr_matrix((rng.standard_normal(indptr[-1]), rng.integers(0, n, indptr[-1]), indptr), shape=(m, n))
    A.sum_duplicates()
    return A


def scattered(rng, m, n, nnz):
    return sp.coo_matrix((rng.standard_normal(nnz), (rng.integers(0, m, nnz), rng.integers(0, n, nnz))),
                         shape=(m, n)).tocsr()


def forced(mode, A, x):
    def run():
        _core.spmv_light_force(mode)
        return A.T @ x
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a tenth of the sizes, fewer repeats")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    s = 10 if args.quick else 1
    repeats = 3 if args.quick else 9
    rng = np.random.default_rng(7)
    cases = {
        "1e6 x 1e6, 1% rows of 5": rows_of(rng, 10**6 // s, 10**6 // s, 0.01, 5),
        "1e5 x 1e6, 5000 nonzeros": scattered(rng, 10**5 // s, 10**6 // s, 5000 // s),
        "1e5 x 1e6, 1e5 nonzeros": scattered(rng, 10**5 // s, 10**6 // s, 10**5 // s),
    }
    print(f"ascend_linalg {ascend_linalg.__version__}, {ascend_linalg.get_num_threads()} CPU threads; "
          "ratio: scipy's time / the rule's")
    print(f"{'matrix':>26} {'dtype':>8} {'vec':>3} {'merge ms':>9} {'light ms':>9} {'rule ms':>8} "
          f"{'scipy ms':>9} {'ratio':>6}")
    try:
        with ascend_linalg.use_backend("cpu"):
            for name, M in cases.items():
                for dtype in (np.float32, np.float64):
                    S = M.astype(dtype)
                    A = csr_matrix(S)
                    for nvec in (1, 4):
                        shape = (S.shape[0],) if nvec == 1 else (S.shape[0], nvec)
                        x = rng.standard_normal(shape).astype(dtype)
                        ref = S.T @ x
                        fns = {"merge": forced(0, A, x), "light": forced(1, A, x), "rule": forced(-1, A, x),
                               "scipy": lambda S=S, x=x: S.T @ x}
                        for key in ("merge", "light", "rule"):
                            got = fns[key]()
                            assert got.dtype == ref.dtype and got.shape == ref.shape, (name, key)
                            assert np.allclose(got, ref, rtol=1e-4, atol=1e-4), (name, dtype, nvec, key)
                        samples = {}
                        med = interleaved(fns, repeats=repeats, samples=samples)
                        r = paired_ratio(samples, "scipy", "rule")
                        print(f"{name:>26} {np.dtype(dtype).name:>8} {nvec:>3} {med['merge'] * 1e3:>9.3f}"
                              f" {med['light'] * 1e3:>9.3f} {med['rule'] * 1e3:>8.3f} {med['scipy'] * 1e3:>9.3f}"
                              f" {r:>6.2f}{'  <--' if r < 1.0 else ''}", flush=True)
    finally:
        _core.spmv_light_force(-1)


if __name__ == "__main__":
    main()
