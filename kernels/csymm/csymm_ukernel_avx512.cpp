// AVX-512F csymm micro-kernel, 16x12 (contract in csymm_ukernel.h). Compiled
// with -mavx512f and only called after __builtin_cpu_supports said so.
//
// Registers: 24 accumulators (12 columns x re/im planes of 16 rows), 2 for the
// A step, 2 broadcasts of B, of 32 zmm. Per k step 48 FMAs against 2 vector
// loads and 24 broadcasts.
#include <immintrin.h>

#include "csymm_ukernel.h"

namespace al {

namespace {
constexpr int kMr = 16;
constexpr int kNr = 12;
}  // namespace

void csymm_ukernel_avx512_16x12(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                int32_t mv, int32_t nv, const CsymmEpilogue& ep) {
    __m512 accRe[kNr], accIm[kNr];
    for (int j = 0; j < kNr; ++j) accRe[j] = accIm[j] = _mm512_setzero_ps();
    for (int32_t j = 0; j < nv; ++j) _mm_prefetch(reinterpret_cast<const char*>(c + 2 * j * ldc), _MM_HINT_T0);
    for (int64_t p = 0; p < kc; ++p) {
        const __m512 ar = _mm512_load_ps(a);
        const __m512 ai = _mm512_load_ps(a + kMr);
#pragma GCC unroll 12
        for (int j = 0; j < kNr; ++j) {
            const __m512 br = _mm512_set1_ps(b[j]);
            const __m512 bi = _mm512_set1_ps(b[kNr + j]);
            accRe[j] = _mm512_fmadd_ps(ar, br, accRe[j]);
            accIm[j] = _mm512_fmadd_ps(ai, br, accIm[j]);
            accRe[j] = _mm512_fnmadd_ps(ai, bi, accRe[j]);
            accIm[j] = _mm512_fmadd_ps(ar, bi, accIm[j]);
        }
        a += 2 * kMr;
        b += 2 * kNr;
    }
    if (mv != kMr || nv != kNr) {
        alignas(64) float bufRe[kNr * kMr], bufIm[kNr * kMr];
        for (int j = 0; j < kNr; ++j) {
            _mm512_store_ps(bufRe + j * kMr, accRe[j]);
            _mm512_store_ps(bufIm + j * kMr, accIm[j]);
        }
        csymmEpilogueScalar<true>(bufRe, bufIm, kMr, c, ldc, mv, nv, ep);
        return;
    }
    // Full tile: alpha on the planes, re-interleave 16 complex into two zmm with
    // one two-source permute each, then beta*C via fmaddsub (as the AVX2 kernel).
    const __m512i lowIdx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i highIdx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const __m512 alr = _mm512_set1_ps(ep.alphaRe), ali = _mm512_set1_ps(ep.alphaIm);
    const __m512 ber = _mm512_set1_ps(ep.betaRe), bei = _mm512_set1_ps(ep.betaIm);
    for (int j = 0; j < kNr; ++j) {
        const __m512 tr = _mm512_fmsub_ps(alr, accRe[j], _mm512_mul_ps(ali, accIm[j]));
        const __m512 ti = _mm512_fmadd_ps(alr, accIm[j], _mm512_mul_ps(ali, accRe[j]));
        __m512 o0 = _mm512_permutex2var_ps(tr, lowIdx, ti);
        __m512 o1 = _mm512_permutex2var_ps(tr, highIdx, ti);
        float* cj = c + 2 * j * ldc;
        if (ep.betaMode == CSYMM_UK_BETA_ONE) {
            o0 = _mm512_add_ps(o0, _mm512_loadu_ps(cj));
            o1 = _mm512_add_ps(o1, _mm512_loadu_ps(cj + 16));
        } else if (ep.betaMode == CSYMM_UK_BETA_GENERAL) {
            const __m512 c0 = _mm512_loadu_ps(cj), c1 = _mm512_loadu_ps(cj + 16);
            o0 = _mm512_add_ps(o0, _mm512_fmaddsub_ps(ber, c0, _mm512_mul_ps(bei, _mm512_shuffle_ps(c0, c0, 0xB1))));
            o1 = _mm512_add_ps(o1, _mm512_fmaddsub_ps(ber, c1, _mm512_mul_ps(bei, _mm512_shuffle_ps(c1, c1, 0xB1))));
        }
        _mm512_storeu_ps(cj, o0);
        _mm512_storeu_ps(cj + 16, o1);
    }
}

}  // namespace al
