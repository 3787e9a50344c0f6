// Reference csymm kernel: per C tile, a direct loop with symmetric addressing
// (design 3.4.2) and the fused alpha/beta epilogue (3.4.3). O(mnk), no packing.
#include <algorithm>

#include "../../host/csymm_tiling.h"
#include "ascend_linalg/al_types.h"
#include "csymm_kernel.h"

namespace al {

namespace {
struct Cf {
    float re, im;
};

// A(i, k) of the symmetric matrix, read from the stored triangle only.
inline Cf symAt(const Cf* A, int64_t lda, bool upper, int64_t i, int64_t k) {
    bool stored = upper ? (i <= k) : (i >= k);
    return stored ? A[i + k * lda] : A[k + i * lda];
}
}  // namespace

void csymm_kernel_ref_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args,
                          const void* tiling) {
    const auto& t = *static_cast<const CsymmTilingData*>(tiling);
    const Cf* A = static_cast<const Cf*>(args[0]);
    const Cf* B = static_cast<const Cf*>(args[1]);
    Cf* C = static_cast<Cf*>(args[2]);
    const bool left = t.side == AL_SIDE_LEFT;
    const bool upper = t.uplo == AL_FILL_UPPER;
    // B(i, j) at B[i*bi + j*bj]: column-major, or row-major (CSYMM_CPU_B_ROW_MAJOR).
    const bool bRowMajor = (t.cpuFlags & CSYMM_CPU_B_ROW_MAJOR) != 0;
    const int64_t bi = bRowMajor ? t.ldb : 1, bj = bRowMajor ? 1 : t.ldb;
    const int64_t tiles = static_cast<int64_t>(t.tilesM) * t.tilesN;
    for (int64_t tile = blockIdx; tile < tiles; tile += numBlocks) {
        const int64_t i0 = (tile / t.tilesN) * t.blockM;
        const int64_t j0 = (tile % t.tilesN) * t.blockN;
        const int64_t i1 = std::min<int64_t>(i0 + t.blockM, t.m);
        const int64_t j1 = std::min<int64_t>(j0 + t.blockN, t.n);
        for (int64_t j = j0; j < j1; ++j) {
            for (int64_t i = i0; i < i1; ++i) {
                float pr = 0.0f, pi = 0.0f;
                if (t.alphaBetaMode != CSYMM_AB_ALPHA_ZERO) {
                    for (int64_t k = 0; k < t.k; ++k) {
                        Cf a = left ? symAt(A, t.lda, upper, i, k) : symAt(A, t.lda, upper, k, j);
                        Cf b = left ? B[k * bi + j * bj] : B[i * bi + k * bj];
                        pr += a.re * b.re - a.im * b.im;
                        pi += a.re * b.im + a.im * b.re;
                    }
                }
                Cf& c = C[i + j * t.ldc];
                float outR, outI;
                switch (t.alphaBetaMode) {
                    case CSYMM_AB_ALPHA_ZERO:
                        if (t.betaReal == 0.0f && t.betaImag == 0.0f) {
                            outR = 0.0f;
                            outI = 0.0f;
                        } else {
                            outR = t.betaReal * c.re - t.betaImag * c.im;
                            outI = t.betaReal * c.im + t.betaImag * c.re;
                        }
                        break;
                    case CSYMM_AB_BETA_ZERO:
                        outR = t.alphaReal * pr - t.alphaImag * pi;
                        outI = t.alphaReal * pi + t.alphaImag * pr;
                        break;
                    case CSYMM_AB_BETA_ONE:
                        outR = t.alphaReal * pr - t.alphaImag * pi + c.re;
                        outI = t.alphaReal * pi + t.alphaImag * pr + c.im;
                        break;
                    default:
                        outR = t.alphaReal * pr - t.alphaImag * pi +
                               (t.betaReal * c.re - t.betaImag * c.im);
                        outI = t.alphaReal * pi + t.alphaImag * pr +
                               (t.betaReal * c.im + t.betaImag * c.re);
                        break;
                }
                c.re = outR;
                c.im = outI;
            }
        }
    }
}

}  // namespace al
