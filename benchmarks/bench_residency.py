"""What residency saves and what its check costs, on a 2-D Poisson matrix.

1. Bytes moved per product on the fake NPU runtime (its counters): residency
   ``checked``/``trusted`` against ``off`` (every call uploads the matrix).
   Needs ``ASCEND_LINALG_ACL_LIB`` pointing at the fake (skipped otherwise).
2. The per-call cost of ``checked``: the fingerprint of indptr + indices + data
   (``_core.fingerprint``, what the host layer computes before each reuse),
   against the product itself on the cpu backend and on scipy, same process,
   interleaved medians (``_timing.interleaved``).

    ASCEND_LINALG_ACL_LIB=$(python -c 'import ascend_linalg.testing as t; print(t.fake_acl_path())') \\
        python benchmarks/bench_residency.py [--grid 2000] [--threads N]
"""
import argparse
import ctypes
import os
import sys

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg import _core  # noqa: E402
from ascend_linalg.sparse import csr_matrix  # noqa: E402


def poisson2d(g):
    d = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(g, g))
    return sp.kronsum(d, d, format="csr")


def _fake_loaded():
    lib = os.environ.get("ASCEND_LINALG_ACL_LIB")
    try:
        return bool(lib) and hasattr(ctypes.CDLL(lib), "fakeAclStat")
    except OSError:
        return False


def traffic(A, x, calls=20):
    fake = ctypes.CDLL(os.environ["ASCEND_LINALG_ACL_LIB"])
    fake.fakeAclStat.restype = ctypes.c_uint64
    stat = lambda n: int(fake.fakeAclStat(n.encode()))  # noqa: E731
    rows = []
    for mode in ("off", "checked", "trusted"):
        ascend_linalg.set_residency(mode)
        B = csr_matrix(A)                     # a fresh object: nothing resident yet
        with ascend_linalg.use_backend("npu"):
            fake.fakeAclReset()
            B @ x
            first = stat("bytes_h2d")
            fake.fakeAclReset()
            for _ in range(calls - 1):
                B @ x
        rows.append((mode, first, stat("bytes_h2d") / (calls - 1), stat("bytes_d2h") / (calls - 1)))
        del B
    ascend_linalg.set_residency("checked")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", type=int, default=2000, help="Poisson grid side (n = grid^2 unknowns)")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    P = poisson2d(args.grid)
    A = csr_matrix(P)
    x = np.random.default_rng(0).standard_normal(P.shape[1])
    mb = (A.indptr.nbytes + A.indices.nbytes + A.data.nbytes) / 1e6
    print(f"Poisson {args.grid}^2: n = {P.shape[0]}, nnz = {P.nnz}, matrix arrays {mb:.1f} MB, "
          f"x {x.nbytes / 1e6:.1f} MB; cpu threads {ascend_linalg.get_num_threads()}")

    if _fake_loaded():
        print("\nbytes per product on the fake NPU (first product; mean of the 19 after it):")
        print(f"  {'residency':<10} {'first h->d':>14} {'later h->d':>14} {'later d->h':>14}")
        for mode, first, h2d, d2h in traffic(P, x):
            print(f"  {mode:<10} {first:>14,.0f} {h2d:>14,.0f} {d2h:>14,.0f}")
    else:
        print("\n(bytes per product: set ASCEND_LINALG_ACL_LIB to the fake runtime to measure)")

    arrays = [A.indptr, A.indices, A.data]

    def ours():
        with ascend_linalg.use_backend("cpu"):
            A @ x

    t = interleaved({"fingerprint": lambda: _core.fingerprint(arrays), "cpu A@x": ours,
                     "scipy A@x": lambda: P @ x}, repeats=9)
    print("\nper call (median of interleaved rounds):")
    for name, s in t.items():
        print(f"  {name:<12} {s * 1e3:8.2f} ms  ({mb / 1e3 / s:5.1f} GB/s of matrix arrays)")
    print(f"  fingerprint / cpu A@x   = {t['fingerprint'] / t['cpu A@x']:.2f}")
    print(f"  fingerprint / scipy A@x = {t['fingerprint'] / t['scipy A@x']:.2f}")


if __name__ == "__main__":
    main()
