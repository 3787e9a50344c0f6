"""Small products while another process keeps one core busy: ours against
scipy's in one process, interleaved repetitions, medians (``_timing``), once on
a quiet machine and once with a busy-looping child process (one core of this
2-core machine taken, as by another tenant or a build).

A launch on the CPU device must not stall on a worker thread that the busy
process keeps off its core (the pool's launcher runs the blocks a missing
worker leaves). ``ours/scipy`` is the speed-up (> 1: ours is faster).

    python benchmarks/bench_busy_core.py [--repeats N]
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import scipy.linalg.blas as sblas

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved  # noqa: E402
from bench_spmv import poisson2d  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg.linalg import blas  # noqa: E402
from ascend_linalg.sparse import csr_matrix  # noqa: E402


def cases(rng):
    S = poisson2d(112).astype(np.float32)
    A = csr_matrix(S)
    x = rng.standard_normal(S.shape[0]).astype(np.float32)
    yield "spmv 112^2 Poisson f32 N", (lambda: S @ x), (lambda: A @ x)
    ST, AT = S.T, A.T
    yield "spmv 112^2 Poisson f32 T", (lambda: ST @ x), (lambda: AT @ x)
    for n in (128, 256):
        a = np.asfortranarray((rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64))
        b = np.asfortranarray((rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64))
        yield f"csymm {n}^3", (lambda a=a, b=b: sblas.csymm(1.0, a, b)), (lambda a=a, b=b: blas.csymm(1.0, a, b))


def run(label, repeats):
    rng = np.random.default_rng(0)
    for name, theirs, ours in cases(rng):
        def ours_cpu(ours=ours):
            with ascend_linalg.use_backend("cpu"):
                return ours()
        t = interleaved({"scipy": theirs, "ours": ours_cpu}, repeats=repeats)
        print(f"{label:<7}{name:<28}{t['scipy'] * 1e6:>10.1f}{t['ours'] * 1e6:>10.1f}"
              f"{t['scipy'] / t['ours']:>11.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    print(f"ascend_linalg {ascend_linalg.__version__}, {ascend_linalg.get_num_threads()} CPU threads, "
          f"{os.cpu_count()} cores")
    print(f"{'load':<7}{'case':<28}{'scipy us':>10}{'ours us':>10}{'ours/scipy':>11}")
    run("quiet", args.repeats)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        run("busy", args.repeats)
    finally:
        busy.kill()
        busy.wait()


if __name__ == "__main__":
    main()
