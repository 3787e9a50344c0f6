"""csymm throughput: the project's CPU kernel (``use_backend('cpu')``, packed
planar-complex ``csymm_packed``) against scipy.linalg.blas.csymm (OpenBLAS,
its default threads), measured in the same process with interleaved
repetitions and medians (``_timing.interleaved``).

GFLOP/s count 8*m*n*k real flops, k = m for side=0 (LEFT) and n for side=1
(RIGHT). ``ours/scipy`` is the throughput ratio (> 1: ours is faster). The
``%peak`` column puts our GFLOP/s against this machine's sgemm GFLOP/s
(scipy.linalg.blas.sgemm, 2048^3, measured in the same run): a complex
multiply-add is four real multiply-adds, so 8mnk complex flops are exactly the
real flops of four real GEMMs, and the real sgemm rate is the ceiling.

    python benchmarks/bench_csymm.py [--quick] [--threads N]

``--threads`` sets ascend_linalg's CPU thread count (scipy keeps OpenBLAS's).

``sep`` is a second ratio, for the record only: each candidate timed in its own
block of rounds. After a call, OpenBLAS's worker threads keep spinning (for up
to about 0.1 s by default) before they sleep; interleaved, that spinning thread
shares a core with one of ours for the whole of our next call, which a
separate block of rounds does not see. ``ours/scipy`` (interleaved) is the
figure the project's goals are stated in.

``OPENBLAS_THREAD_TIMEOUT=4 python benchmarks/bench_csymm.py`` makes
OpenBLAS's workers sleep right after each call (2^4 cycles instead of its
default 2^28) and so shows the interleaved ratio without the spinning; the
header line says which setting a run had.
"""
import argparse
import os
import sys

import numpy as np
import scipy.linalg.blas as sblas

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg.linalg.blas import csymm  # noqa: E402
from ascend_linalg.testing import dispatch_records  # noqa: E402

LEFT, RIGHT, UPPER, LOWER = 0, 1, 0, 1
SIDE = {LEFT: "L", RIGHT: "R"}
UPLO = {UPPER: "U", LOWER: "L"}


def cases(quick):
    """(label, m, n, side, lower, order) in print order."""
    out = [("design 1", 256, 256, LEFT, UPPER, "F"),
           ("design 2", 1024, 1024, LEFT, LOWER, "F"),
           ("design 3", 1024, 1024, RIGHT, UPPER, "F")]
    # Powers of two and sizes between them (whose tiles do not divide evenly).
    sweep = [64, 256, 1024] if quick else [32, 64, 100, 128, 192, 256, 384, 512, 640, 1000, 1024, 2048]
    out += [("square", s, s, LEFT, UPPER, "F") for s in sweep]
    rects = [(64, 2048), (2048, 64)] if not quick else [(64, 1024), (1024, 64)]
    out += [("rect", m, n, side, UPPER, "F") for (m, n) in rects for side in (LEFT, RIGHT)]
    orders = [256] if quick else [256, 1024]
    out += [("C order", s, s, side, UPPER, "C") for s in orders for side in (LEFT, RIGHT)]
    return out


def operands(m, n, side, order, rng):
    k = m if side == LEFT else n
    def rand(r, c):
        return (rng.uniform(-1, 1, (r, c)) + 1j * rng.uniform(-1, 1, (r, c))).astype(np.complex64, order=order)
    return rand(k, k), rand(m, n), rand(m, n), k


def sgemm_gflops(repeats, n=2048):
    rng = np.random.default_rng(0)
    a = np.asfortranarray(rng.standard_normal((n, n), dtype=np.float32))
    b = np.asfortranarray(rng.standard_normal((n, n), dtype=np.float32))
    t = interleaved({"sgemm": lambda: sblas.sgemm(1.0, a, b)}, repeats=repeats)["sgemm"]
    return 2.0 * n ** 3 / t / 1e9


def main(argv=None):
    ap = argparse.ArgumentParser(description="csymm: ascend_linalg cpu backend vs scipy (OpenBLAS)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    ap.add_argument("--threads", type=int, default=None, help="ascend_linalg CPU threads")
    args = ap.parse_args(argv)
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    repeats = 5 if args.quick else 15
    rng = np.random.default_rng(0)

    peak = sgemm_gflops(repeats)
    print(f"ascend_linalg {ascend_linalg.__version__}, {ascend_linalg.get_num_threads()} CPU threads; "
          f"scipy {sblas.__name__} OpenBLAS default threads; {os.cpu_count()} logical CPUs")
    print(f"sgemm 2048^3 (scipy): {peak:.1f} GFLOP/s (the %peak reference); "
          f"OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset (default)')}")
    print(f"median of {repeats} interleaved rounds; beta = 0.5-0.5j, alpha = 1.1+0.3j; complex64")
    head = (f"{'case':<10}{'m':>6}{'n':>6} {'side':>4} {'uplo':>4} {'ord':>3}"
            f"{'scipy us':>11}{'ours us':>11}{'scipy GF/s':>12}{'ours GF/s':>11}{'ours/scipy':>12}{'%peak':>7}"
            f"{'sep':>7}")
    print(head)
    print("-" * len(head))
    alpha, beta = 1.1 + 0.3j, 0.5 - 0.5j
    for label, m, n, side, lower, order in cases(args.quick):
        a, b, c, k = operands(m, n, side, order, rng)

        def ours():
            with ascend_linalg.use_backend("cpu"):
                return csymm(alpha, a, b, beta, c, side=side, lower=lower)

        def ref():
            return sblas.csymm(alpha, a, b, beta, c, side=side, lower=lower)

        with dispatch_records() as records:
            ours()
        assert records == [("csymm", "cpu", None)], f"cpu kernel did not run: {records}"
        t = interleaved({"scipy": ref, "ours": ours}, repeats=repeats)
        sep = (interleaved({"scipy": ref}, repeats=max(3, repeats // 3))["scipy"]
               / interleaved({"ours": ours}, repeats=max(3, repeats // 3))["ours"])
        flops = 8.0 * m * n * k
        gs, go = flops / t["scipy"] / 1e9, flops / t["ours"] / 1e9
        print(f"{label:<10}{m:>6}{n:>6} {SIDE[side]:>4} {UPLO[lower]:>4} {order:>3}"
              f"{t['scipy'] * 1e6:>11.1f}{t['ours'] * 1e6:>11.1f}{gs:>12.1f}{go:>11.1f}"
              f"{go / gs:>12.3f}{100 * go / peak:>6.0f}%{sep:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
