"""``A @ x`` with long rows of scattered columns: x, and the rows' value and
index streams, prefetched inside the rows (the AVX2 dot products) against
not, and scipy, in one process, interleaved repetitions, medians
(``_timing.interleaved``).

Matrices: ``bench_spmv.py``'s power-law matrix (1e6 x 1e6, 1e7 nonzeros,
about 64% of them in rows of over 1000), and ``rows`` rows of ``length``
sorted random columns out of n, for n where x (n x value bytes) lies below,
at and past the rule's 6 MiB bound. Candidates: scipy's ``S @ x``; ours
with the default rule (``auto``: x prefetched when it is past the bound and
a row's columns are more than a cache line apart on average, the streams
when the matrix's values and indices outgrow 16 MiB); ours with both
prefetches forced off (``off``) and on in every long row (``on``,
``_core.spmv_row_prefetch_force``). Each ratio is scipy's time over ours
(> 1: ours is faster), the median over rounds of each round's own ratio
(``_timing.paired_ratio``). The three results of ours are checked to be the
same bits.

``--trans`` times ``A.T @ x`` instead: the long rows' scatter, in blocks the
kernel counts as streaming, prefetches the partial (or y) when the blocks'
partials together are past the bound. By the rule, matrices whose rows
average 1024 nonzeros or more (partials past 6 MiB) run column-split (each
thread sums its own columns of every row into y: ``kernels/spmv/spmvt_split.h``); ``auto``,
``off`` and ``on`` are then that kernel, and ``merge`` is the merge-path
kernel (``_core.spmv_split_force(0)``) under the default row prefetch rule.

``--grid`` times ``A.T @ x`` of sorted random rows of 32 to 5000 nonzeros
(about 3.2e6 in all) over 1e6 columns, the column split forced on
(``split``) and off (``merge``), against scipy: where the split starts to
pay (its rule: rows of 1024 or more on average, partials past 6 MiB;
512 until the thirty-fourth session).

``--grid --vectors K`` times ``A.T @ X`` of K columns instead (the split
takes up to 16 vectors, from rows of 96 nonzeros on average).

``--grid --among N`` spreads each matrix's rows evenly over N rows, the
others empty: the rule counts only the rows that hold nonzeros, so it takes
the path it takes for the rows alone (``rule``).

``--parts`` times ``A @ x`` of the power-law matrix and of its two parts:
its rows of 64 nonzeros or more (9.0e6 nonzeros in 10,816 rows), and the
rest (1.8e6 nonzeros in 989,184 rows, 88% of them of one nonzero), each
part a 1e6 x 1e6 matrix whose other rows are empty; and all of its
nonzeros, in the same order, regrouped into rows of 1024 (``rows of
1024``, about 10,500 x 1e6): the same loads of x and the same value and index
streams without the short rows and their row ends, the time the
product's nonzeros cost on their own (its y is about 10,500 long, not 1e6;
with ``--trans``, ``A.T @ x``: the same scatter into y, from an x of about
10,500). With ``--trans`` every part is timed as ``A.T @ x``. scipy against ours on
one thread, then on all of them (``set_num_threads``; scipy's time is
the one beside the second), so each part's share of the time, and how far
the second thread takes it, can be read off.

    python benchmarks/bench_spmv_long_rows.py [--quick] [--threads N] [--trans | --grid [--among N] [--vectors K] | --parts [--trans]]
"""
import argparse
import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved, paired_ratio  # noqa: E402
from bench_spmv import power_law  # noqa: E402

import ascend_linalg  # noqa: E402
from ascend_linalg import _core  # noqa: E402
from ascend_linalg.sparse import csr_matrix  # noqa: E402

warnings.simplefilter("ignore", FutureWarning)


def long_rows(rng, n, rows, length):
    idx = np.sort(rng.integers(0, n, (rows, length)), axis=1).ravel()
    A = sp.csr_matrix((np.ones(idx.size), idx, np.arange(0, idx.size + 1, length)), shape=(rows, n))
    A.sum_duplicates()
    return A


def among_empty(M, total):
    """M's rows spread evenly over ``total`` rows, the others empty."""
    lengths = np.zeros(total, np.int64)
    lengths[np.arange(M.shape[0]) * (total // M.shape[0])] = np.diff(M.indptr)
    return sp.csr_matrix((M.data, M.indices, np.concatenate([[0], np.cumsum(lengths)])), shape=(total, M.shape[1]))


def grid(rng, repeats, among=0, vectors=1):
    n = 10**6
    print(f"A.T @ {'x' if vectors == 1 else f'X ({vectors} columns, C order)'}, rows x length of {n:.0e} columns"
          + (f", the rows spread over {among} rows (the others empty)" if among else "")
          + "; ms split / merge (scipy), ratios scipy/ours; rule: the path the default rule takes")
    print(f"{'rows x length':>15} {'dtype':>8} {'scipy ms':>9} {'split ms':>9} {'merge ms':>9} {'split':>6} {'merge':>6}"
          f" {'rule':>6}")
    try:
        for length in (32, 128, 256, 512, 1000, 2000, 5000):
            rows = 3_200_000 // length
            M = long_rows(rng, n, rows, length)
            if among > rows:
                M = among_empty(M, among)
            for dtype in (np.float32, np.float64):
                S = M.astype(dtype)
                S.data[:] = rng.standard_normal(S.nnz)
                At, St = csr_matrix(S).T, S.T
                x = rng.standard_normal((S.shape[0], vectors) if vectors > 1 else S.shape[0]).astype(dtype)

                def ours(mode, At=At, x=x):
                    def run():
                        _core.spmv_split_force(mode)
                        with ascend_linalg.use_backend("cpu"):
                            return At @ x
                    return run

                before = _core.spmv_split_calls()
                ours(-1)()
                rule = "split" if _core.spmv_split_calls() > before else "merge"
                samples = {}
                med = interleaved({"scipy": lambda St=St, x=x: St @ x, "split": ours(1), "merge": ours(0)},
                                  repeats=repeats, samples=samples)
                r = {k: paired_ratio(samples, "scipy", k) for k in ("split", "merge")}
                print(f"{f'{rows} x {length}':>15} {np.dtype(dtype).name:>8} {med['scipy']*1e3:>9.2f}"
                      f" {med['split']*1e3:>9.2f} {med['merge']*1e3:>9.2f} {r['split']:>6.2f} {r['merge']:>6.2f}"
                      f" {rule:>6}", flush=True)
    finally:
        _core.spmv_split_force(-1)


def regrouped(P, length):
    """P's nonzeros, in P's order, in rows of ``length`` (the last one
    shorter): the same loads of x and the same value and index streams,
    without P's rows. A new row that spans two of P's may hold a column
    twice; it is kept so (no sum_duplicates, which would also sort each new
    row and change the order of the loads), and P's arrays are shared."""
    indptr = np.append(np.arange(0, P.nnz, length), P.nnz).astype(P.indptr.dtype)
    return sp.csr_matrix((P.data, P.indices, indptr), shape=(len(indptr) - 1, P.shape[1]))


def parts(rng, repeats, trans):
    P = power_law(rng, 10**6, 10**7)
    long_row = np.diff(P.indptr) >= 64
    nt = ascend_linalg.get_num_threads()
    print(f"{'A.T @ x' if trans else 'A @ x'}, the power-law matrix and its parts; ms, ratios scipy/ours; "
          f"ours on 1 thread, then on {nt} (scipy timed again beside each)")
    print(f"{'part':>14} {'dtype':>8} {'rows':>8} {'nnz':>9} {'scipy ms':>9} {'ours 1 ms':>10} {f'ours {nt} ms':>10}"
          f" {'1 thr':>6} {f'{nt} thr':>6}")
    try:
        for label, keep, regroup in (("all rows", None, False), ("rows >= 64", long_row, False),
                                     ("rows < 64", ~long_row, False), ("rows of 1024", None, True)):
            M = P.copy() if keep is None else sp.csr_matrix(P.multiply(keep[:, None].astype(P.dtype)))
            M.eliminate_zeros()
            for dtype in (np.float32, np.float64):
                S = M.astype(dtype)
                if regroup:  # after astype(), which sums a row's duplicates
                    S = regrouped(S, 1024)
                S.data[:] = rng.standard_normal(S.nnz)
                A = csr_matrix(S)
                St, At = (S.T, A.T) if trans else (S, A)
                x = rng.standard_normal(S.shape[0] if trans else S.shape[1]).astype(dtype)

                def ours(At=At, x=x):
                    with ascend_linalg.use_backend("cpu"):
                        return At @ x

                res = []
                for threads in (1, nt):  # not switched inside a round: a new count restarts the pool
                    ascend_linalg.set_num_threads(threads)
                    samples = {}
                    med = interleaved({"scipy": lambda St=St, x=x: St @ x, "ours": ours}, repeats=repeats,
                                      samples=samples)
                    res.append((med["scipy"], med["ours"], paired_ratio(samples, "scipy", "ours")))
                rows = int(np.count_nonzero(np.diff(S.indptr)))
                print(f"{label:>14} {np.dtype(dtype).name:>8} {rows:>8} {S.nnz:>9} {res[1][0]*1e3:>9.2f}"
                      f" {res[0][1]*1e3:>10.2f} {res[1][1]*1e3:>10.2f} {res[0][2]:>6.2f} {res[1][2]:>6.2f}", flush=True)
    finally:
        ascend_linalg.set_num_threads(nt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--trans", action="store_true", help="A.T @ x")
    ap.add_argument("--grid", action="store_true", help="A.T @ x by row length, split against merge path")
    ap.add_argument("--among", type=int, default=0,
                    help="with --grid: the rows spread over this many rows, the others empty")
    ap.add_argument("--vectors", type=int, default=1,
                    help="with --grid: A.T @ X of this many columns (the split takes up to 16)")
    ap.add_argument("--parts", action="store_true", help="A @ x (with --trans A.T @ x) of the power-law matrix's long and short rows apart")
    args = ap.parse_args()
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    repeats = 5 if args.quick else 15
    rng = np.random.default_rng(0)
    print(f"ascend_linalg {ascend_linalg.__version__}, {ascend_linalg.get_num_threads()} CPU threads, "
          f"isa: {_core.cpu_isa()}")
    if args.grid:
        grid(rng, 3 if args.quick else 7, args.among, args.vectors)
        return
    if args.parts:
        parts(rng, 5 if args.quick else 15, args.trans)
        return
    cases = [("power-law 1e6", power_law(rng, 10**6, 10**7), (np.float32, np.float64))]
    for n, rows, length in ((10**5, 2000, 5000), (2 * 10**5, 2000, 5000), (5 * 10**5, 2000, 5000),
                            (10**6, 2000, 5000), (2 * 10**6, 2000, 5000), (4 * 10**6, 1000, 10000),
                            (10**6, 20000, 500)):
        cases.append((f"{rows}x{length} of {n:.0e}", long_rows(rng, n, rows, length), (np.float32, np.float64)))
    print("A.T @ x" if args.trans else "A @ x", "(target: the result for A.T @ x, x for A @ x)")
    keys = ["auto", "off", "on"] + (["merge"] if args.trans else [])
    print(f"{'matrix':>20} {'dtype':>8} {'target':>6} {'scipy ms':>9}"
          + "".join(f" {k + ' ms':>{max(len(k), 6) + 5}}" for k in keys)
          + "".join(f" {k:>{max(len(k), 6)}}" for k in keys))
    try:
        for name, M, dtypes in cases:
            for dtype in dtypes:
                S = M.astype(dtype)
                S.data[:] = rng.standard_normal(S.nnz)
                A = csr_matrix(S)
                At, St = (A.T, S.T) if args.trans else (A, S)
                x = rng.standard_normal(St.shape[1]).astype(dtype)

                def ours(mode, split=-1, At=At, x=x):
                    def run():
                        _core.spmv_row_prefetch_force(mode)
                        _core.spmv_split_force(split)
                        with ascend_linalg.use_backend("cpu"):
                            return At @ x
                    return run

                got = [ours(m)() for m in (-1, 0, 1)]
                assert all(np.array_equal(g.view(np.uint8), got[0].view(np.uint8)) for g in got)
                cands = {"scipy": lambda St=St, x=x: St @ x, "auto": ours(-1), "off": ours(0), "on": ours(1)}
                if args.trans:
                    cands["merge"] = ours(-1, 0)
                samples = {}
                med = interleaved(cands, repeats=repeats, samples=samples)
                keys = [k for k in cands if k != "scipy"]
                r = {k: paired_ratio(samples, "scipy", k) for k in keys}
                mb = St.shape[0 if args.trans else 1] * np.dtype(dtype).itemsize / 2**20
                print(f"{name:>20} {np.dtype(dtype).name:>8} {mb:>4.0f}MB {med['scipy']*1e3:>9.2f}"
                      + "".join(f" {med[k]*1e3:>{max(len(k), 6) + 5}.2f}" for k in keys)
                      + "".join(f" {r[k]:>{max(len(k), 6)}.2f}" for k in keys), flush=True)
    finally:
        _core.spmv_row_prefetch_force(-1)
        _core.spmv_split_force(-1)


if __name__ == "__main__":
    main()
