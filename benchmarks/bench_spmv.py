"""Sparse matrix times vector: the project's CPU kernels (``set_backend('cpu')``)
against scipy's ``A @ x`` / ``A.T @ x`` on the same matrices, in one process,
interleaved repetitions, medians (``_timing.interleaved``).

``ours/scipy`` is the speed-up (scipy time / our time; > 1: ours is faster),
the median over rounds of each round's own ratio (``_timing.paired_ratio``:
a slowdown from another tenant that lasts longer than a round cancels out
of it); the ms columns are each candidate's median.
GB/s counts the bytes a single pass must move: values + indices + indptr + x
(gathered, counted once) + y. The machine's STREAM-triad bandwidth is measured
in the same run (``a = b + s*c`` over 3 x 64 MB, one compiled pass,
``_core.stream_triad`` on the CPU device's thread pool, 3 x 8 bytes an
element as STREAM counts it), on one thread and on the benchmark's thread
count.

``roof`` is the speed-up over scipy that a pass moving only those bytes
reaches on this machine, measured with the product, in the same interleaved
rounds: ``_core.stream_pass`` reads every byte of the matrix's values,
indices and indptr and of x, and writes a new y of the result's size, split
into the benchmark's thread count (``stream ms``). It reads the arrays
together, a stretch of each in turn, with a software prefetch, as the
kernels read their streams (until the twenty-eighth session it read them
one after another without one: about 19 GB/s where reading together drew 27
on the same 2-core host, so the kernels ran "faster than the roof"). Where ``roof`` is below
a goal, no kernel that reads the matrix once reaches the goal on this
machine at that moment; ``ours/stream`` is the kernel's time in units of
that pass (1.0: at the streaming roof; x is read in index order, not
streamed, and a transposed product also updates y in place, so a kernel
stays somewhat above it). (Before the streaming pass, ``roof`` counted the
bytes at the N-thread triad rate: a matvec mostly reads, and triad's
write-allocate traffic is not counted, so kernels passed that roof by a few
per cent. Before that, the triad was numpy's two passes, ``tmp = s*c`` then
``a = b + tmp``, counted as one: about 25 GB/s against the compiled pass's
35-41 on the same 2-core machine.)

``scat`` (transposed products of float32 and float64 values only) is the
same kind of yardstick for the scattered half of ``A.T @ x``:
``_core.scatter_pass`` adds each of the matrix's values into element
``indices[k]`` of a partial per thread (the values split into the
benchmark's thread count, each partial prefetched as the kernels' scattered
blocks prefetch theirs), then sums the partials into a new y, with no x,
no indptr and no rows: the part of the per-thread-partials product that no
row or x handling removes. ``scat`` is scipy's time over that pass's;
``ours/scat`` is the kernel's time in its units (1.0: the product costs no
more than its scatter alone). Where the matrix's columns are local (Poisson,
banded), the pass streams; where they are random, it is the cost of the
partials' updates on this machine at that moment.

After the large matrices, a ``goal`` line counts the float32/float64 cells
that reached the issue's goal (2.0x scipy) in this run, then lists each
cell below it with its floors, ``roof`` and (``A.T @ x`` of the random and
power-law matrices, whose kernel scatters into per-thread partials) ``scat``, and
which of them lies below the goal: there no kernel of that kind could have
reached it in this run.

The float16/bfloat16 lines (``spmv`` on the raw arrays: values widened as
they are read, float32 sums) have no scipy counterpart (scipy.sparse refuses
float16): their ``scipy ms`` is scipy's float32 product on a float32 copy of
the matrix made once beforehand, what a scipy user would run instead.

``--short-rows`` times random 1e6 x 1e6 matrices with 1, 2, 4 and 6 nonzeros
a row instead (in a process of their own: the host's prefetch plan is
chosen per size class, and these share the random matrix's class).
``--widened`` times the Poisson and random matrices with values of another
dtype than x (bool and int64 values times float64 x, int8 times float32,
float32 times float64), which the CPU kernels widen as they read them, and
prints under each line the time of the product over a converted copy of the
values (what scipy does, and this project did before).
``--mid`` times random matrices of 5e4, 1e5 and 1.6e5 rows with 5 nonzeros a
row and of 8e4 rows with 10 (3e5 to 9.6e5 rows + nonzeros: the sizes whose
prefetch plan is timed since the thirty-ninth session) instead.

    python benchmarks/bench_spmv.py [--quick] [--threads N] [--short-rows | --mid | --widened]
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


def poisson2d(g):
    one = sp.identity(g, format="csr")
    d = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(g, g))
    return (sp.kron(one, d) + sp.kron(d, one)).tocsr()


def random_matrix(rng, n, nnz):
    r = rng.integers(0, n, nnz)
    c = rng.integers(0, n, nnz)
    A = sp.csr_matrix((np.ones(nnz), (r, c)), shape=(n, n))
    A.sum_duplicates()
    return A


def power_law(rng, n, nnz):
    # row lengths ~ Zipf: a few rows with very many nonzeros, most with few
    lengths = np.minimum(rng.zipf(1.6, n), n // 10).astype(np.int64)
    lengths = (lengths * (nnz / lengths.sum())).astype(np.int64) + 1
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = rng.integers(0, n, indptr[-1])
    A = sp.csr_matrix((np.ones(indptr[-1]), indices, indptr), shape=(n, n))
    # canonical (sorted, no duplicates) as the other matrices: astype() would
    # otherwise sum the float32 copy's duplicates and not the float64 one's,
    # and the two dtypes would time different matrices
    A.sum_duplicates()
    return A


def banded(n, half):
    return sp.diags([np.ones(n - abs(k)) for k in range(-half, half + 1)],
                    list(range(-half, half + 1)), shape=(n, n), format="csr")


def stream_triad(threads=1):
    """STREAM's triad ``a = b + s*c`` over 3 x 64 MB in one compiled pass
    (``_core.stream_triad``), split into ``threads`` pieces on the CPU
    device's thread pool; GB/s counting 3 x 8 bytes an element (STREAM's
    count: the write-allocate read of ``a`` is not counted)."""
    n = 8 * 1024 * 1024
    b, c = np.ones(n), np.ones(n)
    a = np.zeros(n)  # written once before timing: its pages exist
    t = interleaved({"triad": lambda: _core.stream_triad(a, b, c, 3.0, threads)}, repeats=7)["triad"]
    assert a[0] == 4.0 and a[-1] == 4.0
    return 3 * 8 * n / t / 1e9


def traffic(A, trans):
    vals = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    xlen, ylen = (A.shape[0], A.shape[1]) if trans else (A.shape[1], A.shape[0])
    return vals + (xlen + ylen) * A.data.itemsize


def streaming(A, x, trans, threads, data=None, ydtype=None):
    """The streaming roof of A @ x (A.T @ x when trans): one compiled pass
    that reads A's values (``data`` if given), indices and indptr and x, and
    writes a new array of the result's size (a product allocates its result
    too)."""
    ylen = A.shape[1] if trans else A.shape[0]
    reads = [A.data if data is None else data, A.indices, A.indptr, x]
    yd = ydtype or A.data.dtype
    return lambda: _core.stream_pass(reads, np.empty(ylen, yd), threads)


def scattering(A, threads):
    """The scatter yardstick of A.T @ x: A's values summed into a partial
    per thread at their column indices, the partials then summed into a new
    array of A's column count."""
    return lambda: _core.scatter_pass(A.indices, A.data, np.empty(A.shape[1], A.data.dtype), threads)


def half_lines(label, M, rng, repeats, row, nt):
    """float16 and bfloat16 values and x, float32 sums (spmv's mixed modes)."""
    try:
        import ml_dtypes
    except ImportError:
        return
    S = M.astype(np.float32)
    S.indices = S.indices.astype(np.int32)
    S.indptr = S.indptr.astype(np.int32)
    S.data = rng.standard_normal(S.nnz).astype(np.float32)
    for hd in (np.float16, ml_dtypes.bfloat16):
        data = S.data.astype(hd)
        S32 = sp.csr_matrix((data.astype(np.float32), S.indices, S.indptr), shape=S.shape)
        for trans in (False, True):
            xh = rng.standard_normal(S.shape[0] if trans else S.shape[1]).astype(hd)
            x32 = xh.astype(np.float32)
            St = S32.T if trans else S32

            def ours(data=data, xh=xh, trans=trans):
                return spmv((data, S.indices, S.indptr), xh, shape=S.shape, trans=trans)
            assert np.allclose(ours(), St @ x32, rtol=1e-3, atol=1e-3)
            row(label, np.dtype(hd).name, "T" if trans else "N", S.nnz,
                {"scipy": lambda St=St, x32=x32: St @ x32, "ours": ours,
                 "stream": streaming(S, xh, trans, nt, data, np.float32)},
                repeats, traffic(S, trans) - S.nnz * 2)


def int32_csr(M, dtype):
    """scipy's M as dtype, with int32 index arrays."""
    S = M.astype(dtype)
    S.indices = S.indices.astype(np.int32)
    S.indptr = S.indptr.astype(np.int32)
    return S


def operands(S, trans, dtype, rng):
    """x of dtype for op(S) @ x (op: S.T when trans), scipy's op(S), and
    ours: the same product through this project's class."""
    x = rng.standard_normal(S.shape[0] if trans else S.shape[1]).astype(dtype)
    A = csr_matrix(S)
    At = A.T if trans else A

    def ours():
        return At @ x
    return x, (S.T if trans else S), ours


WIDENED = (("bool", "float64"), ("int8", "float32"), ("float32", "float64"), ("int64", "float64"))


def widened_lines(mats, rng, repeats, row, nt):
    """A matrix whose values have another dtype than x's (the result is
    x's): scipy converts the values to the result dtype on every product; the
    CPU kernels read them as they lie and widen each one (int32 indices).
    ``copy ms`` is the product as it ran before (values converted, then the
    result dtype's kernel). The dtype column is values>result."""
    short = {"bool": "bool", "int8": "i8", "float32": "f32", "int64": "i64", "float64": "f64"}
    for label, M in mats.items():
        for vd, xd in WIDENED:
            S = int32_csr(M, vd)
            S.data = (rng.random(S.nnz) < 0.5 if vd == "bool" else
                      rng.integers(-100, 100, S.nnz).astype(vd) if vd in ("int8", "int64") else
                      rng.standard_normal(S.nnz).astype(vd))
            for trans in (False, True):
                x, St, ours = operands(S, trans, xd, rng)

                def copy(S=S, x=x, trans=trans):
                    C = csr_matrix((S.data.astype(xd), S.indices, S.indptr), shape=S.shape)
                    return (C.T if trans else C) @ x
                want = St @ x
                assert ours().dtype == want.dtype and np.allclose(ours(), want, rtol=1e-3, atol=1e-3)
                xlen, ylen = (S.shape[0], S.shape[1]) if trans else (S.shape[1], S.shape[0])
                nbytes = S.data.nbytes + S.indices.nbytes + S.indptr.nbytes + (xlen + ylen) * np.dtype(xd).itemsize
                t = interleaved({"copy": copy}, repeats=3)["copy"]  # once, outside the rounds' ratios
                row(label, f"{short[vd]}>{short[xd]}", "T" if trans else "N", S.nnz,
                    {"scipy": lambda St=St, x=x: St @ x, "ours": ours,
                     "stream": streaming(S, x, trans, nt, ydtype=np.dtype(xd))}, repeats, nbytes)
                print(f"{'':<30}{'':<9}{'':<4}{'':>10}{'copy ms':>10}{t * 1e3:>9.2f}   (before: values converted first)",
                      flush=True)


GOAL = 2.0  # the issue's goal: ours at least 2.0x scipy on every large float32/float64 cell
SCATTERED = ("random", "power-law")  # the matrices whose columns are scattered


def goal_summary(cells, out=print):
    """How many of the large cells reached the goal in this run and, for each
    one that did not, its floors: ``roof`` (a pass that only moves the
    product's bytes) and, for ``A.T @ x`` of a matrix with scattered
    columns, ``scat`` (the per-thread partials' scatter alone), each as scipy's time over its own. A floor below the goal
    means no kernel of that kind reaches the goal on this machine in this
    run."""
    met = [c for c in cells if c[1] >= GOAL]
    out(f"goal {GOAL:.1f}x scipy: {len(met)} of {len(cells)} large cells reached it")
    for name, r, roof, scat in cells:
        if r >= GOAL:
            continue
        floors = [f"roof {roof:.2f}"] + ([f"scat {scat:.2f}"] if scat is not None else [])
        low = [f for f, v in (("roof", roof), ("scat", scat)) if v is not None and v < GOAL]
        why = f"below {GOAL:.1f}: {' and '.join(low)}" if low else "floors above the goal"
        out(f"  {name:<42} {r:5.2f}  ({', '.join(floors)}; {why})")
    return len(met)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller matrices, fewer repeats")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--short-rows", action="store_true",
                    help="random 1e6 x 1e6 matrices with 1, 2, 4 and 6 nonzeros a row instead of the issue's set")
    ap.add_argument("--mid", action="store_true",
                    help="mid-size random matrices (3e5 to 1e6 rows + nonzeros) instead of the issue's set")
    ap.add_argument("--widened", action="store_true",
                    help="values of another dtype than the result (bool, int8, int64, float32 matrices times "
                         "float32/float64 x) instead of the issue's set")
    args = ap.parse_args()
    if args.threads:
        ascend_linalg.set_num_threads(args.threads)
    # The CPU device for the whole run, as a user picks it (set_backend or
    # $ASCEND_LINALG_BACKEND), not a `with use_backend` block per timed call,
    # which added its 1 us to every product (2% of the small case). scipy's
    # own matrices (S, St) never route, whatever the backend.
    ascend_linalg.set_backend("cpu")
    rng = np.random.default_rng(0)
    scale = 4 if args.quick else 1
    mats = {
        f"poisson2d {2000 // scale}^2": poisson2d(2000 // scale),
        f"random {10**6 // scale}, nnz {10**7 // scale}": random_matrix(rng, 10**6 // scale, 10**7 // scale),
        "power-law rows": power_law(rng, 10**6 // scale, 10**7 // scale),
        "banded (bw 9)": banded(2 * 10**6 // scale, 4),
    }
    if args.short_rows:  # the transposed kernel's grouped scatter (chunks of short rows)
        mats = {f"short rows, {d} a row": random_matrix(rng, 10**6 // scale, d * 10**6 // scale) for d in (1, 2, 4, 6)}
    if args.mid:  # products the prefetch plan is timed for from 2^18 rows + nonzeros on (kTuneMinWork)
        mats = {f"random {n}, nnz {d * n}": random_matrix(rng, n, d * n)
                for n, d in ((50_000, 5), (100_000, 5), (160_000, 5), (80_000, 10))}
    if args.widened:
        mats = {k: v for k, v in mats.items() if k.startswith(("poisson", "random"))}
    repeats = 5 if args.quick else 9
    nt = ascend_linalg.get_num_threads()
    bw1 = stream_triad(1)
    bwn = stream_triad(nt) if nt > 1 else bw1
    more = f", {bwn:.1f} GB/s on {nt}" if nt > 1 else ""
    print(f"ascend_linalg {ascend_linalg.__version__}, {nt} CPU threads; STREAM triad: "
          f"{bw1:.1f} GB/s on 1 thread{more}")
    print(f"{'matrix':<30}{'dtype':<9}{'op':<4}{'nnz':>10}{'scipy ms':>10}{'ours ms':>9}{'stream ms':>10}"
          f"{'ours/scipy':>11}{'roof':>6}{'ours/stream':>12}{'ours GB/s':>10}{'scat':>6}{'ours/scat':>10}")

    goal_cells = []  # the issue's goal cells: (name, ours/scipy, roof, scat or None)

    def row(label, dtype, op, nnz, candidates, reps, traffic_bytes, goal=False):
        # ms: medians; the ratios: medians of the rounds' own ratios
        s = {}
        t = interleaved(candidates, repeats=reps, samples=s)
        ts, to, tp = t["scipy"], t["ours"], t["stream"]
        if goal:
            # the scatter yardstick bounds the per-thread partials, which only
            # matrices with scattered columns take: local columns (Poisson,
            # banded) stream, and their kernel runs under the yardstick
            scat_floor = "scatter" in t and label.startswith(SCATTERED)
            goal_cells.append((f"{label} {dtype} {op}", paired_ratio(s, "scipy", "ours"),
                               paired_ratio(s, "scipy", "stream"),
                               paired_ratio(s, "scipy", "scatter") if scat_floor else None))
        scat = (f"{paired_ratio(s, 'scipy', 'scatter'):>6.2f}{paired_ratio(s, 'ours', 'scatter'):>10.2f}"
                if "scatter" in t else "")
        print(f"{label:<30}{dtype:<9}{op:<4}{nnz:>10}{ts * 1e3:>10.2f}{to * 1e3:>9.2f}{tp * 1e3:>10.2f}"
              f"{paired_ratio(s, 'scipy', 'ours'):>11.2f}{paired_ratio(s, 'scipy', 'stream'):>6.2f}"
              f"{paired_ratio(s, 'ours', 'stream'):>12.2f}{traffic_bytes / to / 1e9:>10.1f}{scat}", flush=True)

    if args.widened:
        widened_lines(mats, rng, repeats, row, nt)
        mats = {}
    for label, M in mats.items():
        for dtype in (np.float32, np.float64):
            S = int32_csr(M, dtype)
            for trans in (False, True):
                x, St, ours = operands(S, trans, dtype, rng)
                assert np.allclose(ours(), St @ x, rtol=1e-3, atol=1e-3)
                cands = {"scipy": lambda St=St, x=x: St @ x, "ours": ours, "stream": streaming(S, x, trans, nt)}
                if trans:
                    cands["scatter"] = scattering(S, nt)
                row(label, np.dtype(dtype).name, "T" if trans else "N", S.nnz, cands, repeats, traffic(S, trans),
                    goal=not (args.short_rows or args.mid))
        if label.startswith("random") and not args.mid:
            half_lines(label, M, rng, repeats, row, nt)
    if goal_cells:
        goal_summary(goal_cells)
    # per-call overhead on a small matrix (in cache), both dtypes and ops
    for dtype in (np.float32, np.float64):
        S = poisson2d(112).astype(dtype)
        A = csr_matrix(S)
        for trans in (False, True):
            x = rng.standard_normal(S.shape[0]).astype(dtype)
            St, At = (S.T, A.T) if trans else (S, A)

            def small(At=At, x=x):
                return At @ x
            assert np.allclose(small(), St @ x, rtol=1e-3, atol=1e-3)
            row("small poisson 112^2", np.dtype(dtype).name, "T" if trans else "N", S.nnz,
                {"scipy": lambda St=St, x=x: St @ x, "ours": small, "stream": streaming(S, x, trans, nt)},
                15, traffic(S, trans))
    # the prefetch plans the host chose by timing (host/spmv_tune.cpp): one
    # line per size class, matrices of one class share its plan
    print("prefetch plans (SpmvPrefetchPlan) chosen per size class:")
    # alDataType_t values (32: float32 values widened, SpmvTilingData::valueStore)
    kinds = {0: "float32", 1: "float64", 4: "int32", 5: "int64", 6: "float16", 7: "bfloat16", 8: "int8", 9: "bool",
             32: "float32"}
    for c in sorted(_core.spmv_prefetch_classes(), key=lambda c: (c["trans"], c["value_type"], c["target_log2"], c["row_shape"], c["scattered"])):
        best = ", ".join(f"{p}: {ns:.3f}" for p, ns in enumerate(c["best_ns"]) if c["samples"][p])
        kind, store = kinds.get(c["value_type"], c["value_type"]), c["value_store"]
        if store in (6, 7):  # float16/bfloat16 values (float32 sums): named by the stored type
            kind = kinds[store]
        elif store:  # other widened values: stored>computed
            kind = f"{kinds.get(store, store)}>{kind}"
        shape = (", skewed rows" if c["row_shape"] else "") + (", scattered" if c["scattered"] else "")
        print(f"  {'T' if c['trans'] else 'N'} {kind}, {c['blocks']} blocks, target < 2^{c['target_log2']} "
              f"bytes{shape}: plan {c['plan']} (fastest ns per row + nonzero: {best})")


if __name__ == "__main__":
    main()
