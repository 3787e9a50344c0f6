// Shared pieces of the nnz-balanced (merge-path) SpMV kernels: the epilogue,
// the merge-path split, index checks, prefetch modes and the short-row dots
// (value arithmetic: spmv_arith.h; the A x row loops: spmv_rows_n1.h).
// Included by the baseline TU and by the per-ISA TUs (which compile the same
// templates with their own -m flags and an intrinsic dot product).
#ifndef ASCEND_LINALG_KERNELS_SPMV_MERGE_COMMON_H
#define ASCEND_LINALG_KERNELS_SPMV_MERGE_COMMON_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "../../host/spmv_tiling.h"
#include "ascend_linalg/al_types.h"
#include "spmv_arith.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace al {
namespace spmvm {
int32_t rowPrefetchForced();  // spmvRowPrefetchForce's mode (spmv_kernel_merge.cpp)
// Internal linkage: each ISA's TU gets its own copy of these templates, so the
// linker can never hand the baseline TU an instantiation compiled with -mavx2.
namespace {

// Whether the CPU converts float16 in hardware (F16C), asked with cpuid:
// __builtin_cpu_supports("f16c") is GCC's, not every clang's.
inline bool cpuHasF16c() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
#else
    return false;
#endif
}

// y := alpha*acc (+ beta*y); betaMode ZERO never reads y.
// Scaled: acc is already alpha*sum (the row loops hoist alpha == 1).
template <class T>
inline void epilogue(int32_t mode, T alpha, T beta, T acc, T* y, bool scaled = false) {
    T v = scaled ? acc : scale(alpha, acc);
    if (mode == SPMV_BETA_ZERO) *y = v;
    else if (mode == SPMV_BETA_ONE) *y = add(v, *y);
    else *y = add(v, mul(beta, *y));
}

// A point on the merge path of (row ends, nonzeros): r rows completed and
// k nonzeros consumed, r + k == d. Block b runs from split(b) to split(b+1).
// Block 0 starts at (0, 0) and the last block ends at (rows, nnzT) whatever
// indptr holds; interior splits come from a binary search, which is monotone
// in d even over a malformed indptr, so consecutive blocks tile [0, rows] and
// every pair (indptr[r], indptr[r+1]) is checked by exactly one block.
// k is clamped to [0, nnzT]: no later read can leave the arrays.
template <class I>
inline void mergeSplit(const I* indptr, int64_t rows, int64_t nnzT, uint32_t b, uint32_t nb,
                       int64_t* r, int64_t* k) {
    if (b == 0) { *r = 0; *k = 0; return; }
    if (b >= nb) { *r = rows; *k = nnzT; return; }
    const int64_t total = rows + nnzT;
    // total * b / nb without overflow (total < 2^62, nb < 2^31 is not enough
    // for the product; split it).
    const int64_t d = (total / nb) * b + (total % nb) * b / nb;
    int64_t lo = 0, hi = std::min(rows, d);
    while (lo < hi) {  // largest i with indptr[i] <= d - i
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (static_cast<int64_t>(indptr[mid]) <= d - mid) lo = mid;
        else hi = mid - 1;
    }
    *r = lo;
    *k = std::min(std::max<int64_t>(d - lo, 0), nnzT);
}

// One block's path segment: rows [r0, r1) complete here (r0 possibly begun
// by earlier blocks: shared head), row r1 (< rows) left open as the tail.
struct Segment {
    int64_t r0, k0, r1, k1;
};
template <class I>
inline Segment blockSegment(const I* indptr, int64_t rows, int64_t nnzT, uint32_t b, uint32_t nb) {
    Segment s;
    mergeSplit(indptr, rows, nnzT, b, nb, &s.r0, &s.k0);
    mergeSplit(indptr, rows, nnzT, b + 1, nb, &s.r1, &s.k1);
    if (s.r1 < s.r0) s.r1 = s.r0;  // cannot happen (monotone); keeps loops finite
    if (s.k1 < s.k0) s.k1 = s.k0;
    return s;
}
// Row r0's head is shared when earlier blocks consumed part of it.
template <class I>
inline bool headShared(const I* indptr, const Segment& s) {
    return s.r0 < s.r1 && s.k0 > static_cast<int64_t>(indptr[s.r0]);
}

constexpr int64_t kPrefetch = 64;

// Whether the block's x (or partial) accesses jump around: at 64 sampled
// nonzeros, whether the index lies within 16 KiB at or above one of the 32
// indices before it. A stencil's or banded matrix's index is one past the
// same diagonal's index a row earlier, and a long sorted row's is just past
// its predecessor's: those stream (the hardware prefetcher follows them and
// software prefetch only costs); a scattered index is near none of them and
// waits on memory unless prefetched. A performance choice only: results never
// depend on it.
// This replaced a test of consecutive pairs only (far when more than 16 KiB
// apart, scattered when over 16 of 64 were), which a 5-point stencil sat on
// the edge of: its row-to-row jump back is far, one pair in five, so the
// 2000^2 Poisson matrix's one block read 17 of 64 (scattered: partial
// prefetched) and its two blocks 16 each (streaming). One thread, float32
// A^T x, through Python: 24.8-25.4 ms scattered, against scipy's 15.7.
// Sampled counts with this test (1-4 blocks): Poisson and banded 0, uniform
// random 56-62, power-law rows 14-22 (its short rows are scattered, its long
// sorted rows near; such blocks keep the partial prefetch for short rows).
constexpr int kNearBack = 32;
template <class I>
inline bool scattered(const I* idx, int64_t kLo, int64_t kHi, int64_t stride) {
    const int64_t n = kHi - kLo;
    if (n < 4096) return false;
    const uint64_t near = static_cast<uint64_t>((int64_t(16) << 10) / 8 / std::max<int64_t>(stride, 1));
    int far = 0;
    for (int64_t s = 0; s < 64; ++s) {
        const int64_t k = kLo + kNearBack + (n - 1 - kNearBack) * s / 64;
        // Wrapping differences: the indices are not checked yet. A "negative"
        // difference wraps to a huge unsigned one and is not near.
        const uint64_t c = static_cast<uint64_t>(static_cast<int64_t>(idx[k]));
        bool close = false;
        for (int j = 1; j <= kNearBack; ++j)
            close |= c - static_cast<uint64_t>(static_cast<int64_t>(idx[k - j])) <= near;
        far += !close;
    }
    return far > 8;
}

inline int64_t clampK(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// Layout of the N kernel's carry slots: per block {head[nvec], tail[nvec]}.
template <class T>
inline T* carrySlot(void* ws, const SpmvTilingData& t, uint32_t b, int which) {
    return reinterpret_cast<T*>(static_cast<char*>(ws) + t.carryOffset) + (2 * int64_t(b) + which) * t.nvec;
}

// Scalar checked dot over nonzeros [ka, kb): sum val[k] * x[indices[k]*xs].
// An index outside [0, cols) sets *bad and reads x[0] instead (cols > 0 is
// guaranteed by the caller), so the loop stays branch-free. Values stored as
// V are widened to T as they are read (widen, spmv_arith.h).
template <class T, class I, class V>
inline T dotScalar(const V* val, const I* idx, int64_t ka, int64_t kb, const T* x, int64_t xs,
                   uint64_t cols, int* bad) {
    T a0{}, a1{};
    int bd = 0;
    int64_t k = ka;
    for (; k + 2 <= kb; k += 2) {
        uint64_t c0 = static_cast<uint64_t>(static_cast<int64_t>(idx[k]));
        uint64_t c1 = static_cast<uint64_t>(static_cast<int64_t>(idx[k + 1]));
        bool o0 = c0 < cols, o1 = c1 < cols;
        bd |= !o0 | !o1;
        c0 = o0 ? c0 : 0;
        c1 = o1 ? c1 : 0;
        a0 = add(a0, mul(widen<T>(val[k]), x[static_cast<int64_t>(c0) * xs]));
        a1 = add(a1, mul(widen<T>(val[k + 1]), x[static_cast<int64_t>(c1) * xs]));
    }
    if (k < kb) {
        uint64_t c0 = static_cast<uint64_t>(static_cast<int64_t>(idx[k]));
        bool o0 = c0 < cols;
        bd |= !o0;
        c0 = o0 ? c0 : 0;
        a0 = add(a0, mul(widen<T>(val[k]), x[static_cast<int64_t>(c0) * xs]));
    }
    *bad |= bd;
    return add(a0, a1);
}

// Validation by chunks of kChunkRows rows: a chunk's indptr is checked first
// (non-decreasing, within the block's nonzeros; a loop the compiler
// vectorises), so no row span can leave the arrays; short rows' indices are
// clamped while they are used and checked in spans soon after (shortDot),
// long rows' by the checked dot product. A malformed chunk or span flags the
// kernel, which stops.
constexpr int64_t kChunkRows = 256;
// A chunk whose rows average at most kFastAvg nonzeros (in a block that is not
// scattered) and do not mostly run (runRows checks as it loads) has all its
// indices checked in one vectorised pass before any row runs; its rows then
// sum with the counted loop (shortDot; the checked dot from kLongRow on) and
// no check or indirect jump per row. Against the per-row
// span check with unrolledDot, one thread, 112^2 Poisson float64 in cache,
// C++, 10 alternating runs of 5000 products: 57.4 -> 40.5 us a product
// (fastest run); 0.76-0.77x -> 1.02-1.03x the speed of scipy's loop in the
// harness (float32 0.98-0.99 -> 1.07). The unrolled chain inside this path
// took 55.5 us. Large (streaming) matrices: no change beyond the noise.
// In L3 (6 alternating runs, fastest): 2-D 9-point stencil on 150^2, 148 ->
// 118 us; 5-point on 300^2, 532 -> 342 us. A threshold of 32, which puts the
// 27-nonzero rows of a 3-D 27-point stencil (20^3) on this path, ran them
// about 1.5x slower than the row-by-row path (fastest 214-326 us against
// 128-210, three pairs of runs), hence 16.
constexpr int64_t kFastAvg = 16;
// Clamped indices are checked in spans of this many nonzeros, while still in L1.
constexpr int64_t kCheckSpan = 2048;
// Rows at least this long use the (checked, ISA-specific) dot product.
constexpr int64_t kLongRow = 32;

template <class I>
inline bool nonDecreasing(const I* p, int64_t r0, int64_t r1) {
    int bad = 0;
    for (int64_t r = r0; r < r1; ++r) bad |= p[r + 1] < p[r];
    return !bad;
}
// Row r is empty (indptr[r + 1] == a, a = indptr[r]) and indptr is
// non-decreasing over [r, re] (checked): the end q of the run of empty rows
// [r, q), q <= re, found 8 rows at a time and then 4, 2, 1 (every row before
// a q with indptr[q] == a is empty). A row loop that then fills the run in
// one stretch pays no jump per empty row.
template <class I>
inline int64_t emptyRunEnd(const I* indptr, int64_t r, int64_t re, int64_t a) {
    int64_t q = r + 1;
    while (q + 8 <= re && static_cast<int64_t>(indptr[q + 8]) == a) q += 8;
    for (int64_t s = 4; s >= 1; s /= 2)
        q += (q + s <= re && static_cast<int64_t>(indptr[std::min(q + s, re)]) == a) ? s : 0;
    return q;
}
// The rows are short (a handful of nonzeros): GCC would vectorise the
// products with a fold-left sum whose set-up costs more than the row, so an
// empty asm keeps the accumulator a plain register (no instruction emitted).
template <class T> inline void keepScalar(T& v) {
#if defined(__x86_64__) || defined(__i386__)
    if constexpr (std::is_floating_point_v<T>) asm("" : "+x"(v));
    else if constexpr (std::is_integral_v<T>) asm("" : "+r"(v));
    else { keepScalar(v.re); keepScalar(v.im); }
#else
    (void)v;
#endif
}
// sum val[k] * x[idx[k] * xs] over [ka, kb) for short rows: one accumulator
// in nonzero order with a rounded product and a rounded sum, as scipy's
// sparsetools (so short rows give scipy's bits). The indices are checked
// before use, a span of about kCheckSpan nonzeros ahead of the rows being
// computed (checkAhead, a vectorised pass that also brings them into L1 for
// the loop that follows): a separate pass over the whole array would read
// them from memory twice, and a test (or a clamp) per nonzero costs
// instructions in the hottest loop. The barrier on the product also keeps GCC
// from contracting it into an FMA, whose latency would bound the row's chain.
template <class I> using UIndex = std::make_unsigned_t<I>;
template <class I> inline UIndex<I> indexLimit(uint64_t cols) {  // cols > 0
    // int32: a negative index read as uint32 is >= 2^31, so the limit never
    // passes 2^31 - 1 (which is also the largest valid int32 index).
    const uint64_t cap = sizeof(I) == 4 ? (uint64_t(1) << 31) : (uint64_t(1) << 63);
    return static_cast<UIndex<I>>(std::min(cols, cap) - 1);
}
// Every index in [ka, kb) is at most lim as unsigned (a loop the compiler
// vectorises): a running maximum where SSE4.1's pmaxud exists (one
// instruction per vector), else an OR of compare masks (the baseline build,
// where the emulated maximum costs 13 instructions per four indices).
template <class I>
inline bool chunkIndicesOk(const I* idx, int64_t ka, int64_t kb, UIndex<I> lim) {
#ifdef __SSE4_1__
    UIndex<I> m = 0;
    for (int64_t k = ka; k < kb; ++k) m = std::max(m, static_cast<UIndex<I>>(idx[k]));
    return m <= lim;
#else
    UIndex<I> bad = 0;
    for (int64_t k = ka; k < kb; ++k) bad |= static_cast<UIndex<I>>(idx[k]) > lim ? ~UIndex<I>(0) : UIndex<I>(0);
    return bad == 0;
#endif
}
// The smallest and largest index of [a, b) as unsigned (*lo = max, *hi = 0
// for an empty range): the span checks of A^T x (checkTouchAhead).
template <class I>
inline void indexRange(const I* idx, int64_t a, int64_t b, UIndex<I>* loOut, UIndex<I>* hiOut) {
    UIndex<I> lo = std::numeric_limits<UIndex<I>>::max(), hi = 0;
    int64_t k = a;
#if defined(__AVX2__)
    if constexpr (std::is_same_v<I, int32_t>) {
        // Four minima and maxima at once: GCC's loop keeps one of each, and
        // each vector waits on the one before. 2 threads, interleaved
        // medians of 21, ms, one / four: 2e6-row banded float32 A^T x
        // 4.94 / 4.74, 4.95 / 4.75, 4.91 / 4.77; 2000^2 Poisson 6.28 / 6.12,
        // 6.72 / 6.44, 6.64 / 6.49 (float64 within the noise).
        __m256i mn[4], mx[4];
        for (int j = 0; j < 4; ++j) {
            mn[j] = _mm256_set1_epi32(-1);
            mx[j] = _mm256_setzero_si256();
        }
        for (; k + 32 <= b; k += 32)
            for (int j = 0; j < 4; ++j) {
                const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k + 8 * j));
                mn[j] = _mm256_min_epu32(mn[j], v);
                mx[j] = _mm256_max_epu32(mx[j], v);
            }
        alignas(32) uint32_t ml[8], xl[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(ml),
                           _mm256_min_epu32(_mm256_min_epu32(mn[0], mn[1]), _mm256_min_epu32(mn[2], mn[3])));
        _mm256_store_si256(reinterpret_cast<__m256i*>(xl),
                           _mm256_max_epu32(_mm256_max_epu32(mx[0], mx[1]), _mm256_max_epu32(mx[2], mx[3])));
        for (int j = 0; j < 8; ++j) {
            lo = std::min(lo, ml[j]);
            hi = std::max(hi, xl[j]);
        }
    }
#endif
    for (; k < b; ++k) {
        const UIndex<I> u = static_cast<UIndex<I>>(idx[k]);
        lo = std::min(lo, u);
        hi = std::max(hi, u);
    }
    *loOut = lo;
    *hiOut = hi;
}
// The indices of [ka, kb) were checked already (checkAhead).
// Makes sure the indices of [*chk, need) are checked: when need passes the
// checked frontier *chk, checks from there to kCheckSpan beyond it (at least
// to need, at most to kHi) and moves the frontier. False on a bad index.
template <class I>
inline bool checkAhead(const I* idx, int64_t* chk, int64_t need, int64_t kHi, UIndex<I> lim) {
    if (__builtin_expect(need <= *chk, 1)) return true;
    const int64_t to = std::min(kHi, std::max(need, *chk + kCheckSpan));
    if (!chunkIndicesOk(idx, *chk, to, lim)) return false;
    *chk = to;
    return true;
}
template <bool Unit, class T, class I, class V>
__attribute__((always_inline)) inline T shortDot(const V* val, const I* idx, int64_t ka, int64_t kb, const T* x, int64_t xs) {
    T acc{};
    for (int64_t k = ka; k < kb; ++k) {
        const UIndex<I> c = static_cast<UIndex<I>>(idx[k]);
        T p = mul(widen<T>(val[k]), x[static_cast<int64_t>(c) * (Unit ? 1 : xs)]);
        keepScalar(p);
        acc = add(acc, p);
        keepScalar(acc);
    }
    return acc;
}
// shortDot of unit-stride x with each index checked as it is loaded, before
// x is read through it: false at a bad one (*out then not written).
template <class T, class I>
__attribute__((always_inline)) inline bool shortDotChecked(const T* val, const I* idx, int64_t ka, int64_t kb,
                                                           const T* x, UIndex<I> lim, T* out) {
    T acc{};
    for (int64_t k = ka; k < kb; ++k) {
        const UIndex<I> c = static_cast<UIndex<I>>(idx[k]);
        if (__builtin_expect(c > lim, 0)) return false;
        T p = val[k] * x[static_cast<int64_t>(c)];
        keepScalar(p);
        acc = acc + p;
        keepScalar(acc);
    }
    *out = acc;
    return true;
}

// shortDot for len <= kUnroll nonzeros ending at e, unrolled: one indirect
// jump into a fall-through chain instead of a counted loop with its counter
// and exit branch per row. The terms are still added in nonzero order from
// +0, as shortDot does. Must be inlined (always_inline): an outlined call per
// row doubled the row loop's instructions (callgrind, 300^2 Poisson).
constexpr int64_t kUnroll = 16;
// The fall-through chain itself: TERM(j) for j = len down to 1 (each TERM is
// a `case j:` ending in [[fallthrough]]); 0 <= len <= kUnroll. Shared by
// unrolledDot and the transposed kernel's unrolledScatter.
#define AL_SPMV_UNROLLED(len, TERM)                                        \
    switch (len) {                                                         \
        TERM(16) TERM(15) TERM(14) TERM(13) TERM(12) TERM(11) TERM(10) TERM(9) \
        TERM(8) TERM(7) TERM(6) TERM(5) TERM(4) TERM(3) TERM(2) TERM(1)        \
        default: break;                                                    \
    }
template <bool Unit, class T, class I, class V>
__attribute__((always_inline)) inline T unrolledDot(const V* val, const I* idx, int64_t e, int64_t len, const T* x, int64_t xs) {
    T acc{};
#define AL_SPMV_TERM(j)                                                                                  \
    case j: {                                                                                            \
        T p = mul(widen<T>(val[e - j]), x[static_cast<int64_t>(static_cast<UIndex<I>>(idx[e - j])) * (Unit ? 1 : xs)]); \
        keepScalar(p);                                                                                   \
        acc = add(acc, p);                                                                               \
        keepScalar(acc);                                                                                 \
    }                                                                                                    \
        [[fallthrough]];
    AL_SPMV_UNROLLED(len, AL_SPMV_TERM)
#undef AL_SPMV_TERM
    return acc;
}

// Software prefetch of the values and indices this many bytes ahead of the
// row being worked on (both kernels, once per row). The hardware prefetcher
// alone left one core well short of the bandwidth on these streams: on the
// 2000^2 Poisson and 1e6-row banded matrices, 2 threads, paired runs against
// scipy went from 0.97-1.26x to 1.25-1.65x with it (float32 Poisson: 1.19-1.40
// in three runs, 0.86 in a fourth). Prefetching x as well (what
// scattered matrices get) cost more than it gave on those. The address is
// formed in integer arithmetic: it may lie past the array end, which a
// prefetch never faults on.
// Blocks of fewer nonzeros skip it: their arrays are mostly in cache (a
// solver calls the product again and again on one matrix), where the two
// prefetches per row only take load slots (62k-nonzero Poisson matrix, one
// block, C++ harness: 0.77x of scipy's loop with them, 0.85x without). Nta: PREFETCHNTA,
// A^T x blocks scattering past the cache bound (kPfScattered) keep the L3 for their partials.
constexpr uintptr_t kStreamAhead = 8192;
constexpr int64_t kStreamMinNnz = int64_t(1) << 16;
template <bool Nta = false, class V> inline void prefetchAhead(const V* p) {
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + kStreamAhead), 0, Nta ? 0 : 3);
}
// What a row loop prefetches (a template argument: a run-time test per row
// cost more than the prefetches it saved): nothing, the value and index
// streams, or those and x (the partial, transposed) kPrefetch nonzeros ahead.
// x is prefetched only when scattered and larger than kScatterPfMinBytes
// (targetBytes: the bytes the gathers land in): a smaller one stays in the
// last-level cache, where the prefetches' index loads and load slots cost
// more than they hide. Wall ms per product, 2 threads, 1e6 x 1e6 random
// matrix with 1e7 nonzeros, alternating runs of the two builds:
//   float32 A x (4 MB x), C++ harness: with 17.8-22.1, without 13.5-17.5;
//   through Python: 18.7-24.8 with, 16.0-29.1 without (power-law rows:
//   17.6-21.3 with, 15.6-21.0 without);
//   float64 A x (8 MB x), C++ harness: with 18.6-19.8, without 25.3-27.4.
// The threshold lies between the two; this machine's L3 is 32 MB, shared
// with other tenants. The transposed kernel applies the same bound to its
// blocks' partials together (its figures are in spmvt_merge_impl.h).
constexpr int64_t kScatterPfMinBytes = kSpmvScatterPfMinBytes;
// A long row with indices over a line apart on average (spreadRow, kb > ka;
// unchecked, wrapping: unsorted is spread) is no hardware stream, though
// scattered() says near: past the bound it prefetches (A x dot, A^T x scatter),
// unless the product's plan prefetches no target (SPMV_PF_NO_TARGET): on a
// host whose last-level cache holds the target, the timed plan turns it off
// (docs/performance.md, thirty-first session).
enum : int { kLongPfNone = 0, kLongPfSpread = 1, kLongPfAll = 2 };
inline int longRowPrefetch(int64_t targetBytes, int32_t plan) {  // rowPrefetchForced: -1 rule, 0 none, 1 all
    const int32_t f = rowPrefetchForced();
    if (f >= 0) return f ? kLongPfAll : kLongPfNone;
    return targetBytes > kScatterPfMinBytes && !(plan & SPMV_PF_NO_TARGET) ? kLongPfSpread : kLongPfNone;
}
// A long row's own value and index stream prefetch (A x: streamPf,
// spmv_kernel_merge_avx2.cpp; A^T x: scatterRow<true>): by the product's
// arrays' size, or as rowPrefetchForced says (1 every long row, 0 none).
inline bool longRowStreams(int32_t plan) {
    const int32_t f = rowPrefetchForced();
    if (f >= 0) return f == 1;
    return !(plan & (SPMV_PF_IN_CACHE | SPMV_PF_ARRAYS_CACHED));
}
template <class T, class I>
inline bool spreadRow(const I* idx, int64_t ka, int64_t kb) {
    const uint64_t span = static_cast<uint64_t>(static_cast<int64_t>(idx[kb - 1])) -
                          static_cast<uint64_t>(static_cast<int64_t>(idx[ka]));
    return span / static_cast<uint64_t>(kb - ka) >= 64 / sizeof(T);
}
enum : int { kPfNone = 0, kPfStream = 1, kPfScattered = 2 };
template <class I>
inline int prefetchMode(const I* idx, int64_t kLo, int64_t kHi, int64_t stride, int64_t targetBytes,
                        int64_t minBytes = kScatterPfMinBytes) {
    if (targetBytes > minBytes && scattered(idx, kLo, kHi, stride)) return kPfScattered;
    return kHi - kLo >= kStreamMinNnz ? kPfStream : kPfNone;
}
// prefetchMode under a plan (SpmvPrefetchPlan; 0 is prefetchMode itself).
template <class I>
inline int planPrefetchMode(const I* idx, int64_t kLo, int64_t kHi, int64_t stride, int64_t targetBytes,
                            int32_t plan, int64_t minBytes = kScatterPfMinBytes) {
    if (plan == 0) return prefetchMode(idx, kLo, kHi, stride, targetBytes, minBytes);
    // The sampling only where its answer can change the mode, at most once:
    // a small product's plan (in cache, a small target) never asks, and it
    // was 3% of a 112^2 Poisson A x (perf samples).
    int sampled = -1;
    auto isScattered = [&] {
        if (sampled < 0) sampled = scattered(idx, kLo, kHi, stride);
        return sampled == 1;
    };
    int pm = (targetBytes > minBytes || (plan & SPMV_PF_ANY_SIZE)) && isScattered() ? kPfScattered
             : kHi - kLo >= kStreamMinNnz                                           ? kPfStream
                                                                                    : kPfNone;
    if (pm == kPfScattered && (plan & SPMV_PF_NO_TARGET)) pm = kPfStream;
    if (pm == kPfStream && (plan & SPMV_PF_IN_CACHE)) pm = kPfNone;
    if (pm == kPfStream && (plan & SPMV_PF_NO_STREAMS) && isScattered()) pm = kPfNone;
    return pm;
}

// Runs of rows of one length: a stencil's or banded matrix's rows mostly
// have the same number of nonzeros, row after row. fixedRun
// (spmv_rows_n1.h) sums rows of
// exactly L nonzeros (the body unrolled, no loop counter or exit branch per
// nonzero) for as long as the next row has L too; the same products and sums
// in the same order as shortDot (scipy's bits). Rows of other lengths return
// to runRows, one indirect jump per run. Only where it paid: the plain
// product (alpha 1, beta 0, unit-stride x) with float32/float64 values, in
// chunks whose rows mostly continue a run (mostlyRuns), in blocks that are
// not scattered. The runs check each index as they load it (a compare and a
// branch never taken), not in a pass over the chunk first: that pass was the
// whole gap to the streaming roof on a Zen 5 host (2 threads, interleaved
// medians of 15, ms, pass / checked loads / no check at all: 2e6-row banded
// float32 3.85 / 3.43 / 3.40, float64 5.40 / 4.96 / 4.87; 2000^2 Poisson
// float32 4.90 / 4.58 / 4.57, float64 6.85 / 6.54 / 6.61; in cache, 112^2
// Poisson float32 23.96 / 21.19 / 21.07 us), and float64's streaming blocks
// now take runs too (1000^2 Poisson float64 1392 -> 1219 us; on an older
// host, without the checked loads, they had cost: below).
// Standalone C++, one thread, medians of 21 interleaved rounds, counted loop
// -> runs, no prefetch: 112^2 Poisson float32 36.8 -> 23.5 us, float64 29.5
// -> 27.7; 300^2 float32 457 -> 215, float64 399 -> 317. Rows of random
// lengths 1-9 ran 3.5x slower (an indirect jump mispredicted per row), hence
// the per-chunk test. In the kernel, C++ harness (bench_spmv_kernel.cpp), 2
// threads, alternating builds, medians of 6 runs, ms: streaming float32
// 2000^2 Poisson 11.25 -> 10.14, 2e6-row banded 8.33 -> 7.39; float64 the
// same within the noise (14.55 -> 14.12, 11.27 -> 10.94), and with runs in
// its streaming blocks too, 300^2 Poisson 0.165 -> 0.225 (medians of 6), so
// float64 streams without (one thread, banded float64 with runs in its
// streaming blocks: 13.77 -> 16.20). mid300 float32 against scipy's loop,
// three runs each: 1.17-1.35 -> 2.16-2.67.
// RUN(l) for the run lengths 1..kUnroll, the cases of runRows' and
// runScatterRows' switch on a row's length.
#define AL_SPMV_RUN_LENGTHS(RUN)                                                         \
    RUN(1) RUN(2) RUN(3) RUN(4) RUN(5) RUN(6) RUN(7) RUN(8) RUN(9) RUN(10) RUN(11) RUN(12) \
    RUN(13) RUN(14) RUN(15) RUN(16)
static_assert(kUnroll == 16, "AL_SPMV_RUN_LENGTHS covers run lengths 1..kUnroll");
template <class T, class V, int32_t Mode, bool A1, int Pf, bool Unit>
constexpr bool kRunRows = Unit && A1 && Mode == SPMV_BETA_ZERO && std::is_same_v<T, V> && Pf != kPfScattered &&
                          (std::is_same_v<T, float> || std::is_same_v<T, double>);
// At least 7/8 of the rows of [r0, r1) have the length of the row before
// them (a loop the compiler vectorises, over the chunk's checked indptr).
// NonEmpty: and are not empty. A^T x asks so: a chunk of empty rows around a
// long one would otherwise count as runs, and its long row would take the
// runs' loop (no prefetch of its scattered target) where row() prefetches.
template <bool NonEmpty = false, class I>
inline bool mostlyRuns(const I* p, int64_t r0, int64_t r1) {
    if (r1 - r0 < 8) return false;
    int64_t same = 0;
    for (int64_t r = r0 + 1; r < r1; ++r)
        same += ((p[r + 1] - p[r]) == (p[r] - p[r - 1])) & (!NonEmpty || p[r + 1] != p[r]);
    return 8 * same >= 7 * (r1 - r0);
}

// Eight rows of a run at once (int32 indices, AVX2): rows r .. r + 7 all
// have L nonzeros from a (runOf8: indptr[r + 1 .. r + 8] in one vector) and
// their 8 L indices lie in [lo, lo + last] (run8Within: the unsigned offsets
// from lo in one running maximum, compared once; Sub false: lo is 0).
// A^T x's streaming runs then take the eight rows with no check of their
// own (fixedScatterRun), in place of a vector check per row. A x's runs
// (fixedRun) keep their compare per index: with the groups, 112^2 Poisson
// A x in cache ran 6-7% slower (C++ harness, one thread, three alternating
// runs of the two builds: float32 32.6-33.0 -> 30.1-30.6 GB/s, float64
// 48.1-48.3 -> 45.3-45.7) and the streaming ones no faster (they run at
// their roof).
template <class I>
constexpr bool kGroupRun =
#if defined(__AVX2__)
    std::is_same_v<I, int32_t>;
#else
    false;
#endif
template <int L, class I>
__attribute__((always_inline)) inline bool runOf8(const I* indptr, int64_t r, int64_t a) {
#if defined(__AVX2__)
    if constexpr (std::is_same_v<I, int32_t>) {
        // a + 8 L <= indptr's largest value < 2^31 when the rows are a run
        const __m256i want = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(a)),
                                              _mm256_setr_epi32(L, 2 * L, 3 * L, 4 * L, 5 * L, 6 * L, 7 * L, 8 * L));
        const __m256i got = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(indptr + r + 1));
        return a <= INT32_MAX - 8 * L && _mm256_movemask_epi8(_mm256_cmpeq_epi32(got, want)) == -1;
    }
#endif
    (void)indptr;
    (void)r;
    (void)a;
    return false;
}
#if defined(__AVX2__)
template <int L, bool Sub>
__attribute__((always_inline)) inline bool run8Within(const int32_t* p, __m256i lo, __m256i last) {
    __m256i m = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (int v = 0; v < L; ++v) {  // 8 L indices: L vectors
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8 * v));
        m = _mm256_max_epu32(m, Sub ? _mm256_sub_epi32(c, lo) : c);
    }
    return _mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_max_epu32(m, last), last)) == -1;
}
#endif
}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
