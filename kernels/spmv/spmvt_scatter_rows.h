// The transposed kernel's row scatters: part[idx[k]] += val[k] * x[r] over a
// row's nonzeros, plain, each index checked as it loads, with the partial
// prefetched, unrolled per row, over runs of rows of one length, and over
// chunks of short rows in groups of 8 nonzeros (scatterGroups); and the walk
// over a block's rows that calls them (walkRows). Included by
// spmvt_merge_impl.h.
#ifndef ASCEND_LINALG_KERNELS_SPMVT_SCATTER_ROWS_H
#define ASCEND_LINALG_KERNELS_SPMVT_SCATTER_ROWS_H

#include "spmv_merge_common.h"

#include "spmv_row_groups.h"

namespace al {
namespace spmvm {
namespace {  // internal linkage, as spmv_merge_common.h says

// The block's rows for the scatter loops: the first from k0, then chunks of
// kChunkRows rows whose indptr is checked before any row runs (every pair
// (r, r + 1) with r0 <= r < r1 non-decreasing and within [k0, k1], always
// true of a well-formed matrix), then the open tail row up to k1.
// row(r, ka, kb) -> false on a bad index; chunk(r, re, a) may run a whole
// checked chunk itself: 1 done, 0 not (its rows then go to row), -1 bad.
// Returns nonzero on malformed structure, before reading anything it implies.
template <class I, class Row, class Chunk>
__attribute__((always_inline)) inline int walkRows(const I* indptr, const Segment& s, int64_t rows, Row&& row,
                                                   Chunk&& chunk) {
    int64_t a = s.k0, r = s.r0;
    if (r < s.r1) {  // first row, from k0
        const int64_t e = static_cast<int64_t>(indptr[r + 1]);
        if (e < static_cast<int64_t>(indptr[r]) || e < a || e > s.k1) return 1;
        if (!row(r, a, e)) return 1;
        a = e;
        ++r;
    }
    while (r < s.r1) {
        const int64_t re = std::min(s.r1, r + kChunkRows);
        const int64_t ce = static_cast<int64_t>(indptr[re]);
        if (ce > s.k1 || !nonDecreasing(indptr, r, re)) return 1;
        const int done = chunk(r, re, a);
        if (done < 0) return 1;
        if (done) {
            r = re;
            a = ce;
            continue;
        }
        for (; r < re; ++r) {
            const int64_t e = static_cast<int64_t>(indptr[r + 1]);
            if (e == a) continue;  // an empty row
            if (!row(r, a, e)) return 1;
            a = e;
        }
    }
    if (r < rows && a < s.k1) {  // the open tail row
        if (!row(r, a, s.k1)) return 1;
    }
    return 0;
}

// part[idx[k]] += val[k] * xr over [ka, kb), indices checked and their pages
// zeroed already (checkTouchAhead); the product is rounded before the sum, as
// in scipy's sparsetools.
// Stream: also the value and index streams prefetched kStreamAhead bytes on,
// once per cache line of each (prefetchAhead's non-temporal form, as
// scatterRowPf's Stream), for the stretches of kStreamSpan nonzeros or more
// of a long row in a block that is not scattered (merge path) or in a column
// split block, where the matrix's arrays are past the cache
// (longRowStreams). The same products and sums either way. Paired in one
// process, 2 threads, 8e6 nonzeros in rows of L sorted random columns of
// 1e6, A^T x, ratio without / with: merge path (streaming blocks) L = 1000,
// 2000 float32 1.09, 1.09, float64 1.19, 1.24; L = 5000 float32 0.92 and
// 1.14 (two runs), float64 1.16, 1.08; column split L = 1000, 2000 float32
// 1.33, 1.25, float64 1.66, 1.47; L = 5000 float32 0.95, float64 1.12
// (docs/performance.md, thirty-sixth session).
template <bool Stream = false, class T, class I, class V>
inline void scatterRow(const V* val, const I* idx, int64_t ka, int64_t kb, T xr, T* part) {
    constexpr int64_t kPerLineV = 64 / sizeof(V), kPerLineI = 64 / sizeof(I);
    for (int64_t k = ka; k < kb; ++k) {
        if constexpr (Stream) {
            if ((k & (kPerLineV - 1)) == 0) prefetchAhead<true>(val + k);
            if ((k & (kPerLineI - 1)) == 0) prefetchAhead<true>(idx + k);
        }
        const uint64_t c = static_cast<UIndex<I>>(idx[k]);
        T p = mul(widen<T>(val[k]), xr);
        keepScalar(p);
        part[c] = add(part[c], p);
    }
}

// scatterRow over [ka, kb) whose indices are not checked yet, each checked as
// it is loaded (a branch never taken): false at the first index past lim,
// before any write through it (else true). For a block whose partial is all
// zeroed, in place of span checks (checkTouchAhead) that read the indices
// once more, ahead of the scatter, in a loop of their own.
template <class T, class I, class V>
inline bool scatterRowChecked(const V* val, const I* idx, int64_t ka, int64_t kb, T xr, T* part, UIndex<I> lim) {
    for (int64_t k = ka; k < kb; ++k) {
        const UIndex<I> c = static_cast<UIndex<I>>(idx[k]);
        if (__builtin_expect(c > lim, 0)) return false;
        T p = mul(widen<T>(val[k]), xr);
        keepScalar(p);
        part[c] = add(part[c], p);
    }
    return true;
}

// scatterRow whose nonzero k also prefetches the partial element of nonzero
// k + kPrefetch (which must lie inside the index array; its index may be
// unchecked: it is clamped to lim, as merely forming an out-of-range address
// is undefined).
// Stream: also the value and index streams, kStreamAhead bytes on, once per
// cache line of each (prefetchAhead's non-temporal form), for spans longer
// than the row loop's one prefetch per row covers.
// Check: the index loaded for the prefetch is checked instead of clamped,
// kPrefetch nonzeros before it is used: the indices in [ka + kPrefetch,
// kb + kPrefetch), the ones before them checked already. Returns false at
// the first index past lim, before any write through it (else true). The
// same load, and a compare in place of the clamp's, so a scattered block
// whose partial is all zeroed needs no separate check pass reading its
// indices ahead (checkTouchAhead).
template <bool Stream = false, bool Check = false, class T, class I, class V>
inline bool scatterRowPf(const V* val, const I* idx, int64_t ka, int64_t kb, T xr, T* part, UIndex<I> lim) {
    constexpr int64_t kPerLineV = 64 / sizeof(V), kPerLineI = 64 / sizeof(I);
    for (int64_t k = ka; k < kb; ++k) {
        if (Stream) {
            if ((k & (kPerLineV - 1)) == 0) prefetchAhead<true>(val + k);
            if ((k & (kPerLineI - 1)) == 0) prefetchAhead<true>(idx + k);
        }
        UIndex<I> ahead = static_cast<UIndex<I>>(idx[k + kPrefetch]);
        if (!Check) ahead = std::min(ahead, lim);
        else if (__builtin_expect(ahead > lim, 0)) return false;
        __builtin_prefetch(part + static_cast<int64_t>(ahead), 1);
        const uint64_t c = static_cast<UIndex<I>>(idx[k]);
        T p = mul(widen<T>(val[k]), xr);
        keepScalar(p);
        part[c] = add(part[c], p);
    }
    return true;
}

// A scattered block's span of a row: scatterRowPf, streaming from
// kStreamSpan nonzeros on. Their streams had no software prefetch but the
// row's one at its end: power-law rows (1e6 x 1e6, 1.08e7 nonzeros, 76% of
// them in rows of 256 or more), A^T x, 2 threads, interleaved in one
// process, 15 rounds, ms: float32 18.1-40.0 -> 16.5-36.9 in seven runs out
// of seven, float64 31.3-50.6 -> 25.5-48.0 (docs/performance.md).
// Check: as scatterRowPf's.
constexpr int64_t kStreamSpan = 64;
template <bool Check = false, class T, class I, class V>
inline bool scatterSpanPf(const V* val, const I* idx, int64_t ka, int64_t kb, T xr, T* part, UIndex<I> lim) {
    if (kb - ka >= kStreamSpan) return scatterRowPf<true, Check>(val, idx, ka, kb, xr, part, lim);
    return scatterRowPf<false, Check>(val, idx, ka, kb, xr, part, lim);
}

// scatterRow for len <= kUnroll nonzeros ending at e, unrolled as
// unrolledDot: one indirect jump into a fall-through chain instead of a
// counted loop per row. Same products, same order. C++ harness, 2 threads,
// alternating with the loop form, 3 runs each: 2000^2 Poisson A^T x float32
// 23.2-23.6 -> 19.9-21.9 ms (float64 25.3-27.1 -> 23.8-26.7); 2e6-row
// banded, 9 diagonals, float32 17.8-19.5 -> 11.8-16.0 ms, float64
// 19.1-20.6 -> 16.3-16.8 ms.
template <class T, class I, class V>
__attribute__((always_inline)) inline void unrolledScatter(const V* val, const I* idx, int64_t e, int64_t len,
                                                           T xr, T* part) {
#define AL_SPMVT_TERM(j)                                                 \
    case j: {                                                            \
        const uint64_t c = static_cast<UIndex<I>>(idx[e - j]);           \
        T p = mul(widen<T>(val[e - j]), xr);                             \
        keepScalar(p);                                                   \
        part[c] = add(part[c], p);                                       \
    }                                                                    \
        [[fallthrough]];
    AL_SPMV_UNROLLED(len, AL_SPMVT_TERM)
#undef AL_SPMVT_TERM
}

// scatterRow over runs of rows of one length, as runRows does for A x
// (spmv_merge_common.h): rows of exactly L nonzeros unrolled, for as long
// as the next row has L too; other rows by scatterRow. The same products
// and sums in the same order. Chunks of float32/float64/int32/int64 values
// (stored as the result type) whose rows mostly continue a run (mostlyRuns)
// only. int32/int64 joined in the forty-fourth session: 2e6 identity A^T x,
// 2 threads, ratio scipy / ours, three alternating processes each, int32
// 0.87, 0.89, 0.86 -> 1.12, 1.08, 1.33; tridiagonal int32 1.36, 1.37, 0.98
// -> 1.79, 1.72, 1.74, int64 1.41, 1.45, 1.45 -> 1.75, 1.66, 1.72.
// Rows [r, re) from nonzero a; returns the row it stopped in (re when all
// ran).
// Win (streaming blocks): no span check ahead; each index is checked as it
// is loaded against the window [lo, lo + len) of columns whose pages are
// ready for part (ScatterWindow, spmvt_pages.h), and the value and
// index streams are prefetched once per row. At an index outside the window
// it stops, *stop its nonzero (nothing from there on is summed; -1 when all
// ran). Without Win (in-cache chunks) every index is checked already.
// In-cache chunks: 112^2 Poisson, one thread, C++ harness, scipy's loop /
// ours, medians of 10 alternating runs: float32 1.27 -> 1.34, float64 0.78
// -> 1.06. Streaming chunks (they had the unrolled chain per row, one
// indirect jump each): 2000^2 Poisson A^T x through Python, one thread,
// interleaved medians of 9, ms: float32 33.1-33.4 -> 26.1 (scipy 26.7-27.3),
// float64 31.7 -> 29.2 (scipy 30.0-31.0).
template <class T, class V>
constexpr bool kRunScatter = std::is_same_v<T, V> && (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                                    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>);

// Rows of 4 or more int32 indices (AVX2): the row's indices are checked
// against the window in one or two vectors before its scatter, in place of a
// compare per index; a row that fails takes the compare per index, which
// finds its stop.
struct WindowVec {
#if defined(__AVX2__)
    __m256i lo, last;  // lo and len - 1 in every lane
#endif
    bool on = false;  // the window fits 32-bit lanes and is not empty
};
template <class I>
inline WindowVec windowVec(uint64_t lo, uint64_t len) {
    WindowVec w;
#if defined(__AVX2__)
    if constexpr (std::is_same_v<I, int32_t>) {
        constexpr uint64_t kTop = uint64_t(1) << 31;  // int32 indices lie below it
        if (lo < kTop && len > 0) {
            w.lo = _mm256_set1_epi32(static_cast<int32_t>(lo));
            w.last = _mm256_set1_epi32(static_cast<int32_t>(std::min(len, kTop - lo) - 1));
            w.on = true;
        }
    }
#endif
    (void)lo;
    (void)len;
    return w;
}
template <int L, class I>
__attribute__((always_inline)) inline bool rowInWindow(const I* p, const WindowVec& w) {
#if defined(__AVX2__)
    if constexpr (std::is_same_v<I, int32_t> && L >= 8) {
        const __m256i d0 = _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), w.lo);
        __m256i ok = _mm256_cmpeq_epi32(_mm256_max_epu32(d0, w.last), w.last);
        if constexpr (L > 8) {  // the last 8, overlapping the first
            const __m256i d1 =
                _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + L - 8)), w.lo);
            ok = _mm256_and_si256(ok, _mm256_cmpeq_epi32(_mm256_max_epu32(d1, w.last), w.last));
        }
        return w.on && _mm256_movemask_epi8(ok) == -1;
    } else if constexpr (std::is_same_v<I, int32_t> && L >= 4) {
        const __m128i lo = _mm256_castsi256_si128(w.lo), last = _mm256_castsi256_si128(w.last);
        const __m128i d0 = _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), lo);
        __m128i ok = _mm_cmpeq_epi32(_mm_max_epu32(d0, last), last);
        if constexpr (L > 4) {
            const __m128i d1 = _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + L - 4)), lo);
            ok = _mm_and_si128(ok, _mm_cmpeq_epi32(_mm_max_epu32(d1, last), last));
        }
        return w.on && _mm_movemask_epi8(ok) == 0xffff;
    }
#endif
    (void)p;
    (void)w;
    return false;
}
// Eight rows of a run at once (kGroupRun, spmv_merge_common.h): their 8 L
// indices' offsets from lo in one running maximum, compared once, where
// rowInWindow takes one or two vectors a row. C++ harness, two alternating
// runs of the two builds, ms, a vector check per row / per eight rows:
// 1 thread, 2e6-row banded float32 8.03, 7.98 / 7.83, 7.50, float64 8.55,
// 8.56 / 8.29, 8.16; 2000^2 Poisson float32 10.36, 10.47 / 9.77, 9.75,
// float64 10.88, 10.94 / 10.77, 10.53; 2 threads, banded float32 4.61, 4.41
// / 4.28, 4.28, Poisson float32 6.16, 6.01 / 5.76, 5.55 (float64 within the
// noise).
template <int L, class I>
__attribute__((always_inline)) inline bool groupInWindow(const I* p, const WindowVec& w) {
#if defined(__AVX2__)
    if constexpr (std::is_same_v<I, int32_t>) return w.on && run8Within<L, true>(p, w.lo, w.last);
#endif
    (void)p;
    (void)w;
    return false;
}
// part[idx[k]] += val[k] * xr over [a, a + N) (N > 0, unrolled), else over
// [a, e); Win: each index checked against the window first, false (and
// *stop = k) at the first outside it.
template <int N, bool Win, class T, class I>
__attribute__((always_inline)) inline bool scatterRowWin(const I* idx, const T* val, int64_t a, int64_t e, T xr,
                                                         T* part, uint64_t lo, uint64_t len, int64_t* stop) {
    if constexpr (N > 0) {
#pragma GCC unroll 16
        for (int j = 0; j < N; ++j) {
            const uint64_t c = static_cast<UIndex<I>>(idx[a + j]);
            if (Win && __builtin_expect(c - lo >= len, 0)) {
                *stop = a + j;
                return false;
            }
            T p = val[a + j] * xr;
            keepScalar(p);
            part[c] = part[c] + p;
        }
        return true;
    }
    for (int64_t k = a; k < e; ++k) {
        const uint64_t c = static_cast<UIndex<I>>(idx[k]);
        if (Win && __builtin_expect(c - lo >= len, 0)) {
            *stop = k;
            return false;
        }
        T p = val[k] * xr;
        keepScalar(p);
        part[c] = part[c] + p;
    }
    return true;
}
template <int L, bool Win, class T, class I>
__attribute__((always_inline)) inline int64_t fixedScatterRun(const I* indptr, const I* idx, const T* val, const T* x,
                                                              int64_t xs, T* part, int64_t r, int64_t re, int64_t a,
                                                              uint64_t lo, uint64_t len, const WindowVec& wv,
                                                              int64_t* stop) {
    do {
        if constexpr (Win && kGroupRun<I>) {
            if (r + 8 <= re && runOf8<L>(indptr, r, a) && groupInWindow<L>(idx + a, wv)) {
                for (int g = 0; g < 8; ++g) {
                    prefetchAhead(val + a);
                    prefetchAhead(idx + a);
                    scatterRowWin<L, false>(idx, val, a, a + L, x[r * xs], part, lo, len, stop);
                    a += L;
                    ++r;
                }
                continue;
            }
        }
        if (Win) {
            prefetchAhead(val + a);
            prefetchAhead(idx + a);
        }
        const T xr = x[r * xs];
        if (!Win || rowInWindow<L>(idx + a, wv)) {
            scatterRowWin<L, false>(idx, val, a, a + L, xr, part, lo, len, stop);
        } else if (!scatterRowWin<L, true>(idx, val, a, a + L, xr, part, lo, len, stop)) {
            return r;
        }
        a += L;
        ++r;
    } while (r < re && static_cast<int64_t>(indptr[r + 1]) == a + L);
    return r;
}
template <bool Win, class T, class I>
inline int64_t runScatterRows(const I* indptr, const I* idx, const T* val, const T* x, int64_t xs, T* part,
                              int64_t r, int64_t re, int64_t a, uint64_t lo = 0, uint64_t len = 0,
                              int64_t* stop = nullptr) {
    int64_t none;
    if (!Win) stop = &none;
    *stop = -1;
    const WindowVec wv = Win ? windowVec<I>(lo, len) : WindowVec{};
    while (r < re) {
        const int64_t n = static_cast<int64_t>(indptr[r + 1]);
        switch (n - a) {
#define AL_SPMVT_RUN(l)                                                                           \
    case l:                                                                                       \
        r = fixedScatterRun<l, Win>(indptr, idx, val, x, xs, part, r, re, a, lo, len, wv, stop);  \
        if (*stop >= 0) return r;                                                                 \
        a = static_cast<int64_t>(indptr[r]);                                                      \
        continue;
            AL_SPMV_RUN_LENGTHS(AL_SPMVT_RUN)
#undef AL_SPMVT_RUN
            default: break;
        }
        if (!scatterRowWin<0, Win>(idx, val, a, n, x[r * xs], part, lo, len, stop)) return r;
        a = n;
        ++r;
    }
    return r;
}

#if defined(__AVX2__)
// A scattered block's checked chunk of short float64 rows (at most
// kGroupMaxAvg nonzeros a row on average), rows [r, re), nonzeros [a, e),
// in groups of 8 nonzeros with no loop per row: scatterRowPf<false,
// true>'s work (the partial prefetched kPrefetch nonzeros on, that load's
// index checked) without its exit branch per row, which the predictor
// misses on short rows of varying length. A group's rows come from the row
// ends (groupRows, spmv_row_groups.h), and each nonzero's x is loaded one
// by one (a gather cost more). The products are rounded (no FMA) and added
// one by one in nonzero order: scatterRow's sums. A group in which 16 or
// more rows end, and the chunk's last rows (whose ends past re are not
// checked), run one nonzero at a time. Needs indptr checked on [r, re],
// the indices [a, a + kPrefetch) checked, e + kPrefetch within the index
// array, x unit-stride and e below 2^31 (int32 indptr). Returns false at
// the first index past lim, before any write through it.
// Through Python, 2 threads, random 1e6 x 1e6 matrices with d nonzeros a
// row, A^T x under the rule's plan, interleaved, ms, before / after:
// float64 gained 3-15% at d = 2 and lost from d = 6; counting the next 8
// ends where 8 or more end, d = 1: 5.85 -> 4.24 (docs/performance.md,
// thirtieth session). float32 chunks took groups too (x permuted into
// place), at most 8 a row (d = 2 6.47 / 3.66 ms, 8 10.41 / 10.23); they
// now take scatterFilled, which was as fast at d = 1-3 and faster from 4
// (d = 6: 6.78, 6.76 -> 4.29, 4.11 ms; docs/performance.md, thirty-fourth
// session).
constexpr int64_t kGroupMaxAvg = 4;
inline bool scatterGroups(const int32_t* indptr, const int32_t* idx, const double* val, const double* x,
                          double* part, int64_t r, int64_t re, int64_t a, int64_t e, uint32_t lim) {
    using T = double;
    int64_t rb = r, k = a;
    while (rb < re && static_cast<int64_t>(indptr[rb + 1]) <= k) ++rb;
    // one nonzero: its row found by walking the ends (q < e = indptr[re])
    auto one = [&](int64_t q) __attribute__((always_inline)) {
        while (static_cast<int64_t>(indptr[rb + 1]) <= q) ++rb;
        const uint32_t ahead = static_cast<uint32_t>(idx[q + kPrefetch]);
        if (__builtin_expect(ahead > lim, 0)) return false;
        __builtin_prefetch(part + ahead, 1);
        const uint32_t c = static_cast<uint32_t>(idx[q]);
        T p = mul(val[q], x[rb]);
        keepScalar(p);
        part[c] = add(part[c], p);
        return true;
    };
    alignas(32) T prod[8];
    for (; k + 8 <= e && rb + 8 <= re; k += 8) {
        GroupRows g;
        if (__builtin_expect(!groupRows(indptr, rb, re, k, &g), 0)) {
            for (int j = 0; j < 8; ++j)
                if (!one(k + j)) return false;
            continue;
        }
        alignas(32) int32_t o[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(o), g.off);
        for (int j = 0; j < 8; ++j) {
            T p = mul(val[k + j], x[rb + o[j]]);
            keepScalar(p);
            prod[j] = p;
        }
        rb += g.ends;
        if (((k - a) & 8) == 0) {  // a line of values and of indices per 16 nonzeros
            prefetchAhead<true>(val + k);
            prefetchAhead<true>(idx + k);
        }
        for (int j = 0; j < 8; ++j) {
            const uint32_t ahead = static_cast<uint32_t>(idx[k + j + kPrefetch]);
            if (__builtin_expect(ahead > lim, 0)) return false;
            __builtin_prefetch(part + ahead, 1);
            const uint32_t c = static_cast<uint32_t>(idx[k + j]);
            part[c] = add(part[c], prod[j]);
        }
    }
    for (; k < e; ++k)
        if (!one(k)) return false;
    return true;
}

// A scattered block's checked chunk of float32 or float64 rows, at most kFillMaxAvg
// nonzeros a row on average, rows [r, re): each span of up to kFillSpan
// nonzeros (whole rows) first gets each nonzero's x, xv[k - base] =
// x[its row], by W copies of x[row] stored at the row's start (a row
// longer than W stores more; the next row's copies overwrite the excess),
// then one flat loop over the span scatters part[idx[k]] += val[k] * xv[k -
// base]: scatterRowPf<false, true>'s work without its loop per row, whose
// exit the predictor misses on rows of varying length (and with it the
// misses the core had in flight past the row's end). A row longer than
// kFillSpan runs alone (scatterRowPf). The same products, rounded, added in
// nonzero order: scatterRow's sums. Contract as scatterGroups' (indptr
// checked on [r, re], the indices [indptr[r], indptr[r] + kPrefetch)
// checked, indptr[re] + kPrefetch within the index array, x unit-stride);
// returns false at the first index past lim, before any write through it.
// Random 1e6 x 1e6, 1e7 nonzeros (10 a row), A^T x through Python, 2
// threads, ours/scipy paired per round, medians of 21, four alternating
// pairs of processes, the row loop / this: 1.94, 1.59, 1.66, 1.76 / 2.29,
// 2.23, 2.23, 2.16; standalone C++ (one thread, medians of 15, ms) 15.37 ->
// 9.76, the flat scatter yardstick's 9.76 (docs/performance.md,
// thirty-fourth session). float64 too, past scatterGroups' 4 a row: the
// thirty-fourth session measured it losing between processes (d = 32: 1.93,
// 1.84 -> 1.79, 1.68), but both forms in one process behind a temporary
// switch, 15 interleaved rounds, row loop / this, 2 threads: the bench's
// random 1e6 x 1e6 (10 a row) 15.16 / 12.00 ms, its power-law matrix
// 1.04x faster; rows of 1 to 2d - 1 nonzeros at random, d = 5 to 48,
// 1.03-1.30x faster over 1e6 columns, 1.00-1.09x over 1e5 and 2.5e5
// (thirty-ninth session).
constexpr int64_t kFillSpan = 512;
constexpr int64_t kFillMaxAvg = 64;
// W copies of v at dst (W a multiple of 8).
template <int W> __attribute__((always_inline)) inline void broadcastW(float* dst, float v) {
    const __m256 b = _mm256_set1_ps(v);
#pragma GCC unroll 16
    for (int j = 0; j < W; j += 8) _mm256_storeu_ps(dst + j, b);
}
template <int W> __attribute__((always_inline)) inline void broadcastW(double* dst, double v) {
    const __m256d b = _mm256_set1_pd(v);
#pragma GCC unroll 32
    for (int j = 0; j < W; j += 4) _mm256_storeu_pd(dst + j, b);
}
// W, the copies stored a row: at least 1.5 times the chunk's mean row
// length (scatterFilledAny), so that a row longer than W, whose extra
// stores take a loop, is rare.
template <int W, class T, class I>
inline bool scatterFilled(const I* indptr, const I* idx, const T* val, const T* x, T* part,
                          int64_t r, int64_t re, UIndex<I> lim) {
    alignas(32) T xv[kFillSpan + W];
    while (r < re) {
        const int64_t base = static_cast<int64_t>(indptr[r]);
        int64_t q = r;
        for (; q < re; ++q) {
            const int64_t rs = static_cast<int64_t>(indptr[q]), rn = static_cast<int64_t>(indptr[q + 1]);
            if (rn - base > kFillSpan) break;
            const T xr = x[q];
            broadcastW<W>(xv + (rs - base), xr);  // rs - base <= kFillSpan here
            for (int64_t j = rs + W; __builtin_expect(j < rn, 0); j += W) broadcastW<W>(xv + (j - base), xr);
        }
        if (q == r) {  // one row longer than the span
            if (!scatterRowPf<true, true>(val, idx, base, static_cast<int64_t>(indptr[r + 1]), x[r], part, lim))
                return false;
            ++r;
            continue;
        }
        const int64_t end = static_cast<int64_t>(indptr[q]);
        for (int64_t k = base; k < end; ++k) {
            // a line of values, and one of indices, as each begins
            if ((k & static_cast<int64_t>(64 / sizeof(T) - 1)) == 0) prefetchAhead<true>(val + k);
            if ((k & static_cast<int64_t>(64 / sizeof(I) - 1)) == 0) prefetchAhead<true>(idx + k);
            const UIndex<I> ahead = static_cast<UIndex<I>>(idx[k + kPrefetch]);
            if (__builtin_expect(ahead > lim, 0)) return false;
            __builtin_prefetch(part + static_cast<int64_t>(ahead), 1);
            const uint64_t c = static_cast<UIndex<I>>(idx[k]);
            T p = mul(val[k], xv[k - base]);
            keepScalar(p);
            part[c] = add(part[c], p);
        }
        r = q;
    }
    return true;
}
// Rows [r, re), nonzeros [a, e): scatterFilled with W for this chunk.
template <class T, class I>
inline bool scatterFilledAny(const I* indptr, const I* idx, const T* val, const T* x, T* part,
                             int64_t r, int64_t re, int64_t a, int64_t e, UIndex<I> lim) {
    const int64_t need = 3 * (e - a) / (2 * (re - r)) + 1;  // 1.5 times the mean, rounded up
    if (need <= 8) return scatterFilled<8>(indptr, idx, val, x, part, r, re, lim);
    if (need <= 16) return scatterFilled<16>(indptr, idx, val, x, part, r, re, lim);
    if (need <= 32) return scatterFilled<32>(indptr, idx, val, x, part, r, re, lim);
    if (need <= 64) return scatterFilled<64>(indptr, idx, val, x, part, r, re, lim);
    return scatterFilled<128>(indptr, idx, val, x, part, r, re, lim);
}
#endif

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
