// Transposed merge-path SpMV: Y := alpha*A^T*X + beta*Y without atomics.
// Scatter: block b takes its share of rows + nonzeros (rows may be split freely:
// there is no per-row result) and accumulates into its own cols x nvec partial.
// A page of the partial is zeroed when the block first touches it, so a banded
// matrix costs about cols in zeroing and reduction, not blocks * cols.
// Reduce: column pages split over blocks; each column sums the touched partials
// in block order (deterministic), then the alpha/beta epilogue. For y := A^T x
// a streaming block sums the spans that fall in its own pages of y straight
// into y (OwnedColumns), which the reduction then adds the partials to.
//
// Templates only (internal linkage), included by the baseline TU
// (spmvt_kernel_merge.cpp) and the AVX2 one (spmvt_kernel_merge_avx2.cpp),
// which compile the same code with their own -m flags; the span checks' min/max
// and the reduction are where the wider vectors pay.
#ifndef ASCEND_LINALG_KERNELS_SPMVT_MERGE_IMPL_H
#define ASCEND_LINALG_KERNELS_SPMVT_MERGE_IMPL_H

#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "spmv_kernel_merge.h"
#include "spmv_merge_mv.h"
#include "spmvt_narrow.h"
#include "spmvt_pages.h"
#include "spmvt_scatter_rows.h"

namespace al {
namespace spmvm {
namespace {

// A scattered block of short rows, at most kScatterPfShortAvg nonzeros a row
// on average, prefetches its partial when all blocks' partials together pass
// kScatterPfShortMinBytes (past the 1 MiB L2), not only past
// kScatterPfMinBytes: without the prefetch a row is one branch on its
// length, which is random, and a mispredicted branch throws away the
// scatters in flight after it; with it, the partial's lines are on their way
// kPrefetch nonzeros ahead whatever the branches do. Random 1e6 x 1e6, 2 a
// row, float32 A^T x, 1 thread: 22.3-22.6 ms without, 13.8-14.2 with; two
// partials in L2 (n = 3e4) lost, hence the lower bound. All figures:
// docs/performance.md, thirtieth session (moved from here).
constexpr int64_t kScatterPfShortAvg = 4;
constexpr int64_t kScatterPfShortMinBytes = int64_t(512) << 10;

template <class T> T* partial(void* ws, const SpmvTilingData& t, int64_t b) {
    return reinterpret_cast<T*>(static_cast<char*>(ws) + t.partOffset) + b * t.cols * t.nvec;
}
inline unsigned char* pageFlags(void* ws, const SpmvTilingData& t, int64_t b) {
    return static_cast<unsigned char*>(ws) + t.pageOffset + b * t.pages;
}

// The plain product y := A^T x (one vector, alpha 1, beta 0, unit-stride
// y), whose sums may go straight into y. With one block (directY) the block
// scatters straight into y (zeroed first, as the partial would be) and the
// reduction has nothing to do. Same sums in the same order.
template <class T>
bool plainProduct(const SpmvTilingData& t) {
    return t.nvec == 1 && t.betaMode == SPMV_BETA_ZERO && t.yRowStride == 1 && isOne(fromBytes<T>(t.alpha));
}
template <class T>
bool directY(const SpmvTilingData& t) {
    return t.usedCoreNum == 1 && plainProduct<T>(t);
}
// The plain product of several vectors, Y := A^T X (alpha 1, beta 0) into
// a Y in C order (rows of nvec elements one after another): Y's layout is
// the row-major partial's (rowMajorPartial), so its sums may go straight
// into Y as well.
template <class T>
bool plainProductMv(const SpmvTilingData& t) {
    return t.nvec > 1 && t.betaMode == SPMV_BETA_ZERO && t.yColStride == 1 && t.yRowStride == t.nvec &&
           isOne(fromBytes<T>(t.alpha));
}
// Several blocks, either product: blocks may scatter their own columns
// straight into y (OwnedColumns, spmvt_pages.h). The host runs the
// reduction with as many blocks as the scatter; ownership is by page and
// the reduction looks at each page's flags, so it does not depend on that.
template <class T>
bool ownsColumns(const SpmvTilingData& t, uint32_t nb) {
    return nb > 1 && (plainProduct<T>(t) || plainProductMv<T>(t));
}

// nvec == 1: the block's rows, the first from k0 and the open tail row up to
// k1. indptr is checked a chunk of rows ahead of use, as in rowsN1Mode: every
// pair (r, r + 1) with r0 <= r < r1 must be non-decreasing and within
// [k0, k1] (always true of a well-formed matrix); indices a span ahead
// (checkTouchAhead). Returns nonzero on malformed structure, before reading
// anything it implies.
// Own: column ownership (OwnedColumns; streaming blocks only): the nonzeros
// go to own->target, set by each span's check.
// longPf (blocks not scattered): kLongPfSpread, rows of kLongRow nonzeros or
// more that are spread (spreadRow) prefetch their target as scattered rows
// do; kLongPfAll, every such row; kLongPfNone, none (longRowPrefetch).
template <bool Touch, int Pf, bool Own = false, class T, class I, class V>
int scatterRows(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* part,
                unsigned char* flags, const SpmvTilingData& t, const Segment& s, int64_t rows,
                OwnedColumns<T>* own = nullptr, int longPf = kLongPfNone) {
    static_assert(!Own || (Touch && Pf == kPfStream), "ownership is for streaming partial blocks");
    // A long row's own value and index stream prefetch (scatterRow<true>)
    // in a block that is not scattered: a scattered block's rows prefetch
    // theirs already (scatterSpanPf).
    const bool streamRows = Pf != kPfScattered && longRowStreams(spmvArraysPlan<V, I>(t));
    const UIndex<I> lim = indexLimit<I>(static_cast<uint64_t>(t.cols));
    int64_t chk = s.k0;  // nonzeros [.., chk) are checked, their pages zeroed
    int64_t zeroed = 0;  // pages zeroed (Touch)
    T* const part0 = part;
    OwnedColumns<T>* const ow = Own ? own : nullptr;
    ScatterWindow<T> win;  // streaming run chunks (runScatterRows<true>)
    ScatterWindow<T>* const wp = Pf == kPfStream ? &win : nullptr;
    // the current span's target: the partial, or y for a span of own columns
    auto tgt = [&]() __attribute__((always_inline)) { return Own ? own->target : part0; };
    // Row r's span [ka, kb), split where a span check falls inside it (the
    // sums per partial element keep their order).
    // Inlined (always_inline): GCC kept it out of line, a call per row.
    auto row = [&](int64_t r, int64_t ka, int64_t kb) __attribute__((always_inline)) {
        if (Pf != kPfNone) {
            prefetchAhead<Pf == kPfScattered>(val + kb);
            prefetchAhead<Pf == kPfScattered>(idx + kb);
        }
        const T xr = x[r * xs];
        if constexpr (Pf == kPfScattered) {
            // Scattered: each nonzero prefetches the partial element
            // kPrefetch nonzeros on, in the scatter's own loop (one loop per
            // row), a checked span at a time; a row whose indices are all
            // checked, the common case, in one go. The block's last
            // kPrefetch nonzeros prefetch nothing (the index array is not
            // read past the block); earlier nonzeros prefetched theirs.
            // History: docs/performance.md, twenty-ninth session (the
            // prefetch and scatter fused; rows over 256 prefetched too).
            // Once the partial is all zeroed and the row's first kPrefetch
            // indices are checked, the scatter checks the rest as it loads
            // them for the prefetch (scatterRowPf's Check) and moves chk on
            // to the next row's first kPrefetch: no span check runs again
            // before the block's last kPrefetch nonzeros.
            if ((!Touch || zeroed == t.pages) && chk >= ka + kPrefetch && kb + kPrefetch <= s.k1) {
                if (!scatterSpanPf<true>(val, idx, ka, kb, xr, part, lim)) return false;
                chk = std::max(chk, kb + kPrefetch);
                return true;
            }
            if (__builtin_expect(kb <= chk && kb + kPrefetch <= s.k1, 1)) {
                scatterSpanPf(val, idx, ka, kb, xr, part, lim);
                return true;
            }
            while (ka < kb) {
                if (ka >= chk && !checkTouchAhead<Touch>(idx, &chk, s.k1, lim, part, flags, t, &zeroed)) return false;
                const int64_t e = std::min(kb, chk), ef = std::max(ka, std::min(e, s.k1 - kPrefetch));
                scatterSpanPf(val, idx, ka, ef, xr, part, lim);
                scatterRow(val, idx, ef, e, xr, part);
                ka = e;
            }
            return true;
        } else if (__builtin_expect(kb <= chk && kb - ka <= kUnroll, 1)) {
            // streaming blocks: a short row whose indices are checked already
            // is unrolled
            unrolledScatter(val, idx, kb, kb - ka, xr, tgt());
            return true;
        }
        if constexpr (Pf == kPfNone && !Own) {
            // A long row in a block that prefetches nothing, its partial all
            // zeroed: each index checked as the scatter loads it, no span
            // checks (power-law float64, plan 3: 10.58 -> 9.13 ms; figures
            // in docs/performance.md, thirty-first session).
            if (kb - ka > kUnroll && kb > chk && chk >= ka && (!Touch || zeroed == t.pages)) {
                if (!scatterRowChecked(val, idx, ka, kb, xr, part, lim)) return false;
                chk = std::max(chk, kb);
                return true;
            }
        }
        // A long row spread over a target past the cache: prefetched like a
        // scattered row's (the same sums; the block's last kPrefetch
        // nonzeros prefetch nothing).
        const bool rowPf = longPf != kLongPfNone && kb - ka >= kLongRow &&
                           (longPf == kLongPfAll || spreadRow<T>(idx, ka, kb));
        const bool streams = streamRows && kb - ka >= kStreamSpan;
        auto scatter = [&](int64_t a, int64_t e) __attribute__((always_inline)) {
            if (rowPf) {
                const int64_t ef = std::max(a, std::min(e, s.k1 - kPrefetch));
                if (streams) scatterRowPf<true>(val, idx, a, ef, xr, tgt(), lim);
                else scatterRowPf(val, idx, a, ef, xr, tgt(), lim);
                a = ef;
            }
            if (streams) scatterRow<true>(val, idx, a, e, xr, tgt());
            else scatterRow(val, idx, a, e, xr, tgt());
        };
        while (kb > chk) {
            scatter(ka, chk);
            ka = chk;
            if (!checkTouchAhead<Touch>(idx, &chk, s.k1, lim, part0, flags, t, &zeroed, 1, ow, wp)) return false;
        }
        scatter(ka, kb);
        return true;
    };
    return walkRows(indptr, s, rows, row, [&](int64_t r, int64_t re, int64_t a) __attribute__((always_inline)) {
        const int64_t ce = static_cast<int64_t>(indptr[re]);
#if defined(__AVX2__)
        // A scattered chunk of short rows, its indices checked as the
        // prefetch loads them (see row()), with no loop per row: float64
        // rows of up to kGroupMaxAvg on average in groups of 8 nonzeros
        // (scatterGroups); other float64 chunks (but a skewed matrix's:
        // SPMV_PF_SKEWED_ROWS) and all float32 chunks of up to kFillMaxAvg a
        // row with each nonzero's x stored first, then one loop over the
        // chunk's nonzeros (scatterFilled).
        if constexpr (Pf == kPfScattered && std::is_same_v<T, double> && std::is_same_v<V, T> &&
                      std::is_same_v<I, int32_t>) {
            if (ce - a <= kGroupMaxAvg * (re - r) && xs == 1 && (!Touch || zeroed == t.pages) &&
                chk >= a + kPrefetch && ce + kPrefetch <= s.k1) {
                if (!scatterGroups(indptr, idx, val, x, part, r, re, a, ce, lim)) return -1;
                chk = std::max(chk, ce + kPrefetch);
                return 1;
            }
        }
        if constexpr (Pf == kPfScattered && (std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                      std::is_same_v<V, T>) {
            if ((std::is_same_v<T, float> || !(t.prefetchPlan & SPMV_PF_SKEWED_ROWS)) &&
                ce - a <= kFillMaxAvg * (re - r) && xs == 1 && (!Touch || zeroed == t.pages) &&
                chk >= a + kPrefetch && ce + kPrefetch <= s.k1) {
                if (!scatterFilledAny(indptr, idx, val, x, part, r, re, a, ce, lim)) return -1;
                chk = std::max(chk, ce + kPrefetch);
                return 1;
            }
        }
#endif
        if (Pf == kPfScattered || ce - a > kFastAvg * (re - r)) return 0;
        if constexpr (Pf == kPfStream) {
            // A streaming block's chunk of short rows that mostly continue
            // runs (kRunScatter types): the runs, each index checked as it is
            // loaded against the columns the span checks have made ready
            // (ScatterWindow), with no span check ahead; at an index outside
            // them, the row from there goes to row(), whose span check from
            // that nonzero adds its span's pages to the window. A banded
            // matrix's rows leave it about once a page of columns.
            // Interleaved medians of 31, 2 threads, ms, span checks ahead /
            // window: 2e6-row banded float32 A^T x 4.73 / 4.55, float64
            // 6.54 / 6.50; 2000^2 Poisson float32 6.57 / 6.60, float64 8.72 /
            // 8.19 (docs/performance.md, thirty-third session).
            if constexpr (kRunScatter<T, V>) {
                if (!mostlyRuns<true>(indptr, r, re)) return 0;
                while (r < re) {
                    int64_t stop;
                    r = runScatterRows<true>(indptr, idx, val, x, xs, win.target, r, re, a, win.lo, win.len, &stop);
                    if (r == re) break;
                    // Row r from stop, whose index is outside the window.
                    // [a, chk) is checked for tgt() at a row start (row()'s
                    // contract): nothing before stop is left.
                    const int64_t e = static_cast<int64_t>(indptr[r + 1]);
                    chk = std::max(chk, stop);
                    if (!row(r, stop, e)) return -1;
                    a = e;
                    ++r;
                }
                chk = std::max(chk, ce);
                return 1;
            } else {
                return 0;
            }
        }
        if (Own) return 0;
        // An in-cache block's chunk of short rows (kFastAvg): its spans
        // checked and touched first, then the counted loop per row, with
        // no check or jump per row. One thread, 112^2 Poisson float64,
        // C++, 6 alternating runs of 5000 products: 58.8 -> 49.5 us a
        // product (fastest run). Streaming blocks do not take the counted
        // loop: with it, 2e6-row banded float32 A^T x took 18.3-18.8 ms
        // instead of 13.0-13.5 with the unrolled chain per row, 2000^2
        // Poisson 21.3-22.5 instead of 17.4-18.0 (2 threads, 3 alternating
        // runs); their chunks of runs take the run loops above.
        while (chk < ce)
            if (!checkTouchAhead<Touch>(idx, &chk, s.k1, lim, part, flags, t, &zeroed)) return -1;
        if constexpr (kRunScatter<T, V>) {
            if (mostlyRuns<true>(indptr, r, re)) {
                runScatterRows<false>(indptr, idx, val, x, xs, part, r, re, a);
                return 1;
            }
        }
        for (; r < re; ++r) {
            const int64_t e = static_cast<int64_t>(indptr[r + 1]);
            scatterRow(val, idx, a, e, x[r * xs], part);
            a = e;
        }
        return 1;
    });
}

// Several vectors: the partial is row-major, element (c, v) at c * nvec + v,
// so a nonzero updates one contiguous row of it (mvScatter) and a page of
// columns is kPage * nvec elements. One vector: element c.
inline bool rowMajorPartial(const SpmvTilingData& t) { return t.nvec > 1; }

// rowMajorPartial: the block's rows as in scatterRows (indptr a chunk of rows
// ahead, indices and page zeroing a span ahead). Nonzero on malformed
// structure, before reading anything it implies.
// own (ownsColumns; else null): a streaming block (not scattered, at least
// kStreamMinNnz nonzeros) sums the spans of its own columns straight into Y,
// as scatterRows<.., Own> does for one vector; a scattered or small block
// keeps its partial.
// W > 0: nvec == W for the block (scatterRowsMvAny), no switch over the
// widths per row.
template <int W, class T, class I, class V>
int scatterRowsMv(const I* indptr, const I* idx, const V* val, const T* x, T* part, unsigned char* flags,
                  const SpmvTilingData& t, const Segment& s, int64_t rows, OwnedColumns<T>* own = nullptr) {
    const UIndex<I> lim = indexLimit<I>(static_cast<uint64_t>(t.cols));
    const int64_t nv = t.nvec;
    int64_t chk = s.k0, zeroed = 0;
    // Scattered partials past kScatterPfMinBytes prefetch their rows, as
    // nvec == 1. Random 3e5 x 3e5 with 3e6 nonzeros, A^T X, 2 threads,
    // through Python, two alternating processes each, ms (scipy):
    // float32 8 vectors 45.2-49.8 -> 15.1-19.4 (91-170); float64 4 vectors
    // 42.4-45.3 -> 14.0-21.8 (69-92), 8 vectors 59.6-68.1 -> 25.8-29.8
    // (130-193).
    const int64_t partBytes = static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(t.cols), uint64_t(1) << 36)) *
                              nv * static_cast<int64_t>(sizeof(T)) * t.usedCoreNum;
    const bool pf = prefetchMode(idx, s.k0, s.k1, 1, partBytes) == kPfScattered;
    if (own != nullptr && (pf || s.k1 - s.k0 < kStreamMinNnz || scattered(idx, s.k0, s.k1, 1))) own = nullptr;
    // X's rows not contiguous (Fortran order: its columns are): each row is
    // gathered into xbuf first. The rows are read in order, so an X in
    // Fortran order is nvec sequential streams, and is not copied to C order
    // first (the non-transposed kernel reads X's rows at random and needs
    // that copy).
    const bool gather = t.xColStride != 1;
    std::vector<T> xbuf(gather ? static_cast<size_t>(nv) : 0);
    auto row = [&](int64_t r, int64_t ka, int64_t kb) __attribute__((always_inline)) {
        const T* xr = x + r * t.xRowStride;
        if (gather && ka < kb) {
            for (int64_t v = 0; v < nv; ++v) xbuf[static_cast<size_t>(v)] = xr[v * t.xColStride];
            xr = xbuf.data();
        }
        while (ka < kb) {
            if (ka >= chk && !checkTouchAhead<true>(idx, &chk, s.k1, lim, part, flags, t, &zeroed, nv, own)) return false;
            const int64_t e = std::min(kb, chk);
            const int64_t ef = pf ? std::max(ka, std::min(e, s.k1 - kPrefetch)) : ka;
            // [ka, e) lies in one checked span: own->target is its target
            T* const tg = own != nullptr ? own->target : part;
            if constexpr (W > 0) {
                if (ef > ka) mvScatter<W, true>(val, idx, ka, ef, xr, tg, W, lim);
                mvScatter<W, false>(val, idx, ef, e, xr, tg, W, lim);
            } else {
                forMvBlocks(nv, [&](auto w, int64_t v0) __attribute__((always_inline)) {
                    constexpr int Wb = decltype(w)::value;
                    if (v0 == 0 && ef > ka) {  // the first vectors prefetch
                        mvScatter<Wb, true>(val, idx, ka, ef, xr + v0, tg + v0, nv, lim);
                        mvScatter<Wb, false>(val, idx, ef, e, xr + v0, tg + v0, nv, lim);
                    } else {
                        mvScatter<Wb, false>(val, idx, ka, e, xr + v0, tg + v0, nv, lim);
                    }
                });
            }
            ka = e;
        }
        return true;
    };
    return walkRows(indptr, s, rows, row, [](int64_t, int64_t, int64_t) { return 0; });
}
// scatterRowsMv at a fixed width for 2, 4 or 8 vectors of real values stored
// as the result type (as rowsMvAny, spmv_kernel_merge.cpp).
template <class T, class I, class V>
int scatterRowsMvAny(const I* indptr, const I* idx, const V* val, const T* x, T* part, unsigned char* flags,
                     const SpmvTilingData& t, const Segment& s, int64_t rows, OwnedColumns<T>* own) {
    if constexpr (std::is_same_v<T, V> && std::is_arithmetic_v<T>) {
        switch (t.nvec) {
            case 2: return scatterRowsMv<2>(indptr, idx, val, x, part, flags, t, s, rows, own);
            case 4: return scatterRowsMv<4>(indptr, idx, val, x, part, flags, t, s, rows, own);
            case 8: return scatterRowsMv<8>(indptr, idx, val, x, part, flags, t, s, rows, own);
            default: break;
        }
    }
    return scatterRowsMv<0>(indptr, idx, val, x, part, flags, t, s, rows, own);
}

template <class T, class I, class V>
void spmvT(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    const I* indptr = static_cast<const I*>(args[0]);
    const I* idx = static_cast<const I*>(args[1]);
    const V* val = static_cast<const V*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    void* ws = args[5];
    const bool direct = directY<T>(t);
    T* part = direct ? static_cast<T*>(args[4]) : partial<T>(ws, t, b);
    unsigned char* flags = pageFlags(ws, t, b);
    // direct: every page counts as touched (zeroed here, up front).
    if (direct) std::fill(part, part + t.cols, T{});
    std::memset(flags, direct ? kPagePartial : 0, static_cast<size_t>(t.pages));
    const int64_t rows = t.rows, nnzT = static_cast<int64_t>(indptr[rows]);
    const Segment s = blockSegment(indptr, rows, nnzT, b, nb);
    if (t.cols == 0) {
        if (s.k1 > s.k0) flagError(ws);
        return;
    }
    if (narrowPartial<T>(t, nnzT)) {
        if (!direct) {
            std::fill(part, part + t.cols, T{});
            std::memset(flags, kPagePartial, static_cast<size_t>(t.pages));
        }
        if (scatterNarrow(indptr, idx, val, x, t.xRowStride, part, t, s, rows)) flagError(ws);
        return;
    }
    if (t.nvec == 1) {
        const int64_t xs = t.xRowStride;
        // A scattered partial is prefetched when all blocks' partials
        // together (they share the last-level cache) exceed
        // kScatterPfMinBytes, the bound the non-transposed kernel puts on x.
        // Smaller ones stay in cache, where the prefetches' index loads cost
        // more than they hide. Random n x n matrices, 10 n nonzeros, through
        // Python, AVX2 EPYC (32 MB L3, shared), interleaved medians of 9,
        // with / without the prefetch, ms:
        //   partials 1-4 MB: n = 2.5e5 float32 1 thread 12.2 / 8.4; 5e5
        //   float32 1 thread 22.5 / 15.3, 2 threads 12.1 / 12.1; 1e6
        //   float32 1 thread 48.0 / 36.3 (scipy 42.4); 2.5e5 float64 2
        //   threads 7.6 / 8.7 (the one loss); power-law rows 1e6 float32 1
        //   thread 43.3 / 37.2;
        //   6 MB: 1.5e6 float32 1 thread 65.0 / 53.0;
        //   8 MB and more: 1e6 float32 2 threads 34.9 / 54.6, float64 1
        //   thread 111 / 177; 2e6 float32 1 thread 94.7 / 154; 3e6 float64
        //   2 threads 285 / 329.
        // (The previous machine, AVX-512: 1e6 float32, 2 threads, 8 MB in
        // all: 24-30 ms with the prefetch, 48-125 without.)
        // Short rows change this: a block averaging at most
        // kScatterPfShortAvg nonzeros a row is prefetched from
        // kScatterPfShortMinBytes on (see there). This is plan 0, the rule;
        // the host may pick another plan by timing (SpmvPrefetchPlan): on
        // the seventeenth session's host, partials of 4 MB in all paid for
        // their prefetch (docs/performance.md).
        // (A column split of scattered blocks, tried: docs/performance.md,
        // twenty-first session.)
        const int64_t partBytes = static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(t.cols), uint64_t(1) << 40)) *
                                  static_cast<int64_t>(sizeof(T)) * static_cast<int64_t>(nb);
        const bool shortRows = s.k1 - s.k0 <= kScatterPfShortAvg * (s.r1 - s.r0 + 1);
        const int64_t pfMin = shortRows ? kScatterPfShortMinBytes : kScatterPfMinBytes;
        int bad;
        const int pm = planPrefetchMode(idx, s.k0, s.k1, 1, partBytes, spmvInCachePlan(t), pfMin);
        const int longPf = longRowPrefetch(partBytes, t.prefetchPlan);
        if (!direct && pm == kPfStream && ownsColumns<T>(t, nb) && !scattered(idx, s.k0, s.k1, 1)) {
            // (not scattered: a plan may stream a scattered block; such a
            // block keeps the partial whatever the plan, so every plan sums
            // alike)
            OwnedColumns<T> own{static_cast<T*>(args[4]), t.pages * b / nb, t.pages * (b + 1) / nb, part};
            bad = scatterRows<true, kPfStream, true>(indptr, idx, val, x, xs, part, flags, t, s, rows, &own, longPf);
            if (bad) flagError(ws);
            return;
        }
#define AL_SPMVT_ROWS(TOUCH)                                                                          \
    switch (pm) {                                                                                     \
        case kPfScattered: bad = scatterRows<TOUCH, kPfScattered>(indptr, idx, val, x, xs, part, flags, t, s, rows); break; \
        case kPfStream: bad = scatterRows<TOUCH, kPfStream>(indptr, idx, val, x, xs, part, flags, t, s, rows, static_cast<OwnedColumns<T>*>(nullptr), longPf); break; \
        default: bad = scatterRows<TOUCH, kPfNone>(indptr, idx, val, x, xs, part, flags, t, s, rows, static_cast<OwnedColumns<T>*>(nullptr), longPf); break;        \
    }
        if (direct) AL_SPMVT_ROWS(false)
        else AL_SPMVT_ROWS(true)
#undef AL_SPMVT_ROWS
        if (bad) flagError(ws);
        return;
    }
    // nvec > 1 (rowMajorPartial)
    OwnedColumns<T> own{static_cast<T*>(args[4]), t.pages * b / nb, t.pages * (b + 1) / nb, part};
    if (scatterRowsMvAny(indptr, idx, val, x, part, flags, t, s, rows, ownsColumns<T>(t, nb) ? &own : nullptr))
        flagError(ws);
}

// Columns [c0, c1) of vector v: y = alpha * (0 + p0 + p1 ...) (+ beta * y).
// N > 0 fixes the partial count (a loop the compiler vectorises); N < 0: n.
template <class T, int32_t Mode, int N>
void reduceRange(const T* const* src, int n, int64_t c0, int64_t c1, T alpha, T beta, T* y, int64_t ys) {
    const int cnt = N >= 0 ? N : n;
    const T* s0 = cnt > 0 ? src[0] : nullptr;
    const T* s1 = cnt > 1 ? src[1] : nullptr;
    for (int64_t c = c0; c < c1; ++c) {
        T acc{};  // 0 + p0 + p1 ...: the reference's order, -0.0 partials included
        if (N == 1) acc = add(acc, s0[c]);
        else if (N == 2) acc = add(add(acc, s0[c]), s1[c]);
        else if (N < 0) for (int i = 0; i < cnt; ++i) acc = add(acc, src[i][c]);
        epilogue(Mode, alpha, beta, acc, y + c * ys);
    }
}
template <class T, int32_t Mode>
void reduceRangeN(const T* const* src, int n, int64_t c0, int64_t c1, T alpha, T beta, T* y, int64_t ys) {
    switch (n) {
        case 0: return reduceRange<T, Mode, 0>(src, n, c0, c1, alpha, beta, y, ys);
        case 1: return reduceRange<T, Mode, 1>(src, n, c0, c1, alpha, beta, y, ys);
        case 2: return reduceRange<T, Mode, 2>(src, n, c0, c1, alpha, beta, y, ys);
        default: return reduceRange<T, Mode, -1>(src, n, c0, c1, alpha, beta, y, ys);
    }
}

template <class T>
void reduceT(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    void* ws = args[5];
    T* y = static_cast<T*>(args[4]);
    if (directY<T>(t)) return;  // the scatter wrote y
    const T alpha = fromBytes<T>(t.alpha), beta = fromBytes<T>(t.beta);
    const int64_t blocks = t.usedCoreNum;
    const int64_t p0 = t.pages * b / nb, p1 = t.pages * (b + 1) / nb;
    std::vector<const T*> src(static_cast<size_t>(blocks) + 1);  // + y (OwnedColumns)
    auto reduce = [&](const T* const* sp, int n, int64_t c0, int64_t c1, T* yv, int64_t ys) {
        switch (t.betaMode) {
            case SPMV_BETA_ZERO: return reduceRangeN<T, SPMV_BETA_ZERO>(sp, n, c0, c1, alpha, beta, yv, ys);
            case SPMV_BETA_ONE: return reduceRangeN<T, SPMV_BETA_ONE>(sp, n, c0, c1, alpha, beta, yv, ys);
            default: return reduceRangeN<T, SPMV_BETA_GENERAL>(sp, n, c0, c1, alpha, beta, yv, ys);
        }
    };
    const bool owned = ownsColumns<T>(t, static_cast<uint32_t>(blocks));
    // y's page p holds its owner's direct sums (OwnedColumns): they come first
    auto ownY = [&](int64_t p) {
        bool inY = false;
        for (int64_t q = 0; q < blocks && owned; ++q) inY |= (pageFlags(ws, t, q)[p] & kPageOwnY) != 0;
        return inY;
    };
    if (rowMajorPartial(t)) {
        const int64_t nv = t.nvec;
        const bool dense = t.yColStride == 1 && t.yRowStride == nv;  // owned implies dense
        for (int64_t p = p0; p < p1; ++p) {
            const int64_t c0 = p * kPage, c1 = std::min(t.cols, c0 + kPage);
            int n = 0;
            if (ownY(p)) src[size_t(n++)] = y;
            const bool yOnly = n == 1;
            for (int64_t q = 0; q < blocks; ++q)
                if (pageFlags(ws, t, q)[p] & kPagePartial) src[size_t(n++)] = partial<T>(ws, t, q);
            if (yOnly && n == 1) continue;  // Y holds the sums already (alpha 1, beta 0)
            if (dense) {  // Y's elements in the partial's order: one flat range
                reduce(src.data(), n, c0 * nv, c1 * nv, y, 1);
                continue;
            }
            for (int64_t c = c0; c < c1; ++c)
                for (int64_t v = 0; v < nv; ++v) {
                    T acc{};  // 0 + p0 + p1 ..., as reduceRange
                    for (int i = 0; i < n; ++i) acc = add(acc, src[size_t(i)][c * nv + v]);
                    epilogue(t.betaMode, alpha, beta, acc, y + c * t.yRowStride + v * t.yColStride);
                }
        }
        return;
    }
    for (int64_t p = p0; p < p1; ++p) {
        const int64_t c0 = p * kPage, c1 = std::min(t.cols, c0 + kPage);
        for (int64_t v = 0; v < t.nvec; ++v) {
            int n = 0;
            if (ownY(p)) src[size_t(n++)] = y;
            const bool yOnly = n == 1;
            for (int64_t q = 0; q < blocks; ++q)
                if (pageFlags(ws, t, q)[p] & kPagePartial) src[size_t(n++)] = partial<T>(ws, t, q) + v * t.cols;
            if (yOnly && n == 1) continue;  // y holds the sums already (alpha 1, beta 0)
            reduce(src.data(), n, c0, c1, y + v * t.yColStride, t.yRowStride);
        }
    }
}


// The two launches' entries for this TU's ISA.
inline void spmvtScatterEntry(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withStoredTypes(t.valueType, t.valueStore, t.indexType, [&](auto v, auto i, auto s) {
        spmvT<typename decltype(v)::type, typename decltype(i)::type, typename decltype(s)::type>(b, nb, args, t);
    });
}
inline void spmvtReduceEntry(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto) { reduceT<typename decltype(v)::type>(b, nb, args, t); });
}

}  // namespace
}  // namespace spmvm
}  // namespace al

// the binned, light and column-split products (they use checkTouchAhead, walkRows, the row scatters above)
#include "spmvt_bins.h"
#include "spmvt_light.h"
#include "spmvt_split.h"

#endif
