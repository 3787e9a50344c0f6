"""``A.T @ x`` on large scattered matrices: the binned kernel against the
partial-sum kernel and scipy, in one process, interleaved repetitions,
medians (``_timing.interleaved``).

Random n x n matrices with 10 nonzeros a row (sorted columns, int32
indices), float32 and float64, for n where the blocks' partials (blocks x n
x value bytes) lie below, around and past this machine's last-level cache.
Candidates: scipy's ``S.T @ x``; ours with the default rule (``auto``:
binned past 20 MB of partials with scattered indices); ours forced onto the
partial-sum kernel (``partial``) and onto the binned one (``binned``,
``_core.spmv_bin_force``). Each ratio is scipy's time over ours (> 1: ours
is faster), the median over rounds of each round's own ratio
(``_timing.paired_ratio``). The binned result is checked bit for bit
against scipy's.

``--fused`` times ``y = 2 * A.T @ x + 0.5 * y`` instead: ours in one call,
``spmv(A, x, alpha=2, beta=0.5, y=y, trans=True)`` (binned, its sums go to a
buffer and the last pass writes y with alpha and beta), scipy as a scipy user
writes it, ``2 * (S.T @ x) + 0.5 * y``. The binned result is checked bit for
bit against numpy's ``2 * s + 0.5 * y`` on scipy's ``s = S.T @ x``.

    python benchmarks/bench_spmv_bins.py [--quick] [--threads N] [--sizes 1e6,2e6,4e6] [--fused]
"""
import argparse
import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved, paired_ratio  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg import _core  # noqa: E402
from ascend_linalg.sparse import csr_matrix, spmv  # noqa: E402

warnings.simplefilter("ignore", FutureWarning)


def random_rows(rng, n, per):
    idx = rng.integers(0, n, n * per, dtype=np.int32).reshape(n, per)
    idx.sort(axis=1)
    return idx.ravel(), np.arange(0, n * per + 1, per, dtype=np.int32)


ALPHA, BETA = 2.0, 0.5


def ours(A, x, mode, y=None):
    """A.T @ x, or with y: y = ALPHA * A.T @ x + BETA * y in place."""
    def call():
        _core.spmv_bin_force(mode, 0)
        with ascend_linalg.use_backend("cpu"):
            if y is None:
                return A.T @ x
            return spmv(A, x, alpha=ALPHA, beta=BETA, y=y, trans=True)
    return call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 1e6 and 2e6 only, 5 rounds")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--sizes", default=None, help="comma-separated n (default 1e6,1.5e6,2e6,4e6)")
    ap.add_argument("--fused", action="store_true", help=f"y = {ALPHA:g} A.T x + {BETA:g} y instead of A.T @ x")
    args = ap.parse_args()
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    sizes = [int(float(s)) for s in (args.sizes or ("1e6,2e6" if args.quick else "1e6,1.5e6,2e6,4e6")).split(",")]
    repeats = 5 if args.quick else 9
    nt = ascend_linalg.get_num_threads()
    what = f"y = {ALPHA:g} * A.T @ x + {BETA:g} * y" if args.fused else "A.T @ x"
    print(f"ascend_linalg {ascend_linalg.__version__}, {nt} CPU threads; random n x n, 10 nonzeros a row, {what}")
    print(f"{'n':>9} {'dtype':>8} {'partials':>9} {'scipy ms':>9} {'auto ms':>8} {'partial ms':>10} {'binned ms':>9}"
          f" {'auto/scipy':>10} {'partial/scipy':>13} {'binned/scipy':>12} {'rule':>7}")
    rng = np.random.default_rng(0)
    try:
        for n in sizes:
            idx, ip = random_rows(rng, n, 10)
            for dtype in (np.float32, np.float64):
                val = rng.random(idx.size).astype(dtype)
                x = rng.random(n).astype(dtype)
                S = sp.csr_matrix((val, idx, ip), shape=(n, n))
                A = csr_matrix((val, idx, ip), shape=(n, n))
                y = rng.random(n).astype(dtype) if args.fused else None
                if y is None:
                    expect, got = S.T @ x, ours(A, x, 1)()
                else:
                    a, b = dtype(ALPHA), dtype(BETA)
                    expect, got = a * (S.T @ x) + b * y, ours(A, x, 1, y.copy())()
                if not np.array_equal(got, expect):
                    raise SystemExit(f"binned result differs from scipy's at n={n} {np.dtype(dtype).name}")
                before = _core.spmv_bin_calls()
                ours(A, x, -1, None if y is None else y.copy())()
                rule = "binned" if _core.spmv_bin_calls() > before else "partial"
                if y is None:
                    theirs = lambda S=S, x=x: S.T @ x  # noqa: E731
                else:
                    def theirs(S=S, x=x, y=y.copy()):
                        return ALPHA * (S.T @ x) + BETA * y
                samples = {}
                med = interleaved({"scipy": theirs, "auto": ours(A, x, -1, y), "partial": ours(A, x, 0, y),
                                   "binned": ours(A, x, 1, y)},
                                  repeats=repeats, min_time=0.0, samples=samples)
                r = {k: paired_ratio(samples, "scipy", k) for k in ("auto", "partial", "binned")}
                mb = nt * n * np.dtype(dtype).itemsize / 2**20
                print(f"{n:>9.2g} {np.dtype(dtype).name:>8} {mb:>7.0f}MB {med['scipy']*1e3:>9.1f}"
                      f" {med['auto']*1e3:>8.1f} {med['partial']*1e3:>10.1f} {med['binned']*1e3:>9.1f}"
                      f" {r['auto']:>10.2f} {r['partial']:>13.2f} {r['binned']:>12.2f} {rule:>7}", flush=True)
                del S, A, val, x, y, expect
    finally:
        _core.spmv_bin_force(-1, 0)


if __name__ == "__main__":
    main()
