// The transposed kernel for a narrow matrix, y := alpha*A^T*x + beta*y with
// one vector and few columns (narrowPartial: the partial fits in L1). Each
// block sums into its partial (every page zeroed and flagged up front, as
// directY's y is), and its chunks of short rows take one flat loop over
// their nonzeros with each nonzero's x stored first (scatterFilledNarrow):
// with a handful of columns the partial is always in cache, and what bounds
// the row loop is its exit, which the predictor misses on rows of varying
// length. scatterNarrow is the block's loop. Included by
// spmvt_merge_impl.h.
//
// Tall 1e6 x 8 matrix, rows of 0-8 nonzeros at random (4e6 in all),
// float64, one thread, standalone C++, medians of 15, ms: scipy's row loop
// 7.9-8.3, the same loop over 4 copies of the partial taken in turn by the
// rows (to break the chains of sums through one element) 8.5-8.9, the flat
// loop 4.0-4.8 (docs/performance.md, forty-seventh session).
#ifndef ASCEND_LINALG_KERNELS_SPMVT_NARROW_H
#define ASCEND_LINALG_KERNELS_SPMVT_NARROW_H

#include <cstdint>

#include "spmv_merge_common.h"
#include "spmvt_pages.h"
#include "spmvt_scatter_rows.h"

namespace al {
namespace spmvm {
namespace {  // internal linkage, as spmv_merge_common.h says

// A partial of at most this many bytes is narrow (L1 holds it and the
// loop's buffer of x), in a product of at least kStreamMinNnz nonzeros:
// smaller ones keep the in-cache chunks' loops, the flat loop's set-up and
// its pass to check a chunk's indices cost more there (1000 x 1000, 10 a
// row, 2,000 x 2,000, 3 a row, float32/float64 A^T x through Python,
// interleaved medians of 201, ratio scipy / ours: 1.02-1.11 with the row
// loops, 0.94-0.99 with the flat one).
constexpr int64_t kNarrowBytes = int64_t(16) << 10;
// The buffer of x: spans of up to this many nonzeros (whole rows).
constexpr int64_t kNarrowSpan = 512;
// Chunks of rows averaging more than this take the row loop.
constexpr int64_t kNarrowFillMaxAvg = 40;

template <class T>
bool narrowPartial(const SpmvTilingData& t, int64_t nnz) {
    return t.nvec == 1 && t.cols > 0 && t.cols <= kNarrowBytes / static_cast<int64_t>(sizeof(T)) &&
           nnz >= kStreamMinNnz;
}

// Rows [r, re) of a chunk whose indptr is checked on [r, re] and whose
// indices are all checked: part[idx[k]] += val[k] * x[row of k] in nonzero
// order (scatterRow's products and sums), in spans of whole rows of up to
// kNarrowSpan nonzeros; a longer row runs alone (scatterRow). Each row
// stores W copies of its x at its start (a longer row stores the rest in a
// loop; the next row's copies overwrite the excess): W is at least 1.5 times
// the chunk's mean row length (scatterFilledNarrowAny), so that loop is rare.
template <int W, class T, class I, class V>
inline void scatterFilledNarrow(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* part,
                                int64_t r, int64_t re) {
    T xv[kNarrowSpan + W];
    while (r < re) {
        const int64_t base = static_cast<int64_t>(indptr[r]);
        int64_t q = r;
        for (; q < re; ++q) {
            const int64_t rs = static_cast<int64_t>(indptr[q]), rn = static_cast<int64_t>(indptr[q + 1]);
            if (rn - base > kNarrowSpan) break;
            const T xr = x[q * xs];
            T* const d = xv + (rs - base);  // rs - base <= kNarrowSpan
            for (int j = 0; j < W; ++j) d[j] = xr;
            for (int64_t j = W; __builtin_expect(j < rn - rs, 0); ++j) d[j] = xr;
        }
        if (q == r) {  // one row longer than the span
            scatterRow(val, idx, base, static_cast<int64_t>(indptr[r + 1]), x[r * xs], part);
            ++r;
            continue;
        }
        const int64_t end = static_cast<int64_t>(indptr[q]);
        for (int64_t k = base; k < end; ++k) {
            const uint64_t c = static_cast<UIndex<I>>(idx[k]);
            T p = mul(widen<T>(val[k]), xv[k - base]);
            keepScalar(p);
            part[c] = add(part[c], p);
        }
        r = q;
    }
}

// Rows [r, re), nonzeros [a, e): scatterFilledNarrow with W for this chunk;
// false (nothing done) if its mean row length passes kNarrowFillMaxAvg.
template <class T, class I, class V>
inline bool scatterFilledNarrowAny(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* part,
                                   int64_t r, int64_t re, int64_t a, int64_t e) {
    if (e - a > kNarrowFillMaxAvg * (re - r)) return false;
    const int64_t need = 3 * (e - a) / (2 * (re - r)) + 1;  // 1.5 times the mean, rounded up
    if (need <= 8) scatterFilledNarrow<8>(indptr, idx, val, x, xs, part, r, re);
    else if (need <= 16) scatterFilledNarrow<16>(indptr, idx, val, x, xs, part, r, re);
    else if (need <= 32) scatterFilledNarrow<32>(indptr, idx, val, x, xs, part, r, re);
    else scatterFilledNarrow<64>(indptr, idx, val, x, xs, part, r, re);
    return true;
}

// A narrow matrix's block (narrowPartial, spmvt_narrow.h): part, the
// block's partial (or y, directY), is all zeroed and flagged. The first and
// the open tail row, and chunks of long rows, check each index as the
// scatter loads it; a chunk of short rows has its indices checked in one
// pass (in L1 then) and runs as runs of rows of one length or as one flat
// loop (scatterFilledNarrow). Returns nonzero on malformed structure, before
// any write through a bad index.
template <class T, class I, class V>
int scatterNarrow(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* part,
                  const SpmvTilingData& t, const Segment& s, int64_t rows) {
    const UIndex<I> lim = indexLimit<I>(static_cast<uint64_t>(t.cols));
    auto row = [&](int64_t r, int64_t ka, int64_t kb) __attribute__((always_inline)) {
        return scatterRowChecked(val, idx, ka, kb, x[r * xs], part, lim);
    };
    return walkRows(indptr, s, rows, row, [&](int64_t r, int64_t re, int64_t a) __attribute__((always_inline)) {
        const int64_t ce = static_cast<int64_t>(indptr[re]);
        if (ce - a <= kNarrowFillMaxAvg * (re - r)) {
            if (!chunkIndicesOk(idx, a, ce, lim)) return -1;
            if constexpr (kRunScatter<T, V>) {
                if (mostlyRuns<true>(indptr, r, re)) {
                    runScatterRows<false>(indptr, idx, val, x, xs, part, r, re, a);
                    return 1;
                }
            }
            scatterFilledNarrowAny(indptr, idx, val, x, xs, part, r, re, a, ce);
            return 1;
        }
        for (; r < re; ++r) {
            const int64_t e = static_cast<int64_t>(indptr[r + 1]);
            if (!row(r, a, e)) return -1;
            a = e;
        }
        return 1;
    });
}

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
