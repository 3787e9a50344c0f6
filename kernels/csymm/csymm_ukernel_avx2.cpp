// AVX2+FMA csymm micro-kernel, 8x6 (contract in csymm_ukernel.h). Compiled with
// -mavx2 -mfma and only called after __builtin_cpu_supports said so.
//
// Registers: 12 accumulators (6 columns x re/im planes of 8 rows), 2 for the A
// step (re, im), 2 broadcasts of B: all 16 ymm. Per k step 24 FMAs against
// 2 vector loads and 12 broadcasts, so the FMA ports, not loads, bound it.
#include <immintrin.h>

#include "csymm_ukernel.h"

namespace al {

namespace {
constexpr int kMr = 8;
constexpr int kNr = 6;
}  // namespace

// One k step at byte offsets AO (A panel, 64 bytes a step) and BO (B panel,
// 48 bytes a step): A re/im into ymm12/13; per column j, b_re then b_im are
// broadcast into ymm14/15 and the four products (one subtracting) go into the
// re (ymm0..5) and im (ymm6..11) accumulators. Written as asm because with all
// 16 ymm live the compiler's register allocation adds a copy per column.
#define AL_COL(j, re, im, BO)                                  \
    "vbroadcastss " #j "*4+" #BO "(%[b]), %%ymm14\n\t"         \
    "vfmadd231ps  %%ymm14, %%ymm12, %%ymm" #re "\n\t"          \
    "vfmadd231ps  %%ymm14, %%ymm13, %%ymm" #im "\n\t"          \
    "vbroadcastss " #j "*4+24+" #BO "(%[b]), %%ymm15\n\t"      \
    "vfnmadd231ps %%ymm15, %%ymm13, %%ymm" #re "\n\t"          \
    "vfmadd231ps  %%ymm15, %%ymm12, %%ymm" #im "\n\t"
#define AL_STEP(AO, BO)                                        \
    "vmovaps " #AO "(%[a]), %%ymm12\n\t"                       \
    "vmovaps " #AO "+32(%[a]), %%ymm13\n\t"                    \
    AL_COL(0, 0, 6, BO) AL_COL(1, 1, 7, BO) AL_COL(2, 2, 8, BO) \
    AL_COL(3, 3, 9, BO) AL_COL(4, 4, 10, BO) AL_COL(5, 5, 11, BO)

void csymm_ukernel_avx2_8x6(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                            int32_t mv, int32_t nv, const CsymmEpilogue& ep) {
    for (int32_t j = 0; j < nv; ++j) _mm_prefetch(reinterpret_cast<const char*>(c + 2 * j * ldc), _MM_HINT_T0);
    alignas(32) float acc[2 * kNr * kMr];  // re of columns 0..5, then im of columns 0..5
    int64_t k4 = kc / 4, k1 = kc % 4;
    __asm__ volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
        "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"
        "vxorps %%ymm2, %%ymm2, %%ymm2\n\t"
        "vxorps %%ymm3, %%ymm3, %%ymm3\n\t"
        "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"
        "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
        "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"
        "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
        "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"
        "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
        "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"
        "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
        "test %[k4], %[k4]\n\t"
        "jz 2f\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "prefetcht0 512(%[a])\n\t"
        AL_STEP(0, 0) AL_STEP(64, 48) AL_STEP(128, 96) AL_STEP(192, 144)
        "add $256, %[a]\n\t"
        "add $192, %[b]\n\t"
        "dec %[k4]\n\t"
        "jnz 1b\n"
        "2:\n\t"
        "test %[k1], %[k1]\n\t"
        "jz 4f\n"
        "3:\n\t"
        AL_STEP(0, 0)
        "add $64, %[a]\n\t"
        "add $48, %[b]\n\t"
        "dec %[k1]\n\t"
        "jnz 3b\n"
        "4:\n\t"
        "vmovaps %%ymm0, 0(%[acc])\n\t"
        "vmovaps %%ymm1, 32(%[acc])\n\t"
        "vmovaps %%ymm2, 64(%[acc])\n\t"
        "vmovaps %%ymm3, 96(%[acc])\n\t"
        "vmovaps %%ymm4, 128(%[acc])\n\t"
        "vmovaps %%ymm5, 160(%[acc])\n\t"
        "vmovaps %%ymm6, 192(%[acc])\n\t"
        "vmovaps %%ymm7, 224(%[acc])\n\t"
        "vmovaps %%ymm8, 256(%[acc])\n\t"
        "vmovaps %%ymm9, 288(%[acc])\n\t"
        "vmovaps %%ymm10, 320(%[acc])\n\t"
        "vmovaps %%ymm11, 352(%[acc])\n\t"
        : [a] "+r"(a), [b] "+r"(b), [k4] "+r"(k4), [k1] "+r"(k1)
        : [acc] "r"(acc)
        : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
          "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#undef AL_STEP
#undef AL_COL
    const float* accRe = acc;
    const float* accIm = acc + kNr * kMr;
    if (mv != kMr || nv != kNr) {
        csymmEpilogueScalar<true>(accRe, accIm, kMr, c, ldc, mv, nv, ep);
        return;
    }
    // Full tile: alpha on the planes, re-interleave 8 complex into two ymm, then
    // beta*C in interleaved form (fmaddsub: re = br*cr - bi*ci, im = br*ci + bi*cr).
    const __m256 alr = _mm256_set1_ps(ep.alphaRe), ali = _mm256_set1_ps(ep.alphaIm);
    const __m256 ber = _mm256_set1_ps(ep.betaRe), bei = _mm256_set1_ps(ep.betaIm);
    for (int j = 0; j < kNr; ++j) {
        const __m256 pr = _mm256_load_ps(accRe + j * kMr), pi = _mm256_load_ps(accIm + j * kMr);
        const __m256 tr = _mm256_fmsub_ps(alr, pr, _mm256_mul_ps(ali, pi));
        const __m256 ti = _mm256_fmadd_ps(alr, pi, _mm256_mul_ps(ali, pr));
        const __m256 lo = _mm256_unpacklo_ps(tr, ti);  // complex 0 1 | 4 5
        const __m256 hi = _mm256_unpackhi_ps(tr, ti);  // complex 2 3 | 6 7
        __m256 o0 = _mm256_permute2f128_ps(lo, hi, 0x20);
        __m256 o1 = _mm256_permute2f128_ps(lo, hi, 0x31);
        float* cj = c + 2 * j * ldc;
        if (ep.betaMode == CSYMM_UK_BETA_ONE) {
            o0 = _mm256_add_ps(o0, _mm256_loadu_ps(cj));
            o1 = _mm256_add_ps(o1, _mm256_loadu_ps(cj + 8));
        } else if (ep.betaMode == CSYMM_UK_BETA_GENERAL) {
            const __m256 c0 = _mm256_loadu_ps(cj), c1 = _mm256_loadu_ps(cj + 8);
            o0 = _mm256_add_ps(o0, _mm256_fmaddsub_ps(ber, c0, _mm256_mul_ps(bei, _mm256_permute_ps(c0, 0xB1))));
            o1 = _mm256_add_ps(o1, _mm256_fmaddsub_ps(ber, c1, _mm256_mul_ps(bei, _mm256_permute_ps(c1, 0xB1))));
        }
        _mm256_storeu_ps(cj, o0);
        _mm256_storeu_ps(cj + 8, o1);
    }
}

}  // namespace al
