// AVX2 packing of a strided rectangle into planar micro-panels (the contract of
// csymmPackRectFn in csymm_pack.h). Compiled with -mavx2 -mfma and only called
// after __builtin_cpu_supports said so. Pure copies: the panels hold exactly
// the bits the scalar packer writes.
//
// Never reads past the elements in range: every load covers whole complex
// elements that belong to the rectangle (chunks of 8, 4, 2, 1 rows or steps).
#include <immintrin.h>

#include <cstring>

#include "csymm_pack.h"

namespace al {

namespace {

// Up to 8 rows, 4 steps (8 floats per row: re, im of steps p..p+3) transposed
// into the panel: out column c (= 2*step + re/im) is rows 0..7 of that float.
// rows < 8: the missing rows are zero and only `rows` floats per column are
// stored (6 and 4: vector stores; others: a scalar copy out of a buffer).
inline void transpose8x8(__m256 r0, __m256 r1, __m256 r2, __m256 r3, __m256 r4, __m256 r5,
                         __m256 r6, __m256 r7, __m256 out[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    out[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    out[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    out[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    out[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    out[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    out[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    out[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    out[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

inline void storeRows(float* dst, __m256 v, int32_t rows) {
    if (rows == 8) {
        _mm256_storeu_ps(dst, v);
    } else if (rows == 6) {
        _mm_storeu_ps(dst, _mm256_castps256_ps128(v));
        _mm_storel_pi(reinterpret_cast<__m64*>(dst + 4), _mm256_extractf128_ps(v, 1));
    } else if (rows == 4) {
        _mm_storeu_ps(dst, _mm256_castps256_ps128(v));
    } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, v);
        std::memcpy(dst, tmp, sizeof(float) * rows);
    }
}

// Steps contiguous (cs == 1): rows rb.. rb+rv-1 at stride rs, steps pa..pb-1.
void packStepsContiguous(float* panel, int32_t w, const float* base, int64_t rs, int64_t rb,
                         int32_t rv, int64_t pa, int64_t pb, int64_t p0) {
    for (int32_t r0 = 0; r0 < rv; r0 += 8) {
        const int32_t rows = rv - r0 < 8 ? rv - r0 : 8;
        const float* src[8];
        for (int32_t r = 0; r < 8; ++r) src[r] = base + 2 * ((rb + r0 + (r < rows ? r : 0)) * rs);
        int64_t p = pa;
        for (; p + 4 <= pb; p += 4) {
            __m256 v[8];
            for (int32_t r = 0; r < 8; ++r)
                v[r] = r < rows ? _mm256_loadu_ps(src[r] + 2 * p) : _mm256_setzero_ps();
            __m256 o[8];
            transpose8x8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], o);
            float* dst = panel + (p - p0) * 2 * w + r0;
            for (int32_t c = 0; c < 8; ++c) storeRows(dst + c * w, o[c], rows);
        }
        for (; p < pb; ++p) {  // fewer than 4 steps left
            float* re = panel + (p - p0) * 2 * w + r0;
            for (int32_t r = 0; r < rows; ++r) {
                re[r] = src[r][2 * p];
                re[w + r] = src[r][2 * p + 1];
            }
        }
    }
}

// De-interleave n complex (n in 1..8 handled by 8/4/2/1 chunks) from src into
// re[0..n) and im[0..n).
inline void deinterleave(const float* src, float* re, float* im, int32_t n) {
    int32_t r = 0;
    for (; r + 8 <= n; r += 8) {
        const __m256 lo = _mm256_loadu_ps(src + 2 * r), hi = _mm256_loadu_ps(src + 2 * r + 8);
        // per lane: re of lo, re of hi -> r0 r1 r4 r5 | r2 r3 r6 r7; then fix the order.
        const __m256 vr = _mm256_shuffle_ps(lo, hi, 0x88), vi = _mm256_shuffle_ps(lo, hi, 0xDD);
        _mm256_storeu_ps(re + r, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(vr), 0xD8)));
        _mm256_storeu_ps(im + r, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(vi), 0xD8)));
    }
    if (r + 4 <= n) {
        const __m256 v = _mm256_loadu_ps(src + 2 * r);  // r0 i0 r1 i1 | r2 i2 r3 i3
        const __m128 a = _mm256_castps256_ps128(v), b = _mm256_extractf128_ps(v, 1);
        _mm_storeu_ps(re + r, _mm_shuffle_ps(a, b, 0x88));
        _mm_storeu_ps(im + r, _mm_shuffle_ps(a, b, 0xDD));
        r += 4;
    }
    if (r + 2 <= n) {
        const __m128 v = _mm_loadu_ps(src + 2 * r);  // r0 i0 r1 i1
        const __m128 s = _mm_shuffle_ps(v, v, 0xD8);  // r0 r1 i0 i1
        _mm_storel_pi(reinterpret_cast<__m64*>(re + r), s);
        _mm_storeh_pi(reinterpret_cast<__m64*>(im + r), s);
        r += 2;
    }
    if (r < n) {
        re[r] = src[2 * r];
        im[r] = src[2 * r + 1];
    }
}

// Rows contiguous (rs == 1): per step, de-interleave rv complex.
void packRowsContiguous(float* panel, int32_t w, const float* base, int64_t cs, int64_t rb,
                        int32_t rv, int64_t pa, int64_t pb, int64_t p0) {
    for (int64_t p = pa; p < pb; ++p) {
        const float* src = base + 2 * (rb + p * cs);
        float* re = panel + (p - p0) * 2 * w;
        for (int32_t r = 0; r < rv; r += 8) deinterleave(src + 2 * r, re + r, re + w + r, rv - r < 8 ? rv - r : 8);
    }
}

}  // namespace

bool csymmPackRectAvx2(float* panel, int32_t w, const float* base, int64_t rs, int64_t cs,
                       int64_t rb, int32_t rv, int64_t pa, int64_t pb, int64_t p0) {
    if (rs == 1) {
        packRowsContiguous(panel, w, base, cs, rb, rv, pa, pb, p0);
        return true;
    }
    if (cs == 1) {
        packStepsContiguous(panel, w, base, rs, rb, rv, pa, pb, p0);
        return true;
    }
    return false;
}

}  // namespace al
