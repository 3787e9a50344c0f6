"""How long after a scipy (OpenBLAS) csymm call our csymm is slowed down.

OpenBLAS's worker threads spin for a while after each call before they sleep;
a call of ours started in that window shares a core with a spinning thread.
This times our csymm (cpu backend) started at several delays after a scipy
csymm call on the same operands, 7 repeats per delay, medians, and prints
each against the longest delay (by then the spinning has stopped).

    python benchmarks/bench_csymm_after_scipy.py [--size N] [--repeats R]
"""
import argparse
import time

import numpy as np
import scipy.linalg.blas as sblas

import ascend_linalg
from ascend_linalg.linalg.blas import csymm

DELAYS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.5)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    s = args.size

    def rand():
        return np.asfortranarray((rng.uniform(-1, 1, (s, s)) + 1j * rng.uniform(-1, 1, (s, s))).astype(np.complex64))

    a, b, c = rand(), rand(), rand()
    times = {d: [] for d in DELAYS}
    with ascend_linalg.use_backend("cpu"):
        csymm(1.0, a, b, 0.0, c)  # warm up
        for _ in range(args.repeats):
            for d in DELAYS:
                sblas.csymm(1.0, a, b, 0.0, c)
                time.sleep(d)
                t0 = time.perf_counter()
                csymm(1.0, a, b, 0.0, c)
                times[d].append(time.perf_counter() - t0)
    settled = float(np.median(times[DELAYS[-1]]))
    print(f"csymm {s}x{s}, ours ({ascend_linalg.get_num_threads()} threads) started after scipy's call; "
          f"medians of {args.repeats}")
    print(f"{'delay ms':>9} {'ours ms':>9} {'vs settled':>11}")
    for d in DELAYS:
        m = float(np.median(times[d]))
        print(f"{d * 1e3:>9.0f} {m * 1e3:>9.2f} {m / settled:>11.2f}")


if __name__ == "__main__":
    main()
