// Portable csymm micro-kernel, 8x4 (contract in csymm_ukernel.h). Plain C++
// the compiler vectorises for the baseline ISA (SSE2 on x86-64, NEON on arm64);
// the fallback when neither AVX2+FMA nor AVX-512 is present.
#include "csymm_ukernel.h"

namespace al {

namespace {
constexpr int kMr = 8;
constexpr int kNr = 4;
}  // namespace

void csymm_ukernel_baseline_8x4(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                int32_t mv, int32_t nv, const CsymmEpilogue& ep) {
    alignas(64) float accRe[kNr][kMr] = {};
    alignas(64) float accIm[kNr][kMr] = {};
    for (int64_t p = 0; p < kc; ++p, a += 2 * kMr, b += 2 * kNr) {
        for (int j = 0; j < kNr; ++j) {
            const float br = b[j], bi = b[kNr + j];
            for (int i = 0; i < kMr; ++i) {
                accRe[j][i] += a[i] * br;
                accRe[j][i] -= a[kMr + i] * bi;
                accIm[j][i] += a[i] * bi;
                accIm[j][i] += a[kMr + i] * br;
            }
        }
    }
    csymmEpilogueScalar<false>(&accRe[0][0], &accIm[0][0], kMr, c, ldc, mv, nv, ep);
}

}  // namespace al
