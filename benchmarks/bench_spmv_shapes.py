"""A sweep of matrix shapes beyond ``bench_spmv.py``'s: ours against scipy on
the CPU device, in one process, interleaved repetitions, medians
(``_timing.interleaved``); each ratio is scipy's time over ours (> 1: ours
is faster), the median over rounds of each round's own ratio
(``_timing.paired_ratio``). A ratio under 1.0 is flagged ``<--``.

Shapes: tall (1e6 x 8; 1e6 x 2000, 5 a row) and wide (8 x 1e6, 100 x 1e5) random matrices, a 2e6
identity and a 2e6 tridiagonal matrix, one dense row, one dense column,
random 2e5 x 2e5 with 20 a row, two mostly empty 1e6 x 1e6 matrices (1% of
the rows holding 50 nonzeros; 1% holding 5), and 1e5 x 1e6 with 5,000
nonzeros: the last two light products, with far fewer nonzeros than
columns. Products: ``A @ x`` (N), ``A.T @ x`` (T), and ``A @ X`` / ``A.T @
X`` of 4 columns in C order (NX4, TX4), in float64, float32, complex128 and
int64. Each result is checked against scipy's first.

    python benchmarks/bench_spmv_shapes.py [--quick] [--threads N]
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
from ascend_linalg.sparse import csr_matrix  # noqa: E402

warnings.simplefilter("ignore", FutureWarning)


def random_csr(rng, m, n, nnz):
    return sp.random(m, n, density=nnz / (m * n), format="csr", random_state=rng)


def with_dense_row(rng, n):
    A = random_csr(rng, n, n, 5 * n).tolil()
    A[n // 2, :] = 1.0
    return A.tocsr()


def with_dense_col(rng, n):
    A = random_csr(rng, n, n, 5 * n).tolil()
    A[:, n // 2] = 1.0
    return A.tocsr()


def mostly_empty(rng, n, frac, length):
    """n x n, a fraction ``frac`` of the rows (at random) holding ``length`` random columns."""
    L = np.where(rng.random(n) < frac, length, 0)
    indptr = np.concatenate([[0], np.cumsum(L)])
    A = sp.csr_matrix((rng.standard_normal(indptr[-1]), rng.integers(0, n, indptr[-1]), indptr), shape=(n, n))
    A.sum_duplicates()
    return A


def checked_pair(S, A, x, trans, what):
    """(scipy's product, ours) as callables: ``S @ x`` and ``A @ x`` (``.T``
    when ``trans``), after checking that ours gives scipy's result."""
    theirs = (lambda: S.T @ x) if trans else (lambda: S @ x)
    ours = (lambda: A.T @ x) if trans else (lambda: A @ x)
    ref, got = theirs(), ours()
    assert got.dtype == ref.dtype and got.shape == ref.shape, what
    scale = max(1.0, float(np.abs(ref).max(initial=0)))
    assert np.allclose(got, ref, rtol=1e-4, atol=1e-4 * scale), what
    return theirs, ours


def cases(rng, quick):
    s = 4 if quick else 1  # --quick: smaller matrices
    return {
        "tall 1e6 x 8": random_csr(rng, 10**6 // s, 8, 4 * 10**6 // s),
        "tall 1e6 x 2000": random_csr(rng, 10**6 // s, 2000, 5 * 10**6 // s),
        "wide 8 x 1e6": random_csr(rng, 8, 10**6 // s, 4 * 10**6 // s),
        "wide 100 x 1e5": random_csr(rng, 100, 10**5, 4 * 10**6 // s),
        "identity 2e6": sp.identity(2 * 10**6 // s, format="csr"),
        "tridiagonal 2e6": sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(2 * 10**6 // s,) * 2, format="csr"),
        "dense row 3e5": with_dense_row(rng, 3 * 10**5 // s),
        "dense column 3e5": with_dense_col(rng, 3 * 10**5 // s),
        "random 2e5, 20 a row": random_csr(rng, 2 * 10**5 // s, 2 * 10**5 // s, 4 * 10**6 // s),
        "1e6, 1% rows of 50": mostly_empty(rng, 10**6 // s, 0.01, 50),
        "1e6, 1% rows of 5": mostly_empty(rng, 10**6 // s, 0.01, 5),
        "1e5 x 1e6, 5000 nonzeros": random_csr(rng, 10**5 // s, 10**6 // s, 5000 // s),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="quarter-size matrices, two dtypes, fewer repeats")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    rng = np.random.default_rng(5)
    dtypes = (np.float64, np.float32) if args.quick else (np.float64, np.float32, np.complex128, np.int64)
    repeats = 3 if args.quick else 5
    print(f"ascend_linalg {ascend_linalg.__version__}, {ascend_linalg.get_num_threads()} CPU threads; "
          "ratio: scipy's time / ours")
    print(f"{'matrix':>24} {'dtype':>10} {'op':>4} {'scipy ms':>9} {'ours ms':>8} {'ratio':>6}")
    below = 0
    with ascend_linalg.use_backend("cpu"):
        for name, M in cases(rng, args.quick).items():
            for dtype in dtypes:
                S = M.astype(dtype)
                A = csr_matrix(S)
                for op in ("N", "T", "NX4", "TX4"):
                    trans = op.startswith("T")
                    n = S.shape[0] if trans else S.shape[1]
                    shape = (n, 4) if op.endswith("X4") else (n,)
                    x = rng.standard_normal(shape).astype(dtype)
                    theirs, ours = checked_pair(S, A, x, trans, (name, dtype, op))
                    samples = {}
                    med = interleaved({"scipy": theirs, "ours": ours}, repeats=repeats, samples=samples)
                    r = paired_ratio(samples, "scipy", "ours")
                    below += r < 1.0
                    print(f"{name:>24} {np.dtype(dtype).name:>10} {op:>4} {med['scipy'] * 1e3:>9.3f}"
                          f" {med['ours'] * 1e3:>8.3f} {r:>6.2f}{'  <--' if r < 1.0 else ''}", flush=True)
    print(f"{below} products slower than scipy")


if __name__ == "__main__":
    main()
