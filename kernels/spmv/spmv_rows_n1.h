// The non-transposed kernel's row loops for one vector (nvec == 1): runs of
// rows of one length (fixedRun, runRows; see AL_SPMV_RUN_LENGTHS in
// spmv_merge_common.h), chunks of short rows in groups of 8 nonzeros
// (dotGroups), and rowsN1, which picks the loop per chunk of rows and the
// prefetch mode per block. Included by the kernel TUs
// (spmv_kernel_merge.cpp, spmv_kernel_merge_avx2.cpp).
#ifndef ASCEND_LINALG_KERNELS_SPMV_ROWS_N1_H
#define ASCEND_LINALG_KERNELS_SPMV_ROWS_N1_H

#include "spmv_merge_common.h"
#include "spmv_row_groups.h"

namespace al {
namespace spmvm {
namespace {  // internal linkage, as spmv_merge_common.h says

// Returns the row after the run, or -1 at a bad index (found as it is
// loaded, before x is read through it).
template <int L, int Pf, class T, class I>
__attribute__((always_inline)) inline int64_t fixedRun(const I* indptr, const I* idx, const T* val, const T* x, T* y,
                                                       int64_t ys, int64_t r, int64_t re, int64_t a, UIndex<I> lim) {
    do {
        if (Pf != kPfNone) {
            prefetchAhead(val + a + L);
            prefetchAhead(idx + a + L);
        }
        T acc{};
#pragma GCC unroll 16
        for (int j = 0; j < L; ++j) {
            const UIndex<I> c = static_cast<UIndex<I>>(idx[a + j]);
            if (__builtin_expect(c > lim, 0)) return -1;
            T p = val[a + j] * x[static_cast<int64_t>(c)];
            keepScalar(p);
            acc = acc + p;
            keepScalar(acc);
        }
        y[r * ys] = acc;
        a += L;
        ++r;
    } while (r < re && static_cast<int64_t>(indptr[r + 1]) == a + L);
    return r;
}
// Rows [r, re) starting at nonzero a, each index checked as it is loaded
// (fixedRun, shortDotChecked; long rows by the checked dot); a run of empty
// rows written +0 in one loop (it took the default case, two prefetches and
// a call a row: a 1e6-row matrix with 1% of its rows holding 50 nonzeros,
// float32 A x, 2 threads, 1.81 -> 0.87 ms, scipy 1.32-1.52). False on a bad
// index.
template <int Pf, class T, class I, class Dot>
inline bool runRows(const I* indptr, const I* idx, const T* val, const T* x, T* y, int64_t ys, int64_t r,
                    int64_t re, int64_t a, uint64_t cols, int* bad, Dot dot) {
    const UIndex<I> lim = indexLimit<I>(cols);
    while (r < re) {
        const int64_t n = static_cast<int64_t>(indptr[r + 1]);
        switch (n - a) {
            case 0:  // a run of empty rows: scipy's sum of nothing, +0
                do {
                    y[r * ys] = T{};
                    ++r;
                } while (r < re && static_cast<int64_t>(indptr[r + 1]) == a);
                continue;
#define AL_SPMV_RUN(l)                                                          \
    case l:                                                                     \
        if ((r = fixedRun<l, Pf>(indptr, idx, val, x, y, ys, r, re, a, lim)) < 0) \
            return false;                                                       \
        a = static_cast<int64_t>(indptr[r]);                                    \
        continue;
            AL_SPMV_RUN_LENGTHS(AL_SPMV_RUN)
#undef AL_SPMV_RUN
            default: break;
        }
        if (Pf != kPfNone) {
            prefetchAhead(val + n);
            prefetchAhead(idx + n);
        }
        if (n - a < kLongRow) {
            if (!shortDotChecked<T>(val, idx, a, n, x, lim, y + r * ys)) return false;
        } else {
            y[r * ys] = dot(val, idx, a, n, x, 1, cols, bad);
        }
        a = n;
        ++r;
    }
    return true;
}

#if defined(__AVX2__)
// A chunk of short rows in groups of 8 nonzeros with no loop per row (the
// transposed kernel's scatterGroups, the other way round): each nonzero's
// row from the row ends (groupRows), its product added into the chunk's
// sums, sums[i] for row r + i, in nonzero order from +0 (shortDot's bits;
// chunks with a long row keep the row loop: anyLongRow). Rows [r, re),
// nonzeros [a, e), indices checked; Pf: x
// prefetched kPrefetch nonzeros on (the index clamped, not checked yet),
// within kHi. A group in which 16 or more rows end, and the chunk's last
// rows, go one nonzero at a time. For chunks of at most kDotGroupMaxAvg<T>
// nonzeros a row on average: float32 and float64 values, int32 indices,
// unit-stride x. Through Python, 2 threads, random 1e6 x 1e6 matrices with
// d nonzeros a row, A x, forced plan 0, interleaved, ms, row loop /
// grouped: float32 d = 1 4.29 / 2.22, 2 5.23 / 3.14, 3 7.10 / 6.59, but 6
// 6.38 / 8.22 and 4-5 even to 12% slower, hence the bound of 3; float64
// d = 1 6.87 / 3.30, 2 8.71 / 4.63, 3 9.73 / 6.48, 4 10.96 / 9.59
// (docs/performance.md, thirtieth session).
template <class T> constexpr int64_t kDotGroupMaxAvg = std::is_same_v<T, float> ? 3 : 4;
// A row of kLongRow nonzeros or more in [r0, r1) (a loop the compiler
// vectorises over the chunk's checked indptr): dotGroups would sum it one
// dependent add at a time, through memory, where the row loop takes the
// vector dot; such a chunk keeps the row loop.
inline bool anyLongRow(const int32_t* p, int64_t r0, int64_t r1) {
    int32_t longest = 0;
    for (int64_t r = r0; r < r1; ++r) longest = std::max(longest, p[r + 1] - p[r]);
    return longest >= kLongRow;
}
template <bool Pf, class T>
inline void dotGroups(const int32_t* indptr, const int32_t* idx, const T* val, const T* x, T* sums, int64_t r,
                      int64_t re, int64_t a, int64_t e, uint32_t lim, int64_t kHi) {
    std::fill(sums, sums + (re - r), T{});
    int64_t rb = r, k = a;
    while (rb < re && static_cast<int64_t>(indptr[rb + 1]) <= k) ++rb;
    auto term = [&](int64_t q, T* s) __attribute__((always_inline)) {
        T p = mul(val[q], x[static_cast<uint32_t>(idx[q])]);
        keepScalar(p);
        *s = add(*s, p);
    };
    auto one = [&](int64_t q) __attribute__((always_inline)) {  // q < e = indptr[re]
        while (static_cast<int64_t>(indptr[rb + 1]) <= q) ++rb;
        if (Pf && q + kPrefetch < kHi) __builtin_prefetch(x + std::min(static_cast<uint32_t>(idx[q + kPrefetch]), lim));
        term(q, sums + (rb - r));
    };
    for (; k + 8 <= e && rb + 8 <= re; k += 8) {
        GroupRows g;
        if (__builtin_expect(!groupRows(indptr, rb, re, k, &g), 0)) {
            for (int j = 0; j < 8; ++j) one(k + j);
            continue;
        }
        alignas(32) int32_t o[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(o), g.off);
        T* const s = sums + (rb - r);
        const bool pf = Pf && k + 8 + kPrefetch <= kHi;
        for (int j = 0; j < 8; ++j) {
            if (pf) __builtin_prefetch(x + std::min(static_cast<uint32_t>(idx[k + j + kPrefetch]), lim));
            term(k + j, s + o[j]);
        }
        rb += g.ends;
        if (((k - a) & 8) == 0) {  // a line of values and of indices per 16 nonzeros
            prefetchAhead(val + k);
            prefetchAhead(idx + k);
        }
    }
    for (; k < e; ++k) one(k);
}
#endif

// Full rows [ra, rb) of a block whose nonzeros lie in [kLo, kHi], nvec == 1,
// with the epilogue into y[r * ys] (A1: alpha is one, the sum is used as is,
// exactly what scale() would do). Dot is the checked functor (val, idx, ka,
// kb, x, xs, cols, bad) -> T used for long rows. Returns nonzero (and stops)
// on malformed structure.
template <int32_t Mode, bool A1, int Pf, bool Unit, class T, class I, class V, class Dot>
inline int rowsN1Mode(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* y,
                      int64_t ys, int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, uint64_t cols,
                      T alpha, T beta, Dot dot) {
    int bad = 0;
    int64_t a = static_cast<int64_t>(indptr[ra]);
    if (a < kLo || a > kHi) return 1;
    // x is read in index order, which the hardware cannot predict: prefetch
    // kPrefetch nonzeros ahead. The index is not checked yet: it is clamped
    // like the loads (merely forming an out-of-range address is undefined).
    int64_t pf = a;
    const UIndex<I> lim = indexLimit<I>(cols);
    int64_t chk = a;  // nonzeros [a, chk) are checked (checkAhead)
    for (int64_t r = ra; r < rb;) {
        const int64_t re = std::min(rb, r + kChunkRows);
        const int64_t e = static_cast<int64_t>(indptr[re]);
        if (e > kHi || !nonDecreasing(indptr, r, re)) return 1;
        // a chunk that runRows takes (below)
        bool runs = false;
        if constexpr (kRunRows<T, V, Mode, A1, Pf, Unit>)
            runs = e - a <= kFastAvg * (re - r) && mostlyRuns(indptr, r, re);
#if defined(__AVX2__)
        if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>) && std::is_same_v<V, T> &&
                      std::is_same_v<I, int32_t> && Unit) {
            if (!runs && e - a <= kDotGroupMaxAvg<T> * (re - r) && !anyLongRow(indptr, r, re)) {  // dotGroups
                if (!chunkIndicesOk(idx, std::max(a, chk), e, lim)) return 1;
                chk = std::max(chk, e);
                T sums[kChunkRows];
                dotGroups<Pf == kPfScattered>(indptr, idx, val, x, sums, r, re, a, e, lim, kHi);
                for (int64_t q = r; q < re; ++q)
                    epilogue(Mode, alpha, beta, A1 ? sums[q - r] : scale(alpha, sums[q - r]), y + q * ys, true);
                r = re;
                a = e;
                continue;
            }
        }
#endif
        if (Pf != kPfScattered && e - a <= kFastAvg * (re - r)) {  // see kFastAvg
            // [start, chk) is checked already (chk >= a at every row start)
            if constexpr (kRunRows<T, V, Mode, A1, Pf, Unit>) {
                // the runs check every index they load, those of [a, chk)
                // that checkAhead checked already included
                if (runs) {
                    if (!runRows<Pf>(indptr, idx, val, x, y, ys, r, re, a, cols, &bad, dot)) return 1;
                    chk = std::max(chk, e);
                    r = re;
                    a = e;
                    continue;
                }
            }
            if (!chunkIndicesOk(idx, std::max(a, chk), e, lim)) return 1;
            chk = std::max(chk, e);
            for (; r < re; ++r) {
                const int64_t n = static_cast<int64_t>(indptr[r + 1]);
                if (Pf != kPfNone) {
                    prefetchAhead(val + n);
                    prefetchAhead(idx + n);
                }
                T acc;
                if (__builtin_expect(n - a < kLongRow, 1)) acc = shortDot<Unit, T>(val, idx, a, n, x, xs);
                else acc = dot(val, idx, a, n, x, xs, cols, &bad);
                epilogue(Mode, alpha, beta, A1 ? acc : scale(alpha, acc), y + r * ys, true);
                a = n;
            }
            continue;
        }
        for (; r < re; ++r) {
            const int64_t n = static_cast<int64_t>(indptr[r + 1]);
            if (Pf == kPfScattered && n == a) {
                // an empty row: nothing to prefetch, check or gather (a
                // mostly empty matrix's rows cost this compare, not the
                // prefetch window's bounds and two line prefetches)
                if constexpr (Mode == SPMV_BETA_ZERO) {
                    // y not read: the run of empty rows [r, q) is found a
                    // stride at a time (emptyRunEnd; indptr is checked
                    // non-decreasing over the chunk above) and filled in one
                    // loop. Row by row, 1e5 x 1e6 with 5,000 nonzeros, int64
                    // A @ x, ran at 0.6-0.7x scipy: ten instructions and two
                    // taken jumps an empty row.
                    const int64_t q = emptyRunEnd(indptr, r, re, a);
                    const T z = A1 ? T{} : scale(alpha, T{});
                    if (ys == 1) std::fill(y + r, y + q, z);
                    else for (int64_t i = r; i < q; ++i) y[i * ys] = z;
                    r = q - 1;
                } else {
                    epilogue(Mode, alpha, beta, A1 ? T{} : scale(alpha, T{}), y + r * ys, true);
                }
                continue;
            }
            if (Pf == kPfScattered) {
                // at most kPrefetch into a long row: the rest of a 1e5-nonzero
                // row's x would be evicted before its use (it is gathered
                // without prefetch, the next rows after it)
                pf = std::max(pf, a);
                for (const int64_t pe = std::min(std::min(n, a + kPrefetch) + kPrefetch, kHi); pf < pe; ++pf)
                    __builtin_prefetch(x + static_cast<int64_t>(std::min(static_cast<UIndex<I>>(idx[pf]), lim)) * xs);
            }
            if (Pf != kPfNone) {
                prefetchAhead(val + n);
                prefetchAhead(idx + n);
            }
            T acc;
            const int64_t len = n - a;  // >= 0: the chunk's indptr is non-decreasing
            if (__builtin_expect(len <= kUnroll, 1)) {
                if (!checkAhead(idx, &chk, n, kHi, lim)) return 1;
                acc = unrolledDot<Unit, T>(val, idx, n, len, x, xs);
            } else if (len >= kLongRow) {  // checks as it goes
                acc = dot(val, idx, a, n, x, xs, cols, &bad);
                chk = std::max(chk, n);
            } else {
                if (!checkAhead(idx, &chk, n, kHi, lim)) return 1;
                acc = shortDot<Unit, T>(val, idx, a, n, x, xs);
            }
            epilogue(Mode, alpha, beta, A1 ? acc : scale(alpha, acc), y + r * ys, true);
            a = n;
        }
    }
    return bad;
}
template <class T, class I, class V, class Dot>
inline int rowsN1(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* y,
                  int64_t ys, int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, uint64_t cols,
                  T alpha, T beta, int32_t mode, int32_t plan, Dot dot) {
#define AL_SPMV_ROWS(M, A1, P)                                                                              \
    (xs == 1 ? rowsN1Mode<M, A1, P, true, T>(indptr, idx, val, x, xs, y, ys, ra, rb, kLo, kHi, cols, alpha, beta, dot) \
             : rowsN1Mode<M, A1, P, false, T>(indptr, idx, val, x, xs, y, ys, ra, rb, kLo, kHi, cols, alpha, beta, dot))
#define AL_SPMV_MODES(P)                                                                   \
    switch (mode) {                                                                        \
        case SPMV_BETA_ZERO:                                                               \
            return isOne(alpha) ? AL_SPMV_ROWS(SPMV_BETA_ZERO, true, P)                    \
                                : AL_SPMV_ROWS(SPMV_BETA_ZERO, false, P);                  \
        case SPMV_BETA_ONE: return AL_SPMV_ROWS(SPMV_BETA_ONE, false, P);                  \
        default: return AL_SPMV_ROWS(SPMV_BETA_GENERAL, false, P);                         \
    }
    const int64_t xBytes = spmvXGatherBytes(cols, xs, int64_t(sizeof(T)));
    switch (planPrefetchMode(idx, kLo, kHi, xs, xBytes, plan)) {
        case kPfScattered: AL_SPMV_MODES(kPfScattered)
        case kPfStream: AL_SPMV_MODES(kPfStream)
        default: AL_SPMV_MODES(kPfNone)
    }
#undef AL_SPMV_MODES
#undef AL_SPMV_ROWS
}

// A DotTable row (dot + rows for one (T, I, V)) built from a dot functor type.
template <class T, class I, class Dot, class V = T> struct DotFns {
    static T dot(const V* v, const I* i, int64_t a, int64_t b, const T* x, int64_t xs, uint64_t c, int* bad) {
        return Dot{}(v, i, a, b, x, xs, c, bad);
    }
    static int rows(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* y, int64_t ys,
                    int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, uint64_t cols, T alpha, T beta, int32_t mode,
                    int32_t plan) {
        return rowsN1(indptr, idx, val, x, xs, y, ys, ra, rb, kLo, kHi, cols, alpha, beta, mode, plan, Dot{plan});
    }
};
template <class T, class I, class V = T> struct ScalarDot {
    int32_t plan = 0;  // as GatherDot's (the scalar loops prefetch nothing)
    T operator()(const V* v, const I* i, int64_t a, int64_t b, const T* x, int64_t xs, uint64_t c, int* bad) const {
        return dotScalar<T>(v, i, a, b, x, xs, c, bad);
    }
};

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
