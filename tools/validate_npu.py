"""Validate ascend_linalg on an Ascend NPU: accuracy, SpMV agreement, csymm timings.

For someone with a real device (docs/npu.md, "Validating on a device"). From a
source checkout, with the package installed and CANN's set_env.sh sourced:

    python tools/validate_npu.py            # everything (accuracy table: minutes)
    python tools/validate_npu.py --quick    # a sample of each part, scaled-down timings

1. csymm accuracy: the design's case table (tests/data/csymm_cases.csv, section
   6.1 acceptance rule) through tests/test_csymm_accuracy.py on the npu backend.
2. SpMV: the differential tests against scipy (tests/test_spmv.py,
   tests/test_spmv_fused.py), their npu-parametrised cases.
3. csymm timings of the design's three performance cases (section 6.2) against
   its targets. Times are wall-clock per call of the host API, *including* the
   host<->device copies of A, B and C, so they over-state kernel time; the
   design's targets are kernel times (measure those with msprof on the device).

Parts 1 and 2 run pytest in a subprocess with ASCEND_LINALG_TEST_DEVICE=npu
(ascend_linalg.testing.kernel_device). Exit status: 0 when both pass, 1 when
either fails, 2 when no NPU is usable. It also runs end to end against the
fake runtime (ASCEND_LINALG_ACL_LIB=<ascend_linalg.testing.fake_acl_path()>),
which is how tests/test_validate_npu.py keeps it working; the timings are then
CPU timings and say so.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Design section 6.2: (m, n, side, lower, target microseconds)
PERF_CASES = [
    ("256x256 LEFT UPPER", 256, 256, 0, 0, 7.53),
    ("1024x1024 LEFT LOWER", 1024, 1024, 0, 1, 89.27),
    ("1024x1024 RIGHT UPPER", 1024, 1024, 1, 0, 86.34),
]


def pytest_part(title, args, env_extra):
    env = dict(os.environ, ASCEND_LINALG_TEST_DEVICE="npu", **env_extra)
    cmd = [sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider", *args]
    print(f"\n== {title}\n   {' '.join(cmd[1:])}", flush=True)
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    if p.returncode != 0:
        # the failures section, trimmed: enough to see what broke
        print("\n".join(lines[-60:]))
    summary = lines[-1] if lines else p.stderr.strip().splitlines()[-1:]
    print(f"   result: {summary}")
    return p.returncode == 0


def time_csymm(m, n, side, lower, reps, warmup):
    from ascend_linalg import _core
    rng = np.random.default_rng(0)
    k = n if side else m

    def cplx(*shape):
        return np.asfortranarray((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64))

    a, b, c = cplx(k, k), cplx(m, n), cplx(m, n)
    alpha, beta = 1.0 - 0.5j, 0.5 + 0.25j
    for _ in range(warmup):
        _core.csymm("npu", side, lower, alpha, a, b, beta, c)
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        _core.csymm("npu", side, lower, alpha, a, b, beta, c)
        samples.append(time.perf_counter() - t0)
    return statistics.mean(samples) * 1e6, statistics.median(samples) * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a sample of the accuracy table (every 25th row, no slow rows), the SpMV "
                         "fused tests only, timings at 1/8 size with 3 repetitions")
    ap.add_argument("--reps", type=int, default=None, help="timed calls per case (default 100; quick: 3)")
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--skip-spmv", action="store_true")
    ap.add_argument("--skip-perf", action="store_true")
    args = ap.parse_args(argv)

    import ascend_linalg
    from ascend_linalg import _core
    ascend_linalg.show_config()
    info = _core.acl_info()
    if not info["usable"]:
        print(f"\nno usable NPU: {info['reason']}")
        return 2
    fake = "fake" in info["library"] or "_fake_acl" in info["library"]
    if fake:
        print("\nNOTE: the runtime is the project's fake (CPU kernels): this checks the script, not a device.")

    ok = True
    if not args.skip_accuracy:
        extra = {"ASCEND_LINALG_ACCURACY_EVERY": "25"} if args.quick else {}
        sel = ["-m", "not slow"] if args.quick else []
        ok &= pytest_part("csymm accuracy (design 6.1, tests/data/csymm_cases.csv) on npu",
                          ["tests/test_csymm_accuracy.py", *sel], extra)
    if not args.skip_spmv:
        files = ["tests/test_spmv_fused.py"] if args.quick else ["tests/test_spmv.py", "tests/test_spmv_fused.py"]
        ok &= pytest_part("SpMV against scipy on npu", [*files, "-k", "npu"], {})
    if not args.skip_perf:
        scale = 8 if args.quick else 1
        reps = args.reps or (3 if args.quick else 100)
        print(f"\n== csymm timings (design 6.2): {reps} timed calls after warm-up, wall clock per call "
              f"including host<->device copies{'; sizes / 8, targets do not apply' if scale > 1 else ''}")
        print(f"   {'case':<24} {'m':>5} {'n':>5} {'mean us':>11} {'median us':>11} {'target us':>10} "
              f"{'mean/target':>12}")
        for name, m, n, side, lower, target in PERF_CASES:
            m, n = m // scale, n // scale
            mean, median = time_csymm(m, n, side, lower, reps, warmup=2 if args.quick else 10)
            print(f"   {name:<24} {m:>5} {n:>5} {mean:>11.2f} {median:>11.2f} {target:>10.2f} "
                  f"{mean / target:>12.1f}")
        if fake:
            print("   (fake runtime: these are CPU times, not NPU times)")
    print(f"\nvalidation {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
