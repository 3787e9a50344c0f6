"""Write tests/data/csymm_cases.csv: the csymm precision cases (design section 6.3).

Deterministic: the same script always writes the same file, so the CSV is
committed and a diff of it is a review of the suite. Regenerate with

    python tools/gen_csymm_cases.py            # writes tests/data/csymm_cases.csv
    python tools/gen_csymm_cases.py --check    # exit 1 if the committed file is stale

Columns (one case per row; tests/test_csymm_accuracy.py builds and checks it):
  name               unique id, <category>_<index>_<short description>
  side, uplo         0 = LEFT (C = alpha*A*B) / 1 = RIGHT (C = alpha*B*A);
                     0 = UPPER / 1 = LOWER triangle of A is referenced
  m, n               C is m x n; A is m x m (LEFT) or n x n (RIGHT)
  lda_pad ...        extra rows of the leading dimension beyond the minimum
                     (ld = rows + pad), realised by slicing a larger array
  alpha_*, beta_*    the scalars; beta == 0 means C is not read
  dist               input distribution: uniform, normal, zeros, alternating,
                     extreme, extreme_mixed, or an injection of NaN/Inf:
                     nan_a, nan_b, nan_c, inf_a, inf_b, inf_c (a few entries of
                     the referenced part of that operand), unref_nan, unref_inf
                     (every entry of A's unreferenced triangle)
  seed               numpy default_rng seed for the inputs
  order              memory order of A, B and C: F (column-major) or C
  expect             tol: element tolerance against the float64 reference;
                     nonfinite: NaN/Inf masks equal to scipy's csymm, finite
                     part by the tolerance rule
  slow               1 for large cases (pytest -m slow)
"""
import argparse
import csv
import io
import itertools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, os.pardir, "tests", "data", "csymm_cases.csv"))

COLUMNS = ["name", "side", "uplo", "m", "n", "lda_pad", "ldb_pad", "ldc_pad",
           "alpha_re", "alpha_im", "beta_re", "beta_im", "dist", "seed", "order", "expect", "slow"]

SIDES = (0, 1)
UPLOS = (0, 1)
SU = list(itertools.product(SIDES, UPLOS))
SU_TAG = {(0, 0): "LU", (0, 1): "LL", (1, 0): "RU", (1, 1): "RL"}

# Sizes of design 6.3: 0, 1, small primes, 2^k, 2^k +- 1, unaligned values.
PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 53, 97, 131]
POW2 = [4, 8, 16, 32, 64, 128, 256]
POW2_PM = [3, 5, 7, 9, 15, 17, 31, 33, 63, 65, 127, 129, 255, 257]
UNALIGNED = [6, 10, 12, 20, 36, 50, 100, 200, 300]
SWEEP = sorted(set([1] + PRIMES + POW2 + POW2_PM + UNALIGNED))

ALPHAS = [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -2.5), (0.5, -0.75), (1e3, 0), (0, 1e6), (-1e6, 2e5)]
BETAS = [(0, 0), (1, 0), (-1, 0), (0, 1), (0.3, 0.2), (1e3, -1e3), (0, -1e6)]
GENERAL_ALPHA = (0.7, -0.4)
GENERAL_BETA = (-0.3, 0.6)


class Cases:
    def __init__(self):
        self.rows = []
        self.names = set()
        self.seed = 1000

    def add(self, cat, desc, side, uplo, m, n, alpha=GENERAL_ALPHA, beta=GENERAL_BETA, dist="uniform",
            order="F", pads=(0, 0, 0), expect="tol", slow=0):
        name = f"{cat}_{len(self.rows):04d}_{SU_TAG[(side, uplo)]}_{m}x{n}"
        if desc:
            name += f"_{desc}"
        assert name not in self.names, name
        self.names.add(name)
        self.seed += 1
        self.rows.append({
            "name": name, "side": side, "uplo": uplo, "m": m, "n": n,
            "lda_pad": pads[0], "ldb_pad": pads[1], "ldc_pad": pads[2],
            "alpha_re": _num(alpha[0]), "alpha_im": _num(alpha[1]),
            "beta_re": _num(beta[0]), "beta_im": _num(beta[1]),
            "dist": dist, "seed": self.seed, "order": order, "expect": expect, "slow": slow,
        })


def _num(x):
    return repr(float(x)) if x != int(x) or abs(x) >= 1e5 else str(int(x))


def _scalar_tag(z):
    return f"{_num(z[0])}{'+' if z[1] >= 0 else ''}{_num(z[1])}j".replace(".", "p").replace("-", "m").replace("+", "p")


def build():
    cs = Cases()

    # Basic function: side x uplo x a few shapes, general complex alpha/beta.
    for side, uplo in SU:
        for m, n in [(1, 1), (2, 3), (4, 4), (8, 5), (16, 16), (17, 9), (24, 40), (33, 65)]:
            cs.add("basic", "", side, uplo, m, n)

    # Size sweep: square, then every size against a rotating partner.
    for side, uplo in SU:
        for s in SWEEP:
            cs.add("size", "sq", side, uplo, s, s)
    for i, (side, uplo) in enumerate(SU):
        for j, s in enumerate(SWEEP):
            partner = SWEEP[(j * 7 + 3 + i * 5) % len(SWEEP)]
            cs.add("size", "rect", side, uplo, s, partner)
    # Empty problems are legal no-ops (C returned unchanged / zero-sized).
    for side, uplo in SU:
        for m, n in [(0, 0), (0, 5), (5, 0), (0, 1), (1, 0)]:
            cs.add("size", "empty", side, uplo, m, n)

    # Scalar special values: full cross product, sizes rotating, order alternating.
    small = [3, 8, 13, 16, 31, 33]
    k = 0
    for side, uplo in SU:
        for alpha, beta in itertools.product(ALPHAS, BETAS):
            m, n = small[k % len(small)], small[(k * 5 + 1) % len(small)]
            cs.add("scalar", f"a{_scalar_tag(alpha)}_b{_scalar_tag(beta)}", side, uplo, m, n,
                   alpha=alpha, beta=beta, order="FC"[k % 2])
            k += 1

    # Wide and narrow C.
    for side, uplo in SU:
        for m, n in [(1, 257), (257, 1), (2, 300), (300, 2), (7, 129), (129, 7), (16, 500), (500, 16),
                     (64, 300), (300, 64)]:
            cs.add("rect", "", side, uplo, m, n)

    # Leading dimensions: minimal and padded, alone and together.
    pads = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (7, 3, 5), (64, 0, 0), (0, 64, 64), (16, 16, 16)]
    for side, uplo in SU:
        for (m, n), p in itertools.product([(9, 14), (32, 32), (37, 20)], pads):
            cs.add("ld", f"pad{p[0]}-{p[1]}-{p[2]}", side, uplo, m, n, pads=p)

    # Input distributions (Inf/NaN in their own category below).
    for dist in ["uniform", "normal", "zeros", "alternating", "extreme", "extreme_mixed"]:
        for side, uplo in SU:
            for m, n in [(5, 7), (16, 16), (45, 30), (100, 64)]:
                cs.add("dist", dist, side, uplo, m, n, dist=dist)
    # All-zero inputs with the special betas (result is beta*C or exact zeros).
    for side, uplo in SU:
        for beta in [(0, 0), (1, 0), (0, 1)]:
            cs.add("dist", f"zeros_b{_scalar_tag(beta)}", side, uplo, 12, 10, dist="zeros", beta=beta)

    # Memory order of the inputs, with and without padding.
    for side, uplo in SU:
        for (m, n), p in itertools.product([(7, 11), (32, 16), (65, 33)], [(0, 0, 0), (3, 5, 2)]):
            for order in "FC":
                cs.add("order", f"{order}_pad{p[0]}-{p[1]}-{p[2]}", side, uplo, m, n, order=order, pads=p)

    # The unreferenced triangle filled with NaN or Inf must never matter.
    for side, uplo in SU:
        for (m, n), order, dist in itertools.product([(1, 3), (6, 6), (17, 12), (40, 70)], "FC",
                                                     ["unref_nan", "unref_inf"]):
            cs.add("unref", f"{dist}_{order}", side, uplo, m, n, dist=dist, order=order)

    # NaN and Inf in the referenced inputs: the pattern must be scipy's.
    specials = ["nan_a", "nan_b", "nan_c", "inf_a", "inf_b", "inf_c"]
    scal = [((1, 0), (0, 0)), ((0.5, -0.75), (0.3, 0.2)), ((1, 0), (1, 0)), ((0, 0), (-1, 0)),
            ((0, 0), (0, 0))]
    for side, uplo in SU:
        for dist in specials:
            for (alpha, beta), (m, n) in zip(scal, [(4, 6), (9, 5), (16, 16), (7, 3), (5, 5)]):
                cs.add("nonfinite", f"{dist}_a{_scalar_tag(alpha)}_b{_scalar_tag(beta)}", side, uplo, m, n,
                       alpha=alpha, beta=beta, dist=dist, expect="nonfinite")

    # Large cases (design performance shapes among them): pytest -m slow.
    large = [(512, 512), (513, 257), (1024, 1024), (1000, 600), (2048, 64), (64, 2048)]
    for side, uplo in SU:
        for m, n in large:
            cs.add("large", "", side, uplo, m, n, slow=1)

    # Deterministic random mix of every axis at once (pads x order x scalars x dist).
    import random
    r = random.Random(20240611)
    sizes = [s for s in SWEEP if s <= 160]
    dists = ["uniform", "normal", "uniform", "alternating"]
    for _ in range(48):
        side, uplo = r.choice(SU)
        m, n = r.choice(sizes), r.choice(sizes)
        p = (r.choice([0, 0, 1, 5]), r.choice([0, 0, 2, 9]), r.choice([0, 0, 3]))
        alpha = r.choice(ALPHAS[1:] + [GENERAL_ALPHA] * 3)
        beta = r.choice(BETAS + [GENERAL_BETA] * 3)
        cs.add("mix", "", side, uplo, m, n, alpha=alpha, beta=beta, dist=r.choice(dists),
               order=r.choice("FFC"), pads=p)
    return cs.rows


def render(rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with the existing file instead of writing")
    args = ap.parse_args(argv)
    rows = build()
    text = render(rows)
    if args.check:
        with open(args.out) as f:
            same = f.read() == text
        print(f"{args.out}: {'up to date' if same else 'STALE, rerun tools/gen_csymm_cases.py'}")
        return 0 if same else 1
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    slow = sum(int(r["slow"]) for r in rows)
    print(f"wrote {len(rows)} cases ({slow} slow) to {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
