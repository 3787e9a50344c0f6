// AVX2+FMA checked dot products for the merge-path SpMV (compiled with
// -mavx2 -mfma -mf16c; chosen at run time only where the CPU has AVX2 and FMA,
// and for float16 values only where it also has F16C).
// Unit-stride x: masked gathers, bad lanes masked off (never read). Short or
// strided spans fall back to the scalar loop compiled for this ISA.
#include <immintrin.h>

#include "spmv_kernel_merge.h"
#include "spmv_merge_common.h"
#include "spmv_rows_n1.h"

namespace al {
namespace spmvm {
namespace {

constexpr int64_t kMinGather = 16;  // shorter spans: scalar is as fast

// A long row's value and index streams, prefetched kStreamAhead bytes on at
// every step of its gather loop (a cache line of each or more), unless the
// product's arrays can be taken to be in cache (SPMV_PF_IN_CACHE,
// SPMV_PF_ARRAYS_CACHED; longRowStreams). The row loop's one prefetch per
// row covers a short row; a long row's streams had none but the
// hardware's, which fell behind while the gathers held the core's misses
// in flight. 2 threads,
// through Python, alternating with the loop without them in one process,
// medians of 31 (ms, without -> with): rows of 2000 sorted random columns of
// 1e5 (9.9e6 nonzeros, x in L2) float32 3.43 -> 2.10, float64 5.02 -> 2.88;
// rows of 400 of 1e5, 8e6 nonzeros, 3.02 -> 1.78 and 4.23 -> 2.40; the
// power-law matrix of bench_spmv.py 5.20 -> 4.75 and 5.70 -> 5.19. The
// same rows' arrays in 8-12 MB: 4-10% slower (0.96, 0.91); 16-24 MB: 0.98,
// 1.06 (docs/performance.md, thirty-sixth session).
template <class V, class I> inline void streamPf(const V* val, const I* idx, int64_t k, bool on) {
    if (on) {
        prefetchAhead(val + k);
        prefetchAhead(idx + k);
    }
}

// A long row's x, prefetched kInRowPf nonzeros ahead when it waits on
// memory: x larger than the last-level cache can be trusted to hold
// (kSpmvScatterPfMinBytes, the short rows' bound), and the row's indices
// more than a cache line apart on average, so no hardware prefetcher follows
// them. A smaller x stays cached, where the prefetches' index loads and load
// slots cost more than they hide; a dense stretch of a row streams. 2 threads,
// 2000 rows of 5000 sorted random columns of 1e6, through Python, ms
// (scipy's / without / with, two alternating runs of the two builds):
// float64 (8 MB x) 49.5 / 31.5 / 14.8 and 29.8 / 16.9 / 14.8; float32 (4 MB x)
// 19.0 / 7.9 / 10.0 and 19.5 / 7.6 / 10.6. The indices are not checked yet:
// clamped like the gathers' (an out-of-range address is never formed), and a
// row that is not sorted counts as spread (prefetching then only costs).
constexpr int64_t kInRowPf = 64;
template <class T, class I>
inline int64_t rowPrefetchEnd(const I* idx, int64_t ka, int64_t kb, uint64_t cols, int64_t step, int32_t plan) {
    const int64_t xBytes = static_cast<int64_t>(std::min<uint64_t>(cols, uint64_t(1) << 40) * sizeof(T));
    const int mode = longRowPrefetch(xBytes, plan);
    if (mode == kLongPfNone || (mode == kLongPfSpread && !spreadRow<T>(idx, ka, kb))) return ka;
    return kb - kInRowPf - step + 1;  // loop steps k < this have their x prefetched
}
template <int N, class T, class I>
inline void prefetchX(const T* x, const I* idx, uint64_t cols) {
    const uint64_t lim = cols - 1;  // cols > 0: the caller guarantees it
    for (int j = 0; j < N; ++j)
        __builtin_prefetch(x + std::min<uint64_t>(static_cast<uint64_t>(static_cast<int64_t>(idx[j])), lim));
}

inline double hsum(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
// int32 lanes <= lim as unsigned (negative indices are huge unsigned).
inline __m128i okU32(__m128i i, __m128i lim) { return _mm_cmpeq_epi32(_mm_max_epu32(i, lim), lim); }
inline __m256i okU32(__m256i i, __m256i lim) { return _mm256_cmpeq_epi32(_mm256_max_epu32(i, lim), lim); }
inline __m256i okI64(__m256i i, __m256i lim) {
    __m256i out = _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), i), _mm256_cmpgt_epi64(i, lim));
    return _mm256_xor_si256(out, _mm256_set1_epi64x(-1));
}
inline int32_t lim32(uint64_t cols) { return static_cast<int32_t>(std::min<uint64_t>(cols, uint64_t(1) << 31) - 1); }
inline int64_t lim64(uint64_t cols) { return static_cast<int64_t>(std::min<uint64_t>(cols, uint64_t(1) << 62) - 1); }

double f64i32(const double* val, const int32_t* idx, int64_t ka, int64_t kb, const double* x,
              int64_t xs, uint64_t cols, int* bad, int32_t plan) {
    if (xs != 1 || kb - ka < kMinGather) return dotScalar(val, idx, ka, kb, x, xs, cols, bad);
    const __m128i lim = _mm_set1_epi32(lim32(cols));
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    __m128i ok = _mm_set1_epi32(-1);
    const int64_t pfEnd = rowPrefetchEnd<double>(idx, ka, kb, cols, 8, plan);
    const bool streams = longRowStreams(plan);  // see streamPf
    int64_t k = ka;
    for (; k + 8 <= kb; k += 8) {
        if (k < pfEnd) prefetchX<8>(x, idx + k + kInRowPf, cols);
        streamPf(val, idx, k, streams);
        __m128i i0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(idx + k));
        __m128i i1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(idx + k + 4));
        __m128i o0 = okU32(i0, lim), o1 = okU32(i1, lim);
        ok = _mm_and_si128(ok, _mm_and_si128(o0, o1));
        __m256d g0 = _mm256_mask_i32gather_pd(_mm256_setzero_pd(), x, i0,
                                              _mm256_castsi256_pd(_mm256_cvtepi32_epi64(o0)), 8);
        __m256d g1 = _mm256_mask_i32gather_pd(_mm256_setzero_pd(), x, i1,
                                              _mm256_castsi256_pd(_mm256_cvtepi32_epi64(o1)), 8);
        a0 = _mm256_fmadd_pd(_mm256_loadu_pd(val + k), g0, a0);
        a1 = _mm256_fmadd_pd(_mm256_loadu_pd(val + k + 4), g1, a1);
    }
    *bad |= _mm_movemask_epi8(ok) != 0xffff;
    return hsum(_mm256_add_pd(a0, a1)) + dotScalar(val, idx, k, kb, x, xs, cols, bad);
}

double f64i64(const double* val, const int64_t* idx, int64_t ka, int64_t kb, const double* x,
              int64_t xs, uint64_t cols, int* bad, int32_t plan) {
    if (xs != 1 || kb - ka < kMinGather) return dotScalar(val, idx, ka, kb, x, xs, cols, bad);
    const __m256i lim = _mm256_set1_epi64x(lim64(cols));
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    __m256i ok = _mm256_set1_epi64x(-1);
    const int64_t pfEnd = rowPrefetchEnd<double>(idx, ka, kb, cols, 8, plan);
    const bool streams = longRowStreams(plan);  // see streamPf
    int64_t k = ka;
    for (; k + 8 <= kb; k += 8) {
        if (k < pfEnd) prefetchX<8>(x, idx + k + kInRowPf, cols);
        streamPf(val, idx, k, streams);
        __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k));
        __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k + 4));
        __m256i o0 = okI64(i0, lim), o1 = okI64(i1, lim);
        ok = _mm256_and_si256(ok, _mm256_and_si256(o0, o1));
        __m256d g0 = _mm256_mask_i64gather_pd(_mm256_setzero_pd(), x, i0, _mm256_castsi256_pd(o0), 8);
        __m256d g1 = _mm256_mask_i64gather_pd(_mm256_setzero_pd(), x, i1, _mm256_castsi256_pd(o1), 8);
        a0 = _mm256_fmadd_pd(_mm256_loadu_pd(val + k), g0, a0);
        a1 = _mm256_fmadd_pd(_mm256_loadu_pd(val + k + 4), g1, a1);
    }
    *bad |= _mm256_movemask_epi8(ok) != -1;
    return hsum(_mm256_add_pd(a0, a1)) + dotScalar(val, idx, k, kb, x, xs, cols, bad);
}

float f32i32(const float* val, const int32_t* idx, int64_t ka, int64_t kb, const float* x,
             int64_t xs, uint64_t cols, int* bad, int32_t plan) {
    if (xs != 1 || kb - ka < kMinGather) return dotScalar(val, idx, ka, kb, x, xs, cols, bad);
    const __m256i lim = _mm256_set1_epi32(lim32(cols));
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256i ok = _mm256_set1_epi32(-1);
    const int64_t pfEnd = rowPrefetchEnd<float>(idx, ka, kb, cols, 16, plan);
    const bool streams = longRowStreams(plan);  // see streamPf
    int64_t k = ka;
    for (; k + 16 <= kb; k += 16) {
        if (k < pfEnd) prefetchX<16>(x, idx + k + kInRowPf, cols);
        streamPf(val, idx, k, streams);
        __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k));
        __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k + 8));
        __m256i o0 = okU32(i0, lim), o1 = okU32(i1, lim);
        ok = _mm256_and_si256(ok, _mm256_and_si256(o0, o1));
        __m256 g0 = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), x, i0, _mm256_castsi256_ps(o0), 4);
        __m256 g1 = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), x, i1, _mm256_castsi256_ps(o1), 4);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(val + k), g0, a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(val + k + 8), g1, a1);
    }
    *bad |= _mm256_movemask_epi8(ok) != -1;
    return hsum(_mm256_add_ps(a0, a1)) + dotScalar(val, idx, k, kb, x, xs, cols, bad);
}

float f32i64(const float* val, const int64_t* idx, int64_t ka, int64_t kb, const float* x,
             int64_t xs, uint64_t cols, int* bad, int32_t plan) {
    if (xs != 1 || kb - ka < kMinGather) return dotScalar(val, idx, ka, kb, x, xs, cols, bad);
    const __m256i lim = _mm256_set1_epi64x(lim64(cols));
    __m128 a0 = _mm_setzero_ps(), a1 = _mm_setzero_ps();
    __m256i ok = _mm256_set1_epi64x(-1);
    const int64_t pfEnd = rowPrefetchEnd<float>(idx, ka, kb, cols, 8, plan);
    const bool streams = longRowStreams(plan);  // see streamPf
    int64_t k = ka;
    for (; k + 8 <= kb; k += 8) {
        if (k < pfEnd) prefetchX<8>(x, idx + k + kInRowPf, cols);
        streamPf(val, idx, k, streams);
        __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k));
        __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + k + 4));
        __m256i o0 = okI64(i0, lim), o1 = okI64(i1, lim);
        ok = _mm256_and_si256(ok, _mm256_and_si256(o0, o1));
        // 64-bit lane masks -> 32-bit lane masks for the 4-float gather.
        __m128 m0 = _mm_castsi128_ps(_mm256_castsi256_si128(
            _mm256_permutevar8x32_epi32(o0, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6))));
        __m128 m1 = _mm_castsi128_ps(_mm256_castsi256_si128(
            _mm256_permutevar8x32_epi32(o1, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6))));
        __m128 g0 = _mm256_mask_i64gather_ps(_mm_setzero_ps(), x, i0, m0, 4);
        __m128 g1 = _mm256_mask_i64gather_ps(_mm_setzero_ps(), x, i1, m1, 4);
        a0 = _mm_fmadd_ps(_mm_loadu_ps(val + k), g0, a0);
        a1 = _mm_fmadd_ps(_mm_loadu_ps(val + k + 4), g1, a1);
    }
    *bad |= _mm256_movemask_epi8(ok) != -1;
    __m128 s = _mm_add_ps(a0, a1);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    float h = _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
    return h + dotScalar(val, idx, k, kb, x, xs, cols, bad);
}

template <class T, class I> struct GatherDot;
template <> struct GatherDot<float, int32_t> {
    int32_t plan = 0;  // the product's SpmvPrefetchPlan (long rows' x prefetch)
    float operator()(const float* v, const int32_t* i, int64_t a, int64_t b, const float* x, int64_t xs, uint64_t c, int* bad) const {
        return f32i32(v, i, a, b, x, xs, c, bad, plan);
    }
};
template <> struct GatherDot<float, int64_t> {
    int32_t plan = 0;  // the product's SpmvPrefetchPlan (long rows' x prefetch)
    float operator()(const float* v, const int64_t* i, int64_t a, int64_t b, const float* x, int64_t xs, uint64_t c, int* bad) const {
        return f32i64(v, i, a, b, x, xs, c, bad, plan);
    }
};
template <> struct GatherDot<double, int32_t> {
    int32_t plan = 0;  // the product's SpmvPrefetchPlan (long rows' x prefetch)
    double operator()(const double* v, const int32_t* i, int64_t a, int64_t b, const double* x, int64_t xs, uint64_t c, int* bad) const {
        return f64i32(v, i, a, b, x, xs, c, bad, plan);
    }
};
template <> struct GatherDot<double, int64_t> {
    int32_t plan = 0;  // the product's SpmvPrefetchPlan (long rows' x prefetch)
    double operator()(const double* v, const int64_t* i, int64_t a, int64_t b, const double* x, int64_t xs, uint64_t c, int* bad) const {
        return f64i64(v, i, a, b, x, xs, c, bad, plan);
    }
};
template <class T, class I> constexpr DotEntry<T, I> entry() {
    return {DotFns<T, I, GatherDot<T, I>>::dot, DotFns<T, I, GatherDot<T, I>>::rows};
}
// 16-bit values: the scalar loops compiled here (float16 widened by F16C).
template <class I, class V> constexpr DotEntry<float, I, V> widening() {
    return {DotFns<float, I, ScalarDot<float, I, V>, V>::dot, DotFns<float, I, ScalarDot<float, I, V>, V>::rows};
}
const DotTable kAvx2{entry<float, int32_t>(), entry<float, int64_t>(), entry<double, int32_t>(),
                     entry<double, int64_t>(), widening<int32_t, Half>(), widening<int64_t, Half>(),
                     widening<int32_t, BHalf>(), widening<int64_t, BHalf>(), widenHalfArray, "avx2+fma"};

}  // namespace

const DotTable* dotAvx2() { return &kAvx2; }

}  // namespace spmvm
}  // namespace al
