// The column-split transposed product: Y := alpha*A^T X + beta*Y, up to
// kSpmvSplitMaxVec vectors, for a matrix of long rows (the host picks it:
// spmvt_cpu.cpp). Several vectors: the sums are row-major (nvec per column)
// and each nonzero updates a row of them (mvScatter).
// Block b owns the columns [split[b], split[b + 1]) of y and walks every row,
// taking only the stretch of the row that falls in its columns: a row sorted
// by column holds them in one contiguous stretch, found by a search. So no
// block has a partial of its own: a block's random updates land in its own
// share of y (cols / blocks elements, not cols), nothing is reduced, and
// each column sums its products from zero in row order, scipy's own order,
// whatever the block count (the merge-path kernel's partials are summed in
// block order instead).
// The rows' long stretches keep the searches (two per row and block) cheap
// against the scatter; the host only splits when the rows that hold
// nonzeros average kSpmvSplitMinAvg or more (kSpmvSplitMinAvgMv for several
// vectors, whose rows share the searches). An empty row costs a block one
// compare (no search, no load of x).
// Rows need not be sorted for the result to be right: a block checks that
// every index of its stretch lies in its own columns before it scatters any
// (a vectorised min/max pass over indices it then reads from L1); an index
// outside [0, cols) flags the structure as malformed (status 1), one inside
// but outside the block's columns (an unsorted row) flags status
// kSpmvSplitUnsorted, and the host then runs the merge-path product instead.
// When no block flags, the stretches partition every row (block 0 starts at
// the row's start and the last block ends at its end; a block whose stretch
// would start past its end flags too), so every nonzero is summed exactly
// once. Block 0 and the last block start and end at the row's ends rather
// than at searches, so a negative or too large index lands in their stretch
// and is caught by the same check.
// The plain product (alpha 1, beta 0, unit-stride y) sums straight into y;
// any other sums into the workspace's sum buffer, and a second launch
// (SpmvSplitTiling::epilogue) writes y from it with alpha and beta, after
// every block has checked its stretches, so that a fallback finds y as the
// caller left it. Included at the end of spmvt_merge_impl.h.
#ifndef ASCEND_LINALG_KERNELS_SPMVT_SPLIT_H
#define ASCEND_LINALG_KERNELS_SPMVT_SPLIT_H

#include <algorithm>
#include <atomic>

#include "spmv_merge_common.h"

namespace al {
namespace spmvm {
namespace {

// The first k in [a, e) with idx[k] >= c (e when none), for a row sorted by
// column; any row gets some k in [a, e]. A guess by the row's first and last
// columns, then a gallop from it: a row of columns spread evenly is found in
// a probe or two (each a cache miss: the row is not read yet), where a plain
// binary search of a 5000-nonzero row takes 13.
template <class I>
inline int64_t splitPoint(const I* idx, int64_t a, int64_t e, int64_t c) {
    if (a >= e) return a;
    const int64_t first = static_cast<int64_t>(idx[a]), last = static_cast<int64_t>(idx[e - 1]);
    if (c <= first) return a;
    if (c > last) return e;
    // first < c <= last, so last > first: the guess is in [a, e - 1]
    // (differences in double: a malformed row's int64 indices may span more
    // than int64)
    const double f = (static_cast<double>(c) - static_cast<double>(first)) /
                     (static_cast<double>(last) - static_cast<double>(first));
    // (a NaN or out-of-range f, from indices doubles cannot tell apart, to [0, 1])
    const double fc = f >= 0 ? (f <= 1 ? f : 1.0) : 0.0;
    int64_t g = a + static_cast<int64_t>(fc * static_cast<double>(e - 1 - a));
    g = std::min(std::max(g, a), e - 1);
    // gallop to a bracket [lo, hi) with idx[lo - 1] < c <= idx[hi] (as far as
    // the row is sorted), then bisect it
    int64_t lo, hi;
    if (static_cast<int64_t>(idx[g]) < c) {
        int64_t step = 1;
        lo = g + 1;
        hi = std::min(e, lo + step);
        while (hi < e && static_cast<int64_t>(idx[hi]) < c) {
            lo = hi + 1;
            step *= 2;
            hi = std::min(e, lo + step);
        }
    } else {
        int64_t step = 1;
        hi = g;
        lo = std::max(a, hi - step);
        while (lo > a && static_cast<int64_t>(idx[lo]) >= c) {
            hi = lo;
            step *= 2;
            lo = std::max(a, hi - step);
        }
    }
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (static_cast<int64_t>(idx[mid]) < c) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Whether every index in [ka, kb) lies in [c0, c0 + width): one unsigned max
// over (index - c0), which wraps a smaller index past the width.
template <class I>
inline bool stretchInRange(const I* idx, int64_t ka, int64_t kb, int64_t c0, uint64_t width) {
    using U = UIndex<I>;
    const U base = static_cast<U>(c0);
    U m = 0;
    for (int64_t k = ka; k < kb; ++k) m = std::max(m, static_cast<U>(static_cast<U>(idx[k]) - base));
    return kb <= ka || static_cast<uint64_t>(m) < width;
}

template <class I>
inline bool anyOutside(const I* idx, int64_t ka, int64_t kb, int64_t cols) {
    for (int64_t k = ka; k < kb; ++k)
        if (static_cast<uint64_t>(static_cast<UIndex<I>>(idx[k])) >= static_cast<uint64_t>(cols)) return true;
    return false;
}

inline void flagStatus(void* ws, int32_t v) {
    reinterpret_cast<std::atomic<int32_t>*>(ws)->store(v, std::memory_order_relaxed);
}

template <class T, class I, class V>
void splitT(uint32_t b, uint32_t nb, void* const* args, const SpmvSplitTiling& st) {
    const SpmvTilingData& t = st.t;
    const I* indptr = static_cast<const I*>(args[0]);
    const I* idx = static_cast<const I*>(args[1]);
    const V* val = static_cast<const V*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    T* y = static_cast<T*>(args[4]);
    void* ws = args[5];
    const int64_t c0 = st.split[b], c1 = st.split[b + 1];
    // the sums, row-major (column c's nvec sums at c * nvec): y itself for
    // the plain product (y row-major then), else the workspace's buffer
    const int64_t nv = t.nvec;
    T* const sum = st.sumOffset ? reinterpret_cast<T*>(static_cast<char*>(ws) + st.sumOffset) : y;
    if (st.epilogue) {  // every block checked its stretches: y from the sums
        const T alpha = fromBytes<T>(t.alpha), beta = fromBytes<T>(t.beta);
        for (int64_t c = c0; c < c1; ++c)
            for (int64_t j = 0; j < nv; ++j)
                epilogue(t.betaMode, alpha, beta, sum[c * nv + j], y + c * t.yRowStride + j * t.yColStride);
        return;
    }
    std::fill(sum + c0 * nv, sum + c1 * nv, T{});
    const int64_t rows = t.rows, nnzT = static_cast<int64_t>(indptr[rows]), xs = t.xRowStride;
    const uint64_t width = static_cast<uint64_t>(c1 - c0);
    const bool first = b == 0, lastBlock = b + 1 == nb;
    // A row spread over more than the cache's share prefetches its target as
    // the merge-path kernel's long spread rows do (longRowPrefetch's bound, on
    // the blocks' shares of y together).
    const int longPf = longRowPrefetch(t.cols * nv * static_cast<int64_t>(sizeof(T)), t.prefetchPlan);
    const UIndex<I> lim = indexLimit<I>(static_cast<uint64_t>(t.cols));
    T xv[kSpmvSplitMaxVec];  // nvec > 1: X's row r
    // and a long stretch its value and index streams (scatterRow<true>)
    const bool streamRows = longRowStreams(spmvArraysPlan<V, I>(t));
    int64_t kA = 0;  // indptr[0] == 0 (the host checked it)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t kB = static_cast<int64_t>(indptr[r + 1]);
        if (kB < kA || kB > nnzT) {
            flagError(ws);
            return;
        }
        if (kB == kA) continue;  // an empty row: no search, scatter or load of x
        const int64_t a = first ? kA : splitPoint(idx, kA, kB, c0);
        const int64_t e = lastBlock ? kB : splitPoint(idx, kA, kB, c1);
        if (a > e) {  // an unsorted row
            flagStatus(ws, anyOutside(idx, kA, kB, t.cols) ? 1 : kSpmvSplitUnsorted);
            return;
        }
        if (!stretchInRange(idx, a, e, c0, width)) {
            flagStatus(ws, anyOutside(idx, a, e, t.cols) ? 1 : kSpmvSplitUnsorted);
            return;
        }
        if (nv > 1) {
            // X's row, then each nonzero updates a row of the sums, vectors
            // in blocks of a compile-time width (mvScatter: the merge path's
            // update, scipy's products and order); a long spread stretch
            // prefetches the sums' rows kPrefetch nonzeros on, within the
            // stretch (the same rule as one vector's, below)
            for (int64_t j = 0; j < nv; ++j) xv[j] = x[r * xs + j * t.xColStride];
            const bool pf = longPf != kLongPfNone && e - a >= kLongRow &&
                            (longPf == kLongPfAll || spreadRow<T>(idx, a, e));
            const int64_t pe = pf ? std::max(a, e - kPrefetch) : a;
            forMvBlocks(nv, [&](auto w, int64_t v0) __attribute__((always_inline)) {
                constexpr int W = decltype(w)::value;
                if (v0 == 0) mvScatter<W, true>(val, idx, a, pe, xv + v0, sum + v0, nv, lim);
                mvScatter<W, false>(val, idx, v0 == 0 ? pe : a, e, xv + v0, sum + v0, nv, lim);
            });
            kA = kB;
            continue;
        }
        const T xr = x[r * xs];
        // Prefetched only from the block's own stretch: a prefetch for
        // writing of another block's columns would take their line from
        // that block's core (forced on in every row, this once cost 2x).
        int64_t p = a;
        const bool streams = streamRows && e - a >= kStreamSpan;
        if (longPf != kLongPfNone && e - a >= kLongRow && (longPf == kLongPfAll || spreadRow<T>(idx, a, e))) {
            p = std::max(a, e - kPrefetch);
            if (streams) scatterRowPf<true>(val, idx, a, p, xr, sum, indexLimit<I>(static_cast<uint64_t>(t.cols)));
            else scatterRowPf(val, idx, a, p, xr, sum, indexLimit<I>(static_cast<uint64_t>(t.cols)));
        }
        if (streams) scatterRow<true>(val, idx, p, e, xr, sum);
        else scatterRow(val, idx, p, e, xr, sum);
        kA = kB;
    }
}

inline void spmvtSplitEntry(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& st = *static_cast<const SpmvSplitTiling*>(tiling);
    withStoredTypes(st.t.valueType, st.t.valueStore, st.t.indexType, [&](auto v, auto i, auto s) {
        if (st.light) {  // the light product (spmvt_light.h): the same tiling and launch
            lightT<typename decltype(v)::type, typename decltype(i)::type, typename decltype(s)::type>(b, nb, args, st);
            return;
        }
        splitT<typename decltype(v)::type, typename decltype(i)::type, typename decltype(s)::type>(b, nb, args, st);
    });
}

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
