"""Products whose result is 32 MiB or larger: ours with the result cache on
and off, against scipy, on the CPU device.

Such a result is, for numpy and glibc, a fresh mapping on every call: each
page the product writes first faults and is zeroed by the system. With the
cache on (the default), a freed result's memory goes to the next result of
its size (ascend_linalg/_core_results.cpp). Each pass is one process,
interleaved repetitions, medians (``_timing.interleaved``); the ratio is
scipy's time over ours, the median of each round's own ratio
(``_timing.paired_ratio``). The "off" pass runs with
``set_result_cache_limit(0)``, as a product did before the cache.

Matrices: 1e6 x 1e6 with 1% of its rows holding 5 nonzeros (most of the
result's rows empty) and the 5e6 tridiagonal matrix; ``A @ x`` (N), ``A @
X`` of k columns in C order (NXk), ``A.T @ X`` (TXk).

    python benchmarks/bench_spmv_large_results.py [--repeats N]
"""
import argparse
import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved, paired_ratio  # noqa: E402
from bench_spmv_shapes import checked_pair, mostly_empty  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg.sparse import csr_matrix  # noqa: E402

warnings.simplefilter("ignore", FutureWarning)


def cases(rng):
    sparse_rows = mostly_empty(rng, 10**6, 0.01, 5)
    tri = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(5 * 10**6,) * 2, format="csr")
    return [("1e6, 1% rows of 5", sparse_rows, np.complex128, "NX4"),
            ("1e6, 1% rows of 5", sparse_rows, np.float64, "NX8"),
            ("1e6, 1% rows of 5", sparse_rows, np.float64, "TX8"),
            ("tridiagonal 5e6", tri, np.float64, "N"),
            ("tridiagonal 5e6", tri, np.complex128, "N"),
            ("tridiagonal 5e6", tri, np.float32, "NX4"),
            ("tridiagonal 5e6", tri, np.complex128, "NX4")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(5)
    default_limit = ascend_linalg.result_cache_info()["limit_bytes"]
    print(f"ascend_linalg {ascend_linalg.__version__}, {ascend_linalg.get_num_threads()} CPU threads; "
          "ratio: scipy's time / ours")
    print(f"{'matrix':>18} {'dtype':>10} {'op':>4} {'MB':>5} | cache on: {'scipy':>7} {'ours':>7} {'ratio':>5}"
          f" | cache off: {'scipy':>7} {'ours':>7} {'ratio':>5}")
    with ascend_linalg.use_backend("cpu"):
        for name, M, dtype, op in cases(rng):
            S = M.astype(dtype)
            A = csr_matrix(S)
            trans = op.startswith("T")
            k = int(op[2:]) if "X" in op else 1
            n = S.shape[0] if trans else S.shape[1]
            x = rng.standard_normal((n, k) if k > 1 else n).astype(dtype)
            theirs, ours = checked_pair(S, A, x, trans, (name, dtype, op))
            nbytes = S.shape[1 if trans else 0] * k * np.dtype(dtype).itemsize
            row = f"{name:>18} {np.dtype(dtype).name:>10} {op:>4} {nbytes / 1e6:>5.0f}"
            for limit in (default_limit, 0):
                ascend_linalg.set_result_cache_limit(limit)
                samples = {}
                med = interleaved({"scipy": theirs, "ours": ours}, repeats=args.repeats, samples=samples)
                r = paired_ratio(samples, "scipy", "ours")
                row += f" | {'':>10}{med['scipy'] * 1e3:>7.2f} {med['ours'] * 1e3:>7.2f} {r:>5.2f}"
            ascend_linalg.set_result_cache_limit(default_limit)
            print(row, flush=True)


if __name__ == "__main__":
    main()
